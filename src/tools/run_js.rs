//! `run_js`: run JavaScript or TypeScript, optionally from a saved heap.

use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::budget::{self, Kept};
use super::schema;
use super::toolbox::{CallContext, MAX_RESULT_JSON_BYTES, Toolbox, result_json_len};
use crate::clock::{rfc3339_millis as rfc3339, unix_now};
use tracing::Instrument;

use super::saving;
use crate::engine::{Language, Ran, RunOutcome, RunRequest, RunStatus, Saving, stored_in};
use crate::heap::HeapKey;
use crate::meta::{ExecutionRecord, NewLogEntry, PendingSave, Tags};
use crate::protocol::mcp::{CallToolResult, Content, Tool, ToolAnnotations};
use crate::session::LogicalSession;
use crate::tenant::Tenant;

pub(super) const NAME: &str = "run_js";

/// What a model is told to change for a run to be answered directly
/// rather than as a task (where a task could not start).
pub const ANSWERED_DIRECTLY_IF: &str = "a shorter execution_timeout_secs answers directly";

/// The timeout a call's `arguments` ask for, when they name one.
pub(super) fn asked_duration(arguments: &serde_json::value::RawValue) -> Option<Duration> {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(default)]
        execution_timeout_secs: Option<f64>,
    }
    let secs = serde_json::from_str::<Asked>(arguments.get())
        .ok()?
        .execution_timeout_secs?;
    Duration::try_from_secs_f64(secs).ok()
}

const STATEFUL_DESCRIPTION: &str = "Run JavaScript or TypeScript in a V8 isolate and return its completion value and console output. \
Every successful run saves the whole heap and returns its key as `heap`; pass that key as `heap` in a later call to continue with \
every global, top-level declaration and object of that run. Heaps are immutable: continuing from the same key twice gives two \
independent branches. Name a logical session (the `session` argument, else the X-MCP-Session-Id header) to have the run \
logged there (list_session_snapshots reads the log).";

/// The first lines of the stateful description: what an omitted `heap`
/// does here, which a model must know before its second call.
const FRESH_BY_DEFAULT: &str = "To keep state between calls, pass heap: \"latest\" (with a session) or the heap key \
of the run to continue. A call without `heap` starts from an empty isolate, even in a logical session that has runs \
(its result then warns).";
const CONTINUE_BY_DEFAULT: &str = "State carries over within a logical session: on this server a call that names a \
session (the `session` argument) and omits `heap` continues from the session's last heap, as heap: \"latest\" does; \
pass heap: \"\" to start from an empty isolate.";

const STATELESS_DESCRIPTION: &str = "Run JavaScript or TypeScript in a fresh V8 isolate and return its completion value and console \
output. This server is stateless: nothing is kept between calls.";

/// What code can use, in every mode (docs/engine.md, "The Web platform").
const GLOBALS_DESCRIPTION: &str = "Code can use the Web platform without the network: URL, URLSearchParams, \
TextEncoder, TextDecoder, atob, btoa, structuredClone, crypto (getRandomValues, randomUUID, subtle.digest, HMAC sign/verify), \
performance.now, Event, EventTarget, AbortController, AbortSignal, DOMException, Blob, File, FormData, Headers, Request, \
Response, console (log, table, count, time, group, ...), setTimeout, setInterval, queueMicrotask. There are no \
streams, no WebAssembly and no environment. node:fs, node:fs/promises and node:path work on /work, the working directory \
(relative paths resolve there; nothing outside it exists): a stateful run's /work is kept with its heap, so continuing \
a heap sees its files, and a stateless run's starts empty; the `files` argument puts files there first, and \
resources/read of mcp-v8://heaps/{heap}/files/{path} reads them back. display(data, { mimeType, name }) adds a block \
after the result, in call order: PNG, JPEG, GIF or WebP bytes as an image you see (the type is recognised from the \
bytes), strings and SVG as text, objects as JSON, other bytes as an embedded file; a block too large for the answer \
(5 MiB in all) links to the /work file holding the same bytes, else is left out with a warning. \
display.chart({ type: \"line\" | \"bar\" | \"scatter\", data: rows, x: \"column\", y: \"column\" or [columns], title }) \
adds a chart, which hosts with MCP Apps draw (you read its rows as JSON). The other \
node: modules are node:buffer, node:events, node:util, node:stream (and stream/promises; fs.createReadStream and \
createWriteStream over /work), node:string_decoder, node:assert, node:process, node:url, node:crypto, node:timers, \
node:perf_hooks and node:console; Buffer and process are globals (process.env is empty unless the operator set it, \
cwd() is /work, and process.exit() ends the run with an error). A run is a script, not a module: `import` declarations bind globals that later \
runs keep, and `export` is an error. A stateful run that keeps an Intl object or a \
FinalizationRegistry with registrations in a global fails (V8 cannot snapshot them): make them inside functions.";

