//! Tools a build adds beside the server's own: listed, dispatched and
//! given task support by the same `Toolbox` as the built-in routes, and
//! doing their work as runs ([`run_fresh`]). Only the MCP conformance
//! suite's fixture server (`examples/conformance_fixtures/`, built for the
//! tests) installs any, so the release binary carries no such tool and
//! compiles the library once with the tests.

use std::sync::OnceLock;

use futures_util::future::BoxFuture;
use serde_json::json;
use serde_json::value::RawValue;

use super::calls::{TaskSupport, ToolCallError};
use super::toolbox::{Answer, CallContext, Toolbox};
use crate::protocol::mcp::Tool;

/// Tools added to a server.
///
/// # Contract
/// - Their names are not those of the server's own tools, which win.
/// - [`ExtraTools::call`] answers `Some` exactly for the names
///   [`ExtraTools::describe`] lists, and [`ExtraTools::task_support`]
///   answers for those names.
pub trait ExtraTools: Send + Sync + 'static {
    /// Their `tools/list` entries, listed after the server's own tools and
    /// before the View's.
    fn describe(&self) -> Vec<Tool>;
    /// Whether calls of `tool` may become tasks, when it is one of these.
    fn task_support(&self, tool: &str) -> Option<TaskSupport>;
    /// A call of `tool` with its raw arguments, when it is one of these.
    fn call<'a>(
        &'a self,
        toolbox: &'a Toolbox,
        context: CallContext<'a>,
        tool: &'a str,
        arguments: Option<&'a RawValue>,
    ) -> Option<BoxFuture<'a, Result<Answer, ToolCallError>>>;
}

static INSTALLED: OnceLock<Box<dyn ExtraTools>> = OnceLock::new();

/// Adds `tools` to every toolbox of this process, once, before it serves.
/// A second installation is refused (`Err` gives it back).
pub fn install(tools: Box<dyn ExtraTools>) -> Result<(), Box<dyn ExtraTools>> {
    INSTALLED.set(tools)
}

/// The installed tools, if any.
pub(super) fn installed() -> Option<&'static dyn ExtraTools> {
    INSTALLED.get().map(|tools| &**tools)
}

/// Checks the request's `Mcp-Param-*` `headers` against the arguments of
/// a call of `tool`, one of `extra`'s, as its input schema declares them
/// ([`super::param_headers`]).
pub(super) fn check_param_headers(
    extra: &dyn ExtraTools,
    tool: &str,
    arguments: Option<&RawValue>,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    let Some(listed) = extra
        .describe()
        .into_iter()
        .find(|listed| listed.name == tool)
    else {
        return Ok(());
    };
    let arguments = arguments.and_then(|raw| serde_json::from_str(raw.get()).ok());
    super::param_headers::check(&listed.input_schema, arguments.as_ref(), headers)
}

/// `run_js` of `code` for this call from a fresh isolate (no heap kept),
/// within `timeout_secs`: its whole answer. A run that asks the person
/// answers with its asks, as `run_js` does.
pub async fn run_fresh(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    code: String,
    timeout_secs: f64,
) -> Answer {
    let call = serde_json::from_value(json!({
        "code": code,
        "heap": "",
        "execution_timeout_secs": timeout_secs,
    }))
    .expect("run_js arguments of a code and a timeout decode");
    super::run_js::call(toolbox, context, call, false).await
}
