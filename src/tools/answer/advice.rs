//! What to change, added to a failed run's message where the engine can
//! only say what happened: the engine knows a run hit its timeout or heap
//! limit, while only `run_js` knows the argument that set it and how far it
//! may go; a redeclaration is only a mistake to explain in a continued heap.

use std::time::Duration;

use crate::engine::{EngineConfig, EngineError, RunError, RunOutcome, RunReport, RunStatus};

/// How to keep data out of memory: `/work` is a disk, and its streams
/// hold a piece at a time.
const STREAMS: &str = "stream large data through /work files, which live on disk, not in the \
    run's memory: fs.createWriteStream(path) to write as you go, fs.createReadStream(path) (with \
    node:readline's createInterface for lines) or fs.readSync with a position to read a piece at a time; readFileSync of \
    a large file loads it whole";

/// What a run had, as the engine reported it ([`RunReport`]): its limits
/// after every adjustment (a continued heap's size, a ready heap, the
/// host's deadline) and the code it was sent.
pub(in crate::tools) struct Had<'a> {
    pub timeout: Duration,
    pub heap_limit: crate::engine::HeapLimit,
    pub code: &'a str,
    /// It continued a heap kept live whose key was not known yet (its
    /// `input_heap` is then `null`).
    pub continued_live: bool,
}

impl<'a> Had<'a> {
    /// What `report`'s run had; `code` is what the call sent.
    pub(in crate::tools) fn of(report: &RunReport, code: &'a str) -> Self {
        Self {
            timeout: report.timeout,
            heap_limit: report.heap_limit,
            code,
            continued_live: false,
        }
    }
}

/// Appends to `outcome`'s error what the model can change.
pub(in crate::tools) fn advise(outcome: &mut RunOutcome, limits: &EngineConfig, had: &Had<'_>) {
    let missing = outcome
        .started_without_its_heap()
        .then(|| outcome.input_heap.clone())
        .flatten();
    let continued = (outcome.input_heap.is_some() && missing.is_none()) || had.continued_live;
    let status = outcome.status;
    let Some(error) = outcome.error.as_mut() else {
        return;
    };
    match status {
        RunStatus::TimedOut => {
            let had = had.timeout.as_secs_f64();
            let max = limits.max_timeout.as_secs_f64();
            error.message.push_str(&if had < max {
                format!(
                    "; raise execution_timeout_secs (this run had {had} s; at most {max} s), or do \
                     the work in parts over several runs: the heap keeps what each leaves"
                )
            } else {
                format!(
                    "; {had} s is execution_timeout_secs's maximum: do the work in parts over several \
                     runs (the heap keeps what each leaves), or process less data per run"
                )
            });
        }
        RunStatus::OutOfMemory => {
            let had = had.heap_limit.mb();
            let max = limits.max_heap_limit_mb;
            error.message.push_str(&if had < max {
                format!(
                    "; raise heap_memory_max_mb (this run had {had} MiB; at most {max} MiB), or keep \
                     less in memory at once: {STREAMS}"
                )
            } else {
                format!(
                    "; {had} MiB is heap_memory_max_mb's maximum: keep less in memory at once \
                     ({STREAMS}; drop what you no longer need)"
                )
            });
        }
        RunStatus::Failed if error.name == "SyntaxError" => {
            if let Some(name) = redeclared(&error.message)
                && continued
                && declarations_of(had.code, name) < 2
            {
                add(
                    error,
                    &format!(
                        ": an earlier run of this heap declared `{name}`, and declarations stay. \
                         Assign it without let/const (`{name} = …`) to replace its value, use another \
                         name, or start from heap \"\" to begin fresh"
                    ),
                );
            } else if error
                .message
                .starts_with("`await` is only allowed within async functions")
            {
                add(
                    error,
                    ": mark the function that holds it async (`async function f()`, `async () =>`) \
                     and await its calls; at the top level of a run, `await` works as it is",
                );
            } else if error.message.starts_with("Illegal return statement") {
                add(
                    error,
                    ": a run's result is the value of its last expression, so leave `return` out \
                     (`return x` becomes `x`); to stop early, put the code in a function: \
                     `const main = async () => { … }; await main()`",
                );
            }
        }
        RunStatus::Failed
            if error.name == "TypeError"
                && error.message.starts_with("Assignment to constant variable") =>
        {
            add(
                error,
                &if continued {
                    " A const binding keeps its first value, and one an earlier run of this heap \
                     declared stays const: keep the new value under another name, or start from \
                     heap \"\" and declare it with let"
                        .to_owned()
                } else {
                    " A const binding keeps its first value: declare it with let to assign it again"
                        .to_owned()
                },
            );
        }
        RunStatus::Failed if error.name == "TypeError" => {
            if let Some(advice) = mcp_advice(&error.message, had.code) {
                add(error, &advice);
            }
        }
        RunStatus::Failed if error.name == "ReferenceError" => {
            if let Some(name) = undefined_name(&error.message) {
                let advice = match &missing {
                    // The common names still get their own advice; any
                    // other was most likely meant from the missing heap.
                    Some(key) => not_defined(name, true).or_else(|| Some(missing_heap(name, key))),
                    None => not_defined(name, continued),
                };
                if let Some(advice) = advice {
                    add(error, &advice);
                }
            }
        }
        _ => {}
    }
}