/// The arguments of `run_js`; its input schema is derived from them, and
/// `describe` fills in the limits in force and drops what a stateless
/// server does not offer.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// JavaScript or TypeScript source. The value of the last expression is the result; a promise is awaited. Top-level await works, and top-level declarations (var, let, const, function, class) persist as they do without it.
    code: String,
    /// Heap to start from: a `heap` returned by one of your earlier runs (another caller's heap is not found), or "latest" for the last heap of the logical session (the session argument, else the X-MCP-Session-Id header), or "" for a fresh isolate.
    #[serde(default)]
    #[schemars(regex(pattern = "^([0-9a-f]{64}|latest|)$"))]
    heap: Option<String>,
    /// Tags to set on the heap this run produces (replaces its tags).
    #[serde(default)]
    tags: Option<Tags>,
    /// Logical session whose log records this run. Overrides the X-MCP-Session-Id header; the way to keep a session log without headers (protocol 2026-07-28).
    #[serde(default)]
    #[schemars(length(min = 1, max = LogicalSession::MAX_LEN))]
    session: Option<String>,
    /// Timeout in seconds.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    execution_timeout_secs: Option<f64>,
    /// Heap limit in MiB.
    #[serde(default)]
    #[schemars(range(min = 8))]
    heap_memory_max_mb: Option<usize>,
    /// Default auto: TypeScript syntax is detected and its types stripped (no type checking).
    #[serde(default)]
    language: Language,
}

/// The arguments of a `run_js` call: its own, and those its run's
/// capabilities take (`files`), which the engine checks.
#[derive(Debug)]
pub(super) struct Call {
    args: Args,
    capabilities: serde_json::Map<String, serde_json::Value>,
}

impl<'de> Deserialize<'de> for Call {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut all = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        let capabilities = crate::engine::call_arguments()
            .filter_map(|argument| all.remove_entry(argument.name))
            .collect();
        // The argument a mistake is in, for the message (a Value loses it).
        let args = serde_path_to_error::deserialize(serde_json::Value::Object(all))
            .map_err(|e| D::Error::custom(super::args::at_argument(e.path(), e.inner())))?;
        Ok(Self { args, capabilities })
    }
}

/// How long before an invocation's deadline a run must end, to leave time
/// to snapshot and store its heap and write the log: 1 s plus 35 ms per MiB
/// of heap limit (a 10 MiB heap took about 330 ms to snapshot and store;
/// docs/performance.md, "Engine").
fn deadline_margin(heap_limit_mb: usize) -> Duration {
    Duration::from_millis(1000 + 35 * heap_limit_mb as u64)
}

/// The time a run may take before `deadline`, with the margin for a heap
/// limit of `heap_limit_mb`; zero when there is none left.
fn time_before(deadline: SystemTime, heap_limit_mb: usize) -> Duration {
    deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .saturating_sub(deadline_margin(heap_limit_mb))
}

/// The run's description, with the limits in force for a request that must
/// be answered by `deadline`.
pub(super) fn describe(
    toolbox: &Toolbox,
    deadline: Option<SystemTime>,
    packages: Option<&crate::packages::PackageView>,
    code_mode: Option<&str>,
) -> Tool {
    let stateless = toolbox.stateless;
    let limits = toolbox.engine.config();
    let mut max_timeout = limits.max_timeout;
    if let Some(deadline) = deadline {
        max_timeout = max_timeout.min(time_before(deadline, limits.default_heap_limit_mb));
    }
    let mut input_schema = schema::input_with::<Args>(crate::engine::call_arguments());
    schema::describe_property(
        &mut input_schema,
        "execution_timeout_secs",
        format!(
            "Timeout in seconds (default {}); at most {} s here{}.",
            limits.default_timeout.as_secs(),
            max_timeout.as_secs(),
            if deadline.is_some() {
                ", the time left in this invocation"
            } else {
                ""
            }
        ),
        Some(json!(max_timeout.as_secs_f64().floor().max(1.0))),
    );
    schema::describe_property(
        &mut input_schema,
        "heap_memory_max_mb",
        format!(
            "Heap limit in MiB (default {}, at most {}); ArrayBuffer memory (typed arrays, Blob, TextEncoder output, structuredClone copies) may use as much again.",
            limits.default_heap_limit_mb, limits.max_heap_limit_mb
        ),
        Some(json!(limits.max_heap_limit_mb)),
    );
    if stateless {
        schema::remove_properties(&mut input_schema, &["heap", "tags", "session"]);
    }
    let base = if stateless {
        STATELESS_DESCRIPTION.to_owned()
    } else if toolbox.continue_sessions {
        format!("{CONTINUE_BY_DEFAULT} {STATEFUL_DESCRIPTION}")
    } else {
        format!("{FRESH_BY_DEFAULT} {STATEFUL_DESCRIPTION}")
    };
    let base = match toolbox.answer_before_save_bytes {
        Some(least) if !stateless => format!(
            "{base} A run with heap: \"latest\"{} is answered before its heap is \
             stored: the answer then has `heap_saving` instead of `heap`, and the next heap: \"latest\" continues it \
             at once while it is stored.",
            if least == 0 {
                String::new()
            } else {
                format!(
                    " whose heap holds {} or more",
                    bytes(usize::try_from(least).unwrap_or(usize::MAX))
                )
            }
        ),
        _ => base,
    };
    let fetch = if limits.fetch.enabled() {
        let fetch = &limits.fetch;
        format!(
            "fetch reaches only these origins: {} (at most {} requests and {} of responses per run; \
anything else rejects with a TypeError naming the egress policy); ES modules from those origins can be imported by URL too.",
            fetch.allow.join(", "),
            fetch.max_requests,
            bytes(usize::try_from(fetch.max_response_bytes).unwrap_or(usize::MAX)),
        )
    } else {
        "fetch is off here: every request rejects with a TypeError naming the egress policy."
            .to_owned()
    };
    let packages = match packages {
        Some(view) if !view.is_empty() => format!(
            "Installed npm packages, for `import` (static or `import()`) and `require`, bare names and subpaths: {}; no others can be installed from a run.",
            view.listing()
        ),
        _ => "No npm packages are installed here (an operator adds them with `mcp-v8-lambda packages add`).".to_owned(),
    };
    let code_mode = match code_mode {
        Some(paragraph) => format!(
            "{paragraph} At most {} calls per run, each within {} ms and the run's timeout; the outcome's mcp_calls counts them. ",
            limits.capabilities.mcp.max_calls, limits.capabilities.mcp.call_timeout_ms
        ),
        None => String::new(),
    };
    let description = format!(
        "{base} {GLOBALS_DESCRIPTION} {packages} {fetch} {code_mode}Limits here: timeout {} s by default, at most {} s; heap {} MiB by default, at most {} MiB, \
and as much again for ArrayBuffer data; console output kept up to {} and the result up to {} (longer text is cut, with a marker); \
/work files up to {} each, {} and {} files in all. \
An answer's text stays within {} (and so does structuredContent): longer output keeps its first and last lines, a longer \
result is cut (in structuredContent it becomes a stand-in object with its type, size and a preview), and the answer names \
where the whole is kept with the run, mcp-v8://executions/ID/output or /result, readable with resources/read{}.",
        limits.default_timeout.as_secs(),
        max_timeout.as_secs(),
        limits.default_heap_limit_mb,
        limits.max_heap_limit_mb,
        bytes(limits.capabilities.console.max_output_bytes),
        bytes(limits.max_result_bytes),
        bytes(limits.capabilities.files.max_file_bytes),
        bytes(limits.capabilities.files.max_tree_bytes),
        limits.capabilities.files.max_files,
        bytes(toolbox.answer_budget_bytes),
        if stateless {
            " (not on this stateless server, which keeps nothing)"
        } else {
            " whole or in pages (?page=N)"
        },
    );
    Tool {
        name: NAME,
        title: "Run JavaScript",
        description: description.into(),
        input_schema,
        execution: None,
        meta: None,
        output_schema: Some(schema::run_outcome()),
        // It only adds: a new heap, a log entry, an execution record; the
        // `tags` it sets are those of the heap it produced.
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            // With an allow list or upstreams, code reaches the outside world.
            open_world_hint: limits.fetch.enabled() || limits.capabilities.mcp.enabled(),
        },
    }
}

