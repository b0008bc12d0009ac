//! Planning a run: the request checked against the engine's limits, the
//! capabilities' asks from their settings and the call, the heap it starts
//! from (kept ready, stored, or the prelude's), and the job that runs it.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::capability::Call;
use super::capability::control::RunControl;
use super::capability::outcome::{EngineError, RunError, RunReport};
use super::capability::positions::Positions;
use super::config::{EngineConfig, RunRequest};
use super::contract;
use super::contract::registration;
use super::heap_limit::{HeapLimit, restore_needs_mb};
use super::run::typescript;
use super::worker;
use crate::heap::HeapKey;
use crate::packages::PackageView;
use crate::tenant::Tenant;

use super::config::MIN_HEAP_LIMIT_MB;

/// The least time worth starting a run with before the host's deadline.
const MIN_RUN_TIME: Duration = Duration::from_millis(100);

/// How long before the host's deadline a run must end, to leave time to
/// snapshot and store its heap and write the log: 1 s plus 35 ms per MiB
/// of heap limit (a 10 MiB heap took about 330 ms to snapshot and store;
/// docs/performance.md, "Engine").
fn deadline_margin(heap_limit_mb: usize) -> Duration {
    Duration::from_millis(1000 + 35 * heap_limit_mb as u64)
}

/// The time a run with a heap limit of `heap_limit_mb` may take before
/// `deadline`, storing its heap included; zero when there is none left.
pub fn time_before(deadline: SystemTime, heap_limit_mb: usize) -> Duration {
    deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .saturating_sub(deadline_margin(heap_limit_mb))
}

/// A request checked and begun: its limits, the capabilities' asks, its
/// report so far, and its JavaScript (`None`: a syntax error the report
/// names, so the run ends before it starts).
pub(super) struct Begun {
    pub limits: Limits,
    pub asks: registration::Asks,
    pub report: RunReport,
    pub code: Option<typescript::Prepared>,
    pub started: Instant,
}

/// Checks `request` against `config` (`heaps`: whether stateful runs are
/// possible) and the capabilities' settings, and makes its JavaScript;
/// `packages` are the ones its imports see. The arguments of the
/// capabilities are checked before a heap is read.
pub(super) fn begin(
    config: &EngineConfig,
    heaps: bool,
    request: &mut RunRequest,
    packages: Option<&Arc<PackageView>>,
) -> Result<Begun, EngineError> {
    let started = Instant::now();
    let mut limits = check(config, heaps, request)?;
    let call = Call {
        arguments: std::mem::take(&mut request.arguments),
        packages,
        elicitation: crate::elicit::ElicitAsk {
            reach: request.elicitation.reach.clone(),
            asked_before: request.elicitation.asked_before,
        },
        tenant: request.tenant.clone(),
    };
    let asks = registration::asks(&config.capabilities, call).map_err(EngineError::Argument)?;
    let mut report = RunReport::new(&request.code, request.heap.clone());
    report.outcome.warnings.extend(limits.cut.take());
    report.timeout = limits.timeout;
    let code = match typescript::prepare(&request.code, request.language) {
        Ok(mut prepared) => {
            report.executed_code = prepared.js.clone();
            report.outcome.warnings.append(&mut prepared.warnings);
            Some(prepared)
        }
        Err(syntax) => {
            report.outcome.error = Some(RunError {
                name: "SyntaxError".into(),
                stack: Some(format!(
                    "SyntaxError: {syntax}\n    at run_js.ts:{}:{}",
                    syntax.line, syntax.column
                )),
                message: syntax.to_string(),
            });
            None
        }
    };
    Ok(Begun {
        limits,
        asks,
        report,
        code,
        started,
    })
}

/// Why the prelude's heap of `len` bytes cannot start a run with
/// `limits`, if it cannot.
pub(super) fn prelude_too_large(len: usize, limits: &Limits) -> Option<RunError> {
    let needs = restore_needs_mb(len);
    (needs > limits.heap_limit.mb()).then(|| {
        RunError::new(
            "OutOfMemoryError",
            format!(
                "the prelude's heap needs about {needs} MiB, over this run's {} MiB heap limit; ask for a larger heap_memory_max_mb",
                limits.heap_limit.mb()
            ),
        )
    })
}

