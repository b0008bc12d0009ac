//! The JavaScript engine: one V8 isolate per run, fresh or restored from a
//! content-addressed heap snapshot, snapshotted again when the run succeeds.
//!
//! Where to look, from the front to the families (each room imports only
//! rooms below it; `tests/it/structure/layers.rs` checks it):
//!
//! | room | what it holds |
//! |---|---|
//! | `mod.rs` | the facade: [`Engine`] and its one `impl`, which takes a run from request to report and the save after the answer by calling the rooms below |
//! | `config.rs` | [`EngineConfig`], [`RunRequest`], the heap limit's bounds |
//! | `plan.rs` | a request checked against the limits and the host's deadline, the capabilities' asks, its JavaScript; the planned job |
//! | `heap_limit.rs` | a run's heap limit as one value ([`HeapLimit`]): checked when planned, decided once where the run's start is known, in bytes only at V8's bounds |
//! | `save_after.rs` | a run answered before its heap is stored (answer first, save after): [`Ran`] and [`Saving`] |
//! | `dispatch.rs`, `admission.rs` | the runners of jobs (an engine worker, a warm isolate, a thread) and what the host lends them, in arrival order and tenant shares |
//! | `heap_keeping/` | the engine's use of the `heap` store: where a run starts (a ready heap, a stored one), heaps loaded, stored (their `/work` bytes first, `file_bytes.rs`) and kept ready |
//! | `prelude/` | the operator's prelude and the heap it makes (`base.rs`) |
//! | `worker/` | engine worker processes: the pool, the worker's side, the frames, the forked save |
//! | `run/` | the run core: setup, evaluation, the event loop, how a run ended (`mod.rs`); the snapshot path (`isolate.rs`), plain and warm isolates (`plain.rs`), heaps kept ready (`ready.rs`), the watchdog, top-level `await` (`repl.rs`), TypeScript, unhandled rejections, V8's platform and checksum, a package's load check |
//! | `contract/` | the run contract: `Job`, `JobResult`, `Task` as the worker pipe carries them (`mod.rs`); the capabilities' registration and the layer's table (`registration.rs`) |
//! | `capability/` | the trait each capability implements (`mod.rs`) and what every capability works with: `control` (progress, cancel), `reports` (what a run reports while it runs: console lines as log messages, its own progress), `outcome` (status, errors, the report), `positions` (positions as sent), `section` (bytes beside a frame) |
//! | `layer/` | the JavaScript layer of every context: lazy globals, loading a family, the one table of natives |
//! | `web/`, `node/`, `host/` | the families: the Web platform (and `thrown.rs`, a thrown value read as text), Node's modules and `process`, the host's `/work`, `display()`, `elicit()`, `reportProgress()` and `mcp` |
//! | `services/` | what the host lends a run: a runtime, the file store, the clients, the memory budget host-held bytes count against (`memory.rs`), the one source of host work (`work.rs`) |

mod admission;
mod capability;
mod config;
mod contract;
mod dispatch;
mod heap_keeping;
mod heap_limit;
mod host;
mod layer;
mod node;
mod plan;
mod prelude;
mod run;
mod save_after;
mod services;
mod web;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{oneshot, watch};

use crate::files::FileStore;
use crate::heap::{HeapKey, HeapStore};
use crate::packages::{PackageView, Packages};
use crate::tenant::Tenant;
use contract::registration;
use plan::{Planned, Setup, finish};
use save_after::AbortOnDrop;

