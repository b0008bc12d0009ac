//! The tools as a router value, as rmcp's `ToolRouter` is: each tool is one
//! declaration ([`ToolRoute`]: its listing, who has it, its task support,
//! its duration estimate and its handler), and the composition root builds
//! the server's router from [`ToolRouter::builtin`], merged with whatever a
//! build adds (the conformance fixtures' tools). Listing, dispatch and the
//! task policy read the router the [`Toolbox`] carries, and nothing else.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::answer::schema;
use super::calls::{TaskSupport, ToolCallError};
use super::toolbox::{CallContext, ToolAnswer, Toolbox, structured_result};
use super::{display_page, executions, heap_tags, run_js, session_log};
use crate::packages::PackageView;
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

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
    /// A stateful server, to callers whose host renders the View. Such
    /// tools are listed last.
    View,
}

/// A tool's handler: the raw arguments in, its answer (or a protocol
/// error) out; `bool` says whether the caller's protocol has
/// `structuredContent`.
type Handler = Arc<
    dyn for<'a> Fn(
            &'a Toolbox,
            CallContext<'a>,
            Option<&'a RawValue>,
            bool,
        ) -> BoxFuture<'a, Result<ToolAnswer, ToolCallError>>
        + Send
        + Sync,
>;

/// `call` as a [`Handler`]: the bound gives the closure its signature,
/// lifetimes included, which `Arc::new` alone would not.
fn handler<F>(call: F) -> Handler
where
    F: for<'a> Fn(
            &'a Toolbox,
            CallContext<'a>,
            Option<&'a RawValue>,
            bool,
        ) -> BoxFuture<'a, Result<ToolAnswer, ToolCallError>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(call)
}

