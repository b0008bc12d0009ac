//! Long runs: a `tools/call` with a progress token is answered as an event
//! stream of `notifications/progress` and then the result, in both eras;
//! `notifications/cancelled` and a client that goes away stop the run,
//! which leaves nothing behind. (The real clients, over a socket and under
//! `cargo lambda watch`, are in tests/it/clients/ and tests/it/lambda/watch.rs.)

use crate::common;

use std::time::Duration;

use axum::body::Body;
use common::{Server, post};
use http_body_util::BodyExt;
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Code that writes a line, then keeps its isolate busy for `secs`.
fn busy(secs: u64) -> String {
    format!(
        "console.log('started'); const t = Date.now(); while (Date.now() - t < {secs}000) {{}} 'done'"
    )
}

fn call(id: u64, arguments: Value, token: Option<Value>) -> Value {
    let mut params = json!({"name": "run_js", "arguments": arguments});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

fn request(
    session: Option<&str>,
    body: &Value,
    extra: &[(&str, &str)],
) -> axum::http::Request<Body> {
    let text = body.to_string();
    let mut builder = post();
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(text)).unwrap()
}

/// The JSON-RPC messages of an event-stream body.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

async fn streamed(s: &Server, request: axum::http::Request<Body>) -> Vec<Value> {
    let response = mcp_v8_lambda::transport::router(s.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    events(std::str::from_utf8(&bytes).unwrap())
}

/// Code that writes a line, then spins until stopped.
const SPIN: &str = "console.log('started'); for (;;) {}";

/// Sends `body`, a call with a progress token whose code writes a line as
/// it starts, and reads its event stream until a progress report counts
/// that line: the run is going, not waiting for a runner. Returns the rest
/// of the stream and what was read of it.
async fn running(
    app: &mcp_v8_lambda::transport::App,
    session: &str,
    body: &Value,
) -> (Body, String) {
    let response = mcp_v8_lambda::transport::router(app.clone())
        .oneshot(request(Some(session), body, &[]))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream = response.into_body();
    let mut text = String::new();
    loop {
        let frame = stream
            .frame()
            .await
            .expect("the stream goes on while the run does")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(std::str::from_utf8(&data).unwrap());
        }
        // Only whole events: the text up to the last blank line.
        let whole = &text[..text.rfind("\n\n").map_or(0, |end| end + 2)];
        let started = events(whole).iter().any(|event| {
            event["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("; 1 console line so far"))
        });
        if started {
            return (stream, text);
        }
    }
}

/// The last message of an event stream, `text` read of it so far.
async fn answer_of(stream: Body, text: String) -> Value {
    let rest = stream.collect().await.unwrap().to_bytes();
    let whole = text + std::str::from_utf8(&rest).unwrap();
    events(&whole)
        .pop()
        .expect("the stream ends with the answer")
}

/// Progress every few seconds while the run executes (elapsed seconds,
/// growing; the console line count), then the result, for the token given.
/// The run writes one line as it starts and then runs 7 s, so at least two
/// reports count that line (reports before it starts, which waits for other
/// tests' snapshot runs, count none).
fn check_progress_then_result(messages: &[Value], token: &Value) -> Value {
    let (last, progress) = messages.split_last().unwrap();
    let mut previous = 0.0;
    let mut counted = 0;
    for event in progress {
        assert_eq!(event["method"], "notifications/progress");
        assert_eq!(&event["params"]["progressToken"], token);
        let at = event["params"]["progress"].as_f64().unwrap();
        assert!(at > previous, "progress grows: {messages:?}");
        previous = at;
        let message = event["params"]["message"].as_str().unwrap();
        if message.contains("; 1 console line so far") {
            counted += 1;
        } else {
            assert!(message.contains("; 0 console lines so far"), "{message}");
        }
    }
    assert!(counted >= 2, "{messages:?}");
    last.clone()
}

#[tokio::test]
async fn a_call_with_a_progress_token_streams_progress_then_the_result() {
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let token = json!("run-7");
    let messages = streamed(
        &s,
        request(
            Some(&sid),
            &call(
                7,
                json!({"code": busy(7), "session": "streamed"}),
                Some(token.clone()),
            ),
            &[],
        ),
    )
    .await;
    let last = check_progress_then_result(&messages, &token);
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["structuredContent"]["status"], "completed");
    assert_eq!(last["result"]["structuredContent"]["output"], "started\n");
    // The run was logged as any other.
    let log = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "streamed"}),
        )
        .await;
    assert_eq!(
        log["structuredContent"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Without a token: one JSON answer.
    let reply = s.rpc(Some(&sid), call(8, json!({"code": "1"}), None)).await;
    assert_eq!(reply.headers["content-type"], "application/json");
    assert_eq!(reply.body["result"]["structuredContent"]["result"], "1");
}

#[tokio::test]
async fn a_2026_call_with_a_progress_token_streams_on_its_own_response() {
    let s = common::server();
    let token = json!(42);
    let mut body = call(9, json!({"code": busy(7)}), Some(token.clone()));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": "progress-test", "version": "1"});
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let messages = streamed(
        &s,
        request(
            None,
            &body,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "run_js"),
            ],
        ),
    )
    .await;
    let last = check_progress_then_result(&messages, &token);
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert_eq!(last["result"]["structuredContent"]["result"], "\"done\"");
}

