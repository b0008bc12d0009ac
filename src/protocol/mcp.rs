//! MCP messages of the session-protocol revisions this server speaks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// Params of a paged list (`resources/list`, `prompts/list`, …).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListParams {
    /// Where the previous page's `nextCursor` said to go on.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A resource in `resources/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its address, for `resources/read`.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// For people.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// Of its contents.
    pub mime_type: &'static str,
}

/// `resources/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// One page.
    pub resources: Vec<Resource>,
    /// Present when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A resource template in `resources/templates/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 level 1 template.
    pub uri_template: &'static str,
    /// Programmatic name.
    pub name: &'static str,
    /// For people.
    pub title: &'static str,
    /// What its resources hold.
    pub description: &'static str,
    /// Of their contents.
    pub mime_type: &'static str,
}

/// `resources/templates/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// All of them: there are few.
    pub resource_templates: Vec<ResourceTemplate>,
}

/// `resources/read` params.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadResourceParams {
    /// The resource.
    pub uri: String,
}

/// `resources/read` result.
#[derive(Debug, Clone, Serialize)]
pub struct ReadResourceResult {
    /// Never empty.
    pub contents: Vec<ResourceContents>,
}

/// A prompt argument.
#[derive(Debug, Clone, Serialize)]
pub struct PromptArgument {
    /// As passed in `prompts/get`.
    pub name: &'static str,
    /// For people and models.
    pub description: &'static str,
    /// Whether `prompts/get` needs it.
    pub required: bool,
}

/// A prompt in `prompts/list`.
#[derive(Debug, Clone, Serialize)]
pub struct Prompt {
    /// For `prompts/get`.
    pub name: &'static str,
    /// For people.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// What it takes.
    pub arguments: Vec<PromptArgument>,
}

/// `prompts/list` result.
#[derive(Debug, Clone, Serialize)]
pub struct ListPromptsResult {
    /// All of them.
    pub prompts: Vec<Prompt>,
}

/// `prompts/get` params.
#[derive(Debug, Clone, Deserialize)]
pub struct GetPromptParams {
    /// Which prompt.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// A message of a prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptMessage {
    /// `user`.
    pub role: &'static str,
    /// What it says: text, an image, audio or an embedded resource.
    pub content: Content,
}

/// `prompts/get` result.
#[derive(Debug, Clone, Serialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    pub description: String,
    /// The messages to send.
    pub messages: Vec<PromptMessage>,
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

/// `tools/call` parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct CallToolParams {
    /// Tool name.
    pub name: String,
    /// Tool arguments, decoded by the tool into its own type.
    #[serde(default)]
    pub arguments: Option<Box<serde_json::value::RawValue>>,
    /// 2025-11-25: run it as a task (with this lifetime). Read in every
    /// version, acted on only where tasks exist in that form.
    #[serde(default)]
    pub task: Option<crate::protocol::tasks::TaskParams>,
    /// 2026-07-28: the responses of the retry of a call answered
    /// `input_required` (SEP-2322).
    #[serde(rename = "inputResponses", default)]
    pub input_responses: Option<serde_json::Map<String, Value>>,
    /// 2026-07-28: the state that retry echoes.
    #[serde(rename = "requestState", default)]
    pub request_state: Option<String>,
}

/// One block of a tool result's `content`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Content {
    /// Text the model reads.
    Text {
        /// The text.
        text: String,
    },
    /// An image the model sees.
    Image {
        /// Base64 of the image's bytes.
        data: String,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
    },
    /// Audio the model hears (protocol 2025-03-26 on).
    Audio {
        /// Base64 of the audio's bytes.
        data: String,
        /// `audio/wav`, `audio/mpeg`, ...
        mime_type: String,
    },
    /// A resource carried in the result.
    Resource {
        /// Its contents.
        resource: ResourceContents,
    },
    /// A resource to read with `resources/read` (protocol 2025-06-18 on).
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// Of its contents.
        mime_type: String,
        /// Its length in bytes.
        size: u64,
        /// Why it is a link.
        description: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// Bytes of the block's payload (text, base64), before JSON escaping.
    pub fn payload_len(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::Resource { resource } => resource
                .blob
                .as_ref()
                .or(resource.text.as_ref())
                .map_or(0, String::len),
            Self::ResourceLink {
                uri, description, ..
            } => uri.len() + description.len(),
        }
    }
}

/// The contents of a resource, read or embedded in a tool result: `text`
/// or base64 `blob`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// Its URI.
    pub uri: String,
    /// Of its contents.
    pub mime_type: String,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 of binary contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Where a page of a longer text lies in it.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// `tools/call` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The result as text (JSON of the structured result), then the run's
    /// `display()` blocks.
    pub content: Vec<Content>,
    /// The same result as an object matching the tool's `outputSchema`
    /// (omitted for protocol versions before 2025-06-18 and for errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed (the JavaScript, or the arguments).
    pub is_error: bool,
    /// What a host's View reads and the model does not (MCP Apps).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl CallToolResult {
    /// A tool error whose message the model can read and act on.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            structured_content: None,
            is_error: true,
            meta: None,
        }
    }
}

/// 2026-07-28's answer to a call that needs the person first (SEP-2322):
/// what to ask, and the state to echo when the client retries the call
/// with the responses. Its `resultType` is `input_required`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// By key: `{ method: "elicitation/create", params }`.
    pub input_requests: serde_json::Map<String, Value>,
    /// Opaque to the client; echoed as the retry's `requestState`.
    pub request_state: String,
}

/// `tools/list` result.
#[derive(Debug, Clone, Serialize)]
pub struct ListToolsResult {
    /// The tools.
    pub tools: Vec<Tool>,
}

/// A tool description.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Name used in `tools/call`.
    pub name: &'static str,
    /// For people: what a client shows.
    pub title: &'static str,
    /// For the model.
    pub description: std::borrow::Cow<'static, str>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `{"taskSupport": ...}`: whether it may be called as a task
    /// (2025-11-25; the tasks extension has no such field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// What calling it does to the world, for clients deciding whether to
    /// ask first.
    pub annotations: ToolAnnotations,
    /// `ui.resourceUri`: the View a host that declared MCP Apps renders
    /// its results in.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// Hints about a tool's effects (since 2025-03-26). Clients auto-approve
/// on `readOnlyHint`; every field is stated, none left to the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    pub read_only_hint: bool,
    /// It may overwrite or remove what exists (meaningful when not read-only).
    pub destructive_hint: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent_hint: bool,
    /// It reaches entities outside this server (the network).
    pub open_world_hint: bool,
}

impl ToolAnnotations {
    /// Reads this server's own data.
    pub const READ_ONLY: Self = Self {
        read_only_hint: true,
        destructive_hint: false,
        idempotent_hint: true,
        open_world_hint: false,
    };
}

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