/// How a tool's `tools/list` entry is made.
#[derive(Clone)]
enum Describe {
    /// From what the listing knows (`run_js` names the packages and limits).
    Listed(fn(&Listing<'_>) -> Tool),
    /// The same for every listing.
    Fixed(Box<Tool>),
}

/// One tool: its one declaration.
#[derive(Clone)]
pub struct ToolRoute {
    name: &'static str,
    describe: Describe,
    shown: Shown,
    task_support: TaskSupport,
    /// How long a call with these arguments says it may take (the task
    /// policy's input).
    estimated_duration: fn(&RawValue) -> Option<Duration>,
    /// The View (an MCP Apps resource) a host that renders it shows this
    /// tool's results in.
    view: Option<&'static str>,
    call: Handler,
}

impl ToolRoute {
    /// A tool declared by its argument and result types: its input and
    /// output schemas are derived from `A` and `O` (their doc comments
    /// describe each field); `call` gets the arguments decoded into `A`
    /// (a decoding failure is a tool error naming the argument) and its
    /// `Ok` is the result, structured where the caller's protocol has
    /// `structuredContent`, its `Err` a tool error the model reads. It is
    /// listed on every server, read-only and never a task, unless the
    /// builder methods say otherwise.
    pub fn declare<A, O, F>(
        name: &'static str,
        title: &'static str,
        description: &str,
        call: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: serde::Serialize + JsonSchema + 'static,
        F: for<'a> Fn(&'a Toolbox, CallContext<'a>, A) -> BoxFuture<'a, Result<O, String>>
            + Send
            + Sync
            + 'static,
    {
        let tool = Tool {
            name,
            title,
            description: description.to_owned().into(),
            input_schema: schema::input::<A>(),
            output_schema: Some(schema::output::<O>()),
            execution: None,
            meta: None,
            annotations: ToolAnnotations::READ_ONLY,
        };
        Self::fixed(
            tool,
            handler(move |toolbox, context, raw, structured| {
                let called = arguments::<A>(raw).map(|args| call(toolbox, context, args));
                Box::pin(async move {
                    Ok(match called {
                        Ok(called) => match called.await {
                            Ok(result) => structured_result(&result, false, structured),
                            Err(message) => CallToolResult::error(message),
                        },
                        Err(message) => CallToolResult::error(message),
                    }
                    .into())
                })
            }),
        )
    }

    /// A tool listed as `tool` says, whose `call` decodes its own
    /// arguments (the conformance fixtures', whose schemas are the
    /// suite's). An argument `tool`'s input schema mirrors in an
    /// `Mcp-Param-*` header is checked against the request's.
    pub fn new<F>(tool: Tool, call: F) -> Self
    where
        F: for<'a> Fn(
                &'a Toolbox,
                CallContext<'a>,
                Option<&'a RawValue>,
            ) -> BoxFuture<'a, Result<ToolAnswer, ToolCallError>>
            + Send
            + Sync
            + 'static,
    {
        Self::fixed(
            tool,
            handler(move |toolbox, context, raw, _| call(toolbox, context, raw)),
        )
    }

    fn fixed(tool: Tool, call: Handler) -> Self {
        Self {
            name: tool.name,
            describe: Describe::Fixed(Box::new(tool)),
            shown: Shown::Always,
            task_support: TaskSupport::Forbidden,
            estimated_duration: none,
            view: None,
            call,
        }
    }

    /// Whether its calls may become tasks.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// What calling it does to the world (default: read-only).
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        if let Describe::Fixed(tool) = &mut self.describe {
            tool.annotations = annotations;
        }
        self
    }

    /// Listed only by a server that keeps heaps and a log; a stateless one
    /// answers that it is not available there.
    pub fn stateful(mut self) -> Self {
        self.shown = Shown::Stateful;
        self
    }

    /// Its name in `tools/list` and `tools/call`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its `tools/list` entry, `name` included.
    pub(super) fn describe(&self, listing: &Listing<'_>) -> Tool {
        match &self.describe {
            Describe::Listed(describe) => describe(listing),
            Describe::Fixed(tool) => (**tool).clone(),
        }
    }

    /// The input schema a call's `Mcp-Param-*` headers are checked
    /// against: the server's own tools mirror no argument in a header.
    pub(super) fn param_schema(&self) -> Option<&serde_json::Value> {
        match &self.describe {
            Describe::Listed(_) => None,
            Describe::Fixed(tool) => Some(&tool.input_schema),
        }
    }

    pub(super) fn shown(&self) -> Shown {
        self.shown
    }

    pub(super) fn supports_tasks(&self) -> TaskSupport {
        self.task_support
    }

    pub(super) fn view(&self) -> Option<&'static str> {
        self.view
    }

    pub(super) fn estimated_duration(&self, arguments: &RawValue) -> Option<Duration> {
        (self.estimated_duration)(arguments)
    }

    pub(super) fn call<'a>(
        &'a self,
        toolbox: &'a Toolbox,
        context: CallContext<'a>,
        arguments: Option<&'a RawValue>,
        structured: bool,
    ) -> BoxFuture<'a, Result<ToolAnswer, ToolCallError>> {
        (self.call)(toolbox, context, arguments, structured)
    }
}

impl fmt::Debug for ToolRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRoute")
            .field("name", &self.name)
            .field("shown", &self.shown)
            .field("task_support", &self.task_support)
            .finish_non_exhaustive()
    }
}

/// The tools of a server, in the order `tools/list` gives them.
#[derive(Clone, Debug)]
pub struct ToolRouter {
    routes: Arc<[ToolRoute]>,
}

impl ToolRouter {
    /// No tools.
    pub fn empty() -> Self {
        Self {
            routes: Arc::from([]),
        }
    }

    /// The server's own tools.
    pub fn builtin() -> Self {
        Self {
            routes: builtin().into(),
        }
    }

