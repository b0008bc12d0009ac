//! Protocol 2026-07-28 on the shared endpoint, at the HTTP level: no
//! sessions, the per-request `_meta` envelope, the standard headers checked
//! against the body, and every error with its HTTP status.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{Reply, Server, broken_sessions, post, server, server_with};
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "sessionless-test", "version": "1.0"}
    })
}

/// A request as a 2026-07-28 client sends it: `_meta` in params, and the
/// version, method and (for `tools/call`) name headers matching the body.
fn request(method: &str, mut params: Value) -> (Value, Vec<(&'static str, String)>) {
    params["_meta"] = envelope();
    let mut headers = vec![
        ("mcp-protocol-version", VERSION.to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = params["name"].as_str() {
        headers.push(("mcp-name", name.to_owned()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    (body, headers)
}

async fn send(s: &Server, body: &Value, headers: &[(&str, String)]) -> Reply {
    let text = body.to_string();
    let mut builder = post();
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    s.send(builder.body(Body::from(text)).unwrap()).await
}

async fn call(s: &Server, method: &str, params: Value) -> Reply {
    let (body, headers) = request(method, params);
    send(s, &body, &headers).await
}

fn assert_error(reply: &Reply, status: StatusCode, code: i64) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], code, "{}", reply.body);
    assert_eq!(reply.body["id"], 7, "errors answer the request id");
}

#[tokio::test]
async fn discover_lists_every_version_and_signs_the_result() {
    let s = server();
    let reply = call(&s, "server/discover", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let result = &reply.body["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-v8-lambda"
    );
    assert!(
        reply.session_id().is_none(),
        "no session is issued in 2026-07-28"
    );
}

#[tokio::test]
async fn tools_list_is_deterministic_and_carries_caching_hints() {
    let s = server();
    let first = call(&s, "tools/list", json!({})).await;
    let second = call(&s, "tools/list", json!({})).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body, second.body);
    let result = &first.body["result"];
    assert_eq!(result["ttlMs"], 300_000);
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["resultType"], "complete");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "run_js");
    assert!(names.contains(&"list_session_snapshots"), "{names:?}");
    assert!(
        result["tools"][0]["inputSchema"]["properties"]["session"].is_object(),
        "run_js takes a session argument"
    );
}

#[tokio::test]
async fn no_session_store_is_read_and_a_sent_session_id_is_ignored() {
    // Every call of this store fails: a 2026-07-28 request must not need it.
    let s = server_with(3600, false, Some(broken_sessions()));
    let (body, mut headers) = request(
        "tools/call",
        json!({"name": "run_js", "arguments": {"code": "6 * 7"}}),
    );
    headers.push(("mcp-session-id", "f".repeat(64)));
    let reply = send(&s, &body, &headers).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let result = &reply.body["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["result"], "42");
    assert_eq!(result["resultType"], "complete");
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
}

#[tokio::test]
async fn the_session_argument_keeps_a_log_and_heaps_continue_by_key() {
    let s = server();
    let run = |code: &str, heap: Option<&str>| {
        let mut arguments = json!({"code": code, "session": "agent-7"});
        if let Some(heap) = heap {
            arguments["heap"] = json!(heap);
        }
        json!({"name": "run_js", "arguments": arguments})
    };
    let first = call(&s, "tools/call", run("globalThis.n = 40; n", None)).await;
    let heap = first.body["result"]["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = call(&s, "tools/call", run("n += 2; n", Some(&heap))).await;
    assert_eq!(
        second.body["result"]["structuredContent"]["result"], "42",
        "{}",
        second.body
    );

    let log = call(
        &s,
        "tools/call",
        json!({"name": "list_session_snapshots", "arguments": {"session": "agent-7", "fields": "index,input_heap"}}),
    )
    .await;
    let entries = &log.body["result"]["structuredContent"]["entries"];
    assert_eq!(
        *entries,
        json!([{"index": 0, "input_heap": null}, {"index": 1, "input_heap": heap}])
    );

    // A 2025 session sees the same log by the argument, whatever its header says.
    let sid = s
        .initialize_as("2025-11-25", &[("x-mcp-session-id", "other")])
        .await;
    let seen = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "agent-7", "fields": "index"}),
        )
        .await;
    assert_eq!(
        seen["structuredContent"]["entries"],
        json!([{"index": 0}, {"index": 1}])
    );
}

