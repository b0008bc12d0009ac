//! MCP messages of the session-protocol revisions this server speaks.

mod lifecycle;
mod prompts;
mod resources;
mod stateless;
mod tools;

pub use lifecycle::*;
pub use prompts::*;
pub use resources::*;
pub use stateless::*;
pub use tools::*;

use serde::Deserialize;

/// Protocol versions with `initialize`, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The session-era version with experimental tasks (`params.task`).
pub const TASKS_VERSION: &str = "2025-11-25";

/// The sessionless revision: no `initialize`, every request carries its
/// protocol version and client capabilities in `_meta`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Every version this endpoint speaks, oldest first: what `server/discover`
/// and an unsupported-version error list.
pub const ALL_VERSIONS: [&str; 4] = [
    SUPPORTED_VERSIONS[0],
    SUPPORTED_VERSIONS[1],
    SUPPORTED_VERSIONS[2],
    STATELESS_VERSION,
];

/// Whether `version` is one with an `initialize` handshake and sessions.
pub fn is_session_version(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// The version whose transport allows JSON-RPC batches.
pub const BATCHING_VERSION: &str = "2025-03-26";

/// Whether `version` has structured tool output (`outputSchema`,
/// `structuredContent`): 2025-06-18 and later.
pub fn has_structured_output(version: &str) -> bool {
    version >= "2025-06-18"
}

/// The client's version if supported, else the newest this server speaks.
pub fn negotiate(requested: &str) -> &'static str {
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(SUPPORTED_VERSIONS[SUPPORTED_VERSIONS.len() - 1])
}

pub use super::progress::{ProgressParams, progress_token};

/// Method names.
pub mod method {
    /// Handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Handshake done.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Liveness.
    pub const PING: &str = "ping";
    /// Tool listing.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Tool invocation.
    pub const TOOLS_CALL: &str = "tools/call";
    /// A request the client gave up on.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// How far a request has come (server to client).
    pub const PROGRESS: &str = "notifications/progress";
    /// 2026-07-28: versions, capabilities and identity, in place of `initialize`.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Resource listing.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Resource template listing.
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Reading one resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Prompt listing.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// One prompt, filled in.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Values for an argument of a prompt or a resource template.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
}

/// Header names.
pub mod header {
    /// The transport session.
    pub const SESSION_ID: &str = "mcp-session-id";
    /// Negotiated protocol version, sent by clients after `initialize`.
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    /// Prefix of the headers captured at `initialize`.
    pub const MCP_PREFIX: &str = "x-mcp-";
    /// The logical session naming the session log.
    pub const LOGICAL_SESSION: &str = "x-mcp-session-id";
    /// 2026-07-28: the JSON-RPC method of the body.
    pub const METHOD: &str = "mcp-method";
    /// 2026-07-28: the tool name of a `tools/call` body.
    pub const NAME: &str = "mcp-name";
}

/// `_meta` keys of 2026-07-28 requests and results.
pub mod meta {
    /// The request's protocol version.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Who the client is (optional).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Who the server is, on every result.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
}

/// Params of a paged list (`resources/list`, `prompts/list`, …).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListParams {
    /// Where the previous page's `nextCursor` said to go on.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `notifications/cancelled` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request to stop.
    pub request_id: crate::protocol::jsonrpc::RequestId,
    /// Why, for the log.
    #[serde(default)]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_keeps_a_supported_version_and_otherwise_offers_the_newest() {
        assert_eq!(negotiate("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2024-11-05"), "2025-11-25");
        assert_eq!(negotiate("2026-07-28"), "2025-11-25");
        assert_eq!(negotiate("garbage"), "2025-11-25");
    }

    #[test]
    fn structured_output_starts_with_2025_06_18() {
        assert!(!has_structured_output("2025-03-26"));
        assert!(has_structured_output("2025-06-18"));
        assert!(has_structured_output("2025-11-25"));
    }
}