/// The fields of `outcome` but its id, as the execution registry keeps
/// them.
fn outcome_fields(outcome: &RunOutcome) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(mut fields) =
        serde_json::to_value(outcome).expect("outcomes serialize")
    else {
        unreachable!("an outcome is a JSON object")
    };
    fields.remove("execution_id");
    fields
}

/// A byte count as people read it.
fn bytes(n: usize) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// A run as the arguments ask for it, checked.
struct Planned {
    request: RunRequest,
    logical_session: Option<LogicalSession>,
    /// `heap: "latest"`, resolved by [`resolve_latest`] when the run starts.
    latest: bool,
    /// `latest` because the deployment continues sessions, not because the
    /// call asked: a session's first run then starts fresh without a word.
    implied_latest: bool,
    /// No `heap` argument at all (`""` asks for a fresh isolate on purpose).
    heap_omitted: bool,
    tags: Option<Tags>,
    /// For the outcome: what the plan changed of what was asked.
    warnings: Vec<String>,
    /// The save of the heap this run continues live, not yet stored
    /// (`latest` while the session's last heap is being stored).
    continued: Option<saving::GoingSave>,
    /// How long the call waited for earlier heaps to be stored, and why.
    save_wait: Option<(Duration, String)>,
}

/// The least time worth starting a run with.
const MIN_RUN_TIME: Duration = Duration::from_millis(100);

/// The `heap` argument's word for the last heap of the call's logical session.
pub(super) const LATEST: &str = "latest";

