//! What a run produced: its status, error, outcome and report.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use bytes::Bytes;

use crate::backends::content::ContentKey;
use crate::heap::HeapKey;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The code ran to the end (and its promise, if any, settled).
    Completed,
    /// The code threw, did not parse, or its heap could not be used or saved.
    Failed,
    /// Terminated by the watchdog.
    TimedOut,
    /// Terminated at the heap limit.
    OutOfMemory,
    /// Cancelled by the caller (`notifications/cancelled`, or the client
    /// went away): terminated, nothing stored.
    Cancelled,
    /// Suspended: it waits for the person's answers to its `elicit()`
    /// calls, its heap stored with the continuation.
    InputRequired,
}

impl RunStatus {
    /// The status as the outcome's JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::OutOfMemory => "out_of_memory",
            Self::Cancelled => "cancelled",
            Self::InputRequired => "input_required",
        }
    }

    /// Whether the run's heap is stored: it completed, or it suspended.
    pub fn keeps_heap(self) -> bool {
        matches!(self, Self::Completed | Self::InputRequired)
    }
}

/// A JavaScript error, or an engine error shaped like one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunError {
    /// `TypeError`, `SyntaxError`, `TimeoutError`, ...
    pub name: String,
    /// Human-readable message.
    pub message: String,
    /// JavaScript stack, when there is one.
    pub stack: Option<String>,
}

impl RunError {
    pub(crate) fn new(name: &str, message: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            message: message.into(),
            stack: None,
        }
    }

    /// A heap never snapshotted because a newer run of its line completed
    /// first ([`Saving::ended`](crate::engine::Saving::ended) tells it apart).
    pub(crate) fn superseded() -> Self {
        Self::new(
            SUPERSEDED,
            "a newer run that continued this heap completed before its snapshot began",
        )
    }
}

/// The name of [`RunError::superseded`].
const SUPERSEDED: &str = "HeapSuperseded";

/// What a run produced; the `run_js` tool returns it as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunOutcome {
    /// UUID of this run (get_execution reads its record).
    #[schemars(with = "String")]
    pub execution_id: Uuid,
    /// How it ended.
    pub status: RunStatus,
    /// Completion value: JSON when it has a JSON form, readable text otherwise, null for undefined. In an answer, a value over the answer budget is an object instead: a stand-in with its type, size, a preview and the URI of the whole.
    #[schemars(with = "Option<ResultField>")]
    pub result: Option<String>,
    /// Captured console output.
    pub output: String,
    /// Key of the heap this run produced (completed stateful runs); pass it as `heap` to continue from this state.
    pub heap: Option<HeapKey>,
    /// Present when this answer came before the run's heap was stored (a large heap in a logical session): `heap` is then absent, and this says how to continue from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_saving: Option<String>,
    /// The heap the run was asked to start from.
    pub input_heap: Option<HeapKey>,
    /// Why it did not complete.
    pub error: Option<RunError>,
    /// Things the caller should know that did not stop the run.
    pub warnings: Vec<String>,
    /// Wall time from the call's start to its answer: loading the heap, running, and storing the heap when `heap` is given. With `heap_saving` the heap is stored after the answer, and its execution record gives that time as `saved_after_ms`.
    pub duration_ms: u64,
    /// In the execution record of a run answered with `heap_saving`: how long storing its heap took after the answer (absent from answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_after_ms: Option<u64>,
    /// Time the call waited, before it ran, for earlier heaps of its session to be stored: too many here, or the heap it continues by another instance (a warning says which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_wait_ms: Option<u64>,
    /// In the execution record of a run whose heap was never stored
    /// because a newer run that continued it completed first: where its
    /// effects are (absent from answers, and from the tool's schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub superseded: Option<Superseded>,
    /// Requests `fetch` made and the response bytes it read; absent when
    /// the run made none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetches: Option<crate::egress::FetchCount>,
    /// Calls the run made to upstream MCP servers through `mcp`; absent
    /// when it made none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_calls: Option<crate::upstream::McpCount>,
    /// What further capabilities of the run report, each under its own
    /// name beside the fields above.
    #[serde(flatten)]
    pub reports: serde_json::Map<String, serde_json::Value>,
}

/// Where the effects of a run whose heap was superseded are: saves
/// coalesce (docs/protocol.md, "Coalesced saves").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Superseded {
    /// What a model reads: what happened, and what to pass as `heap`.
    pub note: String,
    /// The run whose stored heap holds this run's effects.
    pub by_execution_id: Uuid,
    /// That heap: the nearest stored heap after this run.
    pub heap_after: HeapKey,
    /// The nearest stored heap before this run (null: the line began in a
    /// fresh isolate).
    pub heap_before: Option<HeapKey>,
}

