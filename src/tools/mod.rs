//! The MCP tools: their descriptions for `tools/list` and their execution
//! for `tools/call`.

mod answer;
mod args;
mod calls;
mod display_page;
mod executions;
mod heap_tags;
mod log_level;
pub mod param_headers;
mod router;
mod run_js;
mod saves;
mod session_log;
mod toolbox;
#[cfg(test)]
mod toy;

/// The handle a caller keeps on a run a tool call starts (progress, cancel).
pub use crate::engine::RunControl;
use crate::protocol::mcp::{
    CallToolParams, CallToolResult, Continuity, ListToolsResult, has_structured_output,
};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
pub use answer::pages::{Page, Paged, Shape};
pub use answer::run_texts::{paged as paged_run_text, text as run_text, whole as whole_record};
pub use calls::{TaskSupport, ToolCallError};
/// How many times a displayed table's file was parsed in this process
/// (tests count what the page tool's cache saves).
#[doc(hidden)]
pub use display_page::parses_of as display_table_parses;
pub use executions::ExecutionView;
pub use log_level::{engine_log_level, wire_log_level};
pub use router::{ToolRoute, ToolRouter};
pub use run_js::ANSWERED_DIRECTLY_IF;
pub use run_js::run_fresh;
pub use saves::Lifecycle;
pub use saves::{Saves, UnsavedBounds};
pub use toolbox::{
    CallContext, HeapName, Instead, MAX_READ_FILE_BYTES, MAX_RESULT_JSON_BYTES, ToolAnswer, Toolbox,
};
use toolbox::{fits_one_response, result_json_len};

/// What `tools/call` answers: the tool's result, or (2026-07-28) what the
/// person must answer before the call can go on.
#[derive(Debug)]
pub enum Called {
    /// The tool's result.
    Result(CallToolResult),
    /// The run asks the person first.
    InputRequired(crate::protocol::mcp::InputRequiredResult),
}

impl ToolRouter {
    /// `tools/list` of these tools on `toolbox` for a request of
    /// `context`: the schemas give the limits in force for it.
    pub async fn list(&self, toolbox: &Toolbox, context: CallContext<'_>) -> ListToolsResult {
        // run_js's description names the installed packages.
        let packages = match &toolbox.packages {
            Some(packages) => Some(packages.view().await),
            None => None,
        };
        // ... and the upstream servers' tools, listed once per instance.
        let code_mode = match toolbox.upstreams() {
            Some(upstreams) => Some(crate::upstream::catalog::describe(&upstreams).await),
            None => None,
        };
        let structured = has_structured_output(context.protocol_version);
        let listing = router::Listing {
            toolbox,
            deadline: context.deadline,
            packages: packages.as_deref(),
            code_mode: code_mode.as_deref(),
        };
        // A host that declared MCP Apps renders a tool's results in its
        // View (read as a resource, which a stateless server has none of);
        // another sees the tool without it.
        let views = context.ui_extension && !toolbox.stateless;
        // Experimental tasks exist in 2025-11-25 only; the extension has no
        // per-tool field.
        let task_marks = context.protocol_version == crate::protocol::mcp::TASKS_VERSION;
        let mut tools: Vec<_> = self
            .iter()
            .filter(|route| has(toolbox, route, context))
            .map(|route| {
                let mut tool = route.describe(&listing);
                debug_assert_eq!(tool.name, route.name());
                if !structured {
                    tool.output_schema = None;
                }
                if views && let Some(view) = route.view() {
                    tool.meta = Some(crate::protocol::apps::tool_meta(view));
                }
                let support = match route.supports_tasks() {
                    TaskSupport::Forbidden => None,
                    TaskSupport::Optional | TaskSupport::Always => Some("optional"),
                    TaskSupport::Required => Some("required"),
                };
                if task_marks && let Some(support) = support {
                    tool.execution = Some(serde_json::json!({ "taskSupport": support }));
                }
                tool
            })
            .collect();
        // Some clients cannot read a `type` that is an array (`["string",
        // "null"]`); every schema says the same with `anyOf`.
        for tool in &mut tools {
            answer::schema::without_type_unions(&mut tool.input_schema);
            if let Some(output) = &mut tool.output_schema {
                answer::schema::without_type_unions(output);
            }
        }
        ListToolsResult { tools }
    }