    /// This router with `route` added: listed after the tools before it,
    /// and before the View's own tools.
    ///
    /// # Panics
    /// When a tool of that name is already routed, as axum's `Router`
    /// panics on a route declared twice: it is a mistake of the build.
    pub fn with(self, route: ToolRoute) -> Self {
        assert!(
            self.route(route.name).is_none(),
            "the tool {} is declared twice",
            route.name
        );
        let mut routes = self.routes.to_vec();
        let at = routes
            .iter()
            .position(|r| r.shown == Shown::View)
            .unwrap_or(routes.len());
        routes.insert(at, route);
        Self {
            routes: routes.into(),
        }
    }

    /// This router with every route of `other` added, in its order
    /// ([`Self::with`]).
    pub fn merge(self, other: ToolRouter) -> Self {
        other.routes.iter().cloned().fold(self, Self::with)
    }

    /// The names of the tools a server lists to a caller: `stateless`
    /// says whether the server keeps no heaps, `view` whether the caller's
    /// host renders the View.
    pub fn listed(&self, stateless: bool, view: bool) -> Vec<&'static str> {
        self.routes
            .iter()
            .filter(|route| route.shown.to(stateless, view))
            .map(|route| route.name)
            .collect()
    }

    /// The route of `name`, if there is one.
    pub(super) fn route(&self, name: &str) -> Option<&ToolRoute> {
        self.routes.iter().find(|route| route.name == name)
    }

    /// Every route, in listing order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &ToolRoute> {
        self.routes.iter()
    }
}

impl Shown {
    /// Whether a server that is `stateless` has such a tool for a caller
    /// whose host renders the View when `view`.
    pub(super) fn to(self, stateless: bool, view: bool) -> bool {
        match self {
            Shown::Always => true,
            Shown::Stateful => !stateless,
            Shown::View => !stateless && view,
        }
    }
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

/// A built-in tool's [`Handler`] of `$call(toolbox, context, args,
/// structured)`, whose `args` is the tool's own argument type.
macro_rules! typed {
    ($call:path) => {
        handler(|toolbox, context, raw, structured| {
            Box::pin(async move {
                Ok(match arguments(raw) {
                    Ok(args) => $call(toolbox, context, args, structured).await.into(),
                    Err(message) => CallToolResult::error(message).into(),
                })
            })
        })
    };
}

/// A store tool: stateful, answered at once.
macro_rules! store_tool {
    ($name:path, $describe:path, $call:path) => {
        ToolRoute {
            name: $name,
            describe: Describe::Listed(|_| $describe()),
            shown: Shown::Stateful,
            task_support: TaskSupport::Forbidden,
            estimated_duration: none,
            view: None,
            call: typed!($call),
        }
    };
}

/// The server's own tools, in the order `tools/list` gives them.
fn builtin() -> Vec<ToolRoute> {
    vec![
        ToolRoute {
            name: run_js::NAME,
            describe: Describe::Listed(|listing| {
                run_js::describe(
                    listing.toolbox,
                    listing.deadline,
                    listing.packages,
                    listing.code_mode,
                )
            }),
            shown: Shown::Always,
            // A run can take minutes.
            task_support: TaskSupport::Optional,
            estimated_duration: run_js::asked_duration,
            view: Some(crate::protocol::apps::RUN_VIEW_URI),
            call: typed!(run_js::call),
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
        ToolRoute {
            name: display_page::NAME,
            describe: Describe::Listed(|_| display_page::describe()),
            shown: Shown::View,
            task_support: TaskSupport::Forbidden,
            estimated_duration: none,
            view: None,
            call: typed!(display_page::call),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_routed_once() {
        let router = ToolRouter::builtin();
        let mut names: Vec<&str> = router.iter().map(|r| r.name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name routed twice");
        assert_eq!(
            router.route(run_js::NAME).map(ToolRoute::shown),
            Some(Shown::Always)
        );
        assert!(router.route("no_such_tool").is_none());
    }

    #[test]
    #[should_panic(expected = "the tool run_js is declared twice")]
    fn a_tool_declared_twice_is_refused() {
        let again = ToolRouter::builtin();
        let run_js = again.route(run_js::NAME).unwrap().clone();
        let _ = again.with(run_js);
    }
}