pub(crate) use capability::Argument as CallArgument;
pub use capability::control::RunControl;
pub use capability::outcome::{
    Displayed, EngineError, RunError, RunOutcome, RunReport, RunStatus, StandIn, Superseded,
    cap_text, cap_text_ends,
};
pub use capability::reports::{LogEntry, LogLevel, RunProgress};
pub use config::{EngineConfig, MAX_HEAP_LIMIT_MB, MIN_HEAP_LIMIT_MB, RunRequest};
pub use contract::CodeHandling;
pub use contract::registration::CapabilitySettings;
pub(crate) use contract::registration::arguments as call_arguments;
pub use heap_limit::{HeapLimit, restore_needs_mb};
pub use host::{
    DiskKept, DiskSettings, FileLimits, FileRead, FileSource, MAX_DISPLAY_BYTES, MAX_DISPLAYS,
    TreeEntry, sweep_scratch,
};
pub use node::modules::ModuleSettings;
pub use node::process::ProcessSettings;
pub use plan::time_before;
pub use prelude::{FilePrelude, PreludeSource};
pub use run::typescript::Language;
pub use save_after::{Ran, SaveEnded, Saving};
pub use services::Clients as HostClients;
pub use web::console::ConsoleSettings;
pub use worker::{WORKER_ARG, serve_worker};

/// Runs code; cheap to share (`Arc`), safe to call from many tasks.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    heaps: Option<Arc<dyn HeapStore>>,
    /// Who runs jobs (engine workers, warm isolates, threads), and what
    /// the host lends them.
    runners: dispatch::Runners,
    /// `config.fetch`, shared with every job; `None` when fetch is off.
    fetch: Option<Arc<crate::egress::FetchConfig>>,
    /// The deployment's packages, when it has a package store.
    packages: Option<Arc<Packages>>,
    /// The operator's prelude, when there is one.
    prelude: Option<prelude::Prelude>,
}

