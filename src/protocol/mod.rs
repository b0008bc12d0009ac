//! The wire: JSON-RPC envelopes and MCP messages.

pub mod apps;
pub mod jsonrpc;
pub mod mcp;
pub mod tasks;
pub mod uri;
