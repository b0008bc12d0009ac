//! The JavaScript engine: one V8 isolate per run, fresh or restored from a
//! content-addressed heap snapshot, snapshotted again when the run succeeds.
//!
//! Where to look, from the front to the families (each room imports only
//! rooms below it; `tests/it/structure/layers.rs` checks it):
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | the facade: [`Engine`], a run from request to report and the save after the answer |
//! | `config.rs` | [`EngineConfig`], [`RunRequest`] |
//! | `plan.rs` | a request checked against the limits, the capabilities' asks, the heap it starts from, the job |
//! | `dispatch.rs`, `admission.rs` | which runner takes a job (an engine worker, a warm isolate, a thread), in arrival order and tenant shares |
//! | `heaps/` | heaps loaded, stored (their `/work` bytes first, `file_bytes.rs`), kept ready and claimed |
//! | `prelude/` | the operator's prelude and the heap it makes (`base.rs`) |
//! | `worker/` | engine worker processes: the pool, the worker's side, the frames, the forked save |
//! | `run/` | the run core: setup, evaluation, the event loop, how a run ended (`mod.rs`); the snapshot path (`isolate.rs`), plain and warm isolates (`plain.rs`), heaps kept ready (`ready.rs`), the watchdog, top-level `await` (`repl.rs`), TypeScript, unhandled rejections, V8's platform and checksum, a package's load check |
//! | `contract/` | the run contract: `Job`, `JobResult`, `Task` as the worker pipe carries them (`mod.rs`); the capabilities' registration and the layer's table (`registration.rs`) |
//! | `capability/` | the trait each capability implements (`mod.rs`) and what every capability works with: `control` (progress, cancel), `outcome` (status, errors, the report), `positions` (positions as sent), `section` (bytes beside a frame) |
//! | `layer/` | the JavaScript layer of every context: lazy globals, loading a family, the one table of natives |
//! | `web/`, `node/`, `host/` | the families: the Web platform (and `thrown.rs`, a thrown value read as text), Node's modules and `process`, the host's `/work`, `display()` and `mcp` |
//! | `services/` | what the host lends a run: a runtime, the file store, the clients, the memory budget host-held bytes count against (`memory.rs`), the one source of host work (`work.rs`) |

mod admission;
mod capability;
mod config;
mod contract;
mod dispatch;
mod heaps;
mod host;
mod layer;
mod node;
mod plan;
mod prelude;
mod run;
mod services;
mod web;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{oneshot, watch};

use crate::files::FileStore;
use crate::heap::{HeapKey, HeapStore};
use crate::packages::Packages;
use crate::tenant::Tenant;

pub(crate) use capability::Argument as CallArgument;
pub use capability::control::RunControl;
pub use capability::outcome::{
    Displayed, EngineError, RunError, RunOutcome, RunReport, RunStatus, StandIn, cap_text,
    cap_text_ends,
};
pub use config::{EngineConfig, MAX_HEAP_LIMIT_MB, MIN_HEAP_LIMIT_MB, RunRequest};
pub use contract::registration::CapabilitySettings;
pub(crate) use contract::registration::arguments as call_arguments;
pub use contract::{CodeHandling, restore_needs_mb};
pub use host::{FileLimits, FileRead, FileSource, MAX_DISPLAY_BYTES, MAX_DISPLAYS, TreeEntry};
pub use node::modules::ModuleSettings;
pub use node::process::ProcessSettings;
pub use plan::time_before;
pub use prelude::{FilePrelude, PreludeSource};
pub use run::checksum::calls as snapshot_checksum_calls;
pub use run::typescript::Language;
pub use services::Clients as HostClients;
pub use web::console::ConsoleSettings;
pub use worker::{WORKER_ARG, serve_worker};