/// Checks the arguments; `Err` is the tool error the model reads.
fn plan(toolbox: &Toolbox, context: CallContext<'_>, call: Call) -> Result<Planned, String> {
    let Call { args, capabilities } = call;
    let heap_omitted = args.heap.is_none();
    let mut latest = args.heap.as_deref() == Some(LATEST);
    let heap = match args.heap.as_deref() {
        None | Some("") | Some(LATEST) => None,
        Some(text) => Some(HeapKey::parse(text).map_err(|e| e.to_string())?),
    };
    if let Some(tags) = &args.tags {
        super::args::tags(tags)?;
    }
    if toolbox.stateless
        && (heap.is_some() || latest || args.tags.is_some() || args.session.is_some())
    {
        return Err("this server is stateless: run_js takes no heap, tags or session".into());
    }
    let logical_session = match args.session.as_deref() {
        Some(name) => Some(super::args::session(name)?),
        None => context.logical_session.cloned(),
    };
    if latest && logical_session.is_none() {
        return Err(
            "heap \"latest\" is the last heap of your logical session, and this call \
             names none: pass the session argument (any name, the same on every call that \
             continues it), or send the X-MCP-Session-Id header with every request"
                .into(),
        );
    }
    // Where the deployment continues sessions, leaving out `heap` in a
    // logical session asks for its last heap.
    let implied_latest = heap_omitted
        && toolbox.continue_sessions
        && !toolbox.stateless
        && logical_session.is_some();
    latest |= implied_latest;
    let mut timeout = match args.execution_timeout_secs {
        None => None,
        Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Some(Duration::from_secs_f64(secs))
        }
        Some(secs) if secs.is_finite() && secs > 0.0 => {
            let max = toolbox.engine.config().max_timeout.as_secs();
            return Err(format!(
                "execution_timeout_secs is at most {max} s here, got {secs}: do the work in parts \
                 over several runs (the heap keeps what each leaves)"
            ));
        }
        Some(secs) => {
            return Err(format!(
                "execution_timeout_secs must be a positive number of seconds, got {secs}"
            ));
        }
    };
    let mut warnings = Vec::new();
    if let Some(deadline) = context.deadline {
        let limits = toolbox.engine.config();
        let heap_limit_mb = args
            .heap_memory_max_mb
            .unwrap_or(limits.default_heap_limit_mb);
        let left = time_before(deadline, heap_limit_mb);
        if left < MIN_RUN_TIME {
            return Err(format!(
                "this invocation ends in {:.1} s, too soon to run and store a heap; \
                 retry, or raise the function's timeout",
                deadline
                    .duration_since(SystemTime::now())
                    .unwrap_or_default()
                    .as_secs_f64()
            ));
        }
        let asked = timeout.unwrap_or(limits.default_timeout);
        if asked > left {
            warnings.push(format!(
                "the timeout was cut from {:.1} s to {:.1} s: the invocation ends sooner, and its \
                 heap must still be stored",
                asked.as_secs_f64(),
                left.as_secs_f64()
            ));
            timeout = Some(left);
        }
    }
    Ok(Planned {
        request: RunRequest {
            code: args.code,
            heap,
            continues: None,
            tenant: context.tenant.clone(),
            stateful: !toolbox.stateless,
            language: args.language,
            timeout,
            heap_limit_mb: args.heap_memory_max_mb,
            control: context.control.cloned(),
            arguments: capabilities,
        },
        logical_session,
        latest,
        implied_latest,
        heap_omitted,
        tags: args.tags,
        warnings,
        continued: None,
        save_wait: None,
    })
}

/// Resolves `heap: "latest"`: the session's newest heap. While this
/// process is still storing it and an engine worker keeps it live, the run
/// continues it there at once (`live`; its own save is logged after that
/// one). Otherwise the output heap of the session's newest log entry, read
/// as the run starts, once the saves this process has going are over; a
/// session without runs starts fresh, with a warning saying so. A session
/// with too many heaps being stored waits for the oldest first.
async fn resolve_latest(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    planned: &mut Planned,
    live: bool,
) -> Result<(), String> {
    let Some(session) = &planned.logical_session else {
        return Ok(());
    };
    if toolbox.answer_before_save_bytes.is_some() {
        if planned.save_wait.is_none() {
            planned.save_wait = toolbox
                .saves
                .within(context.tenant, session, toolbox.unsaved)
                .await;
        }
        if let Some(going) = toolbox.saves.newest(context.tenant, session)
            && live
            && going.kept_live().await
            && toolbox.engine.holds_live(context.tenant, going.id)
        {
            planned.request.continues = Some(going.id);
            planned.continued = Some(going);
            return Ok(());
        }
    }
    // A save this process answered for first is waited for.
    let failed = toolbox.saves.wait(context.tenant, session).await;
    let (lost, last) = if toolbox.answer_before_save_bytes.is_some() || !failed.is_empty() {
        saving::lost_save(
            toolbox.meta.as_ref(),
            &toolbox.saves,
            context.tenant,
            session,
        )
        .await?
    } else {
        (
            None,
            saving::last_entry(toolbox.meta.as_ref(), context.tenant, session).await?,
        )
    };
    if let Some(lost) = lost {
        let stored = match &last {
            Some(entry) => format!(
                "The last heap stored in this session is {} (log entry {}): pass heap: \"{}\" to \
                 continue from it, or heap: \"\" to start fresh",
                entry.output_heap, entry.index, entry.output_heap
            ),
            None => "This session has no stored heap: pass heap: \"\" to start fresh".to_owned(),
        };
        return Err(format!(
            "heap \"latest\" of session {:?} is lost: run {} (its code ended at {}) was answered before \
             its heap was stored, and {}. Nothing that run, or any run of the session answered after the \
             last heap stored, defined exists. {stored}.",
            session.as_str(),
            lost.execution_id,
            lost.completed_at,
            lost.why
        ));
    }
    match last {
        Some(entry) => planned.request.heap = Some(entry.output_heap),
        None if planned.implied_latest => {}
        None => planned.warnings.push(format!(
            "session {:?} has no runs yet, so heap \"latest\" started a fresh isolate",
            session.as_str()
        )),
    }
    Ok(())
}

/// A warning when a call in a logical session that has runs leaves out
/// `heap`: the run started fresh, and the session's newest entry is now
/// this fresh state, so a model that meant to continue must be told.
/// `logged_at` is the index the run's own log entry got: the count of the
/// runs before it, known without a read. A run that logged nothing (it
/// failed: often the `ReferenceError` of a forgotten `heap`) reads the log.
async fn fresh_start_warning(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    planned: &Planned,
    logged_at: Option<u64>,
) -> Option<String> {
    if !planned.heap_omitted || planned.implied_latest || toolbox.stateless {
        return None;
    }
    let session = planned.logical_session.as_ref()?;
    let earlier = match logged_at {
        Some(index) => index,
        None => match toolbox.meta.last_log_entry(context.tenant, session).await {
            Ok(last) => last.map_or(0, |entry| entry.index + 1),
            Err(e) => {
                tracing::warn!(error = %e, "could not read the session log to check for a fresh start");
                return None;
            }
        },
    };
    if earlier == 0 {
        return None;
    }
    Some(format!(
        "this run started from a fresh isolate because heap was omitted, although session {:?} has {} \
         earlier run(s): nothing they defined exists here. Pass heap: \"latest\" (or a heap key) to \
         continue the session's state; pass heap: \"\" to start fresh on purpose without this warning",
        session.as_str(),
        earlier
    ))
}