#[tokio::test]
async fn an_oversized_logical_session_header_is_400() {
    let s = server();
    let (body, mut headers) = request(
        "tools/call",
        json!({"name": "run_js", "arguments": {"code": "1"}}),
    );
    headers.push(("x-mcp-session-id", "s".repeat(257)));
    let reply = send(&s, &body, &headers).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32600);
}

#[tokio::test]
async fn a_bad_session_argument_is_a_tool_error() {
    let s = server();
    for bad in [json!(""), json!("a\nb"), json!("x".repeat(257)), json!(5)] {
        let reply = call(
            &s,
            "tools/call",
            json!({"name": "run_js", "arguments": {"code": "1", "session": bad}}),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(
            reply.body["result"]["isError"], true,
            "{bad}: {}",
            reply.body
        );
    }
}

#[tokio::test]
async fn a_missing_or_partial_envelope_is_400_invalid_params() {
    let s = server();
    let headers = |method: &str| {
        vec![
            ("mcp-protocol-version", VERSION.to_owned()),
            ("mcp-method", method.to_owned()),
        ]
    };
    let without_params = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    let reply = send(&s, &without_params, &headers("tools/list")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32602);

    for missing in [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
    ] {
        let mut meta = envelope();
        meta.as_object_mut().unwrap().remove(missing);
        let body =
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}});
        let reply = send(&s, &body, &headers("tools/list")).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, -32602);
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(missing),
            "{}",
            reply.body
        );
    }

    // clientInfo is optional.
    let mut meta = envelope();
    meta.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}});
    assert_eq!(
        send(&s, &body, &headers("tools/list")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn headers_that_disagree_with_the_body_are_400_header_mismatch() {
    let s = server();
    let (body, headers) = request(
        "tools/call",
        json!({"name": "run_js", "arguments": {"code": "1"}}),
    );
    let with = |name: &'static str, value: Option<&str>| {
        let mut changed: Vec<(&'static str, String)> = headers
            .iter()
            .filter(|(n, _)| *n != name)
            .cloned()
            .collect();
        if let Some(value) = value {
            changed.push((name, value.to_owned()));
        }
        changed
    };
    for (name, value) in [
        ("mcp-method", Some("tools/list")),
        ("mcp-method", Some("TOOLS/CALL")),
        ("mcp-method", None),
        ("mcp-name", Some("list_sessions")),
        ("mcp-name", None),
    ] {
        let reply = send(&s, &body, &with(name, value)).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, -32020);
        // The message quotes the header as sent, or says it is absent: no
        // Rust `Some(..)`/`None`.
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        let shown = value.map_or_else(|| "(absent)".to_owned(), |v| format!("\"{v}\""));
        assert!(message.contains(&shown), "{message}");
        assert!(
            !message.contains("Some(") && !message.contains("None"),
            "{message}"
        );
    }
    // Surrounding whitespace is not part of a header value.
    let reply = send(&s, &body, &with("mcp-name", Some("  run_js  "))).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    // The header says 2026-07-28, the body another version.
    let mut mismatched = body.clone();
    mismatched["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
    let reply = send(&s, &mismatched, &headers).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32020);
}

#[tokio::test]
async fn an_unsupported_version_is_400_and_names_the_supported_ones() {
    let s = server();
    let mut body = request("server/discover", json!({})).0;
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let headers = [
        ("mcp-protocol-version", "2099-01-01".to_owned()),
        ("mcp-method", "server/discover".to_owned()),
    ];
    let reply = send(&s, &body, &headers).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32022);
    assert_eq!(reply.body["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(
        reply.body["error"]["data"]["supported"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
    );
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    let s = server();
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "no/such",
    ] {
        let reply = call(&s, method, json!({})).await;
        assert_error(&reply, StatusCode::NOT_FOUND, -32601);
    }
}

#[tokio::test]
async fn unknown_tools_and_bad_params_are_400_invalid_params() {
    let s = server();
    let reply = call(
        &s,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    )
    .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32602);
    let reply = call(&s, "tools/call", json!({"arguments": {}})).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, -32602);
    // A tool's own failure is a result, not a protocol error.
    let reply = call(
        &s,
        "tools/call",
        json!({"name": "run_js", "arguments": {"code": "throw new Error('boom')"}}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["result"]["isError"], true);
}

