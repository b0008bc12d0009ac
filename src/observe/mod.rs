//! What an operator reads of the service: one set of metrics, recorded
//! through the `metrics` facade where each thing happens, and the output a
//! host installs for it (`prometheus`: the text at `/metrics` under
//! `serve`). Without an installed recorder every call here is a no-op.
//! docs/observability.md names each metric and what to do when it moves.
//!
//! Labels stay few and bounded (tool, outcome, reason): never a tenant, a
//! session or a heap key, for cardinality and for privacy.

pub mod emf;
pub mod prometheus;

use std::time::Duration;

/// Runs ended, by `tool` and `outcome` (a run's status as its outcome
/// spells it: `completed`, `failed`, `timed_out`, `out_of_memory`,
/// `cancelled`, `input_required`).
pub const RUNS: &str = "mcp_v8_runs_total";
/// How long runs took, from the call to the run's end, by `tool`.
pub const RUN_SECONDS: &str = "mcp_v8_run_duration_seconds";
/// V8's used heap when a stateful run's code ended.
pub const HEAP_BYTES: &str = "mcp_v8_heap_used_bytes";
/// Requests refused before they reached a tool, by `reason`.
pub const REFUSED: &str = "mcp_v8_refused_requests_total";
/// Requests this process served first: one per cold start.
pub const COLD_STARTS: &str = "mcp_v8_cold_starts_total";

/// Why a request was refused, as the `reason` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No or a wrong bearer token, JWT or IAM caller, or a foreign origin.
    Auth,
    /// A body past the bound.
    Size,
    /// A run the engine refused before it began: more than the deployment
    /// allows (code size, timeout, heap limit), too little time left before
    /// the host's deadline, or arguments that cannot go together.
    Bounds,
    /// The server's runners or connections were full.
    Busy,
    /// Malformed: not JSON-RPC, a wrong header, an unknown session.
    Invalid,
}

impl Refusal {
    /// The label's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Size => "size",
            Self::Bounds => "bounds",
            Self::Busy => "busy",
            Self::Invalid => "invalid",
        }
    }

    /// The refusal an HTTP status answers, if it is one.
    pub fn of_status(status: u16) -> Option<Self> {
        match status {
            401 | 403 => Some(Self::Auth),
            413 => Some(Self::Size),
            429 | 503 => Some(Self::Busy),
            400 | 404..=406 | 415 => Some(Self::Invalid),
            _ => None,
        }
    }
}

/// Each metric's unit and help text, for the outputs that print them.
pub(crate) fn describe() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(RUNS, Unit::Count, "Runs ended, by tool and outcome");
    describe_histogram!(
        RUN_SECONDS,
        Unit::Seconds,
        "How long runs took, from the call to the run's end, by tool"
    );
    describe_histogram!(
        HEAP_BYTES,
        Unit::Bytes,
        "V8's used heap when a stateful run's code ended"
    );
    describe_counter!(
        REFUSED,
        Unit::Count,
        "Requests refused before they reached a tool, by reason"
    );
    describe_counter!(
        COLD_STARTS,
        Unit::Count,
        "Requests this process served first: one per cold start"
    );
}

/// A run of `tool` ended with `outcome` after `took`; `heap_used_bytes`
/// is 0 when the run kept no heap.
pub fn run_ended(tool: &'static str, outcome: &'static str, took: Duration, heap_used_bytes: u64) {
    metrics::counter!(RUNS, "tool" => tool, "outcome" => outcome).increment(1);
    metrics::histogram!(RUN_SECONDS, "tool" => tool).record(took.as_secs_f64());
    if heap_used_bytes > 0 {
        metrics::histogram!(HEAP_BYTES).record(heap_used_bytes as f64);
    }
}

/// A request was refused for `reason`.
pub fn refused(reason: Refusal) {
    metrics::counter!(REFUSED, "reason" => reason.as_str()).increment(1);
}

/// This process served its first request.
pub fn cold_start() {
    metrics::counter!(COLD_STARTS).increment(1);
}
