//! A run that asks the person (`elicit()`), on 2026-07-28's multi
//! round-trip requests: the official Python SDK's driver answers and
//! retries; a retry lands on another process after a SIGKILL; and every
//! wrong retry (forged, another tenant's, expired, a response the schema
//! refuses, the same retry twice) is refused and changes nothing. In the
//! session era the asks travel on the call's stream: the official Python
//! and TypeScript clients answer them over HTTP and stdio, and a reply
//! that reaches another process is relayed to the one holding the stream.

use axum::body::Body;
use serde_json::{Value, json};

use crate::clients::finish;
use crate::common::{self, Server, post};
use mcp_v8_lambda::transport::Principal;

const CODE: &str = "const fs = require('node:fs'); \
    const a = await elicit({ message: 'n?', requestedSchema: { type: 'object', \
      properties: { n: { type: 'integer', maximum: 50 } }, required: ['n'] } }); \
    fs.appendFileSync('/work/count.txt', 'x'); \
    [a.action, a.content?.n ?? null, fs.readFileSync('/work/count.txt', 'utf8').length]";

fn project() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A 2026-07-28 `tools/call` of run_js with `code` in the session `asks`,
/// from a client that declares `capabilities`, as `principal` when given,
/// retrying with `responses` and `state` when given.
async fn call(
    server: &Server,
    principal: Option<&str>,
    capabilities: Value,
    code: &str,
    retry: Option<(Value, &str)>,
) -> Value {
    let arguments = json!({ "code": code, "session": "asks" });
    call_with(server, principal, capabilities, arguments, retry).await
}

/// [`call`] with any arguments.
async fn call_with(
    server: &Server,
    principal: Option<&str>,
    capabilities: Value,
    arguments: Value,
    retry: Option<(Value, &str)>,
) -> Value {
    let body = rpc_with(server, principal, capabilities, arguments, retry).await;
    assert!(body["error"].is_null(), "{body}");
    body["result"].clone()
}