#[tokio::test]
async fn batches_and_posted_responses_are_400_and_notifications_202() {
    let s = server();
    let headers = [
        ("mcp-protocol-version", VERSION.to_owned()),
        ("mcp-method", "tools/list".to_owned()),
    ];
    let (single, _) = request("tools/list", json!({}));
    let batch = json!([single]);
    assert_eq!(
        send(&s, &batch, &headers).await.status,
        StatusCode::BAD_REQUEST
    );
    let response = json!({"jsonrpc": "2.0", "id": 1, "result": {}});
    assert_eq!(
        send(&s, &response, &headers).await.status,
        StatusCode::BAD_REQUEST
    );
    let malformed = post().header("mcp-protocol-version", VERSION);
    let reply = s.send(malformed.body(Body::from("{")).unwrap()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["error"]["code"], -32700);
    let notification =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_eq!(
        send(&s, &notification, &headers).await.status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn get_and_delete_are_405() {
    let s = server();
    for method in ["GET", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("mcp-protocol-version", VERSION)
            .body(Body::empty())
            .unwrap();
        let reply = s.send(request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(reply.headers["allow"], "POST");
    }
}

#[tokio::test]
async fn session_clients_are_unaffected_and_never_offered_2026_07_28() {
    let s = server();
    let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name":"c","version":"1"}}})
    .to_string();
    let reply = s.send(post().body(Body::from(text)).unwrap()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["result"]["protocolVersion"], "2025-11-25");
    let sid = reply.session_id().unwrap();
    let result = s.call(&sid, json!({"code": "1 + 1"})).await;
    assert_eq!(result["structuredContent"]["result"], "2");
    assert!(
        result.get("resultType").is_none(),
        "session-era results are unchanged"
    );
}

/// Protocol 2026-07-28 has no MCP session: the answers that need a
/// logical session say to pass the `session` argument or send the
/// X-MCP-Session-Id header, and the header does name one there.
#[tokio::test]
async fn answers_that_need_a_session_name_the_session_argument() {
    let s = server();
    let latest = call(
        &s,
        "tools/call",
        json!({"name": "run_js", "arguments": {"code": "1", "heap": "latest"}}),
    )
    .await;
    assert_eq!(latest.body["result"]["isError"], true, "{}", latest.body);
    let text = latest.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("pass the session argument"), "{text}");
    assert!(text.contains("X-MCP-Session-Id"), "{text}");
    assert!(!text.contains("no session header"), "{text}");
    let log = call(
        &s,
        "tools/call",
        json!({"name": "list_session_snapshots", "arguments": {}}),
    )
    .await;
    let error = &log.body["result"]["structuredContent"]["entries"][0]["error"];
    let error = error.as_str().unwrap_or_else(|| panic!("{}", log.body));
    assert!(error.contains("pass the session argument"), "{error}");
    assert!(error.contains("X-MCP-Session-Id"), "{error}");
    // What the messages say works: the header names the logical session.
    for (code, expected) in [("globalThis.v = 41; v", "41"), ("v + 1", "42")] {
        let (body, mut headers) = request(
            "tools/call",
            json!({"name": "run_js", "arguments": {"code": code, "heap": "latest"}}),
        );
        headers.push(("x-mcp-session-id", "by-header".to_owned()));
        let reply = send(&s, &body, &headers).await;
        assert_eq!(
            reply.body["result"]["structuredContent"]["result"], expected,
            "{}",
            reply.body
        );
    }
}
