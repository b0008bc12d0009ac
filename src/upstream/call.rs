//! What code mode's calls give a run: an upstream's tools as
//! `mcp.listTools` lists them, and why a call gave no value.

use serde::Serialize;
use serde_json::Value;

/// A tool of an upstream, as `mcp.listTools` gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// What `callTool` names.
    pub name: String,
    /// The upstream's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolInfo {
    /// Whether the output schema only wraps the tool's real result in
    /// `{"result": …}` (a primitive, a list): FastMCP marks such a schema
    /// `x-fastmcp-wrap-result`; the Python SDK's servers name it
    /// `<tool>Output`, with `result` its only property.
    pub fn wraps_result(&self) -> bool {
        let Some(schema) = self.output_schema.as_ref().and_then(Value::as_object) else {
            return false;
        };
        let only_result = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.len() == 1 && p.contains_key("result"));
        only_result
            && (schema.get("x-fastmcp-wrap-result").and_then(Value::as_bool) == Some(true)
                || schema.get("title").and_then(Value::as_str)
                    == Some(format!("{}Output", self.name).as_str()))
    }

    /// The schema of what a call gives code: the wrapped result's when the
    /// output schema only wraps it ([`Self::wraps_result`]).
    pub fn result_schema(&self) -> Option<&Value> {
        let schema = self.output_schema.as_ref()?;
        if self.wraps_result() {
            return schema.get("properties")?.get("result");
        }
        Some(schema)
    }

    /// The argument names, in the schema's order, optional ones with `?`.
    pub fn argument_names(&self) -> Vec<String> {
        let required: Vec<&str> = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.keys()
                    .map(|k| {
                        if required.contains(&k.as_str()) {
                            k.clone()
                        } else {
                            format!("{k}?")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Why a call gave no value; the message is what code in the run sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No upstream of that name.
    #[error("there is no upstream MCP server {name:?} here; {known}")]
    UnknownServer {
        /// As the code wrote it.
        name: String,
        /// What exists, as a sentence.
        known: String,
    },
    /// The upstream has no tool of that name.
    #[error("upstream MCP server {server:?} has no tool {tool:?}; its tools are: {known}")]
    UnknownTool {
        /// The server.
        server: String,
        /// As the code wrote it.
        tool: String,
        /// The tools it has.
        known: String,
    },
    /// The tool answered with `isError`.
    #[error("{server}.{tool} returned an error: {text}")]
    Tool {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Its text.
        text: String,
    },
    /// No connection could be made.
    #[error(
        "upstream MCP server {server:?} could not be reached: {reason}; the next call tries again \
         (if it keeps failing, the server is down or its entry in MCP_V8_MCP_SERVERS is wrong)"
    )]
    Unreachable {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The request failed on the way (transport, protocol).
    #[error("{server}.{tool} failed: {reason}")]
    Failed {
        /// The server.
        server: String,
        /// The tool, or `tools/list`.
        tool: String,
        /// Why.
        reason: String,
    },
    /// The answer was larger than code mode reads.
    #[error(
        "{server}.{tool} answered with more than {max_mb} MiB, the most code mode reads from one \
         upstream answer (MCP_V8_MCP_MAX_RESPONSE_MB); ask the tool for less (a page, a filter, \
         fewer fields)"
    )]
    TooLarge {
        /// The server.
        server: String,
        /// The tool, or `tools/list`.
        tool: String,
        /// The bound, in MiB.
        max_mb: usize,
    },
    /// No answer in time.
    #[error(
        "{server}.{tool} did not answer within {ms} ms (MCP_V8_MCP_CALL_TIMEOUT_MS); the call was cancelled"
    )]
    TimedOut {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// How long it had.
        ms: u64,
    },
}

impl CallError {
    /// Whether the tool itself answered with `isError`.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, Self::Tool { .. })
    }

    pub(super) fn status(&self) -> &'static str {
        match self {
            Self::UnknownServer { .. } | Self::UnknownTool { .. } => "unknown",
            Self::Tool { .. } => "tool_error",
            Self::Unreachable { .. } => "unreachable",
            Self::Failed { .. } => "failed",
            Self::TooLarge { .. } => "too_large",
            Self::TimedOut { .. } => "timeout",
        }
    }
}

