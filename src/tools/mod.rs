//! The MCP tools: their descriptions for `tools/list` and their execution
//! for `tools/call`.

mod args;
mod heap_tags;
mod run_js;
mod schema;
mod session_log;

use std::sync::Arc;
use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::engine::Engine;
/// The handle a caller keeps on a run a tool call starts (progress, cancel).
pub use crate::engine::RunControl;
use crate::meta::MetaStore;
use crate::protocol::mcp::{
    CallToolParams, CallToolResult, Continuity, ListToolsResult, TextContent, has_structured_output,
};
use crate::session::{InitState, LogicalSession};
use crate::tenant::Tenant;

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

/// What a tool call knows of its caller: the protocol version (which shapes
/// results), whose data it may see, the logical session named by the
/// transport, if any, and when the host must have answered. Built from a
/// replayed session or from one 2026-07-28 request.
#[derive(Debug, Clone, Copy)]
pub struct CallContext<'a> {
    /// The protocol version of the request.
    pub protocol_version: &'a str,
    /// The caller's namespace: every store read and write of the call is
    /// scoped by it.
    pub tenant: &'a Tenant,
    /// The logical session (`X-MCP-Session-Id`); a tool's `session`
    /// argument overrides it.
    pub logical_session: Option<&'a LogicalSession>,
    /// When the host stops waiting for the answer (a Lambda invocation's
    /// deadline); `None` under `serve`.
    pub deadline: Option<SystemTime>,
    /// The transport's handle on a run this call starts: progress to
    /// report, and a cancel when the client asks or goes away.
    pub control: Option<&'a Arc<RunControl>>,
}

impl<'a> CallContext<'a> {
    /// The context of a request of a replayed session.
    pub fn of_session(
        state: &'a InitState,
        tenant: &'a Tenant,
        deadline: Option<SystemTime>,
    ) -> Self {
        Self {
            protocol_version: &state.protocol_version,
            tenant,
            logical_session: state.logical_session.as_ref(),
            deadline,
            control: None,
        }
    }
}

/// Largest serialized tool result, in bytes: with the JSON-RPC envelope it
/// fits Lambda's 6 MB buffered response (6,291,456 bytes) with room to
/// spare. A result over it becomes a tool error saying so.
pub const MAX_RESULT_JSON_BYTES: usize = 5 * 1024 * 1024;

/// A `tools/call` that is a protocol error rather than a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// No tool of that name here.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// A stateful tool called on a stateless server.
    #[error("{0} is not available: this server is stateless")]
    NotAvailable(String),
}

impl Toolbox {
    /// `tools/list` for a request of `context`: the schemas give the
    /// limits in force for it.
    pub fn list(&self, context: CallContext<'_>) -> ListToolsResult {
        let structured = has_structured_output(context.protocol_version);
        let mut tools = vec![run_js::describe(self, context.deadline)];
        if !self.stateless {
            tools.extend(session_log::describe());
            tools.extend(heap_tags::describe());
        }
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
        context: CallContext<'_>,
        params: CallToolParams,
    ) -> Result<CallToolResult, ToolCallError> {
        let structured = has_structured_output(context.protocol_version);
        let raw = params.arguments.as_deref();
        let name = params.name.as_str();
        tracing::Span::current().record("tool", name);
        if self.stateless && name != run_js::NAME {
            return Err(if Self::STATEFUL_TOOLS.contains(&name) {
                ToolCallError::NotAvailable(name.to_owned())
            } else {
                ToolCallError::UnknownTool(name.to_owned())
            });
        }
        // Each arm decodes the arguments into the tool's own type; a decoding
        // failure is a tool error the model can correct.
        macro_rules! with_args {
            ($call:expr) => {
                match arguments(raw) {
                    Ok(args) => $call(args).await,
                    Err(message) => CallToolResult::error(message),
                }
            };
        }
        let result = match name {
            run_js::NAME => with_args!(|a| run_js::call(self, context, a, structured)),
            session_log::LIST_SESSIONS => {
                with_args!(|a| session_log::list_sessions(self, context, a, structured))
            }
            session_log::LIST_SESSION_SNAPSHOTS => {
                with_args!(|a| session_log::list_session_snapshots(self, context, a, structured))
            }
            heap_tags::GET_HEAP_TAGS => {
                with_args!(|a| heap_tags::get(self, context, a, structured))
            }
            heap_tags::SET_HEAP_TAGS => {
                with_args!(|a| heap_tags::set(self, context, a, structured))
            }
            heap_tags::DELETE_HEAP_TAGS => {
                with_args!(|a| heap_tags::delete(self, context, a, structured))
            }
            heap_tags::QUERY_HEAPS_BY_TAGS => {
                with_args!(|a| heap_tags::query(self, context, a, structured))
            }
            heap_tags::GET_EXECUTION => {
                with_args!(|a| heap_tags::get_execution(self, context, a, structured))
            }
            other => return Err(ToolCallError::UnknownTool(other.to_owned())),
        };
        Ok(within_response_limit(name, result))
    }