/// The message of the -32602 a retry of run_js with `code` gets.
async fn invalid(
    server: &Server,
    principal: Option<&str>,
    code: &str,
    retry: (Value, &str),
) -> String {
    let arguments = json!({ "code": code, "session": "asks" });
    let body = rpc_with(server, principal, form(), arguments, Some(retry)).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

/// The JSON-RPC answer to [`call_with`]'s request.
async fn rpc_with(
    server: &Server,
    principal: Option<&str>,
    capabilities: Value,
    arguments: Value,
    retry: Option<(Value, &str)>,
) -> Value {
    let mut params = json!({
        "name": "run_js",
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        // "" stands for a retry that lost its state.
        if !state.is_empty() {
            params["requestState"] = json!(state);
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let mut request = post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_js")
        .body(Body::from(body.to_string()))
        .unwrap();
    if let Some(principal) = principal {
        request
            .extensions_mut()
            .insert(Principal(principal.to_owned()));
    }
    server.send(request).await.body
}

fn form() -> Value {
    json!({ "elicitation": { "form": {} } })
}

/// The keys asked and the state of an `InputRequiredResult`.
fn asked(result: &Value) -> (Vec<String>, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let keys = result["inputRequests"].as_object().unwrap().keys().cloned();
    let request = &result["inputRequests"]["elicit-1"];
    assert_eq!(request["method"], "elicitation/create", "{result}");
    assert_eq!(request["params"]["mode"], "form", "{result}");
    (
        keys.collect(),
        result["requestState"].as_str().unwrap().to_owned(),
    )
}

/// A tool result's error text, when it is a tool error.
fn error_text(result: &Value) -> String {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// `state` with its expiry a day later, well-formed, under its old tag.
fn altered(state: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = state.split('.').collect();
    assert_eq!(parts.len(), 3, "{state}");
    let mut body: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    body["e"] = json!(body["e"].as_i64().unwrap() + 86_400);
    let body = URL_SAFE_NO_PAD.encode(body.to_string());
    format!("{}.{body}.{}", parts[0], parts[2])
}

fn accepted(n: i64) -> Value {
    json!({ "elicit-1": { "action": "accept", "content": { "n": n } } })
}

/// Every way a retry can be wrong is refused with what to do, and changes
/// nothing: the right retry afterwards still continues the run, once (its
/// side effect in /work counted), a second copy of it is told the run
/// continued already, and a declined ask reaches the run as its action.
#[tokio::test]
async fn a_retry_continues_its_run_once_and_a_wrong_one_changes_nothing() {
    let server = common::server();
    let first = call(&server, None, form(), CODE, None).await;
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["elicit-1"]);

    // Altered: its expiry pushed back, the body encoded again, the tag kept.
    // Each is the client's protocol mistake, so a JSON-RPC error (-32602).
    let forged = altered(&state);
    let refused = invalid(&server, None, CODE, (accepted(7), &forged)).await;
    assert!(refused.contains("not one this server issued"), "{refused}");
    // Another tenant's state, even with the right call.
    let refused = invalid(&server, Some("bob"), CODE, (accepted(7), &state)).await;
    assert!(refused.contains("another tenant"), "{refused}");
    // Another call's: other code.
    let refused = invalid(&server, None, "1", (accepted(7), &state)).await;
    assert!(refused.contains("another call"), "{refused}");
    // A response the schema refuses (over its maximum) is asked again,
    // the person told why, under a state that counts it; no internal key
    // in what the person reads.
    let refused = call(&server, None, form(), CODE, Some((accepted(99), &state))).await;
    let (keys, recounted) = asked(&refused);
    assert_eq!(keys, ["elicit-1"]);
    assert_ne!(recounted, state);
    let message = refused["inputRequests"]["elicit-1"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("not accepted") && message.ends_with("n?") && !message.contains("elicit-"),
        "{message}"
    );
    // Responses without a state are answers given up front: the call starts
    // over, and its run, asking what they answer, continues with them in
    // the same call (a new run: its own count).
    let over = call(&server, None, form(), CODE, Some((accepted(7), ""))).await;
    assert_eq!(over["isError"], false, "{over}");
    assert_eq!(
        over["structuredContent"]["result"], r#"["accept",7,1]"#,
        "{over}"
    );
    // Answers given up front that the form refuses are not used: the new
    // run asks, under a new state.
    let unused = call(&server, None, form(), CODE, Some((accepted(99), ""))).await;
    let (keys, other) = asked(&unused);
    assert_eq!(keys, ["elicit-1"]);
    assert_ne!(other, state);
    // A retry without the response is asked again, under the same state.
    let again = call(&server, None, form(), CODE, Some((json!({}), &state))).await;
    assert_eq!(asked(&again), (vec!["elicit-1".to_owned()], state.clone()));

    // The right retry continues the run, once.
    let done = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        done["structuredContent"]["result"], r#"["accept",7,1]"#,
        "{done}"
    );
    let twice = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert!(error_text(&twice).contains("answered already"), "{twice}");
    // The session's heap is the one run's: its side effect happened once.
    let read = json!({
        "code": "require('node:fs').readFileSync('/work/count.txt', 'utf8')",
        "session": "asks",
        "heap": "latest",
    });
    let count = call_with(&server, None, form(), read, None).await;
    assert_eq!(count["structuredContent"]["result"], r#""x""#, "{count}");

    // Declined: the run gets the action alone, and decides.
    let (_, state) = asked(&call(&server, None, form(), CODE, None).await);
    let declined = json!({ "elicit-1": { "action": "decline" } });
    let done = call(&server, None, form(), CODE, Some((declined, &state))).await;
    assert_eq!(
        done["structuredContent"]["result"], r#"["decline",null,1]"#,
        "{done}"
    );
}

/// The trial's probe: an answer the form refuses is asked again (twice),
/// then the run gets `{ action: "cancel" }` with the reason and decides; a
/// refused answer followed by a good one completes; and a later call on
/// the heap of a run that asked numbers its asks from 1 again.
#[tokio::test]
async fn a_refused_answer_is_asked_again_then_cancelled_and_keys_count_per_call() {
    let server = common::server();
    let code = "globalThis.a = await elicit({ message: 'n?', requestedSchema: { type: 'object', \
        properties: { n: { type: 'integer', maximum: 50 } }, required: ['n'] } }); \
        [a.action, a.content?.n ?? null, a.reason ?? null]";
    let (_, mut state) = asked(&call(&server, None, form(), code, None).await);
    for _ in 0..2 {
        let again = call(&server, None, form(), code, Some((accepted(99), &state))).await;
        state = asked(&again).1;
    }
    let done = call(&server, None, form(), code, Some((accepted(99), &state))).await;
    assert_eq!(done["isError"], false, "{done}");
    let result = done["structuredContent"]["result"].as_str().unwrap();
    assert!(
        result.starts_with(r#"["cancel",null,"#) && result.contains("maximum"),
        "{done}"
    );
    // Refused once, then answered: the run completes with the answer.
    let (_, state) = asked(&call(&server, None, form(), code, None).await);
    let again = call(&server, None, form(), code, Some((accepted(99), &state))).await;
    let (_, state) = asked(&again);
    let done = call(&server, None, form(), code, Some((accepted(7), &state))).await;
    assert_eq!(
        done["structuredContent"]["result"], r#"["accept",7,null]"#,
        "{done}"
    );
    // On a session's heap: the second call's ask is elicit-1 again.
    let in_session = |code: &str| json!({"code": code, "session": "keys", "heap": "latest"});
    let first = call_with(&server, None, form(), in_session(code), None).await;
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["elicit-1"]);
    let done = call_with(
        &server,
        None,
        form(),
        in_session(code),
        Some((accepted(3), &state)),
    )
    .await;
    assert_eq!(
        done["structuredContent"]["result"], r#"["accept",3,null]"#,
        "{done}"
    );
    let second = call_with(&server, None, form(), in_session(code), None).await;
    assert_eq!(asked(&second).0, ["elicit-1"], "{second}");
}

/// A suspended run past `MCP_V8_SUSPENDED_RUN_TTL_SECS` is dropped: its
/// retry says so and what to do.
#[tokio::test]
async fn an_expired_suspended_run_says_to_start_over() {
    let mut config = common::test_config(3600, false);
    config.stores.suspended_run_ttl_secs = 1;
    let server = common::server_configured(config, |stores| stores);
    let (_, state) = asked(&call(&server, None, form(), CODE, None).await);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let refused = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert!(error_text(&refused).contains("expired"), "{refused}");
}

/// A client that did not declare elicitation, a session-era call and a
/// stateless server: `elicit()` throws saying why (never `elicit is not
/// defined`).
#[tokio::test]
async fn a_run_that_cannot_ask_is_told_why() {
    let server = common::server();
    let result = call(&server, None, json!({}), CODE, None).await;
    let text = serde_json::to_string(&result).unwrap();
    assert!(
        text.contains("TypeError") && text.contains("cannot be asked"),
        "{text}"
    );

    let session = server.initialize().await;
    let outcome = server.call(&session, json!({ "code": CODE })).await;
    let text = outcome.to_string();
    assert!(
        text.contains("TypeError") && text.contains("cannot be asked"),
        "{text}"
    );

    // A session whose client takes elicitations, on a deployment whose
    // answers cannot stream (a BUFFERED function URL).
    let mut config = common::test_config(3600, false);
    config.transport.response_streaming = false;
    let buffered = common::server_with_workers(config, 1, |stores| stores);
    let session = initialize_asking(&buffered).await;
    let outcome = buffered.call(&session, json!({ "code": CODE })).await;
    let text = outcome.to_string();
    assert!(
        text.contains("TypeError") && text.contains("cannot be an event stream"),
        "{text}"
    );

    let stateless = common::server_with(3600, true, None);
    let arguments = json!({ "code": CODE });
    let result = call_with(&stateless, None, form(), arguments, None).await;
    let text = serde_json::to_string(&result).unwrap();
    assert!(
        text.contains("TypeError") && text.contains("stateless"),
        "{text}"
    );
}

/// `tests/e2e/py_elicit_client.py` against `url` with `args`.
pub(crate) fn python(url: &str, args: &[&str]) -> Value {
    let venv = project().join(".venv-mcp2/bin/python");
    assert!(
        venv.exists(),
        "the Python mcp 2.x client is not installed: run scripts/test.sh (it creates .venv-mcp2)"
    );
    let mut command = std::process::Command::new(venv);
    command
        .current_dir(project().join("tests/e2e"))
        .arg("py_elicit_client.py")
        .arg(url)
        .args(args);
    finish(command)
}

/// The official Python SDK 2.x client, its `elicitation_callback`
/// answering, runs a run_js that asks twice in a loop to completion
/// against `serve`: with `mode="2026-07-28"` its multi round-trip driver
/// retries each round; with `mode="legacy"` each `elicitation/create`
/// arrives on the call's stream of a 2025-11-25 session.
#[test]
fn the_python_sdk_answers_a_run_that_asks_twice_in_a_loop_in_both_eras() {
    let serve = common::process::Serve::start(&[], &[]);
    let url = format!("http://127.0.0.1:{}/mcp", serve.port);
    for mode in ["2026-07-28", "legacy"] {
        let done = python(&url, &[&format!("loop-{mode}"), mode, "loop"]);
        assert_eq!(done["asked"], json!(["Factor 1?", "Factor 2?"]), "{done}");
        let outcome = &done["outcome"];
        assert_eq!(outcome["status"], "completed", "{mode}: {done}");
        assert_eq!(outcome["result"], r#"{"sum":210,"lines":1}"#, "{done}");
        assert_eq!(outcome["output"], "factor 1: 10\nfactor 2: 100\n", "{done}");
    }
}

/// The official TypeScript SDK client in a 2025-11-25 session, its
/// `elicitation/create` handler answering, runs a run_js that asks twice
/// in a loop to completion: against `serve` over HTTP, and over stdio.
#[test]
fn the_typescript_sdk_answers_a_run_that_asks_in_a_session_over_http_and_stdio() {
    let serve = common::process::Serve::start(&[], &[]);
    let url = format!("http://127.0.0.1:{}/mcp", serve.port);
    let dir = tempfile::tempdir().unwrap();
    let binary = env!("CARGO_BIN_EXE_mcp-v8-lambda");
    let over_stdio = [binary, "asks", dir.path().to_str().unwrap()];
    for args in [&[url.as_str(), "asks"][..], &over_stdio[..]] {
        let mut command = crate::clients::node();
        command.args(args);
        let done = finish(command);
        assert_eq!(done["asked"], json!(["Factor 1?", "Factor 2?"]), "{done}");
        assert_eq!(done["result"], "210", "{done}");
        assert_eq!(done["output"], "factor 1: 10\nfactor 2: 100\n", "{done}");
    }
}

/// A 2025-11-25 session whose client takes form elicitations.
async fn initialize_asking(server: &Server) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": { "elicitation": { "form": {} } },
        "clientInfo": { "name": "it", "version": "1" } }});
    let reply = server.rpc(None, init).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.session_id().unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.rpc(Some(&session), initialized).await.status, 202);
    session
}

