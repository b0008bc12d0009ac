//! Natives of `mcp` (code mode): calls start here, are carried out by
//! `crate::upstream` on the host's runtime, and their answers come back
//! through the run's host work ([`deliver`]). Only
//! names, arguments and results cross into the isolate; URLs and headers
//! stay with the upstream's client.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use v8::MapFnTo;

use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::{Call, Capability, RunScope};
use crate::engine::layer::bytes::{string, string_array};
use crate::engine::layer::registry::Family;
use crate::engine::layer::registry::Natives;
use crate::engine::services::work::{HostWork, WorkSink};
use crate::upstream::{
    Answers, CallError, McpCount, ProgressSink, Resume, UpstreamAnswer as Called, UpstreamConfig,
    Upstreams,
};

pub(crate) fn natives() -> Natives {
    vec![
        ("servers", servers.map_fn_to()),
        ("start", start.map_fn_to()),
    ]
}

/// An answer for the run: the call's id and `{"ok": …}` or `{"error": …}`.
type Delivery = (u32, String);

/// A run's calls and the promises waiting on them.
pub(crate) struct McpRun {
    upstreams: Result<Arc<Upstreams>, String>,
    names: Vec<String>,
    max_calls: u32,
    started: u32,
    /// One call's longest time; the run's own end (its deadline, a
    /// cancel) aborts every call anyway, as the call's cancellation.
    call_timeout: Duration,
    slots: Arc<tokio::sync::Semaphore>,
    next_id: u32,
    flights: HashMap<u32, (tokio::task::AbortHandle, v8::Global<v8::PromiseResolver>)>,
    work: WorkSink,
    runtime: tokio::runtime::Handle,
    /// Where an upstream's progress is noted for the caller.
    control: Option<Arc<crate::engine::capability::control::RunControl>>,
}

impl Capability for McpRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "mcp",
        source: include_str!("mcp.js"),
        deps: &["elicit"],
        natives,
        globals: &["mcp"],
        version: 5,
    });
    /// The upstream MCP servers `mcp` calls (none by default).
    type Settings = UpstreamConfig;
    /// The upstream MCP servers `mcp` calls; `None`: none.
    type Ask = Option<Arc<UpstreamConfig>>;
    /// What the run called upstream, when it called anything.
    type Report = Option<McpCount>;

    fn ask(settings: &UpstreamConfig, _: &mut Call<'_>) -> Result<Self::Ask, String> {
        Ok(settings.enabled().then(|| Arc::new(settings.clone())))
    }

    fn show(report: &mut Option<McpCount>, shown: &mut RunReport) {
        shown.outcome.mcp_calls = report.take();
    }

    fn begin(isolate: &mut v8::Isolate, ask: &Self::Ask, run: &RunScope<'_>) {
        let Some(config) = ask.as_deref().filter(|c| c.enabled()) else {
            return;
        };
        isolate.set_slot(Self {
            upstreams: run.host.clients.upstreams(config, &run.host.runtime),
            names: config.servers.keys().cloned().collect(),
            max_calls: config.max_calls,
            started: 0,
            call_timeout: Duration::from_millis(config.call_timeout_ms),
            slots: Arc::new(tokio::sync::Semaphore::new(
                config.concurrency.max(1) as usize
            )),
            next_id: 0,
            flights: HashMap::new(),
            work: run.work.clone(),
            runtime: run.host.runtime.clone(),
            control: run.control.cloned(),
        });
    }

    fn pending(isolate: &v8::Isolate) -> bool {
        isolate
            .get_slot::<McpRun>()
            .is_some_and(|m| !m.flights.is_empty())
    }

    /// Dropping the run's calls cancels those still running.
    fn end(isolate: &mut v8::Isolate) -> Self::Report {
        let run = isolate.remove_slot::<McpRun>()?;
        (run.started > 0).then_some(McpCount { count: run.started })
    }
}

