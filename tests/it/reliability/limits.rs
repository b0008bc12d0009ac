//! The platform's limits bound the server's answers: a result or a log
//! listing too large for one response is cut or paged, never a response
//! Lambda cannot carry (6 MB buffered, a 502), and a run asking for more
//! time than its invocation has left ends `timed_out` in time to answer.

use crate::common;

use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::StatusCode;
use http_body_util::BodyExt;
use lambda_http::RequestExt;
use mcp_v8_lambda::lambda::service;
use mcp_v8_lambda::meta::NewLogEntry;
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};
use tower::ServiceExt;

/// What a function URL can carry back when the response is buffered.
const LAMBDA_BUFFERED_RESPONSE: usize = 6 * 1024 * 1024;

/// `tools/call` of `tool` on a fresh session of `s`: the raw body length and
/// the parsed result.
async fn call_measured(s: &common::Server, tool: &str, arguments: Value) -> (usize, Value) {
    let sid = s.initialize().await;
    let text = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name": tool, "arguments": arguments}})
    .to_string();
    let request = common::post()
        .header("mcp-session-id", sid)
        .body(Body::from(text))
        .unwrap();
    let response = mcp_v8_lambda::transport::router(s.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    (bytes.len(), body["result"].clone())
}

/// A result past the record's bound (`MCP_V8_RECORD_MAX_MB`, 32 MiB) is
/// kept up to it and marked; its stand-in names the whole size.
#[tokio::test]
async fn a_40_mb_string_result_is_cut_to_the_record_bound_with_a_marker() {
    let s = common::server();
    let (len, result) = call_measured(&s, "run_js", json!({"code": "'x'.repeat(40e6)"})).await;
    assert!(len < LAMBDA_BUFFERED_RESPONSE, "a {len}-byte response");
    let outcome = &result["structuredContent"];
    assert_eq!(outcome["status"], "completed", "{outcome}");
    // The answer has the result's stand-in; its link reads what the
    // engine kept, cut at the bound with a marker.
    let uri = outcome["result"]["uri"].as_str().unwrap();
    let read = s
        .rpc(
            Some(&s.initialize().await),
            json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": uri}}),
        )
        .await;
    let text = read.body["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(outcome["result"]["bytes"], 40_000_000);
    assert!(text.len() <= 32 * 1024 * 1024 + 100, "{}", text.len());
    assert!(
        text.ends_with(&format!(
            "[result truncated: a string of 40000000 characters, the first {} shown]",
            32 * 1024 * 1024 - 128
        )),
        "{}",
        &text[text.len() - 80..]
    );
}

/// Output of control characters is six times longer as JSON, and a
/// structured result carries it twice: the answer is cut further to fit.
#[tokio::test]
async fn output_that_escaping_would_blow_past_the_response_limit_is_cut_to_fit() {
    let s = common::server();
    let (len, result) = call_measured(
        &s,
        "run_js",
        json!({"code": "for (let i = 0; i < 40; i++) console.log('\\u0001'.repeat(60000)); 'done'"}),
    )
    .await;
    assert!(len < LAMBDA_BUFFERED_RESPONSE, "a {len}-byte response");
    let outcome = &result["structuredContent"];
    assert_eq!(outcome["result"], "\"done\"", "{outcome}");
    assert_eq!(result["isError"], false);
    assert!(
        outcome["output"]
            .as_str()
            .unwrap()
            .contains("[output truncated: "),
        "the output says it was cut: {} bytes, ends {:?}",
        outcome["output"].as_str().unwrap().len(),
        &outcome["output"].as_str().unwrap()
            [outcome["output"].as_str().unwrap().len().saturating_sub(60)..]
    );
    assert!(
        outcome["warnings"][0]
            .as_str()
            .unwrap()
            .contains("over this answer's budget"),
        "{}",
        outcome["warnings"]
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.len() <= 32 * 1024, "{}", text.len());
}

/// 1000 entries of 100 KiB of code: every page fits one response, and
/// following `next_offset` reads every entry exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_of_1000_entries_of_100_kib_is_listed_in_pages_that_fit_a_response() {
    let s = common::server();
    let session = common::logical("big-log");
    let code = format!("/* {} */ 1", "c".repeat(100 * 1024));
    for n in 0..1000u64 {
        let entry = NewLogEntry {
            input_heap: None,
            output_heap: mcp_v8_lambda::heap::HeapKey::of_payload(&n.to_le_bytes()),
            code: code.clone(),
            timestamp: "2026-11-24T00:00:00.000Z".into(),
            superseded_by: None,
        };
        s.meta
            .append_log(&Tenant::anonymous(), &session, entry)
            .await
            .unwrap();
    }
    let mut offset = 0;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let (len, result) = call_measured(
            &s,
            "list_session_snapshots",
            json!({"session": "big-log", "offset": offset}),
        )
        .await;
        pages += 1;
        assert!(len < LAMBDA_BUFFERED_RESPONSE, "page {pages}: {len} bytes");
        let page = &result["structuredContent"];
        let entries = page["entries"].as_array().unwrap();
        assert!(!entries.is_empty(), "page {pages} is empty");
        seen.extend(entries.iter().map(|e| e["index"].as_u64().unwrap()));
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    assert!(pages > 10, "pages by bytes, not 1000 entries at once");
}

/// A function URL event for `run_js` with `arguments` (2026-07-28, so no
/// session to set up), delivered with `deadline` as Lambda's context.
fn run_js_invocation(arguments: Value, deadline: SystemTime) -> lambda_http::Request {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/run-js-2026.json");
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["params"]["arguments"] = arguments;
    event["body"] = Value::String(body.to_string());
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let millis = deadline
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    request.with_lambda_context(context(millis))
}

/// Lambda's context of an invocation that ends at `millis` (Unix ms).
fn context(millis: u64) -> lambda_http::Context {
    let mut context = lambda_http::Context::default();
    context.deadline = millis;
    context
}

async fn invoke(app: &mcp_v8_lambda::transport::App, request: lambda_http::Request) -> Value {
    let response = service(app.clone(), false).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn a_run_asking_for_more_time_than_the_invocation_has_ends_timed_out_in_time() {
    let s = common::server();
    let deadline = SystemTime::now() + Duration::from_secs(6);
    let body = invoke(
        &s.app,
        run_js_invocation(
            json!({"code": "for (;;) {}", "execution_timeout_secs": 60, "session": "late"}),
            deadline,
        ),
    )
    .await;
    assert!(
        SystemTime::now() < deadline,
        "answered before the invocation's deadline"
    );
    let outcome = &body["result"]["structuredContent"];
    assert_eq!(outcome["status"], "timed_out", "{body}");
    assert!(
        outcome["warnings"].to_string().contains("timeout was cut"),
        "{outcome}"
    );
    // The advice names the timeout the run had, not the one it asked for.
    let message = outcome["error"]["message"].as_str().unwrap();
    let had: f64 = message
        .split("(this run had ")
        .nth(1)
        .and_then(|rest| rest.split(" s;").next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("no timeout named: {message}"));
    assert!(had < 6.0, "{message}");
    let id = outcome["execution_id"].as_str().unwrap().parse().unwrap();
    // The event's IAM caller is the run's tenant.
    let tenant = Tenant::of_principal("arn:aws:iam::123456789012:user/agent-operator");
    assert!(
        s.meta
            .get_execution(&tenant, id, 0)
            .await
            .unwrap()
            .is_some(),
        "the run was recorded"
    );

    let too_late = invoke(
        &s.app,
        run_js_invocation(
            json!({"code": "1"}),
            SystemTime::now() + Duration::from_secs(1),
        ),
    )
    .await;
    assert_eq!(too_late["result"]["isError"], true, "{too_late}");
    assert!(too_late.to_string().contains("too soon"), "{too_late}");
}

#[tokio::test]
async fn tools_list_advertises_the_time_the_invocation_has_left() {
    let s = common::server();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/run-js-2026.json");
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["method"] = json!("tools/list");
    body["params"] = json!({"_meta": body["params"]["_meta"].clone()});
    event["body"] = Value::String(body.to_string());
    event["headers"]["mcp-method"] = json!("tools/list");
    event["headers"].as_object_mut().unwrap().remove("mcp-name");
    let millis = (SystemTime::now() + Duration::from_secs(30))
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let request = lambda_http::request::from_str(&event.to_string())
        .unwrap()
        .with_lambda_context(context(millis));
    let body = invoke(&s.app, request).await;
    let run_js = common::listed_tool(&body["result"], "run_js");
    let maximum = run_js["inputSchema"]["properties"]["execution_timeout_secs"]["maximum"]
        .as_f64()
        .unwrap();
    assert!((20.0..30.0).contains(&maximum), "{maximum}");
}

/// A function of 512 MB offers heaps of at most 52 MiB (each run may also
/// hold as much in buffers), says so in its schema, and refuses more with a
/// message naming the bound.
#[tokio::test]
async fn the_function_memory_bounds_the_heap_limit_runs_may_ask_for() {
    let mut config = common::test_config(3600, false);
    config.engine.function_memory_mb = Some(512);
    let s = common::server_configured(config, |stores| stores);
    let sid = s.initialize().await;
    let tools = s.tools_list(&sid).await;
    let run_js = common::listed_tool(&tools, "run_js");
    assert_eq!(
        run_js["inputSchema"]["properties"]["heap_memory_max_mb"]["maximum"],
        52
    );
    let refused = s
        .call(&sid, json!({"code": "1", "heap_memory_max_mb": 100}))
        .await;
    assert_eq!(refused["isError"], true);
    assert!(refused.to_string().contains("52"), "{refused}");
    let fits = s
        .call(&sid, json!({"code": "1", "heap_memory_max_mb": 50}))
        .await;
    assert_eq!(fits["structuredContent"]["status"], "completed", "{fits}");
}

/// `cargo lambda watch` sends a duration (600000 ms) where Lambda sends an
/// epoch time: a deadline already past on arrival is no deadline, not a
/// reason to refuse every run.
#[tokio::test]
async fn a_deadline_already_past_on_arrival_is_ignored() {
    let s = common::server();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/run-js-2026.json");
    let event = std::fs::read_to_string(path).unwrap();
    let request = lambda_http::request::from_str(&event)
        .unwrap()
        .with_lambda_context(context(600_000));
    let body = invoke(&s.app, request).await;
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(
        body["result"]["structuredContent"]["result"], "42",
        "{body}"
    );
}