/// `notifications/cancelled` for a running call ends it `cancelled`: its
/// isolate is terminated, nothing is stored, the log and the execution
/// registry are untouched.
#[tokio::test]
async fn notifications_cancelled_stops_the_run_and_keeps_nothing() {
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let first = s
        .call(
            &sid,
            json!({"code": "globalThis.kept = 1", "session": "cancel-me"}),
        )
        .await;
    let heap = first["structuredContent"]["heap"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    // The run has begun (a progress report counts its line), so the
    // cancel finds it in this process.
    let body = call(
        5,
        json!({"code": SPIN, "heap": heap, "session": "cancel-me", "execution_timeout_secs": 120}),
        Some(json!("cancel")),
    );
    let (stream, read) = running(&s.app, &sid, &body).await;
    let running = tokio::spawn(answer_of(stream, read));
    let cancel = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                "params":{"requestId":5,"reason":"the user gave up"}}),
        )
        .await;
    assert_eq!(cancel.status, 202);
    // Well before its 120 s timeout.
    let answer = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the cancelled run ended")
        .unwrap();
    let outcome = &answer["result"]["structuredContent"];
    assert_eq!(outcome["status"], "cancelled", "{answer}");
    assert!(outcome["heap"].is_null());
    assert_eq!(outcome["error"]["name"], "CancelledError");
    let id = outcome["execution_id"].as_str().unwrap().parse().unwrap();
    assert!(
        s.meta
            .get_execution(&Tenant::anonymous(), id, 0)
            .await
            .unwrap()
            .is_none(),
        "no execution record"
    );
    let log = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "cancel-me", "fields": "index"}),
        )
        .await;
    assert_eq!(
        log["structuredContent"]["entries"],
        json!([{"index": 0}]),
        "the log is untouched"
    );
    // The engine serves the next run at once.
    let next = s
        .call(
            &sid,
            json!({"code": "kept + 1", "heap": "latest", "session": "cancel-me"}),
        )
        .await;
    assert_eq!(next["structuredContent"]["result"], "2", "{next}");
}

/// A client that closes the event stream of a running call cancels it: the
/// stateful run, which holds the process's snapshot lock, lets the next
/// one run long before its own timeout.
#[tokio::test]
async fn a_client_that_goes_away_cancels_its_run() {
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let body = call(
        3,
        json!({"code": SPIN, "session": "gone", "execution_timeout_secs": 120}),
        Some(json!("t")),
    );
    let (stream, _) = running(&s.app, &sid, &body).await;
    drop(stream);
    let next = tokio::time::timeout(
        Duration::from_secs(60),
        s.call(&sid, json!({"code": "'after'", "session": "gone"})),
    )
    .await
    .expect("the abandoned run was stopped");
    assert_eq!(next["structuredContent"]["result"], "\"after\"");
    let log = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "gone", "fields": "code"}),
        )
        .await;
    assert_eq!(
        log["structuredContent"]["entries"],
        json!([{"code": "'after'"}]),
        "the abandoned run left no entry"
    );
}

