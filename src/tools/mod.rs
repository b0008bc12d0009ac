//! The MCP tools: their descriptions for `tools/list` and their execution
//! for `tools/call`.

mod run_js;
mod schema;

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::engine::Engine;
use crate::meta::MetaStore;
use crate::protocol::mcp::{
    CallToolParams, CallToolResult, ListToolsResult, TextContent, has_structured_output,
};
use crate::session::InitState;

/// What tools run against.
#[derive(Debug, Clone)]
pub struct Toolbox {
    /// Runs code.
    pub engine: Arc<Engine>,
    /// Session log, tags, executions.
    pub meta: Arc<dyn MetaStore>,
    /// No heaps, no tags, no session tools.
    pub stateless: bool,
    /// How long execution records live, in seconds.
    pub execution_ttl_secs: i64,
}

/// A `tools/call` that is a protocol error rather than a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// No tool of that name here.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
}

impl Toolbox {
    /// `tools/list` for a session that negotiated `version`.
    pub fn list(&self, version: &str) -> ListToolsResult {
        let structured = has_structured_output(version);
        let mut tools = vec![run_js::describe(self.stateless)];
        if !structured {
            for tool in &mut tools {
                tool.output_schema = None;
            }
        }
        ListToolsResult { tools }
    }

    /// `tools/call`. Tool failures (bad arguments, JavaScript errors) are
    /// results with `isError`; only an unknown tool is a protocol error.
    pub async fn call(
        &self,
        session: &InitState,
        params: CallToolParams,
    ) -> Result<CallToolResult, ToolCallError> {
        let structured = has_structured_output(&session.protocol_version);
        match params.name.as_str() {
            run_js::NAME => Ok(match arguments(params.arguments.as_deref()) {
                Ok(args) => run_js::call(self, session, args, structured).await,
                Err(message) => CallToolResult::error(message),
            }),
            other => Err(ToolCallError::UnknownTool(other.to_owned())),
        }
    }
}

/// Decodes tool arguments, with a message the model can act on.
fn arguments<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, String> {
    let text = raw.map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(|e| format!("invalid arguments: {e}"))
}

/// A successful or failed tool result carrying a structured value.
fn structured_result<T: serde::Serialize>(
    value: &T,
    is_error: bool,
    structured: bool,
) -> CallToolResult {
    let json = serde_json::to_value(value).expect("tool results serialize");
    CallToolResult {
        content: vec![TextContent {
            kind: "text",
            text: json.to_string(),
        }],
        structured_content: structured.then_some(json),
        is_error,
    }
}
