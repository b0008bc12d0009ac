//! The MCP endpoint at the HTTP level: every status code of the transport,
//! driven through the same router `serve` and Lambda use (no socket).

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{broken_sessions, post, server, server_with};
use mcp_v8_lambda::clock::unix_now;
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::session::McpSessionId;
use mcp_v8_lambda::tenant::Tenant;
use mcp_v8_lambda::transport::{Principal, router};
use serde_json::{Value, json};
use tower::ServiceExt;

mod runs;

#[tokio::test]
async fn initialize_negotiates_persists_and_returns_a_session_id() {
    let s = server();
    let text = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"2"}}})
    .to_string();
    let request = post()
        .header("X-MCP-Session-Id", "agent-1")
        .header("X-MCP-Team", "Blue")
        .body(Body::from(text))
        .unwrap();
    let reply = s.send(request).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["content-type"], "application/json");
    let result = &reply.body["result"];
    assert_eq!(
        result["protocolVersion"], "2025-11-25",
        "unsupported versions get the newest"
    );
    assert_eq!(result["serverInfo"]["name"], "mcp-v8-lambda");
    assert!(result["instructions"].as_str().unwrap().contains("heap"));
    let id = McpSessionId::parse(reply.headers["mcp-session-id"].to_str().unwrap()).unwrap();
    let state = s
        .sessions
        .get(&id, unix_now())
        .await
        .unwrap()
        .expect("persisted");
    assert_eq!(state.protocol_version, "2025-11-25");
    assert_eq!(
        state.logical_session.as_ref().map(|s| s.as_str()),
        Some("agent-1")
    );
    assert_eq!(
        state.mcp_headers.get("team").map(String::as_str),
        Some("Blue")
    );
    assert_eq!(state.client_info.name, "c");
    assert!(state.client_capabilities.contains_key("sampling"));
    assert!(!state.initialized);
    assert!(state.expires_at > state.created_at);
}