impl Engine {
    /// An engine over `heaps` (required for stateful runs). Initialises V8
    /// once per process.
    pub fn new(config: EngineConfig, heaps: Option<Arc<dyn HeapStore>>) -> Self {
        let heap_limit = HeapLimit::of_mb(config.default_heap_limit_mb);
        let workers = (config.engine_workers > 0).then(|| {
            let program = config
                .worker_program
                .clone()
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("mcp-v8-lambda"));
            // A stateless engine's workers keep an isolate ready for the
            // next run; a stateful one's would drop it for every run.
            let warm = heaps.is_none().then_some(heap_limit);
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
            match run::plain::WarmPool::new(config.warm_isolates, heap_limit) {
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
            runners: dispatch::Runners {
                admission,
                workers,
                warm,
                files: None,
                clients: Arc::default(),
            },
            fetch,
            packages: None,
            prelude: None,
        }
    }

    /// This engine with `store` for the bytes of `/work` files.
    pub fn with_files(mut self, store: Arc<dyn FileStore>) -> Self {
        self.runners.files = Some(store);
        self
    }

    /// This engine with a prelude every fresh run starts from.
    pub fn with_prelude(mut self, source: Arc<dyn PreludeSource>) -> Self {
        self.prelude = Some(prelude::Prelude::new(source));
        // Fresh runs restore the prelude's heap, so no run would use a warm
        // isolate, and an idle one holds the read-only heap those runs
        // need alone (engine/run/mod.rs, READ_ONLY_HEAP).
        self.runners.warm = None;
        if let Some(workers) = &mut self.runners.workers {
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
        self.runners.clients = clients;
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

    /// The heaps room, lent what it works with for one step.
    fn heaps_room(&self) -> heap_keeping::Heaps<'_> {
        heap_keeping::Heaps {
            config: &self.config,
            store: self.heaps.as_ref(),
            files: self.runners.files.as_ref(),
            workers: self.runners.workers.as_ref(),
        }
    }

    /// Starts an engine worker ahead of the first run, when the engine has
    /// workers: its V8 starts while the process answers its first requests.
    /// Needs a Tokio runtime.
    pub fn prestart(&self) {
        self.runners.prestart();
    }

    /// Waits, until `by`, for the engine workers still restoring heaps
    /// kept ready for the next call; returns how many finished. For a host
    /// about to be frozen (Lambda's post-response phase), which must run
    /// nothing beside it.
    pub async fn settle_ready(&self, by: Instant) -> usize {
        self.runners.settle_ready(by).await
    }

    /// Whether an engine worker keeps `tenant`'s run `run`'s heap live, so
    /// that a run may continue it before it is stored
    /// ([`RunRequest::continues`]).
    pub fn holds_live(&self, tenant: &Tenant, run: uuid::Uuid) -> bool {
        self.runners
            .workers
            .as_ref()
            .is_some_and(|workers| workers.holds_run(tenant, run))
    }

    /// A job running `code` fresh, statelessly, with this engine's
    /// defaults and `asks`.
    fn job(&self, code: String, asks: registration::Asks) -> contract::Job {
        plan::job_within(&self.config, self.fetch.clone(), code, asks)
    }

    /// The capabilities' asks of a run the engine starts itself (no call's
    /// arguments), with `packages`.
    fn own_asks(&self, packages: Option<&Arc<PackageView>>) -> Result<registration::Asks, String> {
        registration::asks(
            &self.config.capabilities,
            capability::Call {
                arguments: serde_json::Map::new(),
                packages,
                elicitation: Default::default(),
                tenant: Tenant::default(),
            },
        )
    }

    /// Checks and prepares `request` up to the job that runs it, or the
    /// report of a run that ended before it started.
    async fn setup(&self, mut request: RunRequest) -> Result<Setup, EngineError> {
        let packages = match &self.packages {
            Some(packages) => Some(packages.view().await),
            None => None,
        };
        let plan::Begun {
            mut limits,
            asks,
            mut report,
            code,
            started,
        } = plan::begin(
            &self.config,
            self.heaps.is_some(),
            &mut request,
            packages.as_ref(),
        )?;
        let done = |report: RunReport| Ok(Setup::Done(Box::new(finish(report, started))));
        let Some(mut prepared) = code else {
            return done(report);
        };
        let heaps = self.heaps_room();
        let start = heaps.start(&request, &mut limits, &mut report).await?;
        // Decided with the start: a ready or stored heap may have raised it.
        report.heap_limit = limits.heap_limit;
        let Some(start) = start else {
            return done(report);
        };
        let (claim, restore) = match start {
            heap_keeping::Start::Ready(claim) => (Some(*claim), None),
            heap_keeping::Start::Stored(payload) => (None, Some(payload)),
            heap_keeping::Start::Fresh => (None, None),
        };
        let from_prelude = restore.is_none() && claim.is_none() && self.prelude.is_some();
        let restore = match (restore, &self.prelude) {
            (None, Some(prelude)) if from_prelude => match self.base(prelude, packages).await {
                Ok(base) => {
                    if let Some(error) = plan::prelude_too_large(base.len(), &limits) {
                        report.outcome.status = RunStatus::OutOfMemory;
                        report.outcome.error = Some(error);
                        return done(report);
                    }
                    Some(base)
                }
                Err(why) => {
                    report.outcome.warnings.push(format!(
                        "the operator's prelude failed, so this run started without it: {why}"
                    ));
                    None
                }
            },
            (restore, _) => restore,
        };
        let keeps_ready = self.runners.keeping_ready().is_some();
        let mut job = contract::Job {
            plain_restore: from_prelude && restore.is_some(),
            restore: restore.map(capability::section::Section),
            from_ready: claim.is_some(),
            // Kept ready with the limit this call asked for, if it named
            // one: agents that name a limit name it on every call.
            keep_ready: (request.stateful && keeps_ready).then(|| contract::ReadyLimits {
                asked: limits.heap_limit.asked().then_some(limits.heap_limit),
                ..heaps.ready_limits()
            }),
            stateful: request.stateful,
            timeout: limits.timeout,
            heap_limit: limits.heap_limit,
            log_level: request
                .control
                .as_ref()
                .and_then(|control| control.forwarded_level()),
            control: request.control.clone(),
            ..self.job(std::mem::take(&mut prepared.js), asks)
        };
        if let Some(responses) = request.elicitation.responses.take() {
            let contract::Task::Run { code } =
                std::mem::replace(&mut job.task, contract::Task::ListFiles)
            else {
                unreachable!("a job is made to run code")
            };
            job.task = contract::Task::Resume {
                code,
                responses: serde_json::Value::Object(responses).to_string(),
            };
        }
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

    /// The heap `prelude` leaves, made once per process by a stateful run
    /// as long as the longest timeout.
    async fn base(
        &self,
        prelude: &prelude::Prelude,
        packages: Option<Arc<PackageView>>,
    ) -> Result<bytes::Bytes, String> {
        let job = |code: String| {
            Ok(contract::Job {
                stateful: true,
                timeout: self.config.max_timeout,
                ..self.job(code, self.own_asks(packages.as_ref())?)
            })
        };
        // Made once for every tenant's fresh runs, it counts as anonymous.
        let run = |job| async move {
            self.runners
                .run(job, &Tenant::default(), None, None)
                .await
                .map(|executed| executed.result)
                .map_err(|e| e.to_string())
        };
        prelude.base(job, run).await
    }

    /// The `/work` tree of `tenant`'s heap `key`, read by restoring it;
    /// `None` when the tenant has no such heap.
    pub async fn files_of(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Vec<TreeEntry>>, String> {
        let mut limits = plan::Limits {
            timeout: self.config.default_timeout,
            heap_limit: HeapLimit::of_mb(self.config.max_heap_limit_mb).asked_for(),
            cut: None,
        };
        let payload = match self.heaps_room().load(tenant, key, &mut limits).await {
            Ok(Some(payload)) => payload,
            Ok(None) => return Ok(None),
            Err((_, error)) => return Err(error.message),
        };
        let job = contract::Job {
            task: contract::Task::ListFiles,
            heap_limit: HeapLimit::of_mb(
                restore_needs_mb(payload.len()).max(self.config.default_heap_limit_mb),
            ),
            restore: Some(capability::section::Section(payload)),
            ..self.job(String::new(), self.own_asks(None)?)
        };
        let result = self
            .runners
            .run(job, tenant, None, None)
            .await
            .map_err(|e| e.to_string())?
            .result;
        match (result.status, result.listing) {
            (RunStatus::Completed, Some(tree)) => Ok(Some(tree)),
            _ => Err(result.error.map_or_else(
                || format!("listing the heap's /work ended {:?}", result.status),
                |e| e.message,
            )),
        }
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
        let kept = heap_keeping::Kept::of(&job, report.outcome.execution_id);
        let mut executed = self.runners.run(job, &tenant, None, claim).await?;
        executed.result = executed.result.cancelled_by(control.as_deref());
        let (mut result, stored) = self.heaps_room().keep(&tenant, executed, kept, None).await;
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
            let kept = heap_keeping::Kept::of(&job, report.outcome.execution_id);
            tokio::spawn(async move {
                let done = match engine.runners.run(job, &tenant, Some(ran_tx), claim).await {
                    Ok(mut executed) => {
                        // Once answered, the control ignores cancels.
                        executed.result = executed.result.cancelled_by(control.as_deref());
                        let heaps = engine.heaps_room();
                        Ok(heaps.keep(&tenant, executed, kept, Some(&live_tx)).await)
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

/// `packages add` proves a package loads by importing it in a fresh job of
/// this engine, which sees only that package (`run/load_check.rs`).
#[async_trait::async_trait]
impl crate::packages::LoadCheck for Engine {
    async fn loads(&self, package: &crate::packages::Prepared) -> Result<Vec<String>, String> {
        // The scratch directory holds the bundle until the check has run.
        let (code, view, _scratch) = run::load_check::prepare(package)?;
        let job = self.job(code, self.own_asks(Some(&Arc::new(view)))?);
        let result = self
            .runners
            .run(job, &Tenant::default(), None, None)
            .await
            .map_err(|e| format!("the engine could not run the check: {e}"))?
            .result;
        run::load_check::names(result)
    }
}
