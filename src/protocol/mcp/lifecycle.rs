//! `initialize` and what a server says of itself: the client's and the
//! server's info, capabilities, continuity.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `clientInfo` of `initialize` (and of 2026-07-28 requests' `_meta`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Client name.
    pub name: String,
    /// Client version.
    pub version: String,
    /// Display title (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What `initialize` tells a client that comes back to a logical session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Continuity {
    /// The logical session (`X-MCP-Session-Id`).
    pub logical_session: String,
    /// Whether the session already has logged runs.
    pub resumed: bool,
    /// How many.
    pub entries: u64,
    /// The heap of the newest run, to continue from.
    pub last_output_heap: Option<String>,
}

/// `initialize` parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The client's preferred version.
    pub protocol_version: String,
    /// Client capabilities, kept verbatim.
    #[serde(default)]
    pub capabilities: Map<String, Value>,
    /// Who the client is.
    pub client_info: ClientInfo,
}

/// `initialize` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Negotiated version.
    pub protocol_version: &'static str,
    /// What this server offers.
    pub capabilities: ServerCapabilities,
    /// Who this server is.
    pub server_info: ServerInfo,
    /// How to use the server, for the model.
    pub instructions: &'static str,
    /// Continuity of the logical session, when the client named one.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<InitializeMeta>,
}

/// `_meta` of the `initialize` result.
#[derive(Debug, Clone, Serialize)]
pub struct InitializeMeta {
    /// Where the logical session stands.
    #[serde(rename = "mcp-v8/continuity")]
    pub continuity: Continuity,
}

/// Server capabilities.
#[derive(Debug, Clone, Serialize)]
pub struct ServerCapabilities {
    /// Tools are offered; the list never changes during a session.
    pub tools: ToolsCapability,
    /// Session logs and execution records, when the server keeps them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The `resume_session` prompt, when the server keeps session logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Runs' console lines as `notifications/message`, for a client that
    /// asks (`logging/setLevel`, or 2026-07-28's per-request `logLevel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// `completion/complete` for the prompts' arguments and the resource
    /// templates' variables, when the server keeps session logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// 2025-11-25's experimental tasks: `tasks/list`, `tasks/cancel` and
    /// task-augmented `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// 2026-07-28's extensions: the tasks extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// The `resources` capability.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Always false: no update is ever pushed.
    pub subscribe: bool,
    /// Always false.
    pub list_changed: bool,
}

/// The `prompts` capability.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Always false.
    pub list_changed: bool,
}

/// The `tools` capability.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Always false.
    pub list_changed: bool,
}

/// `serverInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// `mcp-v8-lambda`.
    pub name: &'static str,
    /// Crate version.
    pub version: &'static str,
}
