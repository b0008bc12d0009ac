//! The 2026-07-28 era's results: `server/discover`, caching hints, the
//! result envelope with its `_meta`, an unsupported version's data.

use serde::Serialize;

use super::lifecycle::{ServerCapabilities, ServerInfo};

/// `server/discover` result (2026-07-28).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Every version this endpoint speaks.
    pub supported_versions: &'static [&'static str],
    /// What this server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    pub instructions: &'static str,
}

/// Caching hints of a cacheable 2026-07-28 result.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHints {
    /// How long a client may reuse the result, in milliseconds.
    pub ttl_ms: u64,
    /// `public` (any caller may share it) or `private`.
    pub cache_scope: &'static str,
}

/// `error.data` of an unsupported-version error (2026-07-28).
#[derive(Debug, Clone, Serialize)]
pub struct UnsupportedVersionData<'a> {
    /// Versions this endpoint speaks.
    pub supported: &'static [&'static str],
    /// The version the client asked for, echoed.
    pub requested: &'a str,
}

/// A 2026-07-28 result: the method's result, tagged complete and signed with
/// the server's identity in `_meta`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatelessResult<T> {
    /// The method's own result fields.
    #[serde(flatten)]
    pub result: T,
    /// Caching hints, on cacheable results.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHints>,
    /// `complete`, or `task` / `input_required` where the method says.
    pub result_type: &'static str,
    /// The server's identity.
    #[serde(rename = "_meta")]
    pub meta: ResultMeta,
}

impl<T> StatelessResult<T> {
    /// `result` of the server `server_info`, complete, with optional
    /// caching hints.
    pub fn complete(result: T, cache: Option<CacheHints>, server_info: ServerInfo) -> Self {
        Self {
            result,
            cache,
            result_type: "complete",
            meta: ResultMeta { server_info },
        }
    }
}

/// `_meta` of a 2026-07-28 result.
#[derive(Debug, Clone, Serialize)]
pub struct ResultMeta {
    /// Who answered.
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: ServerInfo,
}

/// An empty result object (`ping`).
#[derive(Debug, Clone, Serialize)]
pub struct EmptyResult {}
