//! The wire: JSON-RPC envelopes and MCP messages.

pub mod apps;
pub mod completion;
pub mod jsonrpc;
pub mod logging;
pub mod mcp;
pub mod media;
pub mod progress;
pub mod skills;
pub mod tasks;
pub mod uri;

/// The settings client `capabilities` (`initialize`'s, or a 2026-07-28
/// request's `_meta`) give extension `id`, when they declare it.
pub fn declared_extension<'a>(
    capabilities: Option<&'a serde_json::Map<String, serde_json::Value>>,
    id: &str,
) -> Option<&'a serde_json::Value> {
    capabilities?.get("extensions")?.as_object()?.get(id)
}