pub(super) async fn call(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    call: Call,
    structured: bool,
) -> CallToolResult {
    let mut planned = match plan(toolbox, context, call) {
        Ok(planned) => planned,
        Err(message) => return CallToolResult::error(message),
    };
    if planned.latest
        && let Err(message) = resolve_latest(toolbox, context, &mut planned, true).await
    {
        return CallToolResult::error(message);
    }
    let heap = planned.request.heap.as_ref().map(HeapKey::as_str);
    let span = tracing::Span::current();
    span.record("input_heap", heap);
    if let Some(name) = &planned.logical_session {
        span.record("logical_session", name.as_str());
    }
    let started = crate::clock::unix_now_millis();
    let asked = super::advice::Asked {
        timeout: planned.request.timeout,
        heap_limit_mb: planned.request.heap_limit_mb,
        had_heap_limit_mb: None,
        code: planned.request.code.clone(),
    };
    // Kept to run again by key if the live heap went meanwhile.
    let again = planned.continued.is_some().then(|| planned.request.clone());
    let request = std::mem::take(&mut planned.request);
    let ran = match toolbox.engine.run_then_save(request).await {
        Err(crate::engine::EngineError::NotLive(_)) if again.is_some() => {
            planned.request = again.expect("kept above");
            planned.request.continues = None;
            planned.continued = None;
            if let Err(message) = resolve_latest(toolbox, context, &mut planned, false).await {
                return CallToolResult::error(message);
            }
            let request = std::mem::take(&mut planned.request);
            toolbox.engine.run_then_save(request).await
        }
        ran => ran,
    };
    let Ran { report, save } = match ran {
        Ok(ran) => ran,
        Err(e) => return CallToolResult::error(super::advice::refused(&e)),
    };
    let completed_at = crate::clock::unix_now_millis();
    let mut outcome = report.outcome;
    let asked = super::advice::Asked {
        had_heap_limit_mb: (report.heap_limit_mb > 0).then_some(report.heap_limit_mb),
        ..asked
    };
    super::advice::advise(&mut outcome, toolbox.engine.config(), &asked);
    let repl = report.repl;
    let displays = report.displays;
    outcome.warnings.append(&mut planned.warnings);
    if let Some((waited, why)) = planned.save_wait.take() {
        outcome.save_wait_ms = Some(waited.as_millis() as u64);
        outcome.warnings.push(format!(
            "this call waited {:.1} s before it ran, for earlier heaps to be stored: {why}",
            waited.as_secs_f64()
        ));
    }
    let first = match (save, &planned.logical_session) {
        // A caller that continues `latest` continues with it; one that
        // passed a key (or none) gets a key back.
        // A run that continued a heap still being stored is answered
        // first as well: its save is logged after that one.
        (Some(save), Some(session))
            if planned.latest
                && toolbox.answer_before_save_bytes.is_some_and(|least| {
                    report.heap_used_bytes >= least || planned.continued.is_some()
                }) =>
        {
            let marker = saving::pending(
                &toolbox.saves,
                outcome.execution_id,
                rfc3339(completed_at),
                context.deadline,
            );
            match toolbox
                .meta
                .put_pending_save(context.tenant, session, &marker)
                .await
            {
                Ok(()) => Some((save, session.clone(), marker)),
                Err(e) => {
                    // Without the marker a lost save could go unnoticed: wait.
                    tracing::warn!(error = %e, "the pending save was not written; the answer waits for the save");
                    stored_in(&mut outcome, save.wait().await);
                    None
                }
            }
        }
        (Some(save), _) => {
            stored_in(&mut outcome, save.wait().await);
            None
        }
        (None, _) => None,
    };
    span.record("execution_id", outcome.execution_id.to_string());
    span.record("status", outcome.status.as_str());
    span.record("heap", outcome.heap.as_ref().map(HeapKey::as_str));
    if let Some((save, session, marker)) = first {
        let (ticket, previous) = toolbox.saves.begin(
            context.tenant,
            &session,
            outcome.execution_id,
            (report.heap_used_bytes, save.live()),
        );
        outcome.heap_saving = Some(format!(
            "the heap is being stored after this answer (it holds {} MiB); continue with heap: \"latest\" \
             in session {:?}, which continues from it. Its key will be the next run's input_heap and is listed by \
             list_session_snapshots; its files are readable now as mcp-v8://heaps/{}/files/PATH (this \
             run's execution_id in place of the key), and get_execution waits for its record",
            report.heap_used_bytes.div_ceil(1024 * 1024),
            session.as_str(),
            outcome.execution_id
        ));
        let after = AfterAnswer {
            toolbox: toolbox.clone(),
            tenant: context.tenant.clone(),
            outcome: outcome.clone(),
            times: (started, completed_at),
            code: report.executed_code,
            session,
            tags: planned.tags.take(),
            marker,
            previous,
            continued: planned.continued.take(),
            key: ticket.key_sender(),
            answered: std::time::Instant::now(),
        };
        tokio::spawn(
            async move {
                let mut ticket = ticket;
                let ended = after.save(save, ticket.abandoned()).await;
                ticket.end(ended);
            }
            .instrument(span.clone()),
        );
        let warning = fresh_start_warning(toolbox, context, &planned, None).await;
        outcome.warnings.extend(warning);
        let shape = Shape::new(toolbox, &outcome, false, structured, context.ui_extension);
        return with_displays(toolbox, context.tenant, outcome, repl, displays, shape).await;
    }
    // A stateless server keeps nothing: no tool could read a record. A
    // cancelled run leaves nothing either: no log entry, no record.
    let mut metadata_failed = false;
    if !toolbox.stateless && outcome.status != RunStatus::Cancelled {
        let recorded = record(
            toolbox,
            context.tenant,
            &mut outcome,
            (started, completed_at),
            report.executed_code,
            planned.logical_session.as_ref(),
            planned.tags.as_ref(),
        )
        .await;
        metadata_failed = !recorded.written;
        // After the record: the warning needs the index the log gave the
        // run. The execution record keeps the run's own warnings.
        let warning = fresh_start_warning(toolbox, context, &planned, recorded.logged_at).await;
        if let Some(warning) = warning {
            outcome.warnings.push(warning);
        }
    }
    let is_error = outcome.status != RunStatus::Completed || metadata_failed;
    let mut shape = Shape::new(
        toolbox,
        &outcome,
        is_error,
        structured,
        context.ui_extension,
    );
    if metadata_failed {
        // A link to a record that was not written would only fail.
        shape.kept = Kept::Nowhere("the run's record was not written");
    }
    with_displays(toolbox, context.tenant, outcome, repl, displays, shape).await
}