impl Drop for McpRun {
    /// A run that ends (completed, timed out, cancelled) takes its calls
    /// with it: each is cancelled at its upstream.
    fn drop(&mut self) {
        for (task, _) in self.flights.values() {
            task.abort();
        }
    }
}

/// What the code asked for.
enum Op {
    /// A tool's call: its arguments; the person's answers when the call
    /// goes on after its upstream asked; whether the code relays asks
    /// (heaps made before relaying existed do not).
    Call {
        tool: String,
        arguments: serde_json::Map<String, Value>,
        answers: Option<Box<Answers>>,
        relays: bool,
    },
    List,
}

fn state<'a>(scope: &'a mut v8::PinScope<'_, '_>) -> Option<&'a mut McpRun> {
    scope.get_slot_mut::<McpRun>()
}

fn throw_error(scope: &mut v8::PinScope<'_, '_>, message: &str, code: &str) {
    let Some(text) = string(scope, message) else {
        return;
    };
    let error = v8::Exception::error(scope, text);
    if let (Ok(object), Some(key), Some(value)) = (
        v8::Local::<v8::Object>::try_from(error),
        string(scope, "code"),
        string(scope, code),
    ) {
        object.set(scope, key.into(), value.into());
    }
    scope.throw_exception(error);
}

/// `servers()` → the configured servers' names (none when `mcp` is off).
fn servers<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let names = state(scope)
        .map(|run| run.names.clone())
        .unwrap_or_default();
    rv.set(string_array(scope, &names).into());
}

/// Longest a synchronous listing of a server's tools holds up the run.
const MAX_LIST_WAIT: Duration = Duration::from_secs(10);

/// `start("tools", server)` → JSON of `[{name, args}]`, the server's
/// tools and their argument names, for inspection (`Object.keys(mcp.<server>)`,
/// `in`, `console.log`), which cannot await: it waits for the listing
/// (once per process, as `listTools`), at most the call timeout and
/// [`MAX_LIST_WAIT`]. Throws what listing failed with. (A kind of `start`
/// rather than a native of its own: stored heaps find natives by their
/// index in one table, which only grows at its end.)
fn tools<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    server: String,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(upstreams) = upstreams_for(scope, &server) else {
        return;
    };
    let wait = state(scope).map_or(MAX_LIST_WAIT, |run| run.call_timeout.min(MAX_LIST_WAIT));
    let listing = {
        let server = server.clone();
        async move { tokio::time::timeout(wait, upstreams.tools(&server)).await }
    };
    // The run's one place of waiting: its deadline and a cancel end it too.
    let Some(work) = scope.get_slot_mut::<HostWork>() else {
        throw_error(
            scope,
            "mcp: this run cannot wait for its host",
            "MCP_FAILED",
        );
        return;
    };
    let tools = match work.block_on(listing) {
        Ok(Ok(Ok(tools))) => tools,
        Ok(Ok(Err(error))) => {
            let fields = error_fields(&error);
            let code = fields["code"].as_str().unwrap_or("MCP_FAILED").to_owned();
            throw_error(scope, &error.to_string(), &code);
            return;
        }
        Err(_) => {
            let message =
                "the run ended (its time ran out, or it was cancelled) while the tools were listed";
            throw_error(scope, message, "MCP_TIMEOUT");
            return;
        }
        Ok(Err(_)) => {
            let message = format!(
                "upstream MCP server {server:?} did not list its tools within {} ms",
                wait.as_millis()
            );
            throw_error(scope, &message, "MCP_TIMEOUT");
            return;
        }
    };
    let listed: Vec<Value> = tools
        .iter()
        .map(|tool| json!({ "name": tool.name, "args": tool.argument_names() }))
        .collect();
    if let Some(text) = string(scope, &Value::Array(listed).to_string()) {
        rv.set(text.into());
    }
}

