//! The MCP tools: their descriptions for `tools/list` and their execution
//! for `tools/call`.

mod advice;
mod args;
mod budget;
mod calls;
mod display;
mod display_page;
mod executions;
#[cfg(feature = "conformance-fixtures")]
mod fixtures;
mod heap_tags;
mod run_js;
mod saving;
mod schema;
mod session_log;
mod toolbox;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// The handle a caller keeps on a run a tool call starts (progress, cancel).
pub use crate::engine::RunControl;
use crate::protocol::mcp::{
    CallToolParams, CallToolResult, Continuity, ListToolsResult, has_structured_output,
};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
pub use budget::{page, pages};
pub use calls::{TaskSupport, ToolCallError};
/// How many times a displayed table's file was parsed in this process
/// (tests count what the page tool's cache saves).
#[doc(hidden)]
pub use display_page::parses_of as display_table_parses;
pub use executions::ExecutionView;
pub use run_js::ANSWERED_DIRECTLY_IF;
pub use saving::{Saves, UnsavedBounds};
pub use toolbox::{CallContext, HeapName, MAX_READ_FILE_BYTES, MAX_RESULT_JSON_BYTES, Toolbox};
use toolbox::{fits_one_response, result_json_len};

impl Toolbox {
    /// `tools/list` for a request of `context`: the schemas give the
    /// limits in force for it.
    pub async fn list(&self, context: CallContext<'_>) -> ListToolsResult {
        // run_js's description names the installed packages.
        let packages = match &self.packages {
            Some(packages) => Some(packages.view().await),
            None => None,
        };
        // ... and the upstream servers' tools, listed once per instance.
        let code_mode = match self.upstreams() {
            Some(upstreams) => Some(crate::upstream::catalog::describe(&upstreams).await),
            None => None,
        };
        let structured = has_structured_output(context.protocol_version);
        let mut tools = vec![run_js::describe(
            self,
            context.deadline,
            packages.as_deref(),
            code_mode.as_deref(),
        )];
        if !self.stateless {
            tools.extend(session_log::describe());
            tools.extend(heap_tags::describe());
            tools.push(executions::describe());
        }
        #[cfg(feature = "conformance-fixtures")]
        if fixtures::enabled() {
            tools.extend(fixtures::describe());
        }
        if !structured {
            for tool in &mut tools {
                tool.output_schema = None;
            }
        }
        // A host that declared MCP Apps renders run_js results in its View
        // (read as a resource, which a stateless server has none of);
        // another sees the tool as it always was.
        if context.ui_extension
            && !self.stateless
            && let Some(run) = tools.iter_mut().find(|tool| tool.name == run_js::NAME)
        {
            run.meta = Some(crate::protocol::apps::tool_meta(
                crate::protocol::apps::RUN_VIEW_URI,
            ));
            // The View's own tool, which only such a host has a use for.
            let mut page = display_page::describe();
            if !structured {
                page.output_schema = None;
            }
            tools.push(page);
        }
        // Experimental tasks exist in 2025-11-25 only; the extension has no
        // per-tool field.
        if context.protocol_version == crate::protocol::mcp::TASKS_VERSION {
            for tool in &mut tools {
                let support = match self.task_support(tool.name) {
                    TaskSupport::Forbidden => continue,
                    TaskSupport::Optional | TaskSupport::Always => "optional",
                    TaskSupport::Required => "required",
                };
                tool.execution = Some(serde_json::json!({ "taskSupport": support }));
            }
        }
        // Some clients cannot read a `type` that is an array (`["string",
        // "null"]`); every schema says the same with `anyOf`.
        for tool in &mut tools {
            schema::without_type_unions(&mut tool.input_schema);
            if let Some(output) = &mut tool.output_schema {
                schema::without_type_unions(output);
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
            executions::GET_EXECUTION => {
                with_args!(|a| executions::get(self, context, a, structured))
            }
            // Only a host that renders the View has it listed.
            display_page::NAME if context.ui_extension => {
                with_args!(|a| display_page::call(self, context, a, structured))
            }
            #[cfg(feature = "conformance-fixtures")]
            other if fixtures::enabled() && fixtures::is_fixture(other) => {
                return fixtures::call(self, context, other, raw).await;
            }
            other => return Err(ToolCallError::UnknownTool(other.to_owned())),
        };
        Ok(within_response_limit(name, result))
    }

    /// How long a call of `tool` with `arguments` says it may take, for
    /// the task policy (`tasks::policy`): run_js's asked timeout.
    pub fn estimated_duration(
        &self,
        tool: &str,
        arguments: Option<&serde_json::value::RawValue>,
    ) -> Option<std::time::Duration> {
        if tool == run_js::NAME {
            run_js::asked_duration(arguments?)
        } else {
            None
        }
    }

    /// Whether calls of `tool` may become tasks: `run_js` may (a run can
    /// take minutes); the store tools answer at once.
    pub fn task_support(&self, tool: &str) -> TaskSupport {
        #[cfg(feature = "conformance-fixtures")]
        if let Some(support) = fixtures::task_support(self, tool) {
            return support;
        }
        if tool == run_js::NAME {
            TaskSupport::Optional
        } else {
            TaskSupport::Forbidden
        }
    }

    const STATEFUL_TOOLS: [&'static str; 7] = [
        session_log::LIST_SESSIONS,
        session_log::LIST_SESSION_SNAPSHOTS,
        heap_tags::GET_HEAP_TAGS,
        heap_tags::SET_HEAP_TAGS,
        heap_tags::DELETE_HEAP_TAGS,
        heap_tags::QUERY_HEAPS_BY_TAGS,
        executions::GET_EXECUTION,
    ];

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

/// Decodes tool arguments, with a message the model can act on: which
/// argument, and what was wrong with it.
fn arguments<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, String> {
    let text = raw.map_or("{}", RawValue::get);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        format!(
            "invalid arguments: {}",
            args::at_argument(
                e.path(),
                crate::protocol::jsonrpc::plain_json_error(e.inner())
            )
        )
    })
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
