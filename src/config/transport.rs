//! The transport's part of the configuration: sessions, origins, auth,
//! streaming.

use super::ConfigError;
use super::vars::{Least, Vars};
use crate::transport::{JwtSettings, TokenDigest};
use crate::units::MIB;

/// The transport's part of the configuration.
#[derive(Debug, Clone)]
pub struct TransportSettings {
    /// `MCP_V8_SESSION_TTL_SECS`: how long an idle transport session lives.
    pub session_ttl_secs: i64,
    /// `MCP_V8_ALLOWED_ORIGINS`.
    pub allowed_origins: Vec<String>,
    /// `MCP_V8_MAX_BODY_BYTES`.
    pub max_body_bytes: usize,
    /// `MCP_V8_HTTP_HEADER_TIMEOUT_MS`: under `serve`, longest a client may
    /// take to send a request's headers, and longest an idle kept-alive
    /// connection stays open.
    pub header_timeout_ms: u64,
    /// `MCP_V8_HTTP_BODY_TIMEOUT_MS`: under `serve`, longest a client may
    /// take to send a request's body.
    pub body_timeout_ms: u64,
    /// `MCP_V8_MAX_CONNECTIONS`: under `serve`, connections open at once;
    /// `None`: from the file-descriptor limit.
    pub max_connections: Option<usize>,
    /// `MCP_V8_MAX_WAITING_PER_ADDRESS`: under `serve`, connections one
    /// address may hold that have not finished sending a request; `None`:
    /// half the connection cap.
    pub max_waiting_per_address: Option<usize>,
    /// `MCP_V8_AUTH_TOKEN_SHA256`: when set, every request needs the bearer
    /// token with this SHA-256 (64 hex digits).
    pub auth_token_sha256: Option<TokenDigest>,
    /// `MCP_V8_JWKS_URL`, `MCP_V8_JWT_ISSUER`, `MCP_V8_JWT_AUDIENCE`: bearer
    /// JWTs verified against the issuer's keys.
    pub jwt: Option<JwtSettings>,
    /// `MCP_V8_ALLOW_UNAUTHENTICATED`: under Lambda, serve requests that
    /// carry no IAM caller while no bearer token or JWT is configured
    /// (refused with 401 otherwise).
    pub allow_unauthenticated: bool,
    /// `MCP_V8_SHARED_NAMESPACE`: every authenticated caller works in one
    /// namespace (the anonymous layout) instead of a tenant of its own.
    pub shared_namespace: bool,
    /// `MCP_V8_CONTINUE_SESSIONS`: a `run_js` call that names a logical
    /// session and omits `heap` continues the session (`"latest"`) instead
    /// of starting fresh, the original server's meaning; `heap: ""` still
    /// starts fresh.
    pub continue_sessions: bool,
    /// Whether responses may stream (progress before a tool result):
    /// always under `serve`; under Lambda only when
    /// `MCP_V8_INVOKE_MODE=RESPONSE_STREAM`, the function URL's invoke mode
    /// (a `BUFFERED` URL would hold the stream back whole).
    pub response_streaming: bool,
}

impl TransportSettings {
    pub(super) fn from_vars<F: Fn(&str) -> Option<String>>(
        vars: &Vars<F>,
        under_lambda: bool,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            session_ttl_secs: vars.number("MCP_V8_SESSION_TTL_SECS", 86_400, Least::One)?,
            allowed_origins: vars.list("MCP_V8_ALLOWED_ORIGINS"),
            max_body_bytes: vars.number("MCP_V8_MAX_BODY_BYTES", MIB, Least::One)?,
            header_timeout_ms: vars.number("MCP_V8_HTTP_HEADER_TIMEOUT_MS", 10_000, Least::One)?,
            body_timeout_ms: vars.number("MCP_V8_HTTP_BODY_TIMEOUT_MS", 30_000, Least::One)?,
            max_connections: vars
                .get("MCP_V8_MAX_CONNECTIONS")
                .is_some()
                .then(|| vars.number("MCP_V8_MAX_CONNECTIONS", 1, Least::One))
                .transpose()?,
            max_waiting_per_address: vars
                .get("MCP_V8_MAX_WAITING_PER_ADDRESS")
                .is_some()
                .then(|| vars.number("MCP_V8_MAX_WAITING_PER_ADDRESS", 1, Least::One))
                .transpose()?,
            auth_token_sha256: vars.token_digest()?,
            jwt: vars.jwt()?,
            allow_unauthenticated: vars.flag("MCP_V8_ALLOW_UNAUTHENTICATED")?,
            shared_namespace: vars.flag("MCP_V8_SHARED_NAMESPACE")?,
            continue_sessions: vars.flag("MCP_V8_CONTINUE_SESSIONS")?,
            response_streaming: vars.invoke_mode(under_lambda)?,
        })
    }
}

/// The transport's reads that are more than a number or a flag.
impl<F: Fn(&str) -> Option<String>> Vars<F> {
    /// `MCP_V8_INVOKE_MODE`: whether responses may stream. A local server
    /// always may; a function only when its URL streams, which the
    /// deployment says (the template sets it from its `InvokeMode`).
    pub(super) fn invoke_mode(&self, under_lambda: bool) -> Result<bool, ConfigError> {
        match self
            .non_empty("MCP_V8_INVOKE_MODE")
            .as_deref()
            .map(str::trim)
        {
            None => Ok(!under_lambda),
            Some("RESPONSE_STREAM") => Ok(true),
            Some("BUFFERED") => Ok(false),
            Some(other) => Err(ConfigError {
                name: "MCP_V8_INVOKE_MODE",
                value: other.to_owned(),
                reason: "expected RESPONSE_STREAM or BUFFERED".into(),
            }),
        }
    }

    /// `MCP_V8_AUTH_TOKEN_SHA256`: the bearer token's digest, when set.
    pub(super) fn token_digest(&self) -> Result<Option<TokenDigest>, ConfigError> {
        let Some(text) = self.non_empty("MCP_V8_AUTH_TOKEN_SHA256") else {
            return Ok(None);
        };
        let mut digest = [0u8; 32];
        hex::decode_to_slice(text.to_ascii_lowercase(), &mut digest).map_err(|_| ConfigError {
            name: "MCP_V8_AUTH_TOKEN_SHA256",
            value: "(not shown)".to_owned(),
            reason: "expected the token's SHA-256 as 64 hex digits".into(),
        })?;
        Ok(Some(TokenDigest(digest)))
    }

    /// `MCP_V8_JWKS_URL` with its issuer and audience, when set.
    pub(super) fn jwt(&self) -> Result<Option<JwtSettings>, ConfigError> {
        let Some(jwks_url) = self.non_empty("MCP_V8_JWKS_URL") else {
            return Ok(None);
        };
        let required = |name: &'static str| {
            self.non_empty(name).ok_or(ConfigError {
                name,
                value: String::new(),
                reason: "required when MCP_V8_JWKS_URL is set".into(),
            })
        };
        Ok(Some(JwtSettings {
            jwks_url,
            issuer: required("MCP_V8_JWT_ISSUER")?,
            audience: required("MCP_V8_JWT_AUDIENCE")?,
        }))
    }
}
