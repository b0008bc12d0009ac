//! The wire side of MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865,
//! stable 2026-01-26): how a host declares it, the `ui://` resource a tool
//! names in its `_meta.ui`, and what a `run_js` result adds in `_meta` for
//! the View (never for the model).

use serde::Serialize;
use serde_json::{Map, Value};

/// The extension's identifier, in client capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The media type of an MCP App's HTML document.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The View that renders a `run_js` result.
pub const RUN_VIEW_URI: &str = "ui://mcp-v8-lambda/run.html";

/// The result `_meta` key listing a run's `display()` blocks for the View.
pub const DISPLAYS_META: &str = "mcp-v8-lambda/displays";

/// Whether client capabilities (`initialize`'s, or a 2026-07-28 request's
/// `_meta`) declare MCP Apps for HTML Views. The spec requires
/// `mimeTypes`; a declaration without it is taken as HTML, the only type
/// there is.
pub fn declares(capabilities: Option<&Map<String, Value>>) -> bool {
    let Some(ui) = super::declared_extension(capabilities, EXTENSION).and_then(Value::as_object)
    else {
        return false;
    };
    match ui.get("mimeTypes").and_then(Value::as_array) {
        Some(types) => types.iter().any(|t| t.as_str() == Some(MIME_TYPE)),
        None => true,
    }
}

/// A `run_js` result's `_meta` for the View: its blocks, in call order.
pub fn displays_meta(entries: &[DisplayEntry]) -> Value {
    serde_json::json!({ DISPLAYS_META: entries })
}

/// A tool's `_meta` naming the View that renders its results.
pub fn tool_meta(resource_uri: &str) -> Value {
    serde_json::json!({ "ui": { "resourceUri": resource_uri } })
}

/// A tool's `_meta` making it the View's alone: hosts neither list it to
/// the model nor let the model call it.
pub fn app_only_meta() -> Value {
    serde_json::json!({ "ui": { "visibility": ["app"] } })
}

/// One `display()` block of a run, for the View: where its bytes are in
/// the result's `content`, when they are there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisplayEntry {
    /// Index of the block in the result's `content` (a `resource_link`
    /// for one too large for the answer); absent when it was left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<usize>,
    /// As the run gave it.
    pub mime_type: String,
    /// The name the run gave, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Bytes of the block.
    pub size: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_host_declares_html_views_or_does_not() {
        assert!(declares(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}})
        ))));
        assert!(declares(Some(&caps(
            json!({"extensions": {EXTENSION: {}}})
        ))));
        assert!(!declares(Some(&caps(
            json!({"extensions": {EXTENSION: {"mimeTypes": ["text/uri-list"]}}})
        ))));
        assert!(!declares(Some(&caps(
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        ))));
        assert!(!declares(Some(&caps(json!({})))));
        assert!(!declares(None));
    }
}