/// What to do about code mode's proxies read wrong: `mcp.<server>.<tool>`
/// of a tool the server lacks (`is not a function`: its proxy has only the
/// tools the server lists), and of a server that is not configured
/// (`mcp.<server>` is undefined).
fn mcp_advice(message: &str, code: &str) -> Option<String> {
    if let Some(called) = message.strip_suffix(" is not a function")
        && let Some(path) = called.strip_prefix("mcp.")
        && let Some((server, tool)) = path.split_once('.')
        && is_identifier(server)
        && is_identifier(tool)
    {
        return Some(format!(
            ": upstream MCP server {server:?} lists no tool {tool:?}; `await \
             mcp.listTools(\"{server}\")` gives its tools and their arguments"
        ));
    }
    let read = message
        .strip_prefix("Cannot read properties of undefined (reading '")?
        .strip_suffix("')")?;
    let server = proxied_server(code, read)?;
    Some(format!(
        ": `mcp.{server}` is undefined because no upstream MCP server {server:?} is configured \
         here; `mcp.servers` names those that are"
    ))
}

/// A name of the form `[A-Za-z_$][A-Za-z0-9_$-]*`, as servers and tools are.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
}

/// The `<server>` of a `mcp.<server>.<read>` (or `?.<read>`) in `code`.
fn proxied_server<'c>(code: &'c str, read: &str) -> Option<&'c str> {
    code.match_indices("mcp.").find_map(|(at, _)| {
        let rest = &code[at + 4..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        let (server, after) = rest.split_at(end);
        let after = after
            .strip_prefix("?.")
            .or_else(|| after.strip_prefix('.'))?;
        let named = after.strip_prefix(read)?;
        let whole = !named.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        (is_identifier(server) && whole).then_some(server)
    })
}

/// Appends `advice` to `error`'s message and to the first line of its
/// stack, which repeats the message.
fn add(error: &mut RunError, advice: &str) {
    error.message.push_str(advice);
    if let Some(stack) = error.stack.as_mut()
        && let Some((first, rest)) = stack.split_once('\n')
    {
        *stack = format!("{first}{advice}\n{rest}");
    }
}

/// The message of a request the engine refused before running it, in the
/// terms of `run_js`'s arguments.
pub(in crate::tools) fn refused(error: &EngineError) -> String {
    match error {
        EngineError::CodeTooLarge { len, max } => format!(
            "code is {len} bytes, over the {max}-byte limit: pass data as `files` (written to /work \
             before the code runs, read with fs.readFileSync) or fetch it, instead of inlining it in \
             the code"
        ),
        EngineError::TimeoutOutOfRange { max_secs } => format!(
            "execution_timeout_secs is at most {max_secs} s here: do the work in parts over several \
             runs (the heap keeps what each leaves)"
        ),
        EngineError::HeapLimitOutOfRange {
            asked,
            min_mb,
            max_mb,
        } => format!(
            "heap_memory_max_mb must be from {min_mb} to {max_mb} (MiB) here, got {asked}: keep less \
             in memory at once ({STREAMS})"
        ),
        EngineError::DeadlineTooSoon { left_ms } => format!(
            "this invocation ends in {:.1} s, too soon to run and store a heap; retry, or raise the \
             function's timeout",
            *left_ms as f64 / 1000.0
        ),
        other => other.to_string(),
    }
}

/// `x` of V8's `x is not defined`.
fn undefined_name(message: &str) -> Option<&str> {
    let name = message.strip_suffix(" is not defined")?;
    (!name.is_empty() && !name.contains(' ')).then_some(name)
}