/// What storing a heap answered for first needs: the run as answered, and
/// what its record and log entry carry.
struct AfterAnswer {
    /// When the answer left: the record says how long the save took after.
    answered: std::time::Instant,
    toolbox: Toolbox,
    tenant: Tenant,
    outcome: RunOutcome,
    times: (i128, i128),
    code: String,
    session: LogicalSession,
    tags: Option<Tags>,
    marker: PendingSave,
    /// The session's save going before this one: this one is logged after
    /// it, so a save never becomes `latest` before the one it continues.
    previous: Option<saving::GoingSave>,
    /// The save of the heap this run continued live, not yet stored as
    /// the run began: its key is this run's `input_heap`. Kept apart from
    /// `previous`, which may have ended, and been forgotten, by the time
    /// this run's save begins.
    continued: Option<saving::GoingSave>,
    /// Where this save says its heap's key, once stored.
    key: tokio::sync::watch::Sender<Option<HeapKey>>,
}

impl AfterAnswer {
    /// Waits for the heap to be stored, then writes what the run leaves
    /// behind; a save that failed, or that the host gave up (`abandoned`
    /// resolves with why), is written into the session's pending save, so
    /// that the next `latest` says so. `Err` says why the heap was not
    /// stored.
    async fn save(
        mut self,
        save: Saving,
        abandoned: impl std::future::Future<Output = String>,
    ) -> Result<(), String> {
        let why = tokio::select! {
            why = self.store(save) => why,
            why = abandoned => Some(why),
        };
        let Some(why) = why else {
            return Ok(());
        };
        tracing::error!(why, "a heap answered for before its save was not stored");
        self.marker.failed = Some(why.clone());
        if let Err(e) = self
            .toolbox
            .meta
            .put_pending_save(&self.tenant, &self.session, &self.marker)
            .await
        {
            tracing::error!(error = %e, "a failed save could not be recorded in the session");
        }
        Err(why)
    }

    /// Stores the heap and its records; `Some` says why it was not stored.
    async fn store(&mut self, save: Saving) -> Option<String> {
        let meta = self.toolbox.meta.clone();
        let stored = save.wait().await;
        self.outcome.heap_saving = None;
        if let Ok(key) = &stored {
            self.key.send_replace(Some(key.clone()));
        }
        if let Some(previous) = self.previous.take() {
            let _ = previous.ended().await;
        }
        if let Some(continued) = self.continued.take() {
            match (continued.ended().await, continued.key()) {
                (Ok(()), Some(key)) => self.outcome.input_heap = Some(key),
                (ended, _) => self.outcome.warnings.push(format!(
                    "this run continued the heap of run {} before it was stored, and that heap \
                     was not stored ({}): this run's heap holds its state",
                    continued.id,
                    ended.err().unwrap_or_else(|| "no key".to_owned())
                )),
            }
        }
        match stored {
            Ok(key) => {
                self.outcome.heap = Some(key);
                self.outcome.saved_after_ms =
                    Some(u64::try_from(self.answered.elapsed().as_millis()).unwrap_or(u64::MAX));
                let recorded = record(
                    &self.toolbox,
                    &self.tenant,
                    &mut self.outcome,
                    self.times,
                    std::mem::take(&mut self.code),
                    Some(&self.session),
                    self.tags.as_ref(),
                )
                .await;
                if recorded.logged_at.is_some() {
                    if let Err(e) = meta
                        .clear_pending_save(&self.tenant, &self.session, self.outcome.execution_id)
                        .await
                    {
                        // Its log entry is newer than it: `latest` reads past it.
                        tracing::warn!(error = %e, "a stored heap's pending save was not cleared");
                    }
                    return None;
                }
                Some(format!(
                    "its log entry was not written ({})",
                    self.outcome.warnings.last().map_or("", String::as_str)
                ))
            }
            Err(error) => Some(format!(
                "storing it failed ({}: {})",
                error.name, error.message
            )),
        }
    }
}

/// Room kept for the warnings that blocks which do not fit add to the text.
const DISPLAY_WARNINGS_ROOM: usize = 64 * 1024;