/// A request checked and set up: the job, the report so far, and what
/// finishing it needs.
pub(super) enum Setup {
    /// The run ended before it started (a syntax error, a heap that cannot
    /// be restored).
    Done(Box<RunReport>),
    Planned(Box<Planned>),
}

pub(super) struct Planned {
    pub job: contract::Job,
    pub report: RunReport,
    pub positions: Option<Positions>,
    pub tenant: Tenant,
    pub control: Option<Arc<RunControl>>,
    pub claim: Option<worker::Claim>,
    pub started: Instant,
}

/// `report` with its duration since `started`, logged.
pub(super) fn finish(mut report: RunReport, started: Instant) -> RunReport {
    let outcome = &mut report.outcome;
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(
        execution_id = %outcome.execution_id,
        status = ?outcome.status,
        input_heap = outcome.input_heap.as_ref().map(HeapKey::as_str),
        heap = outcome.heap.as_ref().map(HeapKey::as_str),
        duration_ms = outcome.duration_ms,
        "run finished"
    );
    report
}

/// Checks `request` against `config`'s limits and the host's deadline
/// (`heaps`: whether stateful runs are possible): the one place a run's
/// time and heap limits are decided before its heap is known.
fn check(config: &EngineConfig, heaps: bool, request: &RunRequest) -> Result<Limits, EngineError> {
    if request.code.len() > config.max_code_bytes {
        return Err(EngineError::CodeTooLarge {
            len: request.code.len(),
            max: config.max_code_bytes,
        });
    }
    let mut timeout = request.timeout.unwrap_or(config.default_timeout);
    if timeout.is_zero() || timeout > config.max_timeout {
        return Err(EngineError::TimeoutOutOfRange {
            max_secs: config.max_timeout.as_secs(),
        });
    }
    let heap_limit = config
        .heap_limit_rule()
        .ask(request.heap_limit_mb, MIN_HEAP_LIMIT_MB)
        .map_err(|range| EngineError::HeapLimitOutOfRange {
            asked: range.asked,
            min_mb: range.min_mb,
            max_mb: range.max_mb,
        })?;
    let mut cut = None;
    if let Some(deadline) = request.deadline {
        let left = time_before(deadline, heap_limit.mb());
        if left < MIN_RUN_TIME {
            let until = deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            return Err(EngineError::DeadlineTooSoon {
                left_ms: until.as_millis() as u64,
            });
        }
        if timeout > left {
            cut = Some(format!(
                "the timeout was cut from {:.1} s to {:.1} s: the invocation ends sooner, and its \
                 heap must still be stored",
                timeout.as_secs_f64(),
                left.as_secs_f64()
            ));
            timeout = left;
        }
    }
    if !request.stateful && request.heap.is_some() {
        return Err(EngineError::HeapInStatelessRun);
    }
    if request.stateful && !heaps {
        return Err(EngineError::NoHeapStore);
    }
    Ok(Limits {
        timeout,
        heap_limit,
        cut,
    })
}

/// A run's time and heap limits.
pub(super) struct Limits {
    pub timeout: Duration,
    /// As asked, until the run's start decides it (`Heaps::start`).
    pub heap_limit: HeapLimit,
    /// What the host's deadline did to the timeout, for the run's warnings.
    pub cut: Option<String>,
}

/// A stateless run of `code` within `config`'s defaults, with `egress` and
/// the capabilities' `asks`: what every run is planned from.
pub(super) fn job_within(
    config: &EngineConfig,
    egress: Option<Arc<crate::egress::FetchConfig>>,
    code: String,
    asks: registration::Asks,
) -> contract::Job {
    contract::Job {
        task: contract::Task::Run { code },
        restore: None,
        plain_restore: false,
        from_ready: false,
        keep_ready: None,
        answer_first: false,
        seq: 0,
        stateful: false,
        timeout: config.default_timeout,
        heap_limit: HeapLimit::of_mb(config.default_heap_limit_mb),
        max_result_bytes: config.max_result_bytes,
        code_handling: config.code_handling,
        control: None,
        log_level: None,
        egress,
        asks,
    }
}

/// A stateless run of `code` within the library's defaults, for tests.
#[cfg(test)]
pub(super) fn fresh_job(code: String) -> contract::Job {
    job_within(
        &EngineConfig::in_process(),
        None,
        code,
        registration::Asks::default(),
    )
}