/// The next server-sent event's JSON-RPC message of `body`.
async fn next_event(body: &mut Body, pending: &mut String) -> Value {
    use http_body_util::BodyExt;
    loop {
        if let Some(event) = crate::common::take_event(pending) {
            return event;
        }
        let frame = tokio::time::timeout(std::time::Duration::from_secs(60), body.frame())
            .await
            .expect("an event within a minute")
            .expect("the stream has another event")
            .unwrap();
        if let Some(data) = frame.data_ref() {
            pending.push_str(std::str::from_utf8(data).unwrap());
        }
    }
}

/// In a session, a run's ask goes out on the call's stream as an
/// `elicitation/create` request; the client's reply, POSTed to another
/// process on the same session store (as to another Lambda instance), is
/// relayed through the store to the process holding the stream, and the
/// run continues there to its answer on the same stream. A reply to a
/// request nobody sent changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_era_ask_is_answered_through_another_process() {
    use mcp_v8_lambda::session::{RedbSessionStore, SessionStore};
    use tower::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let store = RedbSessionStore::open(&dir.path().join("sessions.redb")).unwrap();
    let sessions: std::sync::Arc<dyn SessionStore> = std::sync::Arc::new(store);
    let holder = common::server_with(3600, false, Some(sessions.clone()));
    let other = common::server_with(3600, false, Some(sessions));
    let session = initialize_asking(&holder).await;

    let stray =
        json!({"jsonrpc": "2.0", "id": "no-such-request", "result": { "action": "accept" }});
    assert_eq!(other.rpc(Some(&session), stray).await.status, 202);

    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "run_js", "arguments": { "code": CODE, "session": "relayed" } }});
    let request = post()
        .header("mcp-session-id", &session)
        .body(Body::from(call.to_string()))
        .unwrap();
    let response = mcp_v8_lambda::transport::router(holder.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "a call whose run asks is answered as a stream"
    );
    let mut body = response.into_body();
    let mut pending = String::new();
    let ask = next_event(&mut body, &mut pending).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "n?", "{ask}");
    assert_eq!(ask["params"]["mode"], "form", "{ask}");

    let reply = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": { "action": "accept", "content": { "n": 7 } }});
    assert_eq!(other.rpc(Some(&session), reply).await.status, 202);
    let answer = next_event(&mut body, &mut pending).await;
    assert_eq!(answer["id"], 9, "{answer}");
    let outcome = &answer["result"]["structuredContent"];
    assert_eq!(outcome["status"], "completed", "{answer}");
    assert_eq!(outcome["result"], r#"["accept",7,1]"#, "{answer}");
}

