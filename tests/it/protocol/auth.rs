//! Who may call: the static bearer token (`MCP_V8_AUTH_TOKEN_SHA256`) on
//! every host, and the loopback `Host` rule of a local `serve`.

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{Reply, post, reply};
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::transport::{Principal, STATIC_TOKEN_PRINCIPAL, loopback_only, router};
use serde_json::json;
use sha2::{Digest, Sha256};
use tower::ServiceExt;

const TOKEN: &str = "correct horse battery staple";

fn guarded(dir: &std::path::Path) -> Router {
    let digest = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let app = crate::common::app_on_workers(
        &Config::from_lookup(|name| (name == "MCP_V8_AUTH_TOKEN_SHA256").then(|| digest.clone()))
            .unwrap(),
        dir,
        None,
    );
    router(app)
}

fn initialize_request(authorization: Option<&str>) -> Request<Body> {
    let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"auth-test","version":"1"}}})
    .to_string();
    let mut builder = post();
    if let Some(value) = authorization {
        builder = builder.header("authorization", value);
    }
    builder.body(Body::from(text)).unwrap()
}

async fn send(router: &Router, request: Request<Body>) -> Reply {
    reply(router.clone().oneshot(request).await.unwrap()).await
}

#[tokio::test]
async fn without_the_token_every_request_is_401_with_a_bearer_challenge() {
    let dir = tempfile::tempdir().unwrap();
    let router = guarded(dir.path());
    for (authorization, error) in [
        (None, None),
        (Some("Bearer wrong"), Some("invalid_token")),
        (Some(&*format!("Bearer {TOKEN}x")), Some("invalid_token")),
        (Some(&*format!("Basic {TOKEN}")), Some("invalid_request")),
    ] {
        let reply = send(&router, initialize_request(authorization)).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{authorization:?}");
        let challenge = reply.headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        if let Some(error) = error {
            assert!(challenge.contains(error), "{challenge}");
        }
        assert!(reply.session_id().is_none());
        assert!(
            !reply.body.to_string().contains(TOKEN),
            "the token is never echoed"
        );
    }
    // The 2026-07-28 path is guarded too.
    let discover = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("mcp-protocol-version", "2026-07-28")
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        send(&router, discover).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_token_opens_a_session_that_only_token_holders_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let router = guarded(dir.path());
    let bearer = format!("Bearer {TOKEN}");
    let init = send(&router, initialize_request(Some(&bearer))).await;
    assert_eq!(init.status, StatusCode::OK, "{}", init.body);
    let sid = init.session_id().unwrap();

    let list = |authorization: Option<&str>, principal: Option<&str>| {
        let text = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string();
        let mut builder = post().header("mcp-session-id", &sid);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        let mut request = builder.body(Body::from(text)).unwrap();
        if let Some(principal) = principal {
            request
                .extensions_mut()
                .insert(Principal(principal.to_owned()));
        }
        request
    };
    assert_eq!(
        send(&router, list(Some(&bearer), None)).await.status,
        StatusCode::OK
    );
    assert_eq!(
        send(&router, list(None, None)).await.status,
        StatusCode::UNAUTHORIZED
    );
    // A host-identified caller (Lambda's IAM) keeps its own identity, so the
    // token's session is not theirs even with the token.
    assert_eq!(
        send(&router, list(Some(&bearer), Some("arn:aws:iam::1:user/x")))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // The session belongs to the token's principal.
    assert_eq!(
        send(&router, list(Some(&bearer), Some(STATIC_TOKEN_PRINCIPAL)))
            .await
            .status,
        StatusCode::OK
    );
}

#[test]
fn a_malformed_token_digest_is_a_configuration_error_that_hides_the_value() {
    let error = Config::from_lookup(|name| {
        (name == "MCP_V8_AUTH_TOKEN_SHA256").then(|| "my-plain-token".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains("MCP_V8_AUTH_TOKEN_SHA256"), "{error}");
    assert!(!error.contains("my-plain-token"), "{error}");
}

#[tokio::test]
async fn a_loopback_serve_refuses_foreign_host_names() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        crate::common::app_on_workers(&Config::from_lookup(|_| None).unwrap(), dir.path(), None);
    let router = loopback_only(router(app));
    let with_host = |host: &str| {
        let mut request = initialize_request(None);
        request.headers_mut().insert("host", host.parse().unwrap());
        request
    };
    for host in ["evil.example.com", "evil.example.com:3000", "127.0.0.2"] {
        let reply = send(&router, with_host(host)).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{host}");
        assert!(reply.session_id().is_none());
    }
    for host in ["localhost:3000", "127.0.0.1:3000", "[::1]:3000"] {
        assert_eq!(
            send(&router, with_host(host)).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
}