/// What code gets of a `tools/call` result: `structuredContent` when there
/// is one (its `result` when the output schema only wraps it: `wrapped`);
/// otherwise the text of its text blocks, parsed when it is a JSON object
/// or array (text such as `42` or `true` stays text); the content blocks
/// themselves when any is not text (images). `Err`: the tool's `isError`,
/// with its text.
pub(super) fn value_of(result: Value, wrapped: bool) -> Result<Value, String> {
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let texts: Vec<&str> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let text = texts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(if text.is_empty() {
            result
                .get("structuredContent")
                .map(Value::to_string)
                .unwrap_or_else(|| "(no text)".to_owned())
        } else {
            text
        });
    }
    if let Some(structured) = result.get("structuredContent") {
        if wrapped && let Some(inner) = structured.get("result") {
            return Ok(inner.clone());
        }
        return Ok(structured.clone());
    }
    if texts.len() < content.len() {
        return Ok(Value::Array(content));
    }
    let structure = text.trim_start().starts_with(['{', '[']);
    Ok(structure
        .then(|| serde_json::from_str(&text).ok())
        .flatten()
        .unwrap_or(Value::String(text)))
}

/// `text` without the Rust type names rmcp puts in its transport errors
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: `),
/// which mean nothing to code or the model.
pub(super) fn without_rust_types(text: &str) -> String {
    const OPEN: &str = "Transport [";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        // The type name nests brackets and angle brackets; it ends at the
        // `]` that closes the one opened.
        let mut depth = 1usize;
        let mut end = None;
        for (i, c) in after.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            out.push_str(&rest[at..]);
            return out;
        };
        rest = &after[end + 1..];
        rest = rest.strip_prefix(" error: ").unwrap_or(rest);
    }
    out.push_str(rest);
    out
}

/// The last cause of an error chain (`a: b: connection refused`), the one
/// that says what happened in the fewest words.
pub(super) fn innermost(chain: &str) -> &str {
    chain.rsplit(": ").next().unwrap_or(chain).trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_is_its_structured_content_else_its_text_parsed_when_json() {
        let structured = json!({"content": [{"type": "text", "text": "{\"n\": 1}"}],
            "structuredContent": {"n": 2}});
        assert_eq!(value_of(structured, false).unwrap(), json!({"n": 2}));
        let json_text = json!({"content": [{"type": "text", "text": "[1, 2]"}]});
        assert_eq!(value_of(json_text, false).unwrap(), json!([1, 2]));
        let text = json!({"content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]});
        assert_eq!(value_of(text, false).unwrap(), json!("hello\nworld"));
        // Text that happens to be a JSON scalar (an id, a count) stays text.
        let id = json!({"content": [{"type": "text", "text": "0042"}]});
        assert_eq!(value_of(id, false).unwrap(), json!("0042"));
        let count = json!({"content": [{"type": "text", "text": "7"}]});
        assert_eq!(value_of(count, false).unwrap(), json!("7"));
        let image =
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]});
        assert_eq!(value_of(image.clone(), false).unwrap(), image["content"]);
        let failed =
            json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true});
        assert_eq!(value_of(failed, false).unwrap_err(), "no such repo");
        // A wrapped primitive comes back as the primitive.
        let wrapped = json!({"content": [{"type": "text", "text": "5"}],
            "structuredContent": {"result": 5}});
        assert_eq!(value_of(wrapped.clone(), true).unwrap(), json!(5));
        assert_eq!(value_of(wrapped, false).unwrap(), json!({"result": 5}));
    }

    #[test]
    fn the_last_cause_is_the_plain_one() {
        assert_eq!(
            innermost(
                "Transport send error: Client error: tcp connect error: Connection refused (os error 111)"
            ),
            "Connection refused (os error 111)"
        );
        assert_eq!(innermost("closed"), "closed");
    }

    #[test]
    fn transport_errors_lose_their_rust_type_names() {
        let said = "Transport send error: Transport [rmcp::transport::worker::WorkerTransport<\
                    rmcp::transport::streamable_http_client::StreamableHttpClientWorker<\
                    reqwest::async_impl::client::Client>>] error: Client error: connection refused";
        let plain = without_rust_types(said);
        assert_eq!(
            plain,
            "Transport send error: Client error: connection refused"
        );
        assert_eq!(without_rust_types("no types here"), "no types here");
        assert_eq!(
            without_rust_types("Transport [unclosed"),
            "Transport [unclosed"
        );
    }
}