/// How a run is answered: the budget its text and `structuredContent`
/// each keep within, and where what does not fit is kept.
#[derive(Clone, Copy)]
struct Shape {
    is_error: bool,
    /// The client's protocol has `structuredContent` (2025-06-18 on).
    structured: bool,
    /// The host renders the run in an MCP Apps View.
    view: bool,
    budget: usize,
    kept: Kept,
    /// `display()` blocks no `/work` file holds may be kept in the
    /// caller's file store and linked.
    keeps_displays: bool,
}

impl Shape {
    fn new(
        toolbox: &Toolbox,
        outcome: &RunOutcome,
        is_error: bool,
        structured: bool,
        view: bool,
    ) -> Self {
        let keeps = if toolbox.stateless {
            Err("a stateless server keeps no runs")
        } else if outcome.status == RunStatus::Cancelled {
            Err("a cancelled run keeps nothing")
        } else {
            Ok(())
        };
        Self {
            is_error,
            structured,
            view,
            budget: toolbox.answer_budget_bytes,
            keeps_displays: keeps.is_ok() && toolbox.files.is_some(),
            kept: Kept::for_run(outcome.execution_id, keeps),
        }
    }
}

/// The tool result of `outcome` followed by its `display()` blocks: text
/// blocks as many as fit the answer budget after the run's own text (the
/// rest are links to their /work files), images as many as fit one
/// response (docs/tools.md); for a host with an MCP Apps `view`, `_meta`
/// says what each block is.
async fn with_displays(
    toolbox: &Toolbox,
    tenant: &Tenant,
    mut outcome: RunOutcome,
    repl: Option<String>,
    displays: Vec<crate::engine::Displayed>,
    shape: Shape,
) -> CallToolResult {
    if displays.is_empty() {
        let mut result = fitted(&outcome, repl.as_deref(), shape);
        if shape.view {
            result.meta = Some(crate::protocol::apps::displays_meta(&[]));
        }
        return result;
    }
    let text = fitted(&outcome, repl.as_deref(), shape);
    let room = MAX_RESULT_JSON_BYTES
        .saturating_sub(result_json_len(&text))
        .saturating_sub(DISPLAY_WARNINGS_ROOM);
    let text_len = text.content.first().map_or(0, Content::payload_len);
    // While the heap is being stored, links name it by the run's id.
    let heap = match (&outcome.heap, &outcome.heap_saving) {
        (Some(key), _) => Some(key.as_str().to_owned()),
        (None, Some(_)) => Some(outcome.execution_id.to_string()),
        (None, None) => None,
    };
    let shown = super::display::blocks(
        displays,
        &super::display::Target {
            heap: heap.as_deref(),
            execution_id: outcome.execution_id,
            room,
            text_room: shape.budget.saturating_sub(text_len),
            budget: shape.budget,
            // resource_link came with structured output (2025-06-18).
            links: shape.structured,
            keep: shape.keeps_displays,
        },
    );
    let mut shown = shown;
    // A link leaves only once what it names is stored.
    if let Some(store) = toolbox.files.as_ref() {
        for bytes in std::mem::take(&mut shown.kept) {
            if let Err(e) = store.put(tenant, &bytes).await {
                shown.warnings.push(format!(
                    "a display block linked above could not be kept ({e}): its link names nothing; \
                     write the data to /work in a stateful run and display the same bytes instead"
                ));
            }
        }
    }
    let mut result = if shown.warnings.is_empty() {
        text
    } else {
        outcome.warnings.extend(shown.warnings);
        fitted(&outcome, repl.as_deref(), shape)
    };
    if shape.view {
        // The blocks follow the run's own text in `content`.
        let first = result.content.len();
        let entries: Vec<_> = shown
            .entries
            .into_iter()
            .map(|mut entry| {
                entry.content = entry.content.map(|index| index + first);
                entry
            })
            .collect();
        result.meta = Some(crate::protocol::apps::displays_meta(&entries));
    }
    result.content.extend(shown.content);
    result
}

/// The tool result of `outcome` within the answer budget: the text the
/// model reads is the outcome's JSON with `result` as a REPL displays the
/// value (`[ NaN, Infinity, -0 ]`, `10n`, `Map(1) {…}`, `undefined`), which
/// JSON cannot tell apart; `structuredContent` is the outcome as it is.
/// Each is fitted to the budget on its own ([`budget::answer`]); the
/// execution record keeps them whole. docs/tools.md says what each holds.
fn fitted(outcome: &RunOutcome, repl: Option<&str>, shape: Shape) -> CallToolResult {
    let json = serde_json::to_value(outcome).expect("outcomes serialize");
    let shown = repl.filter(|_| outcome.status == RunStatus::Completed);
    budget::answer(
        json,
        shown,
        shape.budget,
        shape.kept,
        shape.is_error,
        shape.structured,
    )
}