/// `serve` killed with SIGKILL between the ask and the answer: a new
/// process on the same data continues the run from its heap, to its
/// next ask and then its end.
#[test]
fn a_run_asked_before_a_sigkill_continues_in_the_next_process() {
    let mut serve = common::process::Serve::start(&[], &[]);
    let url = |serve: &common::process::Serve| format!("http://127.0.0.1:{}/mcp", serve.port);
    let first = python(&url(&serve), &["killed", "2026-07-28", "first"]);
    assert_eq!(
        first["requests"],
        json!({ "elicit-1": "Factor 1?" }),
        "{first}"
    );
    serve.restart_after_kill(&[], &[]);
    let retry = |given: Value| {
        let given = given.to_string();
        python(&url(&serve), &["killed", "2026-07-28", "retry", &given])
    };
    let second =
        retry(json!({ "responses": { "elicit-1": 3 }, "request_state": first["request_state"] }));
    assert_eq!(
        second["requests"],
        json!({ "elicit-2": "Factor 2?" }),
        "{second}"
    );
    let done =
        retry(json!({ "responses": { "elicit-2": 4 }, "request_state": second["request_state"] }));
    assert_eq!(
        done["outcome"]["result"], r#"{"sum":11,"lines":1}"#,
        "{done}"
    );
}