    const STATEFUL_TOOLS: [&'static str; 7] = [
        session_log::LIST_SESSIONS,
        session_log::LIST_SESSION_SNAPSHOTS,
        heap_tags::GET_HEAP_TAGS,
        heap_tags::SET_HEAP_TAGS,
        heap_tags::DELETE_HEAP_TAGS,
        heap_tags::QUERY_HEAPS_BY_TAGS,
        heap_tags::GET_EXECUTION,
    ];

    /// The first page of a session's log as JSON (`{entries, next_offset?}`,
    /// as `list_session_snapshots` answers without arguments): the session
    /// log resource.
    pub async fn session_log_json(
        &self,
        context: CallContext<'_>,
        name: &LogicalSession,
    ) -> Result<serde_json::Value, crate::meta::MetaStoreError> {
        let page = session_log::first_page(self, context, name).await?;
        Ok(serde_json::to_value(page).expect("log pages serialize"))
    }

    /// An execution record as JSON, as `get_execution` shows it (`None`:
    /// unknown, expired, or another tenant's).
    pub async fn execution_json(
        &self,
        context: CallContext<'_>,
        id: uuid::Uuid,
    ) -> Result<Option<serde_json::Value>, crate::meta::MetaStoreError> {
        let record = self
            .meta
            .get_execution(context.tenant, id, crate::session::unix_now())
            .await?;
        Ok(record.map(|record| {
            serde_json::to_value(heap_tags::ExecutionView::from(record))
                .expect("execution views serialize")
        }))
    }

    /// Continuity for `initialize` of a logical session (`None` when the
    /// server is stateless and keeps no log).
    pub async fn continuity(
        &self,
        tenant: &Tenant,
        logical_session: &LogicalSession,
    ) -> Result<Option<Continuity>, crate::meta::MetaStoreError> {
        if self.stateless {
            return Ok(None);
        }
        let last = self.meta.last_log_entry(tenant, logical_session).await?;
        Ok(Some(Continuity {
            logical_session: logical_session.to_string(),
            resumed: last.is_some(),
            entries: last.as_ref().map_or(0, |e| e.index + 1),
            last_output_heap: last.map(|e| e.output_heap.to_string()),
        }))
    }
}

/// Decodes tool arguments, with a message the model can act on.
fn arguments<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, String> {
    let text = raw.map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(|e| format!("invalid arguments: {e}"))
}

/// `result`, unless its JSON is over [`MAX_RESULT_JSON_BYTES`]: then a tool
/// error saying so, so that the host never answers with more than its
/// platform can carry (a 502 on Lambda). Tools that can shrink their answer
/// (`run_js`, `list_session_snapshots`) do so before it comes to this.
fn within_response_limit(tool: &str, result: CallToolResult) -> CallToolResult {
    if fits_one_response(&result) {
        return result;
    }
    let len = result_json_len(&result);
    tracing::warn!(
        tool,
        len,
        "a tool result over the response limit was refused"
    );
    CallToolResult::error(format!(
        "the {tool} result is {len} bytes of JSON, over the {MAX_RESULT_JSON_BYTES}-byte limit of \
         one response; ask for less (fewer entries, a smaller result)"
    ))
}

/// The length of a result's JSON.
fn result_json_len(result: &CallToolResult) -> usize {
    serde_json::to_vec(result).map_or(usize::MAX, |json| json.len())
}

/// Whether a result's JSON is at most [`MAX_RESULT_JSON_BYTES`], serialized
/// only when it may not be: escaping makes text at most six times longer,
/// and a structured copy is no longer than the text, so seven times the
/// text bounds the whole, and most results are far below that.
fn fits_one_response(result: &CallToolResult) -> bool {
    let text: usize = result.content.iter().map(|c| c.text.len()).sum();
    text.saturating_mul(7) + 1024 <= MAX_RESULT_JSON_BYTES
        || result_json_len(result) <= MAX_RESULT_JSON_BYTES
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