/// The upstreams a request to `server` goes through; `None` with an error
/// thrown when it cannot go (`mcp` off, no such server, no connections).
fn upstreams_for(scope: &mut v8::PinScope<'_, '_>, server: &str) -> Option<Arc<Upstreams>> {
    let Some(run) = state(scope) else {
        throw_error(
            scope,
            "mcp has no servers here: none is configured (the operator lists them in MCP_V8_MCP_SERVERS)",
            "MCP_OFF",
        );
        return None;
    };
    if !run.names.iter().any(|name| name == server) {
        let message = format!(
            "there is no upstream MCP server {server:?} here; the servers are: {}",
            run.names.join(", ")
        );
        throw_error(scope, &message, "MCP_UNKNOWN_SERVER");
        return None;
    }
    match &run.upstreams {
        Ok(upstreams) => Some(upstreams.clone()),
        Err(error) => {
            let message = format!("mcp cannot reach its servers: {error}");
            throw_error(scope, &message, "MCP_UNREACHABLE");
            None
        }
    }
}

/// `start("call" | "list", server, tool, argsJson[, asks])` → a promise of
/// the answer's JSON (`{"ok"}`, `{"error"}`, or the upstream's questions,
/// `{"asks", "resume"}`, when the code relays them) (`start("tools", server)`: see [`tools`]); throws when
/// the call may not start (no such server, `mcp` off, the run's call
/// limit).
fn start<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let kind = args.get(0).to_rust_string_lossy(scope);
    let server = args.get(1).to_rust_string_lossy(scope);
    if kind == "tools" {
        return tools(scope, server, rv);
    }
    // `start("release", server, token)`: the held call of a question the
    // person cannot be asked is dropped (cancelled at its upstream).
    if kind == "release" {
        let token = args.get(2).to_rust_string_lossy(scope);
        if let Some(Ok(upstreams)) = state(scope).map(|run| &run.upstreams) {
            upstreams.release(&token);
        }
        return;
    }
    let tool = args.get(2).to_rust_string_lossy(scope);
    let raw = args.get(3).to_rust_string_lossy(scope);
    let Some(upstreams) = upstreams_for(scope, &server) else {
        return;
    };
    let op = if kind == "call" {
        // The fifth argument: absent from code that cannot relay the
        // upstream's questions, "asks" from code that can, or the person's
        // answers to the questions of this very call.
        let extra = args.get(4);
        let (relays, answers) = if extra.is_undefined() {
            (false, None)
        } else {
            let text = extra.to_rust_string_lossy(scope);
            if text == "asks" {
                (true, None)
            } else {
                match serde_json::from_str::<Answers>(&text) {
                    Ok(answers) => (true, Some(Box::new(answers))),
                    Err(error) => {
                        let message =
                            format!("mcp.callTool: the answers are not readable: {error}");
                        throw_error(scope, &message, "MCP_BAD_ARGS");
                        return;
                    }
                }
            }
        };
        let Some(run) = state(scope) else {
            return;
        };
        // An answered question goes on with the call it came in.
        if answers.is_none() {
            if run.started >= run.max_calls {
                let message = format!(
                    "mcp.callTool refused: this run has made its {} calls (MCP_V8_MCP_MAX_CALLS); return what you have and continue in another run",
                    run.max_calls
                );
                throw_error(scope, &message, "MCP_CALL_LIMIT");
                return;
            }
            run.started += 1;
        }
        let Ok(Value::Object(arguments)) = serde_json::from_str::<Value>(&raw) else {
            throw_error(
                scope,
                "mcp.callTool: args must be an object",
                "MCP_BAD_ARGS",
            );
            return;
        };
        Op::Call {
            tool,
            arguments,
            answers,
            relays,
        }
    } else {
        Op::List
    };
    let Some(run) = state(scope) else {
        return;
    };
    run.next_id += 1;
    let id = run.next_id;
    let work = run.work.clone();
    let slots = run.slots.clone();
    let timeout = run.call_timeout;
    let control = run.control.clone();
    let task = run.runtime.spawn(async move {
        let _permit = slots.acquire_owned().await;
        let answer = match op {
            Op::Call {
                tool,
                arguments,
                answers,
                relays,
            } => {
                // The upstream's progress shows in the caller's progress.
                let progress = control.map(|control| {
                    let named = format!("{server}.{tool}");
                    Arc::new(move |said: String| control.set_note(format!("{named}: {said}")))
                        as ProgressSink
                });
                let answers = answers.map(|a| *a);
                let called = upstreams.call(&server, &tool, arguments, answers, progress, timeout);
                match called.await {
                    Ok(Called::Value(value)) => Ok(value),
                    Ok(Called::Asks(asks)) if relays => {
                        let text = json!({ "asks": asks.requests, "resume": asks.resume });
                        work.deliver(move |scope| deliver(scope, (id, text.to_string())));
                        return;
                    }
                    Ok(Called::Asks(asks)) => {
                        if let Resume::Held { token } = &asks.resume {
                            upstreams.release(token);
                        }
                        Err(CallError::Failed {
                            server: server.clone(),
                            tool,
                            reason: "the upstream asked the person, which code mode in this heap \
                                 (made by an older build) cannot relay; continue in a new session"
                                .to_owned(),
                        })
                    }
                    Err(error) => Err(error),
                }
            }
            Op::List => match tokio::time::timeout(timeout, upstreams.tools(&server)).await {
                Ok(listed) => {
                    listed.map(|tools| serde_json::to_value(&*tools).unwrap_or(Value::Null))
                }
                Err(_) => Err(CallError::TimedOut {
                    server: server.clone(),
                    tool: "tools/list".to_owned(),
                    ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                }),
            },
        };
        let text = match answer {
            Ok(value) => json!({ "ok": value }),
            Err(error) => json!({ "error": error_fields(&error) }),
        };
        let answer = (id, text.to_string());
        work.deliver(move |scope| deliver(scope, answer));
    });
    let Some(resolver) = v8::PromiseResolver::new(scope) else {
        task.abort();
        return;
    };
    let promise = resolver.get_promise(scope);
    let global = v8::Global::new(scope, resolver);
    if let Some(run) = state(scope) {
        run.flights.insert(id, (task.abort_handle(), global));
    }
    rv.set(promise.into());
}

