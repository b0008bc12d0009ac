//! run_js's description: what a model reads in `tools/list`, with the
//! limits in force for the request.

use super::NAME;
use super::arguments::Args;
use crate::engine::time_before;
use std::time::SystemTime;

use serde_json::json;

use crate::tools::answer::schema;
use crate::tools::toolbox::Toolbox;

use crate::protocol::mcp::{Tool, ToolAnnotations};
use crate::units::MIB;

pub(super) const STATEFUL_DESCRIPTION: &str = "Run JavaScript or TypeScript in a V8 isolate and return its completion value and console output. \
Every successful run saves the whole heap and returns its key as `heap`; pass that key as `heap` in a later call to continue with \
every global, top-level declaration and object of that run. Heaps are immutable: continuing from the same key twice gives two \
independent branches. Name a logical session (the `session` argument, else the X-MCP-Session-Id header) to have the run \
logged there (list_session_snapshots reads the log).";

/// The first lines of the stateful description: what an omitted `heap`
/// does here, which a model must know before its second call.
pub(super) const FRESH_BY_DEFAULT: &str = "To keep state between calls, pass heap: \"latest\" (with a session) or the heap key \
of the run to continue. A call without `heap` starts from an empty isolate, even in a logical session that has runs \
(its result then warns).";
pub(super) const CONTINUE_BY_DEFAULT: &str = "State carries over within a logical session: on this server a call that names a \
session (the `session` argument) and omits `heap` continues from the session's last heap, as heap: \"latest\" does; \
pass heap: \"\" to start from an empty isolate.";

pub(super) const STATELESS_DESCRIPTION: &str = "Run JavaScript or TypeScript in a fresh V8 isolate and return its completion value and console \
output. This server is stateless: nothing is kept between calls.";

/// What code can use, in every mode (docs/engine.md, "The Web platform").
pub(super) const GLOBALS_DESCRIPTION: &str = "Code can use the Web platform without the network: URL, URLSearchParams, \
TextEncoder, TextDecoder, atob, btoa, structuredClone, crypto (getRandomValues, randomUUID, subtle.digest, HMAC sign/verify), \
performance.now, Event, EventTarget, AbortController, AbortSignal, DOMException, Blob, File, FormData, Headers, Request, \
Response, console (log, table, count, time, group, ...), setTimeout, setInterval, queueMicrotask. There are no \
streams, no WebAssembly and no environment. node:fs, node:fs/promises and node:path work on /work, the working directory \
(relative paths resolve there; nothing outside it exists): a stateful run's /work is kept with its heap, so continuing \
a heap sees its files, and a stateless run's starts empty; the `files` argument puts files there first, and \
resources/read of mcp-v8://heaps/{heap}/files/{path} reads them back. display(data, { mimeType, name }) adds a block \
after the result (an image you see, SVG, text, JSON, a file); display.chart({ type, data: rows, x, y, title }) a chart \
that hosts with MCP Apps draw. reportProgress(progress, total?, message?) \
shows the person how far a long run has come (each report must be greater than the last). The other \
node: modules are node:buffer, node:events, node:util, node:stream (and stream/promises; fs.createReadStream and \
createWriteStream over /work), node:readline (createInterface), node:string_decoder, node:assert, node:process, node:url, node:querystring, node:crypto, node:timers, \
node:perf_hooks, node:punycode and node:console; Buffer and process are globals (process.env is empty unless the operator set it, \
cwd() is /work, and process.exit() ends the run with an error). A run is a script, not a module: `import` declarations bind globals that later \
runs keep, and `export` is an error. A stateful run that keeps an Intl object or a \
FinalizationRegistry with registrations in a global fails (V8 cannot snapshot them): make them inside functions.";

/// The run's description, with the limits in force for a request that must
/// be answered by `deadline`.
pub(crate) fn describe(
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
    let base = if stateless {
        base
    } else {
        // The skills that go deeper, by name, so a client without the
        // Skills extension can still read them as resources; then what
        // only a stateful run can do, ask the person and wait.
        let skills = crate::skills::Builtins {
            code_mode: code_mode.is_some(),
        }
        .names()
        .join(", ");
        format!(
            "{base} How to work here step by step is in skills (skills/list, or resources/read of \
             skill://mcp-v8/NAME/SKILL.md): {skills}. await elicit({{ message, requestedSchema }}) asks the person (a flat form: string, number, integer, \
             boolean, enum properties; or {{ mode: \"url\", message, url }}) and resolves to {{ action: \"accept\" | \"decline\" | \
             \"cancel\", content }}, where the client supports elicitation; the run waits as a stored \
             heap, its timeout paused, for up to {} min, only while the client keeps the call open.",
            toolbox.suspended_run_ttl_secs / 60
        )
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

/// A byte count as people read it.
pub(super) fn bytes(n: usize) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}
