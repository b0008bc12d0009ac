//! Planning a run: the request checked against the engine's limits, the
//! capabilities' asks from their settings and the call, the heap it starts
//! from (kept ready, stored, or the prelude's), and the job that runs it.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::capability::Call;
use super::capability::outcome::{EngineError, RunError, RunReport, RunStatus};
use super::capability::section;
use super::contract::registration;
use super::restore_needs_mb;
use super::run::typescript;
use super::{Engine, MIB, Planned, RunRequest, Setup, contract, finish};
use crate::packages::PackageView;

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

impl Engine {
    /// Checks and prepares `request` up to the job that runs it, or the
    /// report of a run that ended before it started.
    pub(super) async fn setup(&self, mut request: RunRequest) -> Result<Setup, EngineError> {
        let started = Instant::now();
        let mut limits = self.check(&request)?;
        let packages = match &self.packages {
            Some(packages) => Some(packages.view().await),
            None => None,
        };
        // The capabilities' arguments are checked before a heap is read.
        let call = Call {
            arguments: std::mem::take(&mut request.arguments),
            packages: packages.as_ref(),
        };
        let asks =
            registration::asks(&self.config.capabilities, call).map_err(EngineError::Argument)?;
        let mut report = RunReport::new(&request.code, request.heap.clone());
        report.outcome.warnings.extend(limits.cut.take());
        report.timeout = limits.timeout;
        report.heap_limit_mb = limits.heap_limit_mb;
        let finish = |report: RunReport| Ok(Setup::Done(Box::new(finish(report, started))));

        let mut prepared = match typescript::prepare(&request.code, request.language) {
            Ok(prepared) => prepared,
            Err(syntax) => {
                report.outcome.error = Some(RunError {
                    name: "SyntaxError".into(),
                    stack: Some(format!(
                        "SyntaxError: {syntax}\n    at run_js.ts:{}:{}",
                        syntax.line, syntax.column
                    )),
                    message: syntax.to_string(),
                });
                return finish(report);
            }
        };
        report.executed_code = prepared.js.clone();
        report.outcome.warnings.append(&mut prepared.warnings);

        // A heap an engine worker keeps ready is neither read nor restored;
        // one not stored yet is continued only there.
        let claim = match (&request.heap, request.continues) {
            (_, Some(run)) if self.heaps.is_some() => {
                let claim = self.claim(&request.tenant, super::worker::Wanted::Run(run), &limits);
                if claim.is_none() {
                    return Err(EngineError::NotLive(run));
                }
                claim
            }
            (Some(key), None) if self.heaps.is_some() => {
                self.claim(&request.tenant, super::worker::Wanted::Key(key), &limits)
            }
            _ => None,
        };
        if let Some(claim) = &claim {
            limits.heap_limit_mb = claim.heap_limit_bytes() / MIB;
            tracing::debug!(
                heap_limit_mb = limits.heap_limit_mb,
                "the heap is ready in an engine worker"
            );
        }
        let restore = match (&request.heap, &self.heaps, &claim) {
            (_, _, Some(_)) => None,
            (Some(key), Some(heaps), None) => match self
                .load(heaps.as_ref(), &request.tenant, key, &mut limits)
                .await
            {
                Ok(Some(payload)) => Some(payload),
                Ok(None) => {
                    report.outcome.note_missing_heap(key);
                    None
                }
                Err((status, error)) => {
                    report.outcome.status = status;
                    report.outcome.error = Some(error);
                    report.heap_limit_mb = limits.heap_limit_mb;
                    return finish(report);
                }
            },
            _ => None,
        };

        let from_prelude = restore.is_none() && claim.is_none() && self.prelude.is_some();
        let restore = match (restore, &self.prelude) {
            (None, Some(prelude)) if from_prelude => {
                match self.base(prelude, packages.clone()).await {
                    Ok(base) if restore_needs_mb(base.len()) > limits.heap_limit_mb => {
                        report.outcome.status = RunStatus::OutOfMemory;
                        report.outcome.error = Some(RunError::new(
                            "OutOfMemoryError",
                            format!(
                                "the prelude's heap needs about {} MiB, over this run's {} MiB heap limit; ask for a larger heap_memory_max_mb",
                                restore_needs_mb(base.len()),
                                limits.heap_limit_mb
                            ),
                        ));
                        return finish(report);
                    }
                    Ok(base) => Some(base),
                    Err(why) => {
                        report.outcome.warnings.push(format!(
                            "the operator's prelude failed, so this run started without it: {why}"
                        ));
                        None
                    }
                }
            }
            (restore, _) => restore,
        };
        let keeps_ready = self.workers.as_ref().is_some_and(|w| w.keeps_ready());
        let job = contract::Job {
            plain_restore: from_prelude && restore.is_some(),
            restore: restore.map(section::Section),
            from_ready: claim.is_some(),
            // Kept ready with the limit this call asked for, if it named
            // one: agents that name a limit name it on every call.
            keep_ready: (request.stateful && keeps_ready).then(|| contract::ReadyLimits {
                asked_mb: limits.asked.then_some(limits.heap_limit_mb),
                ..self.ready_limits()
            }),
            stateful: request.stateful,
            timeout: limits.timeout,
            heap_limit_bytes: limits.heap_limit_mb * MIB,
            control: request.control.clone(),
            ..self.job(std::mem::take(&mut prepared.js), asks)
        };
        report.heap_limit_mb = limits.heap_limit_mb;
        Ok(Setup::Planned(Box::new(Planned {
            job,
            report,
            positions: prepared.positions.take(),
            tenant: request.tenant,
            control: request.control,
            claim,
            started,
        })))
    }

