//! The JavaScript engine: one V8 isolate per run, fresh or restored from a
//! content-addressed heap snapshot, snapshotted again when the run succeeds.

mod admission;
mod capabilities;
mod capability;
mod checksum;
mod contract;
mod control;
mod files;
mod host;
mod isolate;
mod layer;
mod load_check;
mod memory;
mod outcome;
mod plain;
mod platform;
mod positions;
mod prelude;
mod ready;
mod rejections;
mod repl;
mod run;
mod section;
mod thrown;
mod typescript;
mod watchdog;
mod web;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::files::FileStore;
use crate::heap::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::packages::Packages;
use crate::tenant::Tenant;

pub use checksum::calls as snapshot_checksum_calls;
pub use contract::{CodeHandling, restore_needs_mb};
pub use control::RunControl;
pub use host::services::Clients as HostClients;
pub use host::{
    Displayed, FileLimits, FileRead, FileSource, MAX_DISPLAY_BYTES, MAX_DISPLAYS, TreeEntry,
};
pub use outcome::{
    EngineError, RunError, RunOutcome, RunReport, RunStatus, cap_text, cap_text_ends,
};
pub use prelude::{FilePrelude, PreludeSource};
pub use typescript::Language;
pub use worker::{WORKER_ARG, serve_worker};

/// Limits and defaults of the engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Timeout when a request names none.
    pub default_timeout: Duration,
    /// Largest timeout a request may ask for.
    pub max_timeout: Duration,
    /// Heap limit in MiB when a request names none.
    pub default_heap_limit_mb: usize,
    /// Largest heap limit a request may ask for.
    pub max_heap_limit_mb: usize,
    /// Largest `code` accepted, in bytes.
    pub max_code_bytes: usize,
    /// Console output kept per run, in bytes.
    pub max_output_bytes: usize,
    /// Longest rendered `result` returned, in bytes; a longer one is cut
    /// with a marker saying how long it was.
    pub max_result_bytes: usize,
    /// Snapshot code handling.
    pub code_handling: CodeHandling,
    /// Isolates alive at once in process (no engine workers); further runs
    /// wait their turn. With engine workers, the workers are the runners.
    pub max_concurrent_runs: usize,
    /// Runs of one authenticated tenant at once; `None`: half the runners,
    /// rounded up. The anonymous namespace has no share.
    pub tenant_runs: Option<usize>,
    /// Longest a run waits for a runner before it is refused.
    pub queue_wait: Duration,
    /// Largest snapshot payload stored or restored, in bytes.
    pub max_snapshot_bytes: usize,
    /// Engine worker processes: every run executes in one, one run at a
    /// time each, so that code that makes V8 end its process ends only its
    /// worker. 0 runs them in this process, where such code ends it (the
    /// library's default, for tests and benchmarks; the binary never does).
    pub engine_workers: usize,
    /// The binary workers run (started with [`WORKER_ARG`]); this process's
    /// own executable when unset.
    pub worker_program: Option<PathBuf>,
    /// Runs after which a worker is replaced by a new process.
    pub worker_max_jobs: u64,
    /// Isolates kept ready for stateless runs; 0 creates each isolate when
    /// its run starts. Ignored where this process creates or restores
    /// snapshots itself; why the default is 0: docs/performance.md, "Warm
    /// isolates".
    pub warm_isolates: usize,
    /// What `fetch` may reach (off by default).
    pub fetch: crate::egress::FetchConfig,
    /// The upstream MCP servers `mcp` calls (none by default).
    pub mcp: crate::upstream::UpstreamConfig,
    /// Most module source one run may load (its module graph), in bytes.
    pub max_module_bytes: usize,
    /// Caps on a run's `/work`.
    pub file_limits: FileLimits,
    /// `process.env` of runs (empty by default).
    pub process_env: Arc<std::collections::BTreeMap<String, String>>,
    /// Most bytes of heaps engine workers keep restored for the call that
    /// continues them (`MCP_V8_READY_HEAPS_MB`); 0 keeps none, as does an
    /// engine without workers.
    pub ready_heaps_bytes: usize,
    /// A worker collects garbage in a heap it has just restored for the
    /// next call, which also ends the sweeping V8 goes on with in the
    /// background after a restore: where the host is frozen between calls
    /// (standard Lambda), that work would otherwise wait out the freeze and
    /// hold up the next call (about 14 ms on ~50 MB, docs/performance.md).
    pub settle_ready_heaps: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(300),
            default_heap_limit_mb: 64,
            max_heap_limit_mb: 1024,
            max_code_bytes: 1024 * 1024,
            max_output_bytes: 1024 * 1024,
            max_result_bytes: 1024 * 1024,
            code_handling: CodeHandling::Keep,
            max_concurrent_runs: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            tenant_runs: None,
            queue_wait: Duration::from_secs(10),
            max_snapshot_bytes: 256 * 1024 * 1024,
            engine_workers: 0,
            worker_program: None,
            worker_max_jobs: 2000,
            warm_isolates: 0,
            fetch: crate::egress::FetchConfig::off(),
            mcp: crate::upstream::UpstreamConfig::off(),
            max_module_bytes: 64 * 1024 * 1024,
            file_limits: FileLimits::default(),
            process_env: Arc::default(),
            ready_heaps_bytes: 0,
            settle_ready_heaps: false,
        }
    }
}

