//! The tools as routes: each tool is one [`Route`] (its listing, who has
//! it, its task support, its duration estimate and its handler), as rmcp's
//! `ToolRouter` keeps one route per tool. Listing, dispatch and the task
//! policy read this one table, so adding a tool is a line here and its
//! module.

use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::calls::TaskSupport;
use super::toolbox::{Answer, CallContext, Toolbox};
use super::{display_page, executions, heap_tags, run_js, session_log};
use crate::packages::PackageView;
use crate::protocol::mcp::{CallToolResult, Tool};

/// What a listing reads, fetched once per `tools/list`.
pub(super) struct Listing<'a> {
    pub(super) toolbox: &'a Toolbox,
    /// When the host must have answered (the limits in force for it).
    pub(super) deadline: Option<SystemTime>,
    /// The deployment's packages, when it has a package store.
    pub(super) packages: Option<&'a PackageView>,
    /// The upstream servers' paragraph, when code mode is configured.
    pub(super) code_mode: Option<&'a str>,
}

/// Which servers and callers have a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// Every server.
    Always,
    /// A server that keeps heaps and a log (not `MCP_V8_STATELESS`); a
    /// stateless one answers that the tool is not available there.
    Stateful,
    /// A stateful server, to callers whose host renders the View.
    View,
}

/// A tool's handler: the arguments decoded into the tool's own type (a
/// decoding failure is a tool error the model can correct), then its call.
pub(super) type Handler =
    for<'a> fn(&'a Toolbox, CallContext<'a>, Option<&'a RawValue>, bool) -> BoxFuture<'a, Answer>;

/// One tool.
pub(super) struct Route {
    pub(super) name: &'static str,
    /// Its `tools/list` entry, `name` included.
    pub(super) describe: fn(&Listing<'_>) -> Tool,
    pub(super) shown: Shown,
    /// Whether its calls may become tasks.
    pub(super) task_support: TaskSupport,
    /// How long a call with these arguments says it may take (the task
    /// policy's input).
    pub(super) estimated_duration: fn(&RawValue) -> Option<Duration>,
    pub(super) call: Handler,
}

/// A [`Handler`] of `$call(toolbox, context, args, structured)`, whose
/// `args` is the tool's own argument type.
macro_rules! handler {
    ($call:path) => {{
        fn handle<'a>(
            toolbox: &'a Toolbox,
            context: CallContext<'a>,
            raw: Option<&'a RawValue>,
            structured: bool,
        ) -> BoxFuture<'a, Answer> {
            Box::pin(async move {
                match arguments(raw) {
                    Ok(args) => $call(toolbox, context, args, structured).await.into(),
                    Err(message) => CallToolResult::error(message).into(),
                }
            })
        }
        handle
    }};
}

/// Decodes tool arguments, with a message the model can act on: which
/// argument, and what was wrong with it.
pub(super) fn arguments<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, String> {
    let text = raw.map_or("{}", RawValue::get);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        format!(
            "invalid arguments: {}",
            super::args::at_argument(
                e.path(),
                crate::protocol::jsonrpc::plain_json_error(e.inner())
            )
        )
    })
}

fn none(_: &RawValue) -> Option<Duration> {
    None
}

/// A store tool: stateful, answered at once.
macro_rules! store_tool {
    ($name:path, $describe:path, $call:path) => {
        Route {
            name: $name,
            describe: |_| $describe(),
            shown: Shown::Stateful,
            task_support: TaskSupport::Forbidden,
            estimated_duration: none,
            call: handler!($call),
        }
    };
}

/// Every tool, in the order `tools/list` gives them.
pub(super) static ROUTES: &[Route] = &[
    Route {
        name: run_js::NAME,
        describe: |listing| {
            run_js::describe(
                listing.toolbox,
                listing.deadline,
                listing.packages,
                listing.code_mode,
            )
        },
        shown: Shown::Always,
        // A run can take minutes.
        task_support: TaskSupport::Optional,
        estimated_duration: run_js::asked_duration,
        call: handler!(run_js::call),
    },
    store_tool!(
        session_log::LIST_SESSIONS,
        session_log::describe_list_sessions,
        session_log::list_sessions
    ),
    store_tool!(
        session_log::LIST_SESSION_SNAPSHOTS,
        session_log::describe_list_session_snapshots,
        session_log::list_session_snapshots
    ),
    store_tool!(
        heap_tags::GET_HEAP_TAGS,
        heap_tags::describe_get,
        heap_tags::get
    ),
    store_tool!(
        heap_tags::SET_HEAP_TAGS,
        heap_tags::describe_set,
        heap_tags::set
    ),
    store_tool!(
        heap_tags::DELETE_HEAP_TAGS,
        heap_tags::describe_delete,
        heap_tags::delete
    ),
    store_tool!(
        heap_tags::QUERY_HEAPS_BY_TAGS,
        heap_tags::describe_query,
        heap_tags::query
    ),
    store_tool!(
        executions::GET_EXECUTION,
        executions::describe,
        executions::get
    ),
    // The View's own tool, which only a host that renders it has a use for.
    Route {
        name: display_page::NAME,
        describe: |_| display_page::describe(),
        shown: Shown::View,
        task_support: TaskSupport::Forbidden,
        estimated_duration: none,
        call: handler!(display_page::call),
    },
];

/// The test-only toy tool (tools/toy.rs), routed as any other.
#[cfg(test)]
static TOY: &[Route] = &[store_tool!(
    super::toy::NAME,
    super::toy::describe,
    super::toy::call
)];
#[cfg(not(test))]
static TOY: &[Route] = &[];

/// Every route, in listing order.
pub(super) fn all() -> impl Iterator<Item = &'static Route> {
    ROUTES.iter().chain(TOY)
}

/// The route of `name`, if there is one.
pub(super) fn route(name: &str) -> Option<&'static Route> {
    all().find(|route| route.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_routed_once() {
        let mut names: Vec<&str> = all().map(|r| r.name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name routed twice");
        assert_eq!(route(run_js::NAME).map(|r| r.shown), Some(Shown::Always));
        assert!(route("no_such_tool").is_none());
    }
}
