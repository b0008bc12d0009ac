//! Bearer JWTs verified against a JWKS served by the test on a loopback
//! port: the subject becomes the session principal, every kind of bad token
//! is 401 with a challenge naming the RFC 9728 metadata, and keys are
//! fetched once per instance.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{Reply, post, reply};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::transport::router;
use serde_json::{Value, json};
use tower::ServiceExt;

pub(crate) const ISSUER: &str = "https://issuer.example";
pub(crate) const AUDIENCE: &str = "https://mcp.example/mcp";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// Serves tests/fixtures/jwks.json on a free loopback port; counts fetches.
pub(crate) async fn jwks_server() -> (String, Arc<AtomicUsize>) {
    let fetches = Arc::new(AtomicUsize::new(0));
    let counter = fetches.clone();
    let jwks = fixture("jwks.json");
    let app = Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let jwks = jwks.clone();
            async move { ([("content-type", "application/json")], jwks) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fetches)
}

fn guarded(dir: &std::path::Path, jwks_url: &str) -> Router {
    let vars = [
        ("MCP_V8_JWKS_URL", jwks_url.to_owned()),
        ("MCP_V8_JWT_ISSUER", ISSUER.to_owned()),
        ("MCP_V8_JWT_AUDIENCE", AUDIENCE.to_owned()),
    ];
    let app = crate::common::app_on_workers(
        &Config::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        })
        .unwrap(),
        dir,
        None,
    );
    router(app)
}

fn now() -> i64 {
    mcp_v8_lambda::clock::unix_now()
}

/// A token for `claims`, signed by fixture key `signer` and naming `kid`.
fn token(claims: Value, signer: &str, kid: &str) -> String {
    let key = EncodingKey::from_ec_pem(fixture(&format!("{signer}.pem")).as_bytes()).unwrap();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 600})
}

pub(crate) fn good(sub: &str) -> String {
    token(claims(sub), "test-key-1", "test-key-1")
}

fn request(body: Value, bearer: Option<&str>, session: Option<&str>) -> Request<Body> {
    let text = body.to_string();
    let mut builder = post().header("host", "localhost:3000");
    if let Some(token) = bearer {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder.body(Body::from(text)).unwrap()
}

fn initialize_request(bearer: Option<&str>) -> Request<Body> {
    request(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"jwt-test","version":"1"}}}),
        bearer,
        None,
    )
}

async fn send(router: &Router, request: Request<Body>) -> Reply {
    reply(router.clone().oneshot(request).await.unwrap()).await
}

#[tokio::test]
async fn the_token_subject_is_the_session_principal() {
    let (jwks, fetches) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let router = guarded(dir.path(), &jwks);
    let alice = good("alice");
    let init = send(&router, initialize_request(Some(&alice))).await;
    assert_eq!(init.status, StatusCode::OK, "{}", init.body);
    let sid = init.session_id().unwrap();
    let list = |token: &str| {
        request(
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            Some(token),
            Some(&sid),
        )
    };
    assert_eq!(send(&router, list(&alice)).await.status, StatusCode::OK);
    // A valid token of another subject does not reach alice's session.
    assert_eq!(
        send(&router, list(&good("bob"))).await.status,
        StatusCode::NOT_FOUND
    );
    for _ in 0..5 {
        assert_eq!(send(&router, list(&alice)).await.status, StatusCode::OK);
    }
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "the keys are fetched once per instance"
    );
}

#[tokio::test]
async fn every_bad_token_is_401_with_a_challenge_naming_the_metadata() {
    let (jwks, fetches) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let router = guarded(dir.path(), &jwks);
    let mut expired = claims("alice");
    expired["exp"] = json!(now() - 3600);
    let mut other_issuer = claims("alice");
    other_issuer["iss"] = json!("https://evil.example");
    let mut other_audience = claims("alice");
    other_audience["aud"] = json!("https://other.example/mcp");
    let mut no_subject = claims("alice");
    no_subject.as_object_mut().unwrap().remove("sub");
    let hs256 = jsonwebtoken::encode(
        &Header {
            kid: Some("test-key-1".into()),
            ..Header::new(Algorithm::HS256)
        },
        &claims("alice"),
        &EncodingKey::from_secret(fixture("jwks.json").as_bytes()),
    )
    .unwrap();
    let cases = [
        ("expired", token(expired, "test-key-1", "test-key-1")),
        (
            "other issuer",
            token(other_issuer, "test-key-1", "test-key-1"),
        ),
        (
            "other audience",
            token(other_audience, "test-key-1", "test-key-1"),
        ),
        ("no subject", token(no_subject, "test-key-1", "test-key-1")),
        (
            "signed by another key",
            token(claims("alice"), "test-key-2", "test-key-1"),
        ),
        (
            "unknown key id",
            token(claims("alice"), "test-key-2", "test-key-2"),
        ),
        ("HMAC with the public key", hs256),
        ("not a JWT", "garbage".to_owned()),
    ];
    for (what, bad) in &cases {
        let reply = send(&router, initialize_request(Some(bad))).await;
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "{what}: {}",
            reply.body
        );
        let challenge = reply.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(reply.session_id().is_none(), "{what}");
    }
    let reply = send(&router, initialize_request(None)).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let challenge = reply.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"http://localhost:3000/.well-known/oauth-protected-resource\""
        ),
        "{challenge}"
    );
    assert!(
        fetches.load(Ordering::SeqCst) <= 2,
        "unknown key ids do not turn into a stream of JWKS fetches"
    );
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_without_a_token() {
    let (jwks, _) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let router = guarded(dir.path(), &jwks);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let request = Request::builder()
            .uri(path)
            .header("host", "abc.lambda-url.us-east-1.on.aws")
            .body(Body::empty())
            .unwrap();
        let reply = send(&router, request).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(
            reply.body["resource"],
            "https://abc.lambda-url.us-east-1.on.aws/mcp"
        );
        assert_eq!(reply.body["authorization_servers"], json!([ISSUER]));
    }
}

#[tokio::test]
async fn unreachable_keys_are_503_not_a_verdict_on_the_token() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on the discard port.
    let router = guarded(dir.path(), "http://127.0.0.1:9/jwks.json");
    let reply = send(&router, initialize_request(Some(&good("alice")))).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.body
    );
    assert_eq!(reply.body["error"]["code"], -32603);
}

#[test]
fn a_jwks_url_needs_an_issuer_and_an_audience() {
    let error = Config::from_lookup(|name| {
        (name == "MCP_V8_JWKS_URL").then(|| "https://issuer.example/jwks".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains("MCP_V8_JWT_ISSUER"), "{error}");
}