    /// `tools/call`. Tool failures (bad arguments, JavaScript errors) are
    /// results with `isError`; only an unknown tool is a protocol error.
    /// A run that asks the person answers [`Called::InputRequired`].
    pub async fn call_or_ask(
        &self,
        toolbox: &Toolbox,
        context: CallContext<'_>,
        params: CallToolParams,
    ) -> Result<Called, ToolCallError> {
        let structured = has_structured_output(context.protocol_version);
        let raw = params.arguments.as_deref();
        let name = params.name.as_str();
        tracing::Span::current().record("tool", name);
        let retry = crate::elicit::Retry {
            input_responses: params.input_responses,
            request_state: params.request_state,
        };
        let context = CallContext {
            retry: retry.is_retry().then_some(&retry),
            ..context
        };
        let found = self.route(name);
        let Some(route) = found.filter(|route| has(toolbox, route, context)) else {
            return Err(match found {
                Some(route) if route.shown() == router::Shown::Stateful => {
                    ToolCallError::NotAvailable(name.to_owned())
                }
                _ => ToolCallError::UnknownTool(name.to_owned()),
            });
        };
        // A tool whose schema mirrors an argument in a header is checked
        // against the request's.
        if let (Some(headers), Some(schema)) = (context.param_headers, route.param_schema()) {
            let arguments = raw.and_then(|raw| serde_json::from_str(raw.get()).ok());
            param_headers::check(schema, arguments.as_ref(), headers)
                .map_err(ToolCallError::HeaderMismatch)?;
        }
        called(name, route.call(toolbox, context, raw, structured).await?)
    }

    /// `tools/call` where only a result will do (a caller that cannot
    /// carry asks): a run that asked anyway is a tool error.
    pub async fn call(
        &self,
        toolbox: &Toolbox,
        context: CallContext<'_>,
        params: CallToolParams,
    ) -> Result<CallToolResult, ToolCallError> {
        Ok(match self.call_or_ask(toolbox, context, params).await? {
            Called::Result(result) => result,
            Called::InputRequired(_) => CallToolResult::error(
                "the run asked the person (elicit), which this call cannot carry; ask in your reply",
            ),
        })
    }

    /// How long a call of `tool` with `arguments` says it may take, for
    /// the task policy (`tasks::policy`): run_js's asked timeout.
    pub fn estimated_duration(
        &self,
        tool: &str,
        arguments: Option<&serde_json::value::RawValue>,
    ) -> Option<std::time::Duration> {
        self.route(tool)?.estimated_duration(arguments?)
    }

    /// Whether calls of `tool` may become tasks (its route says).
    pub fn task_support(&self, tool: &str) -> TaskSupport {
        self.route(tool)
            .map_or(TaskSupport::Forbidden, router::ToolRoute::supports_tasks)
    }
}

/// Whether a server on `toolbox` has `route` for a caller of `context`.
fn has(toolbox: &Toolbox, route: &ToolRoute, context: CallContext<'_>) -> bool {
    route.shown().to(toolbox.stateless, context.ui_extension)
}

impl Toolbox {
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

/// `result`, unless its JSON is over [`MAX_RESULT_JSON_BYTES`]: then a tool
/// error saying so, so that the host never answers with more than its
/// platform can carry (a 502 on Lambda). Tools that can shrink their answer
/// (`run_js`, `list_session_snapshots`) do so before it comes to this.
/// What a call of `tool` that answered `answer` is.
fn called(tool: &str, mut answer: toolbox::ToolAnswer) -> Result<Called, ToolCallError> {
    match answer.instead.take() {
        Some(toolbox::Instead::Ask(asked)) => Ok(Called::InputRequired(asked)),
        Some(toolbox::Instead::InvalidParams(why)) => Err(ToolCallError::InvalidParams(why)),
        None => Ok(Called::Result(within_response_limit(tool, answer))),
    }
}

fn within_response_limit(tool: &str, answer: toolbox::ToolAnswer) -> CallToolResult {
    let toolbox::ToolAnswer {
        result, json_len, ..
    } = answer;
    let fits = match json_len {
        // Measured as the tool shaped it.
        Some(len) => len <= MAX_RESULT_JSON_BYTES,
        None => fits_one_response(&result),
    };
    if fits {
        return result;
    }
    let len = json_len.unwrap_or_else(|| result_json_len(&result));
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
