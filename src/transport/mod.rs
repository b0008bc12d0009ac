//! MCP Streamable HTTP, both eras on one endpoint: the session era
//! (2025-03-26, 2025-06-18, 2025-11-25) with replayed initialization
//! (`session`), and protocol 2026-07-28, which has no sessions
//! (`sessionless`). This module routes HTTP; method semantics are the
//! server's (`crate::server`).

mod asking;
mod auth;
mod call;
mod envelope;
mod headers;
mod jwt;
mod listen;
mod routes;
mod session;
mod sessionless;
mod shedding;
mod stdio;
mod stream;

pub use auth::{Authenticator, RESOURCE_METADATA_PATH, STATIC_TOKEN_PRINCIPAL, TokenDigest};
pub use headers::{OriginPolicy, Principal};
pub use jwt::{JwtError, JwtSettings, JwtVerifier, ResourceMetadata};
pub use listen::{HttpLimits, max_connections, serve_http};
pub use routes::{App, Invocation, TransportConfig, decode_only, loopback_only, refusal, router};
pub use stdio::{StdioOptions, serve as serve_stdio};