/// A cancel that reaches another instance (as on Lambda, where the one
/// running the call is busy) is relayed through the session store: the
/// running instance looks every 5 s, only once its call has run 5 s, and
/// stops the run. A short call never looks.
#[tokio::test]
async fn a_cancel_received_by_another_instance_reaches_the_run_through_the_store() {
    use common::faults::{FaultPlan, Faulty};
    use mcp_v8_lambda::compose::{Stores, with_engine};
    use mcp_v8_lambda::session::SessionStore;

    let dir = tempfile::tempdir().unwrap();
    let config = common::test_config(3600, false);
    let mut stores = Stores::from_config(&config, dir.path(), None).unwrap();
    let plan = FaultPlan::new();
    let counted: std::sync::Arc<dyn SessionStore> =
        std::sync::Arc::new(Faulty::new(stores.sessions.clone(), plan.clone()));
    stores.sessions = counted;
    // Two instances over the same stores, each with its own engine
    // workers, as two Lambda instances are.
    let running_instance = with_engine(
        &config,
        common::worker_engine(&config, dir.path(), "running"),
        stores.clone(),
    );
    let other_instance = with_engine(
        &config,
        common::worker_engine(&config, dir.path(), "other"),
        stores,
    );
    let send = |app: &mcp_v8_lambda::transport::App, session: Option<&str>, body: &Value| {
        let request = request(session, body, &[]);
        let app = app.clone();
        async move {
            let response = mcp_v8_lambda::transport::router(app)
                .oneshot(request)
                .await
                .unwrap();
            common::reply(response).await
        }
    };
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
    let sid = send(&running_instance, None, &init)
        .await
        .session_id()
        .unwrap();

    let began = std::time::Instant::now();
    let quick = send(
        &running_instance,
        Some(&sid),
        &call(1, json!({"code": "1"}), None),
    )
    .await;
    assert_eq!(quick.body["result"]["structuredContent"]["result"], "1");
    // None unless the call waited 5 s (other tests' snapshot runs hold the
    // process's snapshot lock).
    assert!(
        plan.calls("session.request_cancelled") <= began.elapsed().as_secs() / 5,
        "a call shorter than 5 s never looks"
    );
    let before = plan.calls("session.request_cancelled");

    let body = call(
        2,
        json!({"code": SPIN, "session": "relayed", "execution_timeout_secs": 120}),
        Some(json!("relayed")),
    );
    let (stream, read) = running(&running_instance, &sid, &body).await;
    let running = tokio::spawn(answer_of(stream, read));
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}});
    assert_eq!(send(&other_instance, Some(&sid), &cancel).await.status, 202);
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the relayed cancel stopped the run")
        .unwrap();
    let outcome = &answer["result"]["structuredContent"];
    assert_eq!(outcome["status"], "cancelled", "{answer}");
    let looks = plan.calls("session.request_cancelled") - before;
    let bound = 1 + started.elapsed().as_secs() / 5;
    assert!(
        (1..=bound).contains(&looks),
        "{looks} store reads, at most one per 5 s of run time"
    );
    assert_eq!(plan.calls("session.cancel_request"), 1);
}

/// A run that reports its own progress (`reportProgress`): each report is a
/// notification of the call's token with the run's values, the 3 s ticker's
/// elapsed seconds never mix in (the run runs past 3 s after its first
/// report), and a report that does not grow throws in the run, naming both
/// values, rather than being sent.
#[tokio::test]
async fn a_run_reports_its_own_progress_and_a_report_that_does_not_grow_throws() {
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let token = json!("own");
    let code = "reportProgress(1, 4, 'one'); const t = Date.now(); while (Date.now() - t < 3500) {} \
                reportProgress(2, 4); try { reportProgress(2) } catch (e) { console.log(`${e.name}: ${e.message}`) } \
                try { reportProgress('3') } catch (e) { console.log(e.name) } 'ok'";
    let messages = streamed(
        &s,
        request(
            Some(&sid),
            &call(11, json!({"code": code}), Some(token.clone())),
            &[],
        ),
    )
    .await;
    let (last, notes) = messages.split_last().unwrap();
    let values: Vec<(f64, Option<f64>, Option<&str>)> = notes
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress", "{n}");
            assert_eq!(n["params"]["progressToken"], token);
            let p = &n["params"];
            (
                p["progress"].as_f64().unwrap(),
                p["total"].as_f64(),
                p["message"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        values,
        [(1.0, Some(4.0), Some("one")), (2.0, Some(4.0), None)]
    );
    let output = last["result"]["structuredContent"]["output"]
        .as_str()
        .unwrap();
    assert!(
        output.contains("RangeError: reportProgress: progress must increase")
            && output.contains("last reported 2, then 2")
            && output.contains("TypeError"),
        "{output}"
    );
}
