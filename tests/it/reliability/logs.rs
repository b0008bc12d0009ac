//! JSON log lines carry a request's fields at the top level, where
//! CloudWatch Logs Insights and Lambda's JSON log format look for them.

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lambda_http::RequestExt;
use mcp_v8_lambda::lambda::service;
use mcp_v8_lambda::logs::{JsonLines, SpanFields};
use serde_json::{Value, json};
use tower::ServiceExt;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

thread_local! {
    /// The buffer this thread's test captures into, while its guard lives.
    static CAPTURING: std::cell::RefCell<Option<Buffer>> = const { std::cell::RefCell::new(None) };
}

/// Writes to the calling thread's capture buffer, or nowhere.
struct ThreadBuffer;

impl Write for ThreadBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CAPTURING.with(|c| {
            if let Some(buffer) = c.borrow_mut().as_mut() {
                buffer.write_all(bytes)?;
            }
            Ok(bytes.len())
        })
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Ends a test's capture on this thread.
struct Capturing;

impl Drop for Capturing {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.borrow_mut().take());
    }
}

/// JSON lines as the binary writes them, into a buffer, for as long as the
/// guard lives on this thread.
///
/// One global subscriber serves every test: a thread-scoped default
/// (`set_default`) makes tracing rebuild its global callsite interest and
/// maximum level whenever one is made or dropped, and two tests doing that
/// at once could leave a span disabled in a third, so its line lost its
/// fields (CI saw it).
fn capture() -> (Buffer, Capturing) {
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| {
        let subscriber = tracing_subscriber::registry()
            .with(SpanFields)
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(JsonLines)
                    .with_writer(|| ThreadBuffer),
            )
            .with(tracing_subscriber::filter::LevelFilter::INFO);
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other test sets a global subscriber");
    });
    let buffer = Buffer::default();
    CAPTURING.with(|c| *c.borrow_mut() = Some(buffer.clone()));
    (buffer, Capturing)
}

/// The first line `buffer` holds whose message `is`, failing with all it holds.
fn line_where(buffer: &Buffer, is: impl Fn(&str) -> bool) -> Value {
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("every line is JSON"))
        .find(|l| l["message"].as_str().is_some_and(&is))
        .unwrap_or_else(|| panic!("no such line in {text}"))
}

#[tokio::test]
async fn the_request_line_has_its_fields_at_the_top_level() {
    let (buffer, _default) = capture();

    let s = common::server();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/run-js-2026.json");
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["params"]["arguments"] = json!({"code": "globalThis.n = 41; n + 1", "session": "logged"});
    event["body"] = Value::String(body.to_string());
    let mut context = lambda_http::Context::default();
    context.request_id = "request-7".into();
    context.deadline = (SystemTime::now() + Duration::from_secs(60))
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let request = lambda_http::request::from_str(&event.to_string())
        .unwrap()
        .with_lambda_context(context);
    let response = service(s.app.clone(), false)
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let line = line_where(&buffer, |m| m == "request");
    assert_eq!(line["request_id"], "request-7", "{line}");
    assert!(line["cold_start"].is_boolean(), "{line}");
    assert_eq!(line["tool"], "run_js", "{line}");
    assert_eq!(line["status"], "completed", "{line}");
    assert_eq!(line["logical_session"], "logged", "{line}");
    // The tenant's id, never the principal (an IAM ARN, a JWT subject).
    let tenant = mcp_v8_lambda::tenant::Tenant::of_principal(
        "arn:aws:iam::123456789012:user/agent-operator",
    );
    assert_eq!(line["tenant"], tenant.id().unwrap(), "{line}");
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(!text.contains("agent-operator"), "{text}");
    assert_eq!(line["heap"].as_str().map(str::len), Some(64), "{line}");
    assert!(line["execution_id"].is_string(), "{line}");
    assert!(line["duration_ms"].is_u64(), "{line}");
    assert_eq!(line["http.status"], 200, "{line}");
    assert_eq!(line["level"], "INFO");
}

/// A call answered as an event stream ends with a line that carries the
/// run's fields, which its request line, written as the stream began, could
/// not have.
#[tokio::test]
async fn a_streamed_answer_ends_with_a_line_that_has_the_runs_fields() {
    use http_body_util::BodyExt;

    let (buffer, _default) = capture();

    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let body = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
        "name":"run_js","arguments":{"code":"6 * 7"},"_meta":{"progressToken":"p"}}});
    let text = body.to_string();
    let request = common::post()
        .header("mcp-session-id", &sid)
        .body(axum::body::Body::from(text))
        .unwrap();
    let response = mcp_v8_lambda::transport::router(s.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response.into_body().collect().await.unwrap();

    let line = line_where(&buffer, |m| m == "streamed answer ended");
    assert_eq!(line["tool"], "run_js", "{line}");
    assert_eq!(line["status"], "completed", "{line}");
    assert!(line["execution_id"].is_string(), "{line}");
    assert!(line["stream_ms"].is_u64(), "{line}");
}

/// A 2026-07-28 `tools/call` has the same request line as the session
/// era's: the tool, the run's execution id and status.
#[tokio::test]
async fn a_sessionless_call_logs_the_same_fields() {
    use http_body_util::BodyExt;

    let (buffer, _default) = capture();
    let s = common::server();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "run_js", "arguments": {"code": "6 * 7"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "logs-test", "version": "1"}
    }}});
    let request = common::post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_js")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = mcp_v8_lambda::transport::router(s.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.into_body().collect().await.unwrap();

    let line = line_where(&buffer, |m| m == "request");
    assert_eq!(line["rpc.method"], "tools/call", "{line}");
    assert_eq!(line["tool"], "run_js", "{line}");
    assert_eq!(line["status"], "completed", "{line}");
    assert!(line["execution_id"].is_string(), "{line}");
}

/// A call whose client gives up before the answer (its own timeout)
/// still leaves its request line, saying so.
#[tokio::test]
async fn a_call_the_client_abandons_leaves_a_line() {
    let (buffer, _default) = capture();
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "run_js", "arguments": {"code": "await new Promise((r) => setTimeout(r, 3000)); 1"}}});
    let request = common::post()
        .header("mcp-session-id", &sid)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let call = mcp_v8_lambda::transport::router(s.app.clone()).oneshot(request);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err(),
        "the run takes 3 s"
    );

    let line = line_where(&buffer, |m| m.starts_with("request abandoned"));
    assert_eq!(line["tool"], "run_js", "{line}");
    assert_eq!(line["rpc.method"], "tools/call", "{line}");
    assert!(line["duration_ms"].is_u64(), "{line}");
    assert_eq!(line["level"], "WARN", "{line}");
}
