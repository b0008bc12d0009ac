//! Who may call: bearer tokens (a static token, or JWTs from one issuer) for
//! deployments whose function URL has `AuthType: NONE`, and the loopback
//! `Host` rule that keeps a local `serve` out of reach of DNS rebinding.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

use super::envelope::HttpError;
use super::headers::Principal;
use super::jwt::{JwtError, JwtVerifier, ResourceMetadata};
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
    /// Whether `token` hashes to this digest, compared in constant time so
    /// the time taken says nothing about how much of the digest matched.
    fn accepts(&self, token: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        presented.ct_eq(&self.0).into()
    }
}

/// The principal of every caller holding the static token: one token, one
/// identity, so its sessions answer any holder and nobody else.
pub const STATIC_TOKEN_PRINCIPAL: &str = "bearer:static-token";

/// The path of the RFC 9728 protected-resource metadata.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Which bearer tokens are accepted: the static token, JWTs from one
/// issuer, or either. With neither, requests need no token.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    /// `MCP_V8_AUTH_TOKEN_SHA256`.
    pub token: Option<TokenDigest>,
    /// `MCP_V8_JWKS_URL` with its issuer and audience.
    pub jwt: Option<JwtVerifier>,
}

impl Authenticator {
    /// Whether requests need a token at all.
    pub fn is_required(&self) -> bool {
        self.token.is_some() || self.jwt.is_some()
    }

    /// The principal `token` proves, or why it proves none.
    async fn principal(&self, token: &str) -> Result<String, JwtError> {
        if let Some(digest) = &self.token
            && digest.accepts(token)
        {
            return Ok(STATIC_TOKEN_PRINCIPAL.to_owned());
        }
        match &self.jwt {
            Some(jwt) => jwt.verify(token).await,
            None => Err(JwtError::Invalid("the bearer token is not valid".into())),
        }
    }
}

/// The MCP endpoint as the client addressed it, for the metadata and the
/// challenge: https, except on loopback names.
fn resource_base(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = if is_loopback_host(host) {
        "http"
    } else {
        "https"
    };
    format!("{scheme}://{host}")
}

fn unauthorized(
    auth: &Authenticator,
    headers: &HeaderMap,
    error: Option<&str>,
    message: &str,
) -> Response {
    let mut challenge = "Bearer realm=\"mcp-v8-lambda\"".to_owned();
    if let Some(error) = error {
        challenge.push_str(&format!(", error=\"{error}\""));
    }
    if auth.jwt.is_some() {
        challenge.push_str(&format!(
            ", resource_metadata=\"{}{RESOURCE_METADATA_PATH}\"",
            resource_base(headers)
        ));
    }
    crate::observe::refused(crate::observe::Refusal::Auth);
    let mut response =
        HttpError::new(StatusCode::UNAUTHORIZED, code::INVALID_REQUEST, message).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Admits a request only with `Authorization: Bearer <token>` that the
/// static digest or the JWT issuer accepts; 401 with a `WWW-Authenticate`
/// challenge otherwise. The RFC 9728 metadata is served without a token. A
/// caller already identified by the host (Lambda's IAM) keeps that identity.
pub(super) async fn require_bearer(
    State(auth): State<Authenticator>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.uri().path().starts_with(RESOURCE_METADATA_PATH) {
        return next.run(request).await;
    }
    let headers = request.headers();
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return unauthorized(&auth, headers, None, "missing Authorization: Bearer token");
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(token) = token else {
        return unauthorized(
            &auth,
            headers,
            Some("invalid_request"),
            "the Authorization header must be: Bearer <token>",
        );
    };
    let principal = match auth.principal(token).await {
        Ok(principal) => principal,
        Err(JwtError::KeysUnavailable) => {
            return HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                code::INTERNAL_ERROR,
                JwtError::KeysUnavailable.to_string(),
            )
            .into_response();
        }
        Err(e @ JwtError::Invalid(_)) => {
            return unauthorized(&auth, headers, Some("invalid_token"), &e.to_string());
        }
    };
    if request.extensions().get::<Principal>().is_none() {
        request.extensions_mut().insert(Principal(principal));
    }
    next.run(request).await
}

/// RFC 9728 metadata: this resource and the issuer of its tokens.
pub(super) async fn resource_metadata(
    State(jwt): State<JwtVerifier>,
    headers: HeaderMap,
) -> axum::Json<ResourceMetadata> {
    axum::Json(ResourceMetadata {
        resource: format!("{}/mcp", resource_base(&headers)),
        authorization_servers: vec![jwt.settings().issuer.clone()],
        bearer_methods_supported: ["header"],
    })
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
    crate::observe::refused(crate::observe::Refusal::Auth);
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