/// Runs code; cheap to share (`Arc`), safe to call from many tasks.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    heaps: Option<Arc<dyn HeapStore>>,
    admission: admission::Admission,
    workers: Option<worker::WorkerPool>,
    warm: Option<run::plain::WarmPool>,
    /// `config.fetch`, shared with every job; `None` when fetch is off.
    fetch: Option<Arc<crate::egress::FetchConfig>>,
    /// The deployment's packages, when it has a package store.
    packages: Option<Arc<Packages>>,
    /// The operator's prelude, when there is one.
    prelude: Option<prelude::Prelude>,
    /// Where the bytes of `/work` files live, per tenant.
    files: Option<Arc<dyn FileStore>>,
    /// The `fetch` client and upstream connections of runs in this process.
    clients: Arc<services::Clients>,
}

impl Engine {
    /// An engine over `heaps` (required for stateful runs). Initialises V8
    /// once per process.
    pub fn new(config: EngineConfig, heaps: Option<Arc<dyn HeapStore>>) -> Self {
        let heap_limit_bytes = config.default_heap_limit_mb * 1024 * 1024;
        let workers = (config.engine_workers > 0).then(|| {
            let program = config
                .worker_program
                .clone()
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("mcp-v8-lambda"));
            // A stateless engine's workers keep an isolate ready for the
            // next run; a stateful one's would drop it for every run.
            let warm = heaps.is_none().then_some(heap_limit_bytes);
            let ready = if heaps.is_some() {
                config.ready_heaps_bytes
            } else {
                0
            };
            worker::WorkerPool::new(
                program,
                warm,
                config.worker_max_jobs,
                ready,
                config.engine_workers,
            )
        });
        let runners = match &workers {
            Some(_) => config.engine_workers,
            None => {
                // Only an engine that runs isolates itself needs V8 here.
                run::platform::init();
                config.max_concurrent_runs
            }
        };
        let admission = admission::Admission::new(admission::Rules {
            runners,
            tenant_share: config.tenant_runs.unwrap_or(runners.div_ceil(2)),
            wait: config.queue_wait,
        });
        let snapshots_here = heaps.is_some() && workers.is_none();
        let warm = if config.warm_isolates > 0 && !snapshots_here && workers.is_none() {
            match run::plain::WarmPool::new(config.warm_isolates, heap_limit_bytes) {
                Ok(pool) => Some(pool),
                Err(err) => {
                    tracing::warn!(error = %err, "no warm isolates: starting their threads failed");
                    None
                }
            }
        } else {
            None
        };
        let fetch = config
            .fetch
            .enabled()
            .then(|| Arc::new(config.fetch.clone()));
        Self {
            config,
            heaps,
            admission,
            workers,
            warm,
            fetch,
            packages: None,
            prelude: None,
            files: None,
            clients: Arc::default(),
        }
    }

    /// This engine with `store` for the bytes of `/work` files.
    pub fn with_files(mut self, store: Arc<dyn FileStore>) -> Self {
        self.files = Some(store);
        self
    }

    /// This engine with a prelude every fresh run starts from.
    pub fn with_prelude(mut self, source: Arc<dyn PreludeSource>) -> Self {
        self.prelude = Some(prelude::Prelude::new(source));
        // Fresh runs restore the prelude's heap, so no run would use a warm
        // isolate, and an idle one holds the read-only heap those runs
        // need alone (engine/run/mod.rs, READ_ONLY_HEAP).
        self.warm = None;
        if let Some(workers) = &mut self.workers {
            workers.keep_no_warm_isolate();
        }
        self
    }

    /// This engine with `packages` for `import` and `require`.
    pub fn with_packages(mut self, packages: Arc<Packages>) -> Self {
        self.packages = Some(packages);
        self
    }

    /// This engine with `clients` (the composition root's) for the
    /// `fetch` client and upstream connections of runs in this process.
    pub fn with_clients(mut self, clients: Arc<HostClients>) -> Self {
        self.clients = clients;
        self
    }

    /// The engine's limits.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The heap store, when stateful runs are possible.
    pub fn heaps(&self) -> Option<&Arc<dyn HeapStore>> {
        self.heaps.as_ref()
    }

    /// Runs one request. JavaScript failures, limits and storage trouble are
    /// reported in the outcome; only requests refused up front are `Err`.
    /// A stateful run's heap is stored before this returns.
    pub async fn run(&self, request: RunRequest) -> Result<RunReport, EngineError> {
        match self.setup(request).await? {
            Setup::Done(report) => Ok(*report),
            Setup::Planned(planned) => self.run_planned(*planned).await,
        }
    }

    /// Runs a planned job to its end, its heap stored.
    async fn run_planned(&self, planned: Planned) -> Result<RunReport, EngineError> {
        let Planned {
            job,
            mut report,
            positions,
            tenant,
            control,
            claim,
            started,
        } = planned;
        let kept = Self::kept(&job, report.outcome.execution_id);
        let mut executed = self.dispatch(job, &tenant, None, claim).await?;
        executed.result = executed.result.cancelled_by(control.as_deref());
        let (mut result, stored) = self.keep(&tenant, executed, kept, None).await;
        self.apply(&mut report, &mut result, positions.as_ref())
            .await;
        if let Some(stored) = stored {
            stored_in(&mut report.outcome, stored);
        }
        Ok(finish(report, started))
    }

    /// Runs one request as [`Engine::run`] does, but returns as soon as a
    /// completed stateful run's code has ended: its heap is then snapshotted
    /// and stored by a task of its own, which [`Ran::save`] waits for. The
    /// outcome has no `heap` until then. Dropping the returned future
    /// before it resolves stops the run, as with `run`; afterwards the
    /// save goes on without the caller.
    pub async fn run_then_save(self: &Arc<Self>, request: RunRequest) -> Result<Ran, EngineError> {
        let planned = match self.setup(request).await? {
            Setup::Done(report) => {
                return Ok(Ran {
                    report: *report,
                    save: None,
                });
            }
            Setup::Planned(planned) => *planned,
        };
        if !planned.job.stateful {
            return Ok(Ran {
                report: self.run_planned(planned).await?,
                save: None,
            });
        }
        let Planned {
            job,
            mut report,
            positions,
            tenant,
            control,
            claim,
            started,
        } = planned;
        let (ran_tx, ran_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let (live_tx, live) = watch::channel(None);
        let task = {
            let (engine, control) = (self.clone(), control.clone());
            let kept = Self::kept(&job, report.outcome.execution_id);
            tokio::spawn(async move {
                let done = match engine.dispatch(job, &tenant, Some(ran_tx), claim).await {
                    Ok(mut executed) => {
                        // Once answered, the control ignores cancels.
                        executed.result = executed.result.cancelled_by(control.as_deref());
                        Ok(engine.keep(&tenant, executed, kept, Some(&live_tx)).await)
                    }
                    Err(error) => Err(error),
                };
                let _ = done_tx.send(done);
            })
        };
        let abort = AbortOnDrop(Some(task.abort_handle()));
        match ran_rx.await {
            // From here the worker keeps snapshotting: a cancel must not end it.
            Ok(early) if control.as_ref().is_none_or(|c| c.settle()) => {
                abort.disarm();
                let mut early = early;
                self.apply(&mut report, &mut early, positions.as_ref())
                    .await;
                let report = finish(report, started);
                let save = Saving {
                    done: done_rx,
                    live,
                };
                Ok(Ran {
                    report,
                    save: Some(save),
                })
            }
            _ => {
                // No early answer (the run failed, or was cancelled): the
                // final result says everything.
                let (mut result, stored) = done_rx.await.map_err(|_| {
                    EngineError::Internal("the run's task ended without a result".into())
                })??;
                drop(abort);
                self.apply(&mut report, &mut result, positions.as_ref())
                    .await;
                if let Some(stored) = stored {
                    stored_in(&mut report.outcome, stored);
                }
                Ok(Ran {
                    report: finish(report, started),
                    save: None,
                })
            }
        }
    }

    /// Fills `report` from what the isolate gave (all of it but the blob
    /// and the files to keep).
    async fn apply(
        &self,
        report: &mut RunReport,
        result: &mut contract::JobResult,
        positions: Option<&capability::positions::Positions>,
    ) {
        // Modules the run fetched by URL go to the store before the answer
        // does: an instance may be frozen or retired right after it.
        if let Some(packages) = &self.packages {
            packages.publish().await;
        }
        if let Some(positions) = positions {
            result.remap(positions);
        }
        report.repl = result
            .repl
            .take()
            .map(|text| cap_text(text, self.config.max_result_bytes, "result"));
        let outcome = &mut report.outcome;
        outcome.status = result.status;
        outcome.result = result
            .result
            .take()
            .map(|text| cap_text(text, self.config.max_result_bytes, "result"));
        result.reports.show(report);
        let outcome = &mut report.outcome;
        outcome.error = result.error.take();
        outcome.warnings.append(&mut result.warnings);
        report.heap_used_bytes = result.heap_used_bytes;
    }
}

