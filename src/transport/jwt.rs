//! Bearer JWTs verified against a JWKS (`MCP_V8_JWKS_URL`), with issuer and
//! audience checks: the OAuth resource-server side of MCP authorization.
//! The token's subject becomes the session principal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

/// Only asymmetric algorithms: a JWKS publishes public keys, and accepting
/// HS* would let a public key be used as an HMAC secret.
const ALGORITHMS: [Algorithm; 7] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How long fetched keys are used before they are fetched again.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(600);
/// An unknown `kid` refetches the keys (rotation), at most this often, so
/// made-up key ids cannot turn into a stream of JWKS requests.
const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(30);

/// Settings of JWT verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    /// Where the issuer publishes its keys.
    pub jwks_url: String,
    /// Required `iss`.
    pub issuer: String,
    /// Required `aud` (one of).
    pub audience: String,
}

/// Why a token was refused; the message goes to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Malformed, expired, wrongly signed, or for another issuer or audience.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The keys could not be fetched; the token may be fine.
    #[error("the token issuer's keys are unavailable; retry later")]
    KeysUnavailable,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
}

/// RFC 9728 protected-resource metadata.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceMetadata {
    /// This MCP endpoint.
    pub resource: String,
    /// Who issues tokens for it.
    pub authorization_servers: Vec<String>,
    /// Tokens go in the `Authorization` header.
    pub bearer_methods_supported: [&'static str; 1],
}

#[derive(Debug)]
struct Keys {
    set: JwkSet,
    fetched: Instant,
}

/// Verifies tokens, caching the issuer's keys per instance.
#[derive(Debug, Clone)]
pub struct JwtVerifier {
    settings: Arc<JwtSettings>,
    http: reqwest::Client,
    keys: Arc<RwLock<Option<Keys>>>,
}

impl JwtVerifier {
    /// A verifier; keys are fetched on first use.
    pub fn new(settings: JwtSettings) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("a TLS-capable HTTP client builds");
        Self {
            settings: Arc::new(settings),
            http,
            keys: Arc::new(RwLock::new(None)),
        }
    }

    /// The settings it verifies against.
    pub fn settings(&self) -> &JwtSettings {
        &self.settings
    }

    /// The principal a valid token names: its issuer and subject.
    pub async fn verify(&self, token: &str) -> Result<String, JwtError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| JwtError::Invalid(e.to_string()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(JwtError::Invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| JwtError::Invalid("the token names no key (kid)".into()))?;
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
            JwtError::Invalid(match e.kind() {
                jsonwebtoken::errors::ErrorKind::Json(json) => format!(
                    "its claims: {}",
                    crate::protocol::jsonrpc::plain_json_error(json)
                ),
                _ => e.to_string(),
            })
        })?;
        Ok(format!("jwt:{}#{}", self.settings.issuer, data.claims.sub))
    }

    /// The key `kid`, from cached keys when fresh, else fetched again.
    async fn key(&self, kid: &str) -> Result<DecodingKey, JwtError> {
        {
            let cached = self.keys.read().await;
            if let Some(keys) = cached.as_ref() {
                let fresh = keys.fetched.elapsed() < KEYS_FRESH_FOR;
                match find(&keys.set, kid) {
                    Some(key) if fresh => return key,
                    None if keys.fetched.elapsed() < REFETCH_AT_MOST_EVERY => {
                        return Err(unknown_kid(kid));
                    }
                    _ => {}
                }
            }
        }
        let mut cached = self.keys.write().await;
        // Another request may have refetched while this one waited.
        if let Some(keys) = cached.as_ref()
            && keys.fetched.elapsed() < REFETCH_AT_MOST_EVERY
        {
            return find(&keys.set, kid).unwrap_or_else(|| Err(unknown_kid(kid)));
        }
        let set = self.fetch().await?;
        let key = find(&set, kid).unwrap_or_else(|| Err(unknown_kid(kid)));
        *cached = Some(Keys {
            set,
            fetched: Instant::now(),
        });
        key
    }

    async fn fetch(&self) -> Result<JwkSet, JwtError> {
        let fetched = async {
            self.http
                .get(&self.settings.jwks_url)
                .send()
                .await?
                .error_for_status()?
                .json::<JwkSet>()
                .await
        }
        .await;
        fetched.map_err(|e| {
            tracing::error!(error = %e, url = %self.settings.jwks_url, "fetching the JWKS failed");
            JwtError::KeysUnavailable
        })
    }
}

fn unknown_kid(kid: &str) -> JwtError {
    JwtError::Invalid(format!("no key {kid:?} in the issuer's key set"))
}

fn find(set: &JwkSet, kid: &str) -> Option<Result<DecodingKey, JwtError>> {
    set.find(kid).map(|jwk| {
        DecodingKey::from_jwk(jwk).map_err(|e| JwtError::Invalid(format!("key {kid:?}: {e}")))
    })
}