/// One request to run code.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// JavaScript or TypeScript source.
    pub code: String,
    /// Heap to restore first (stateful runs only).
    pub heap: Option<HeapKey>,
    /// Whose heaps `heap` names and the run's heap goes to.
    pub tenant: Tenant,
    /// Snapshot the heap afterwards and return its key.
    pub stateful: bool,
    /// Language of `code`.
    pub language: Language,
    /// Overrides the default timeout.
    pub timeout: Option<Duration>,
    /// Overrides the default heap limit, in MiB.
    pub heap_limit_mb: Option<usize>,
    /// Lets the caller watch and cancel the run while it executes.
    pub control: Option<Arc<RunControl>>,
    /// Files to write under `/work` before the code runs: path, bytes.
    pub files: Vec<(String, bytes::Bytes)>,
}

/// Runs code; cheap to share (`Arc`), safe to call from many tasks.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    heaps: Option<Arc<dyn HeapStore>>,
    admission: admission::Admission,
    workers: Option<worker::WorkerPool>,
    warm: Option<plain::WarmPool>,
    /// `config.fetch`, shared with every job; `None` when fetch is off.
    fetch: Option<Arc<crate::egress::FetchConfig>>,
    /// `config.mcp`, shared with every job; `None` when no upstream is
    /// configured.
    mcp: Option<Arc<crate::upstream::UpstreamConfig>>,
    /// The deployment's packages, when it has a package store.
    packages: Option<Arc<Packages>>,
    /// The operator's prelude, when there is one.
    prelude: Option<prelude::Prelude>,
    /// Where the bytes of `/work` files live, per tenant.
    files: Option<Arc<dyn FileStore>>,
    /// The `fetch` client and upstream connections of runs in this process.
    clients: Arc<host::services::Clients>,
}