    /// A job running `code` fresh, statelessly, with this engine's
    /// defaults and `asks`.
    pub(super) fn job(&self, code: String, asks: registration::Asks) -> contract::Job {
        job_within(&self.config, self.fetch.clone(), code, asks)
    }

    /// The capabilities' asks of a run the engine starts itself (no call's
    /// arguments), with `packages`.
    pub(super) fn own_asks(
        &self,
        packages: Option<&Arc<PackageView>>,
    ) -> Result<registration::Asks, String> {
        registration::asks(
            &self.config.capabilities,
            Call {
                arguments: serde_json::Map::new(),
                packages,
            },
        )
    }

    pub(super) fn check(&self, request: &RunRequest) -> Result<Limits, EngineError> {
        let config = &self.config;
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
        let heap_limit_mb = request
            .heap_limit_mb
            .unwrap_or(config.default_heap_limit_mb);
        if !(MIN_HEAP_LIMIT_MB..=config.max_heap_limit_mb).contains(&heap_limit_mb) {
            return Err(EngineError::HeapLimitOutOfRange {
                asked: heap_limit_mb,
                min_mb: MIN_HEAP_LIMIT_MB,
                max_mb: config.max_heap_limit_mb,
            });
        }
        let mut cut = None;
        if let Some(deadline) = request.deadline {
            let left = time_before(deadline, heap_limit_mb);
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
        if request.stateful && self.heaps.is_none() {
            return Err(EngineError::NoHeapStore);
        }
        Ok(Limits {
            timeout,
            heap_limit_mb,
            asked: request.heap_limit_mb.is_some(),
            cut,
        })
    }
}

/// A run's time and heap limits.
pub(super) struct Limits {
    pub timeout: Duration,
    pub heap_limit_mb: usize,
    /// The caller gave the heap limit (`heap_memory_max_mb`), so a heap
    /// that needs more is refused rather than given more.
    pub asked: bool,
    /// What the host's deadline did to the timeout, for the run's warnings.
    pub cut: Option<String>,
}

/// A stateless run of `code` within `config`'s defaults, with `egress` and
/// the capabilities' `asks`: what every run is planned from.
fn job_within(
    config: &super::EngineConfig,
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
        heap_limit_bytes: config.default_heap_limit_mb * MIB,
        max_result_bytes: config.max_result_bytes,
        code_handling: config.code_handling,
        control: None,
        egress,
        asks,
    }
}

/// A stateless run of `code` within the library's defaults, for tests.
#[cfg(test)]
pub(super) fn fresh_job(code: String) -> contract::Job {
    job_within(
        &super::EngineConfig::default(),
        None,
        code,
        registration::Asks::default(),
    )
}