impl Superseded {
    /// Where `by`'s stored heap `after` holds the effects of a run that
    /// began from `before`.
    pub fn new(by: Uuid, after: HeapKey, before: Option<HeapKey>) -> Self {
        let before_words = match &before {
            Some(key) => format!("heap {key} is the state before it"),
            None => "the state before it was a fresh isolate".to_owned(),
        };
        Self {
            note: format!(
                "this run's heap was never stored on its own: run {by}, which continued it, \
                 completed before its snapshot began, and that run's heap {after} holds this \
                 run's effects (and that run's). Pass heap: \"{after}\" to continue from there; \
                 {before_words}"
            ),
            by_execution_id: by,
            heap_after: after,
            heap_before: before,
        }
    }
}

impl RunOutcome {
    /// Notes that the heap the run asked for is in no store, so it ran
    /// from a fresh isolate.
    pub(crate) fn note_missing_heap(&mut self, key: &HeapKey) {
        self.warnings.push(missing_heap(key));
    }

    /// Whether the run asked for a heap the store did not have and so
    /// started fresh: what it expected from before is not there.
    pub fn started_without_its_heap(&self) -> bool {
        self.input_heap
            .as_ref()
            .is_some_and(|key| self.warnings.contains(&missing_heap(key)))
    }
}

fn missing_heap(key: &HeapKey) -> String {
    format!("heap {key} was not found in storage; the run started from a fresh isolate")
}

/// What `result` holds in an answer: the value's text, or a stand-in for
/// a value over the answer budget (only the output schema names it).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ResultField {
    /// The value as JSON, or readable text.
    Text(String),
    /// In place of a value the answer had no room for.
    StandIn(StandIn),
}

/// In an answer, the stand-in for a completion value over its budget:
/// what it is, a preview, and where the whole is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StandIn {
    /// `array`, `object`, `string`, `number`, ... or `text` when the value has no JSON form.
    #[serde(rename = "type")]
    pub kind: String,
    /// Length of the value's text (its JSON) in bytes.
    pub bytes: usize,
    /// Elements of an array, keys of an object, characters of a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
    /// The start of the value's text.
    pub preview: String,
    /// Where the whole text is kept (resources/read), when the run is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// An outcome plus what was really executed (JavaScript after type stripping),
/// which the session log records.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The outcome.
    pub outcome: RunOutcome,
    /// The JavaScript that ran.
    pub executed_code: String,
    /// The completion value as Node's REPL displays it (`[ NaN, -0 ]`,
    /// `undefined`), for the text the model reads; `None` unless the run
    /// completed. `outcome.result` keeps the original server's form.
    pub repl: Option<String>,
    /// The run's `display()` blocks, in call order.
    pub displays: Vec<Displayed>,
    /// V8's used heap when a stateful run's code ended, in bytes (0 when
    /// unknown).
    pub heap_used_bytes: u64,
    /// The heap limit the run had: the one it asked for, or the one a
    /// continued heap's size or a ready heap gave it.
    pub heap_limit: crate::engine::heap_limit::HeapLimit,
    /// The timeout the run had: the one it asked for or the default, cut
    /// to the host's deadline.
    pub timeout: std::time::Duration,
    /// What a suspended run (`input_required`) waits for.
    pub waiting: Option<crate::elicit::Waiting>,
}

impl RunReport {
    /// A run of `code` from `input_heap` that has not happened: failed
    /// until it completes.
    pub(crate) fn new(code: &str, input_heap: Option<HeapKey>) -> Self {
        Self {
            outcome: RunOutcome {
                execution_id: Uuid::new_v4(),
                status: RunStatus::Failed,
                result: None,
                output: String::new(),
                heap: None,
                heap_saving: None,
                input_heap,
                error: None,
                warnings: Vec::new(),
                duration_ms: 0,
                save_wait_ms: None,
                saved_after_ms: None,
                superseded: None,
                fetches: None,
                mcp_calls: None,
                reports: serde_json::Map::new(),
            },
            executed_code: code.to_owned(),
            repl: None,
            displays: Vec::new(),
            heap_used_bytes: 0,
            heap_limit: Default::default(),
            timeout: std::time::Duration::ZERO,
            waiting: None,
        }
    }
}

/// One `display()` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Displayed {
    /// The media type given, or the one the bytes were recognised as.
    pub mime_type: String,
    /// The name given, if any.
    pub name: Option<String>,
    /// SHA-256 of the bytes (as `/work` keys files).
    pub key: ContentKey,
    /// Length of the bytes.
    pub size: usize,
    /// The bytes, unless the run's blocks had already used
    /// `MAX_DISPLAY_BYTES`. A section of a worker's frame.
    #[serde(with = "crate::engine::capability::section::section_opt")]
    pub bytes: Option<Bytes>,
    /// A path under `/work` whose file holds the same bytes in the run's
    /// output heap (completed stateful runs), for a link.
    pub path: Option<String>,
}