/// Writes what a stateful run leaves behind: the log entry (with a logical
/// session), the execution record, the tags. The heap is stored already;
/// metadata that fails to follow is reported in `outcome.warnings`, never
/// hidden, and the heap stays usable by its key.
async fn record(
    toolbox: &Toolbox,
    tenant: &Tenant,
    outcome: &mut RunOutcome,
    (started, completed_at): (i128, i128),
    executed_code: String,
    logical_session: Option<&LogicalSession>,
    tags: Option<&Tags>,
) -> Recorded {
    let mut written = true;
    let mut logged_at = None;
    let completed_heap = match (outcome.status, &outcome.heap) {
        (RunStatus::Completed, Some(heap)) => Some(heap.clone()),
        _ => None,
    };
    let log = match (&completed_heap, logical_session) {
        (Some(output_heap), Some(name)) => Some((
            name,
            NewLogEntry {
                input_heap: outcome.input_heap.clone(),
                output_heap: output_heap.clone(),
                code: executed_code,
                timestamp: rfc3339(completed_at),
            },
        )),
        _ => None,
    };
    let execution = ExecutionRecord {
        execution_id: outcome.execution_id,
        outcome: outcome_fields(outcome),
        started_at: rfc3339(started),
        completed_at: rfc3339(completed_at),
        expires_at: unix_now() + toolbox.execution_ttl_secs,
    };
    match toolbox.meta.record_run(tenant, log, &execution).await {
        Ok(index) => logged_at = index,
        Err(e) => {
            outcome.warnings.push(format!(
                "the session log entry and execution record were not written: {e}"
            ));
            written = false;
        }
    }
    if let (Some(output_heap), Some(tags)) = (&completed_heap, tags)
        && let Err(e) = toolbox.meta.set_tags(tenant, output_heap, tags).await
    {
        outcome.warnings.push(format!("the tags were not set: {e}"));
        written = false;
    }
    Recorded { written, logged_at }
}

/// What [`record`] wrote.
struct Recorded {
    /// All of it.
    written: bool,
    /// The index of the run's log entry, when it has one.
    logged_at: Option<u64>,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::rfc3339;
    use crate::engine::{Engine, EngineConfig};
    use crate::meta::RedbMetaStore;
    use crate::protocol::mcp::CallToolParams;
    use crate::tenant::Tenant;
    use crate::tools::{CallContext, Toolbox};

    fn toolbox(config: EngineConfig, dir: &tempfile::TempDir) -> Toolbox {
        let db = Arc::new(redb::Database::create(dir.path().join("meta.redb")).unwrap());
        Toolbox {
            engine: Arc::new(Engine::new(config, None)),
            meta: Arc::new(RedbMetaStore::new(db).unwrap()),
            packages: None,
            files: None,
            mcp: None,
            clients: Arc::default(),
            stateless: true,
            execution_ttl_secs: 3600,
            continue_sessions: false,
            answer_before_save_bytes: None,
            saves: Arc::default(),
            unsaved: Default::default(),
            answer_budget_bytes: 32 * 1024,
        }
    }

    /// A 2025-06-18 call of `tenant`, outside any session.
    fn context(tenant: &Tenant) -> CallContext<'_> {
        CallContext {
            protocol_version: "2025-06-18",
            tenant,
            logical_session: None,
            deadline: None,
            control: None,
            tasks_extension: false,
            ui_extension: false,
        }
    }

    async fn run(toolbox: &Toolbox, arguments: Value) -> (bool, Value, String) {
        let tenant = Tenant::anonymous();
        let context = context(&tenant);
        let params = CallToolParams {
            name: super::NAME.into(),
            arguments: Some(serde_json::value::to_raw_value(&arguments).unwrap()),
            task: None,
        };
        let result = toolbox.call(context, params).await.unwrap();
        let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (
            result.is_error,
            result.structured_content.unwrap_or_default(),
            text,
        )
    }

    /// The test-only toy capability (engine/host/toy.rs) is registered by
    /// one line, yet its setting comes from the engine's configuration, a
    /// call argument overrides it, `run_js` lists that argument, and its
    /// report shows in the tool's result.
    #[tokio::test]
    async fn a_capability_takes_its_setting_and_argument_and_shows_its_report_in_run_js() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::default();
        config.capabilities.toy.factor = 10.0;
        let toolbox = toolbox(config, &dir);

        let code = "await toy.double(2) + await toy.double(3)";
        let (failed, outcome, _) = run(&toolbox, json!({ "code": code })).await;
        assert!(!failed, "{outcome}");
        assert_eq!(outcome["result"], "50", "the operator's factor: {outcome}");
        assert_eq!(outcome["toy_calls"], 2, "{outcome}");

        let (failed, outcome, _) = run(&toolbox, json!({ "code": code, "toy_factor": 3 })).await;
        assert!(!failed, "{outcome}");
        assert_eq!(outcome["result"], "15", "the call's factor: {outcome}");

        let (failed, _, text) = run(&toolbox, json!({ "code": code, "toy_factor": "x" })).await;
        assert!(failed);
        assert!(text.contains("toy_factor"), "{text}");
        let (failed, _, text) = run(&toolbox, json!({ "code": code, "no_such": 1 })).await;
        assert!(failed);
        assert!(text.contains("no_such"), "{text}");

        let tenant = Tenant::anonymous();
        let listed = toolbox.list(context(&tenant)).await;
        let schema = &listed.tools[0].input_schema;
        assert_eq!(
            schema["properties"]["toy_factor"]["type"], "number",
            "{schema}"
        );
        assert_eq!(schema["properties"]["files"]["type"], "object", "{schema}");
    }

    #[test]
    fn timestamps_have_three_fractional_digits_and_sort_as_strings() {
        let half = rfc3339(1_764_000_005_500);
        let later = rfc3339(1_764_000_005_510);
        assert_eq!(half, "2025-11-24T16:00:05.500Z");
        assert!(half < later, "{half} < {later}");
        assert_eq!(rfc3339(1_764_000_006_000), "2025-11-24T16:00:06.000Z");
    }
}