/// Node's core modules a run offers, which Node's REPL has as globals.
const CORE_MODULES: &[&str] = &[
    "fs",
    "path",
    "util",
    "events",
    "assert",
    "stream",
    "string_decoder",
    "readline",
    "url",
    "timers",
    "perf_hooks",
    "buffer",
];

/// Browser globals a run does not have.
const BROWSER_ONLY: &[&str] = &[
    "document",
    "window",
    "localStorage",
    "sessionStorage",
    "XMLHttpRequest",
    "alert",
    "HTMLElement",
    "DOMParser",
    "indexedDB",
];

/// What to do about `name is not defined`; `continued`: the run started
/// from a heap.
fn not_defined(name: &str, continued: bool) -> Option<String> {
    if CORE_MODULES.contains(&name) {
        return Some(format!(
            ": Node's REPL has core modules as globals, a run does not: add \
             `const {name} = require('node:{name}')` (or `import {name} from 'node:{name}'`)"
        ));
    }
    if BROWSER_ONLY.contains(&name) {
        return Some(
            ": a run is not a browser, it has no DOM and no storage: build HTML as a string and \
             show it with display(html, { mimeType: \"text/html\" }); keep data in variables (heap: \"latest\") or /work files"
                .to_owned(),
        );
    }
    if name == "print" {
        return Some(": use console.log (print is Python's)".to_owned());
    }
    // Only a name the code could have meant from before: a fresh isolate
    // has nothing of earlier runs.
    (!continued).then(|| {
        format!(
            ": this run started from a fresh isolate. If an earlier run defined `{name}`, continue \
             its heap: pass heap: \"latest\" (with a logical session) or that run's heap key"
        )
    })
}

/// What to do about `name is not defined` in a run that asked for heap
/// `key`, which no store has (never made here, another tenant's, or
/// expired), so it started fresh.
fn missing_heap(name: &str, key: &crate::heap::HeapKey) -> String {
    format!(
        ": heap {key} was not found in storage (never stored here, or past its retention), so this \
         run started from a fresh isolate without `{name}`. Pass heap: \"latest\" with the run's \
         logical session, or a key from list_session_snapshots or get_execution, to continue what \
         exists; or define `{name}` again here"
    )
}

/// `sales` of `Identifier 'sales' has already been declared (line 1, …)`.
fn redeclared(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Identifier '")?;
    let (name, after) = rest.split_once('\'')?;
    after
        .starts_with(" has already been declared")
        .then_some(name)
}

/// How many times `code` declares `name` (`let`, `const`, `var`, `class`,
/// `function`): twice is a mistake within the run, V8's own message says it.
fn declarations_of(code: &str, name: &str) -> usize {
    let identifier = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut count = 0;
    for keyword in ["let", "const", "var", "class", "function"] {
        let mut rest = code;
        while let Some(at) = rest.find(keyword) {
            let starts = rest[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !identifier(c));
            let after = &rest[at + keyword.len()..];
            let declared = after.trim_start();
            if starts
                && declared.len() < after.len()
                && declared
                    .strip_prefix(name)
                    .is_some_and(|tail| tail.chars().next().is_none_or(|c| !identifier(c)))
            {
                count += 1;
            }
            rest = after;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::{mcp_advice, proxied_server};

    #[test]
    fn code_modes_proxies_read_wrong_name_what_to_do() {
        let tool = mcp_advice("mcp.everything.readResource is not a function", "").unwrap();
        assert!(tool.contains("mcp.listTools(\"everything\")"), "{tool}");
        let code = "const r = await mcp.github.search({ q: 'x' });";
        let server = mcp_advice(
            "Cannot read properties of undefined (reading 'search')",
            code,
        )
        .unwrap();
        assert!(
            server.contains("`mcp.github`") && server.contains("mcp.servers"),
            "{server}"
        );
        // Other undefined reads, and other calls that are not functions,
        // get nothing.
        assert_eq!(
            mcp_advice("Cannot read properties of undefined (reading 'x')", code),
            None
        );
        assert_eq!(mcp_advice("foo.bar is not a function", code), None);
        assert_eq!(proxied_server("mcp.gh.searchAll()", "search"), None);
    }

    #[test]
    fn a_redeclared_name_is_read_from_v8s_message() {
        assert_eq!(
            super::redeclared("Identifier 'sales' has already been declared (line 1, column 7)"),
            Some("sales")
        );
        assert_eq!(super::redeclared("Unexpected token ')'"), None);
        assert_eq!(super::declarations_of("let a = 1; const a = 2", "a"), 2);
        assert_eq!(super::declarations_of("const sales = 1; sales", "sales"), 1);
    }
}
