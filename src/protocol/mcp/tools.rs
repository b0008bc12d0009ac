//! Tools: listed and called, and what a call answers (content, results,
//! the asks of a run that waits for the person).

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