/// A request the engine refuses before running anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// `code` over the size cap.
    #[error("code is {len} bytes, over the {max}-byte limit")]
    CodeTooLarge {
        /// Bytes sent.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// Timeout outside 1 ms ..= the configured maximum.
    #[error("execution timeout must be between 1 ms and {max_secs} s")]
    TimeoutOutOfRange {
        /// The cap in seconds.
        max_secs: u64,
    },
    /// Heap limit outside the engine's least ..= the configured maximum.
    #[error("heap limit must be between {min_mb} and {max_mb} MiB, got {asked}")]
    HeapLimitOutOfRange {
        /// Requested.
        asked: usize,
        /// The least a run may ask for.
        min_mb: usize,
        /// The cap.
        max_mb: usize,
    },
    /// The host's deadline ([`RunRequest::deadline`]) leaves too little
    /// time to run and store a heap.
    ///
    /// [`RunRequest::deadline`]: crate::engine::RunRequest::deadline
    #[error("the deadline is {left_ms} ms away, too soon to run and store a heap")]
    DeadlineTooSoon {
        /// Time until the deadline, in milliseconds.
        left_ms: u64,
    },
    /// A heap was named for a run that keeps no state.
    #[error("a stateless run cannot start from a heap")]
    HeapInStatelessRun,
    /// Stateful run without storage configured.
    #[error("stateful runs need a heap store, and none is configured")]
    NoHeapStore,
    /// No runner became free within the queue's bound, or the caller's
    /// tenant holds its share of them.
    #[error("{}", busy(*runners, *waited_ms, *tenant_runs))]
    Busy {
        /// Runners of the engine.
        runners: usize,
        /// How long the run waited.
        waited_ms: u64,
        /// The tenant's runs going, when its share was what it waited for.
        tenant_runs: Option<usize>,
    },
    /// An argument a capability takes is not valid (the message says
    /// which and why).
    #[error("{0}")]
    Argument(String),
    /// The run was to continue a heap not yet stored
    /// ([`RunRequest::continues`](crate::engine::RunRequest::continues)) that no
    /// engine worker keeps live any more: the caller continues it by key
    /// once it is stored.
    #[error("the heap of run {0} is no longer kept live")]
    NotLive(uuid::Uuid),
    /// The isolate thread died (a bug, reported rather than hidden).
    #[error("the engine thread failed: {0}")]
    Internal(String),
}

fn busy(runners: usize, waited_ms: u64, tenant_runs: Option<usize>) -> String {
    let waited = format!("{:.1} s", waited_ms as f64 / 1000.0);
    match tenant_runs {
        Some(held) => format!(
            "the server is busy for your tenant: it already has {held} runs going, its share of \
             the server's {runners} runners (MCP_V8_TENANT_RUNS), and none ended within {waited} \
             (MCP_V8_QUEUE_WAIT_MS); nothing ran. Wait for one of those runs to end (or cancel \
             it), then try again"
        ),
        None => format!(
            "the server is busy: all {runners} runners (MCP_V8_ENGINE_WORKERS) stayed in use for \
             {waited}, the longest a run waits for one (MCP_V8_QUEUE_WAIT_MS); nothing ran. Try \
             again in a moment"
        ),
    }
}

/// `text` cut to at most `max` bytes (at a character boundary) with a
/// marker naming `what` was cut and its length, like console output past
/// its cap.
pub fn cap_text(mut text: String, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text;
    }
    let len = text.len();
    let end = text.floor_char_boundary(max);
    text.truncate(end);
    text.push_str(&format!(
        "\n[{what} truncated: {len} bytes, the first {end} shown]"
    ));
    text
}

/// `text` cut to about `max` bytes keeping both ends, the first and the
/// last half, with a marker in the middle saying how much was dropped, as
/// console output past its cap is (the end of a log is often what matters).
pub fn cap_text_ends(text: String, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text;
    }
    let head = text.floor_char_boundary(max / 2);
    let tail = text.ceil_char_boundary(text.len() - max / 2);
    format!(
        "{}\n[{what} truncated: {} of {} bytes dropped from the middle; the first {} and the last {} bytes are shown]\n{}",
        &text[..head],
        tail - head,
        text.len(),
        head,
        text.len() - tail,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cut_at_both_ends_keeps_the_start_and_the_end() {
        let text = format!("start {} Error: the end", "é".repeat(1000));
        let cut = cap_text_ends(text.clone(), 100, "output");
        assert!(cut.starts_with("start "), "{cut}");
        assert!(cut.ends_with("Error: the end"), "{cut}");
        assert!(cut.contains("[output truncated: "), "{cut}");
        assert!(cut.len() < 250, "{}", cut.len());
        assert_eq!(cap_text_ends("short".into(), 100, "output"), "short");
    }
}