/// The properties of the `Error` code sees for `error`.
fn error_fields(error: &CallError) -> Value {
    let (code, server, tool) = match error {
        CallError::UnknownServer { name, .. } => ("MCP_UNKNOWN_SERVER", name, None),
        CallError::UnknownTool { server, tool, .. } => ("MCP_UNKNOWN_TOOL", server, Some(tool)),
        CallError::Tool { server, tool, .. } => ("MCP_TOOL_ERROR", server, Some(tool)),
        CallError::Unreachable { server, .. } => ("MCP_UNREACHABLE", server, None),
        CallError::Failed { server, tool, .. } => ("MCP_FAILED", server, Some(tool)),
        CallError::TimedOut { server, tool, .. } => ("MCP_TIMEOUT", server, Some(tool)),
        CallError::TooLarge { server, tool, .. } => ("MCP_TOO_LARGE", server, Some(tool)),
    };
    let mut fields = json!({ "message": error.to_string(), "code": code, "server": server });
    if let Some(tool) = tool {
        fields["tool"] = json!(tool);
    }
    if error.is_tool_error() {
        fields["isError"] = json!(true);
    }
    fields
}

/// Settles the promise an answer is for.
fn deliver(scope: &mut v8::PinScope<'_, '_>, (id, text): Delivery) {
    let Some((_, resolver)) = state(scope).and_then(|run| run.flights.remove(&id)) else {
        return;
    };
    let resolver = v8::Local::new(scope, resolver);
    if let Some(text) = string(scope, &text) {
        resolver.resolve(scope, text.into());
    }
}
