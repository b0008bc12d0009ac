//! Who may call: a static bearer token for deployments whose function URL
//! has `AuthType: NONE`, and the loopback `Host` rule that keeps a local
//! `serve` out of reach of DNS rebinding.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::{HttpError, Principal};
use crate::protocol::jsonrpc::code;

/// The SHA-256 of the one token this deployment accepts
/// (`MCP_V8_AUTH_TOKEN_SHA256`): the secret itself is never configured.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenDigest(pub [u8; 32]);

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(..)")
    }
}

impl TokenDigest {
    /// Whether `token` hashes to this digest. Every byte is compared, so the
    /// time taken says nothing about how much of the digest matched.
    fn accepts(&self, token: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        presented
            .iter()
            .zip(self.0.iter())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

/// The principal of every caller holding the static token: one token, one
/// identity, so its sessions answer any holder and nobody else.
pub const STATIC_TOKEN_PRINCIPAL: &str = "bearer:static-token";

fn unauthorized(error: Option<&str>, message: &str) -> Response {
    let challenge = match error {
        Some(error) => format!("Bearer realm=\"mcp-v8-lambda\", error=\"{error}\""),
        None => "Bearer realm=\"mcp-v8-lambda\"".to_owned(),
    };
    let mut response =
        HttpError::new(StatusCode::UNAUTHORIZED, code::INVALID_REQUEST, message).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("ASCII challenge"),
    );
    response
}

/// Admits a request only with `Authorization: Bearer <token>` whose SHA-256
/// is `digest`; 401 with a `WWW-Authenticate` challenge otherwise. A caller
/// already identified by the host (Lambda's IAM) keeps that identity.
pub(super) async fn require_bearer(
    State(digest): State<TokenDigest>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(value) = request.headers().get(header::AUTHORIZATION) else {
        return unauthorized(None, "missing Authorization: Bearer token");
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match token {
        Some(token) if digest.accepts(token) => {}
        Some(_) => return unauthorized(Some("invalid_token"), "the bearer token is not valid"),
        None => {
            return unauthorized(
                Some("invalid_request"),
                "the Authorization header must be: Bearer <token>",
            );
        }
    }
    if request.extensions().get::<Principal>().is_none() {
        request
            .extensions_mut()
            .insert(Principal(STATIC_TOKEN_PRINCIPAL.to_owned()));
    }
    next.run(request).await
}

/// For a `serve` bound to loopback: a request whose `Host` is not a loopback
/// name was sent to another name that resolved here, which is how a web page
/// reaches a local server by DNS rebinding. 403 before anything is read.
pub(super) async fn loopback_host_only(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if is_loopback_host(host) {
        return next.run(request).await;
    }
    HttpError::new(
        StatusCode::FORBIDDEN,
        code::INVALID_REQUEST,
        format!(
            "Host {host:?} is not a loopback name; serve on a non-loopback --host to accept others"
        ),
    )
    .into_response()
}

fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((address, rest)) if rest.is_empty() || rest.starts_with(':') => address,
            _ => return false,
        },
        None => host.split(':').next().unwrap_or(""),
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised_with_or_without_a_port() {
        for ok in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:3000",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example.com",
            "localhost.evil.com",
            "127.0.0.2",
            "[::1]x",
            "[::2]:80",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn only_the_token_with_the_configured_digest_is_accepted() {
        let digest = TokenDigest(Sha256::digest(b"s3cret").into());
        assert!(digest.accepts("s3cret"));
        assert!(!digest.accepts("s3cre"));
        assert!(!digest.accepts("s3cret "));
        assert!(!digest.accepts(""));
    }
}