const MIB: usize = 1024 * 1024;

/// A run that has ended, and the save of its heap when that goes on
/// after it ([`Engine::run_then_save`]).
#[derive(Debug)]
pub struct Ran {
    /// The run's report; without `heap` while `save` is pending.
    pub report: RunReport,
    /// The snapshot and store of the heap, still going.
    pub save: Option<Saving>,
}

/// The save of a heap whose run was answered before it.
#[derive(Debug)]
pub struct Saving {
    done: oneshot::Receiver<Saved>,
    /// Whether an engine worker keeps the heap live for the next call
    /// (known a few milliseconds after the answer, when the run's engine
    /// worker has forked the copy that writes its snapshot).
    live: watch::Receiver<Option<bool>>,
}

/// How a run answered first ended: its final result (the heap, the files
/// to keep) and how storing its heap went (`None`: it made none).
type Saved = Result<(contract::JobResult, Option<Result<HeapKey, RunError>>), EngineError>;

impl Saving {
    /// Whether an engine worker keeps the heap live ([`RunRequest::continues`]
    /// may then name the run): `None` until known, and a closed channel when
    /// the run ended without saying.
    pub fn live(&self) -> watch::Receiver<Option<bool>> {
        self.live.clone()
    }

    /// The stored heap's key, or why there is none (V8 could not snapshot
    /// the heap, the store failed, the engine process died).
    pub async fn wait(self) -> Result<HeapKey, RunError> {
        match self.done.await {
            Ok(Ok((_, Some(stored)))) => stored,
            Ok(Ok((result, None))) => Err(result.error.unwrap_or_else(|| {
                RunError::new("SnapshotError", "the run's heap was not snapshotted")
            })),
            Ok(Err(error)) => Err(RunError::new("EngineError", error.to_string())),
            Err(_) => Err(RunError::new(
                "EngineError",
                "the task saving the heap ended without a result",
            )),
        }
    }
}

/// Aborts a task when dropped, unless disarmed.
struct AbortOnDrop(Option<tokio::task::AbortHandle>);

impl AbortOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.abort();
        }
    }
}

/// A request checked and set up: the job, the report so far, and what
/// finishing it needs.
enum Setup {
    /// The run ended before it started (a syntax error, a heap that cannot
    /// be restored).
    Done(Box<RunReport>),
    Planned(Box<Planned>),
}

struct Planned {
    job: contract::Job,
    report: RunReport,
    positions: Option<capability::positions::Positions>,
    tenant: Tenant,
    control: Option<Arc<RunControl>>,
    claim: Option<worker::Claim>,
    started: Instant,
}

/// `report` with its duration since `started`, logged.
fn finish(mut report: RunReport, started: Instant) -> RunReport {
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

/// Puts the outcome of storing a run's heap into its outcome: the key, or
/// the failure that fails the run.
pub fn stored_in(outcome: &mut RunOutcome, stored: Result<HeapKey, RunError>) {
    match stored {
        Ok(key) => outcome.heap = Some(key),
        Err(error) => {
            outcome.status = RunStatus::Failed;
            outcome.result = None;
            outcome.error = Some(error);
        }
    }
}