#[tokio::test]
async fn notifications_are_accepted_without_a_body_and_mark_initialized() {
    let s = server();
    let sid = s.initialize().await;
    let reply = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::ACCEPTED);
    assert_eq!(reply.body, Value::Null);
    let state = s
        .sessions
        .get(&McpSessionId::parse(&sid).unwrap(), unix_now())
        .await
        .unwrap()
        .unwrap();
    assert!(state.initialized);
    let cancelled = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}),
        )
        .await;
    assert_eq!(cancelled.status, StatusCode::ACCEPTED);
    let client_response = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","id":"srv-1","result":{}}),
        )
        .await;
    assert_eq!(client_response.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn a_request_without_a_session_header_is_400() {
    let s = server();
    let reply = s
        .rpc(None, json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["error"]["code"], -32600);
}

#[tokio::test]
async fn unknown_malformed_and_expired_sessions_are_404_session_not_found() {
    let s = server();
    let unknown = McpSessionId::generate();
    for sid in [unknown.as_str(), "not-a-session-id"] {
        let reply = s
            .rpc(Some(sid), json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
            .await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{sid}");
        assert_eq!(reply.body["error"]["code"], -32001);
        assert_eq!(reply.body["error"]["message"], "Session not found");
    }
    let sid = s.initialize().await;
    let id = McpSessionId::parse(&sid).unwrap();
    let mut state = s.sessions.get(&id, unix_now()).await.unwrap().unwrap();
    state.expires_at = unix_now() - 1;
    s.sessions.put(&state).await.unwrap();
    let reply = s
        .rpc(Some(&sid), json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_failing_session_store_is_500_never_a_fresh_session() {
    let s = server_with(3600, false, Some(broken_sessions()));
    let reply = s
        .rpc(
            Some(McpSessionId::generate().as_str()),
            json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(reply.body["error"]["code"], -32603);
    assert!(
        !reply.body.to_string().contains("injected"),
        "internals stay in the logs"
    );
    let init = s
        .rpc(None, json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}))
        .await;
    assert_eq!(init.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(init.headers.get("mcp-session-id").is_none());
}

#[tokio::test]
async fn delete_ends_the_session_and_unknown_ones_are_404() {
    let s = server();
    let sid = s.initialize().await;
    let delete = |sid: Option<String>| {
        let mut builder = Request::builder().method("DELETE").uri("/mcp");
        if let Some(sid) = sid {
            builder = builder.header("mcp-session-id", sid);
        }
        builder.body(Body::empty()).unwrap()
    };
    assert_eq!(
        s.send(delete(Some(sid.clone()))).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        s.send(delete(Some(sid.clone()))).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(s.send(delete(None)).await.status, StatusCode::BAD_REQUEST);
    let after = s
        .rpc(Some(&sid), json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(after.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn get_is_405_with_allow() {
    let s = server();
    let reply = s
        .send(
            Request::builder()
                .method("GET")
                .uri("/mcp")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.headers["allow"], "POST, DELETE");
}

#[tokio::test]
async fn content_negotiation_errors_are_406_and_415() {
    let s = server();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let only_json = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(s.send(only_json).await.status, StatusCode::NOT_ACCEPTABLE);
    let no_accept = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(s.send(no_accept).await.status, StatusCode::NOT_ACCEPTABLE);
    let text = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(
        s.send(text).await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    let wildcard = post()
        .header("accept", "*/*")
        .body(Body::from(body))
        .unwrap();
    assert_ne!(s.send(wildcard).await.status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn malformed_json_is_400_parse_error_and_non_rpc_is_400_invalid_request() {
    let s = server();
    let sid = s.initialize().await;
    let broken = post()
        .header("mcp-session-id", &sid)
        .body(Body::from("{\"jsonrpc\": "))
        .unwrap();
    let reply = s.send(broken).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["error"]["code"], -32700);
    assert_eq!(reply.body["id"], Value::Null);
    for body in [
        json!({"jsonrpc":"2.0","id":1}),
        json!(42),
        json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
        json!([]),
    ] {
        let reply = s.rpc(Some(&sid), body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["error"]["code"], -32600, "{body}");
    }
}

#[tokio::test]
async fn batches_are_accepted_only_for_2025_03_26() {
    let s = server();
    let old = s.initialize_as("2025-03-26", &[]).await;
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":2,"method":"tools/list"}
    ]);
    let reply = s.rpc(Some(&old), batch.clone()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let answers = reply.body.as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["result"]["tools"][0]["name"], "run_js");
    let new = s.initialize_as("2025-06-18", &[]).await;
    assert_eq!(
        s.rpc(Some(&new), batch).await.status,
        StatusCode::BAD_REQUEST
    );
    let init_in_batch = json!([{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]);
    assert_eq!(
        s.rpc(None, init_in_batch).await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn the_protocol_version_header_must_match_the_negotiated_one() {
    let s = server();
    let sid = s.initialize_as("2025-06-18", &[]).await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    let with_version = |v: &str| {
        post()
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", v)
            .body(Body::from(ping.clone()))
            .unwrap()
    };
    assert_eq!(
        s.send(with_version("2025-06-18")).await.status,
        StatusCode::OK
    );
    let wrong = s.send(with_version("2025-11-25")).await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
    assert!(
        wrong.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-06-18")
    );
}

#[tokio::test]
async fn foreign_origins_are_403_and_loopback_or_listed_ones_pass() {
    let s = server();
    let ping = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    .to_string();
    let from = |origin: &str| {
        post()
            .header("origin", origin)
            .body(Body::from(ping.clone()))
            .unwrap()
    };
    assert_eq!(
        s.send(from("https://evil.example")).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        s.send(from("http://localhost:5173")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        s.send(from("https://allowed.example")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    let s = server();
    let sid = s.initialize().await;
    let reply = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","id":"x","method":"mcp-v8/no_such_method"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["id"], "x");
    assert_eq!(reply.body["error"]["code"], -32601);
}

#[tokio::test]
async fn expiry_slides_only_when_less_than_half_remains() {
    let s = server_with(1000, false, None);
    let sid = s.initialize().await;
    let id = McpSessionId::parse(&sid).unwrap();
    let fresh = s
        .sessions
        .get(&id, unix_now())
        .await
        .unwrap()
        .unwrap()
        .expires_at;
    s.rpc(Some(&sid), json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(
        s.sessions
            .get(&id, unix_now())
            .await
            .unwrap()
            .unwrap()
            .expires_at,
        fresh,
        "no write"
    );
    let mut state = s.sessions.get(&id, unix_now()).await.unwrap().unwrap();
    state.expires_at = unix_now() + 100;
    s.sessions.put(&state).await.unwrap();
    s.rpc(Some(&sid), json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    let slid = s
        .sessions
        .get(&id, unix_now())
        .await
        .unwrap()
        .unwrap()
        .expires_at;
    assert!(
        slid >= unix_now() + 990,
        "refreshed to a full lifetime: {slid}"
    );
}

#[tokio::test]
async fn another_principal_cannot_use_the_session() {
    let s = server();
    let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    .to_string();
    let mut request = post().body(Body::from(text.clone())).unwrap();
    request.extensions_mut().insert(Principal("alice".into()));
    let sid = s.send(request).await.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    let as_who = |who: Option<&str>| {
        let mut request = post()
            .header("mcp-session-id", &sid)
            .body(Body::from(ping.clone()))
            .unwrap();
        if let Some(who) = who {
            request.extensions_mut().insert(Principal(who.into()));
        }
        request
    };
    assert_eq!(s.send(as_who(Some("alice"))).await.status, StatusCode::OK);
    assert_eq!(
        s.send(as_who(Some("mallory"))).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(s.send(as_who(None)).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let s = server();
    let sid = s.initialize().await;
    let huge = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_js","arguments":{"code":"x".repeat(100_000)}}});
    let reply = s.rpc(Some(&sid), huge).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("64 KiB") && message.contains("MCP_V8_MAX_BODY_BYTES"),
        "{message}"
    );
}

#[tokio::test]
async fn deeply_nested_json_is_400_invalid_request_not_a_crash() {
    let s = server();
    let sid = s.initialize().await;
    let depth = 20_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    for body in [
        nested.clone(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"run_js","arguments":{{"code":"1","tags":{nested}}}}}}}"#
        ),
    ] {
        let request = post()
            .header("mcp-session-id", &sid)
            .body(Body::from(body.clone()))
            .unwrap();
        let reply = s.send(request).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert_eq!(reply.body["error"]["code"], -32600);
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nested deeper than 64"),
            "{}",
            reply.body
        );
    }
    assert_eq!(s.call(&sid, json!({"code": "1"})).await["isError"], false);
}

#[tokio::test]
async fn oversized_or_too_many_x_mcp_headers_are_400_and_store_nothing() {
    let s = server();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    .to_string();
    let long_session = "s".repeat(257);
    let long_value = "v".repeat(1025);
    let many: Vec<(String, String)> = (0..33)
        .map(|i| (format!("x-mcp-h{i}"), "1".to_owned()))
        .collect();
    let cases: [Vec<(String, String)>; 3] = [
        vec![("x-mcp-session-id".into(), long_session)],
        vec![("x-mcp-note".into(), long_value)],
        many,
    ];
    for headers in cases {
        let mut builder = post();
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let reply = s
            .send(builder.body(Body::from(init.clone())).unwrap())
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert_eq!(reply.body["id"], 0);
        assert!(reply.session_id().is_none(), "no session was stored");
    }
    let ok = post()
        .header("x-mcp-session-id", "s".repeat(256))
        .body(Body::from(init.clone()))
        .unwrap();
    assert_eq!(s.send(ok).await.status, StatusCode::OK);
}

/// The logical session name is checked at `initialize` as everywhere else:
/// an empty or control-character name is a 400 naming the header, and no
/// session (and so no log under that name) is made.
#[tokio::test]
async fn an_invalid_logical_session_header_at_initialize_is_400_naming_the_header() {
    let s = server();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    .to_string();
    for (value, says) in [("", "must not be empty"), ("a\tb", "control characters")] {
        let request = post()
            .header("x-mcp-session-id", value)
            .body(Body::from(init.clone()))
            .unwrap();
        let reply = s.send(request).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{value:?}: {}",
            reply.body
        );
        assert_eq!(reply.body["id"], 0);
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("X-MCP-Session-Id"), "{message}");
        assert!(message.contains(says), "{message}");
        assert!(reply.session_id().is_none(), "no session was stored");
    }
    assert!(
        s.meta
            .list_sessions(&Tenant::anonymous(), None, usize::MAX)
            .await
            .unwrap()
            .is_empty()
    );
}