const MIN_HEAP_LIMIT_MB: usize = 8;

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
                platform::init();
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
            match plain::WarmPool::new(config.warm_isolates, heap_limit_bytes) {
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
        let mcp = config.mcp.enabled().then(|| Arc::new(config.mcp.clone()));
        Self {
            config,
            heaps,
            admission,
            workers,
            warm,
            fetch,
            mcp,
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
        // need alone (engine/run.rs, READ_ONLY_HEAP).
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
        let ready = job.keep_ready;
        let (result, preparing) = self.execute(job, &tenant, None, claim).await?;
        let mut result = result.cancelled_by(control.as_deref());
        self.apply(&mut report, &mut result, positions.as_ref())
            .await;
        if let Some(stored) = self.keep(&tenant, &result, preparing, ready).await {
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
        let task = {
            let (engine, control) = (self.clone(), control.clone());
            let ready = job.keep_ready;
            tokio::spawn(async move {
                let done = match engine.execute(job, &tenant, Some(ran_tx), claim).await {
                    Ok((result, preparing)) => {
                        // Once answered, the control ignores cancels.
                        let result = result.cancelled_by(control.as_deref());
                        let stored = engine.keep(&tenant, &result, preparing, ready).await;
                        Ok((result, stored))
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
                let save = Saving { done: done_rx };
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

    /// Checks and prepares `request` up to the job that runs it, or the
    /// report of a run that ended before it started.
    async fn setup(&self, mut request: RunRequest) -> Result<Setup, EngineError> {
        let started = Instant::now();
        let mut limits = self.check(&request)?;
        let mut report = RunReport::new(&request.code, request.heap.clone());
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

        // A heap an engine worker keeps ready is neither read nor restored.
        let claim = match &request.heap {
            Some(key) if self.heaps.is_some() => self.claim(&request.tenant, key, &limits),
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
                    report.outcome.warnings.push(format!(
                        "heap {key} was not found in storage; the run started from a fresh isolate"
                    ));
                    None
                }
                Err((status, error)) => {
                    report.outcome.status = status;
                    report.outcome.error = Some(error);
                    return finish(report);
                }
            },
            _ => None,
        };

        let packages = match &self.packages {
            Some(packages) => Some(packages.view().await),
            None => None,
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
        let mut job = contract::Job {
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
            ..self.job(std::mem::take(&mut prepared.js))
        };
        job.asks.modules.packages = packages;
        job.asks.files.inputs = std::mem::take(&mut request.files)
            .into_iter()
            .map(|(path, bytes)| (path, section::Section(bytes)))
            .collect();
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

    /// The limits a heap is restored with when the call names none.
    fn ready_limits(&self) -> contract::ReadyLimits {
        contract::ReadyLimits {
            default_mb: self.config.default_heap_limit_mb,
            max_mb: self.config.max_heap_limit_mb,
            asked_mb: None,
            settle: self.config.settle_ready_heaps,
        }
    }

    /// The worker keeping `tenant`'s heap `key` ready for a run with
    /// `limits`, when there is one.
    fn claim(&self, tenant: &Tenant, key: &HeapKey, limits: &Limits) -> Option<worker::Claim> {
        let workers = self.workers.as_ref().filter(|w| w.keeps_ready())?;
        workers.claim(
            tenant,
            key,
            limits.asked.then_some(limits.heap_limit_mb * MIB),
        )
    }

    /// Fills `report` from what the isolate gave (all of it but the blob
    /// and the files to keep).
    async fn apply(
        &self,
        report: &mut RunReport,
        result: &mut contract::JobResult,
        positions: Option<&positions::Positions>,
    ) {
        // Modules the run fetched by URL go to the store before the answer
        // does: an instance may be frozen or retired right after it.
        if let Some(packages) = &self.packages {
            packages.publish().await;
        }
        if let Some(positions) = positions {
            result.remap(positions);
        }
        let reports = &mut result.reports;
        report.displays = std::mem::take(&mut reports.display);
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
        outcome.output = std::mem::take(&mut reports.console);
        outcome.fetches = reports.fetch.count;
        outcome.warnings.append(&mut reports.fetch.refused);
        if reports.fetch.more_refused > 0 {
            outcome.warnings.push(format!(
                "{} more fetches were refused by the egress policy",
                reports.fetch.more_refused
            ));
        }
        outcome.mcp_calls = reports.mcp.take();
        outcome.error = result.error.take();
        outcome.warnings.append(&mut result.warnings);
        report.heap_used_bytes = result.heap_used_bytes;
    }

    /// Stores the heap a run made (its `/work` files first: a stored heap
    /// never names bytes the store lacks); `None` when it made none. Names
    /// the heap to the worker restoring it, once stored.
    async fn keep(
        &self,
        tenant: &Tenant,
        result: &contract::JobResult,
        preparing: Option<u64>,
        ready: Option<contract::ReadyLimits>,
    ) -> Option<Result<HeapKey, RunError>> {
        let (Some(blob), Some(heaps)) = (&result.blob, &self.heaps) else {
            return None;
        };
        let stored = match files::keep(self.files.as_ref(), tenant, &result.reports.files).await {
            Ok(()) => self.store(heaps.as_ref(), tenant, blob).await,
            Err(error) => Err(error),
        };
        if let (Ok(key), Some(id), Some(workers), Some(limits)) =
            (&stored, preparing, &self.workers, ready)
        {
            let limit_mb = limits.heap_limit_mb(blob.0.len());
            workers.mark_ready(
                id,
                worker::ReadyHeap {
                    tenant: tenant.clone(),
                    key: key.clone(),
                    heap_limit_bytes: limit_mb * MIB,
                    cost_bytes: restore_needs_mb(blob.0.len()) * MIB,
                    made: Instant::now(),
                },
            );
        }
        Some(stored)
    }

    /// The heap the prelude leaves, made by the first fresh run that needs
    /// it (once per process; a failure is kept too, and logged).
    async fn base(
        &self,
        prelude: &prelude::Prelude,
        packages: Option<Arc<crate::packages::PackageView>>,
    ) -> Result<bytes::Bytes, String> {
        prelude
            .base
            .get_or_init(|| async {
                let location = prelude.source.location();
                let made = self.make_base(prelude, packages).await;
                match &made {
                    Ok(base) => tracing::info!(prelude = %location, bytes = base.len(), "the prelude's heap is ready"),
                    Err(why) => tracing::error!(prelude = %location, error = %why, "the prelude failed; fresh runs start without it"),
                }
                made
            })
            .await
            .clone()
    }

    async fn make_base(
        &self,
        prelude: &prelude::Prelude,
        packages: Option<Arc<crate::packages::PackageView>>,
    ) -> Result<bytes::Bytes, String> {
        let location = prelude.source.location();
        let code = prelude
            .source
            .code()
            .await
            .map_err(|e| format!("reading {location}: {e}"))?;
        let prepared = typescript::prepare(&code, Language::Auto)
            .map_err(|e| format!("{location}: SyntaxError: {e}"))?;
        let mut job = contract::Job {
            stateful: true,
            timeout: self.config.max_timeout,
            ..self.job(prepared.js)
        };
        job.asks.modules.packages = packages;
        // Made once for every tenant's fresh runs, it counts as anonymous.
        let result = self
            .execute(job, &Tenant::default(), None, None)
            .await
            .map(|(result, _)| result)
            .map_err(|e| e.to_string())?;
        if !result.reports.files.is_empty() {
            // The prelude's heap is kept in memory, not stored: bytes of its
            // files would have nowhere to live.
            return Err(format!(
                "{location} left files in /work; a prelude may not (runs bring their own files)"
            ));
        }
        match (result.status, result.blob) {
            (RunStatus::Completed, Some(blob)) => Ok(blob.0),
            (status, _) => Err(match result.error {
                Some(error) => format!(
                    "{location} ended {status:?}: {}: {}",
                    error.name, error.message
                ),
                None => format!("{location} ended {status:?}"),
            }),
        }
    }

    /// A job running `code` fresh, statelessly, with this engine's defaults.
    fn job(&self, code: String) -> contract::Job {
        let mut asks = capabilities::Asks::default();
        asks.console.max_output_bytes = self.config.max_output_bytes;
        asks.fetch = self.fetch.clone();
        asks.mcp = self.mcp.clone();
        asks.process.env = self.config.process_env.clone();
        asks.modules.max_module_bytes = self.config.max_module_bytes;
        asks.files.limits = self.config.file_limits;
        contract::Job {
            task: contract::Task::Run { code },
            restore: None,
            plain_restore: false,
            from_ready: false,
            keep_ready: None,
            answer_first: false,
            stateful: false,
            timeout: self.config.default_timeout,
            heap_limit_bytes: self.config.default_heap_limit_mb * 1024 * 1024,
            max_result_bytes: self.config.max_result_bytes,
            code_handling: self.config.code_handling,
            control: None,
            asks,
        }
    }

    /// What the host lends a run of `tenant`: the calling runtime, the
    /// tenant's files, this engine's clients.
    fn services(&self, tenant: &Tenant) -> host::services::HostServices {
        host::services::HostServices {
            runtime: tokio::runtime::Handle::current(),
            files: self.files.as_ref().map(|store| {
                Arc::new(files::StoreFiles {
                    store: store.clone(),
                    tenant: tenant.clone(),
                }) as Arc<dyn FileSource>
            }),
            clients: self.clients.clone(),
        }
    }

    /// The `/work` tree of `tenant`'s heap `key`, read by restoring it;
    /// `None` when the tenant has no such heap.
    pub async fn files_of(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Vec<TreeEntry>>, String> {
        let Some(heaps) = &self.heaps else {
            return Ok(None);
        };
        let mut limits = Limits {
            timeout: self.config.default_timeout,
            heap_limit_mb: self.config.max_heap_limit_mb,
            asked: true,
        };
        let payload = match self.load(heaps.as_ref(), tenant, key, &mut limits).await {
            Ok(Some(payload)) => payload,
            Ok(None) => return Ok(None),
            Err((_, error)) => return Err(error.message),
        };
        let job = contract::Job {
            task: contract::Task::ListFiles,
            heap_limit_bytes: restore_needs_mb(payload.len())
                .max(self.config.default_heap_limit_mb)
                * 1024
                * 1024,
            restore: Some(section::Section(payload)),
            ..self.job(String::new())
        };
        let (result, _) = self
            .execute(job, tenant, None, None)
            .await
            .map_err(|e| e.to_string())?;
        match (result.status, result.listing) {
            (RunStatus::Completed, Some(tree)) => Ok(Some(tree)),
            _ => Err(result.error.map_or_else(
                || format!("listing the heap's /work ended {:?}", result.status),
                |e| e.message,
            )),
        }
    }

    /// The payload of heap `key`, `None` when it is not stored, or the
    /// status and error that end the run before it starts.
    async fn load(
        &self,
        heaps: &dyn HeapStore,
        tenant: &Tenant,
        key: &HeapKey,
        limits: &mut Limits,
    ) -> Result<Option<bytes::Bytes>, (RunStatus, RunError)> {
        let snapshot = match heaps.get(tenant, key).await {
            Ok(Some(snapshot)) => snapshot,
            Ok(None) => return Ok(None),
            Err(err) => return Err((RunStatus::Failed, storage_error(&err))),
        };
        let len = snapshot.payload().len();
        if len > self.config.max_snapshot_bytes {
            return Err((
                RunStatus::Failed,
                self.too_large(&format!("heap {key}"), len),
            ));
        }
        let needed_mb = restore_needs_mb(len);
        // A heap grown under a larger limit than the default is restored
        // without the caller repeating it: the limit its size needs, with
        // the default's room to grow (docs/tools.md, heap_memory_max_mb).
        // The same rule makes a worker's ready heap, so a call that names no
        // limit finds it.
        if !limits.asked {
            limits.heap_limit_mb = self.ready_limits().heap_limit_mb(len);
        }
        if needed_mb > limits.heap_limit_mb {
            return Err((
                RunStatus::OutOfMemory,
                RunError::new(
                    "OutOfMemoryError",
                    format!(
                        "heap {key} needs about {needed_mb} MiB to restore, over the {} MiB heap limit; \
                         ask for a larger heap_memory_max_mb (at most {})",
                        limits.heap_limit_mb, self.config.max_heap_limit_mb
                    ),
                ),
            ));
        }
        Ok(Some(snapshot.payload_bytes()))
    }

    /// Frames and stores the payload a run produced; its key, or the error
    /// that fails the run.
    async fn store(
        &self,
        heaps: &dyn HeapStore,
        tenant: &Tenant,
        blob: &[u8],
    ) -> Result<HeapKey, RunError> {
        if blob.len() > self.config.max_snapshot_bytes {
            return Err(self.too_large("this run's heap", blob.len()));
        }
        let snapshot = Snapshot::from_payload(blob)
            .map_err(|err| RunError::new("SnapshotError", err.to_string()))?;
        heaps
            .put(tenant, &snapshot)
            .await
            .map_err(|err| storage_error(&err))?;
        Ok(snapshot.key().clone())
    }

    fn check(&self, request: &RunRequest) -> Result<Limits, EngineError> {
        let config = &self.config;
        if request.code.len() > config.max_code_bytes {
            return Err(EngineError::CodeTooLarge {
                len: request.code.len(),
                max: config.max_code_bytes,
            });
        }
        let timeout = request.timeout.unwrap_or(config.default_timeout);
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
                max_mb: config.max_heap_limit_mb,
            });
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
        })
    }

    /// Runs a job once `tenant` has a runner: in an engine worker when the
    /// engine has them (`claim`'s, when it keeps the job's heap ready);
    /// else on a thread of its own (see `run::thread_builder`), or a warm
    /// isolate when it touches no snapshot and there are some. `ran` gets a
    /// completed stateful run's answer before its heap is snapshotted. Also
    /// returns the worker now restoring the run's heap, if one is.
    async fn execute(
        &self,
        job: contract::Job,
        tenant: &Tenant,
        ran: Option<oneshot::Sender<contract::JobResult>>,
        claim: Option<worker::Claim>,
    ) -> Result<(contract::JobResult, Option<u64>), EngineError> {
        let mut job = job;
        job.answer_first = ran.is_some() && job.stateful;
        let share = tenant.id().filter(|_| !tenant.is_anonymous());
        let _pass = self.admission.enter(share).await?;
        let services = self.services(tenant);
        if let Some(workers) = &self.workers {
            return workers.execute(job, &services, ran, claim).await;
        }
        if let Some(warm) = self.warm.as_ref().filter(|_| !job.touches_snapshots()) {
            return warm
                .execute(job, services)
                .await
                .map(|result| (result, None))
                .ok_or_else(|| EngineError::Internal("the isolate thread panicked".into()));
        }
        let (done, result) = oneshot::channel();
        run::thread_builder()
            .spawn(move || {
                let result = if job.touches_snapshots() {
                    let mut ran = ran;
                    let mut early = |answer| {
                        if let Some(ran) = ran.take() {
                            let _ = ran.send(answer);
                        }
                    };
                    isolate::execute(job, &services, &mut None, &mut early)
                } else {
                    plain::PlainIsolate::new(job.heap_limit_bytes).run(&job, &services)
                };
                let _ = done.send(result);
            })
            .map_err(|e| EngineError::Internal(format!("spawning the isolate thread: {e}")))?;
        result
            .await
            .map(|result| (result, None))
            .map_err(|_| EngineError::Internal("the isolate thread panicked".into()))
    }

    /// Starts an engine worker ahead of the first run, when the engine has
    /// workers: its V8 starts while the process answers its first requests.
    /// Needs a Tokio runtime.
    pub fn prestart(&self) {
        if let Some(workers) = &self.workers {
            workers.prestart();
        }
    }

    /// Waits, until `by`, for the engine workers still restoring heaps
    /// kept ready for the next call; returns how many finished. For a host
    /// about to be frozen (Lambda's post-response phase), which must run
    /// nothing beside it.
    pub async fn settle_ready(&self, by: Instant) -> usize {
        match &self.workers {
            Some(workers) if workers.keeps_ready() => workers.settle(by).await,
            _ => 0,
        }
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
}

/// How a run answered first ended: its final result (the heap, the files
/// to keep) and how storing its heap went (`None`: it made none).
type Saved = Result<(contract::JobResult, Option<Result<HeapKey, RunError>>), EngineError>;

impl Saving {
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
    positions: Option<positions::Positions>,
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

struct Limits {
    timeout: Duration,
    heap_limit_mb: usize,
    /// The caller gave the heap limit (`heap_memory_max_mb`), so a heap
    /// that needs more is refused rather than given more.
    asked: bool,
}

impl Engine {
    /// Why a snapshot of `len` bytes is neither stored nor restored.
    fn too_large(&self, what: &str, len: usize) -> RunError {
        const MIB: usize = 1024 * 1024;
        RunError::new(
            "SnapshotTooLarge",
            format!(
                "{what} snapshot is {} MiB, over the {} MiB limit (MCP_V8_MAX_HEAP_SNAPSHOT_MB); \
                 it was not stored or restored. Drop large globals before the run ends, or raise the limit",
                len.div_ceil(MIB),
                self.config.max_snapshot_bytes / MIB
            ),
        )
    }
}

fn storage_error(err: &HeapStoreError) -> RunError {
    let name = match err {
        HeapStoreError::Corrupt { .. } | HeapStoreError::Chunks { .. } => "HeapError",
        _ => "StorageError",
    };
    RunError::new(name, err.to_string())
}
