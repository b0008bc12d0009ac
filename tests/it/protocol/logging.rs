//! Logging in both eras: a run's console lines as `notifications/message`
//! on the call's stream, only for a client that asked (a session's
//! `logging/setLevel`, replayed; a 2026-07-28 request's `logLevel`), from
//! its level up, with a clear error for a level the spec does not name.
//! (The official clients, and the conformance suite's logging checks, are
//! in tests/it/clients/ and tests/it/lambda/watch.rs.)

use crate::common;

use axum::body::Body;
use common::{Server, post};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const CODE: &str = "console.debug('d'); console.log('plain'); console.info('i'); \
                    console.warn('w'); console.error('e'); 7";

fn call(id: u64, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "run_js", "arguments": {"code": CODE}, "_meta": meta}})
}

/// Sends `body` (with `headers`), returning the status, the content type
/// and the JSON-RPC messages (every event of a stream, or the one body).
async fn send(
    s: &Server,
    session: Option<&str>,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<Value>) {
    let mut builder = post();
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Body::from(body.to_string())).unwrap();
    let response = mcp_v8_lambda::transport::router(s.app.clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = std::str::from_utf8(&bytes).unwrap();
    let messages = if kind == "text/event-stream" {
        text.split("\n\n")
            .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    } else {
        vec![serde_json::from_str(text).unwrap()]
    };
    (status, kind, messages)
}

/// The log messages among `messages`, as (level, data), checking each is
/// the console's.
fn logged(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| {
            assert_eq!(m["params"]["logger"], "console", "{m}");
            let level = m["params"]["level"].as_str().unwrap().to_owned();
            (level, m["params"]["data"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(l, d)| ((*l).to_owned(), (*d).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_session_asks_with_set_level_and_gets_its_runs_console_lines_from_that_level_up() {
    let s = common::server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    // Before logging/setLevel: one JSON answer, no log.
    let (_, kind, messages) = send(&s, Some(&sid), &call(1, json!({})), &[]).await;
    assert_eq!(kind, "application/json");
    assert!(logged(&messages).is_empty(), "{messages:?}");

    // A level the spec does not name changes nothing and says which exist.
    let bad =
        json!({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"verbose"}});
    let (status, _, reply) = send(&s, Some(&sid), &bad, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(reply[0]["error"]["code"], -32602, "{reply:?}");
    let message = reply[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("debug, info, notice, warning"),
        "{message}"
    );
    let (_, kind, _) = send(&s, Some(&sid), &call(3, json!({})), &[]).await;
    assert_eq!(kind, "application/json", "the bad level set nothing");

    let set =
        json!({"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"warning"}});
    let (_, _, reply) = send(&s, Some(&sid), &set, &[]).await;
    assert_eq!(reply[0]["result"], json!({}), "{reply:?}");
    let (_, kind, messages) = send(&s, Some(&sid), &call(5, json!({})), &[]).await;
    assert_eq!(kind, "text/event-stream");
    assert_eq!(
        logged(&messages),
        pairs(&[("warning", "w"), ("error", "e")])
    );
    let last = messages.last().unwrap();
    assert_eq!(
        last["id"], 5,
        "the result ends the stream, after every line"
    );
    assert_eq!(last["result"]["structuredContent"]["result"], "7");
    // The tool result keeps the whole output, prefixes and all.
    let output = last["result"]["structuredContent"]["output"]
        .as_str()
        .unwrap();
    assert!(
        output.contains("[DEBUG] d") && output.contains("[WARN] w"),
        "{output}"
    );

    // The level is session state: lowering it reaches every later call.
    let set =
        json!({"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug"}});
    send(&s, Some(&sid), &set, &[]).await;
    let (_, _, messages) = send(&s, Some(&sid), &call(7, json!({})), &[]).await;
    assert_eq!(
        logged(&messages),
        pairs(&[
            ("debug", "d"),
            ("info", "plain"),
            ("info", "i"),
            ("warning", "w"),
            ("error", "e")
        ])
    );
}

fn modern(meta: Value) -> Value {
    let mut meta = meta;
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    call(9, meta)
}

const MODERN: &[(&str, &str)] = &[
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "run_js"),
];

#[tokio::test]
async fn a_2026_request_opts_in_with_its_log_level_and_gets_no_log_without_it() {
    let s = common::server();
    let (_, kind, messages) = send(&s, None, &modern(json!({})), MODERN).await;
    assert_eq!(kind, "application/json");
    assert!(logged(&messages).is_empty(), "{messages:?}");

    let asked = modern(json!({"io.modelcontextprotocol/logLevel": "info"}));
    let (status, kind, messages) = send(&s, None, &asked, MODERN).await;
    assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
    assert_eq!(
        logged(&messages),
        pairs(&[
            ("info", "plain"),
            ("info", "i"),
            ("warning", "w"),
            ("error", "e")
        ])
    );
    assert_eq!(messages.last().unwrap()["result"]["resultType"], "complete");

    let bad = modern(json!({"io.modelcontextprotocol/logLevel": "loud"}));
    let (status, _, reply) = send(&s, None, &bad, MODERN).await;
    assert_eq!(status, 400);
    assert_eq!(reply[0]["error"]["code"], -32602, "{reply:?}");
    let message = reply[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("io.modelcontextprotocol/logLevel must be one of"),
        "{message}"
    );
}
