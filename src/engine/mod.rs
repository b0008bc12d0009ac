//! The JavaScript engine: one V8 isolate per run, fresh or restored from a
//! content-addressed heap snapshot, snapshotted again when the run succeeds.

mod checksum;
mod control;
mod inspect;
mod isolate;
mod natives;
mod platform;
mod typescript;
mod warm;
mod watchdog;
mod web;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, oneshot};
use uuid::Uuid;

use crate::heap::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;

pub use checksum::calls as snapshot_checksum_calls;
pub use control::RunControl;
pub use typescript::Language;
pub use worker::{WORKER_ARG, serve_stdio as serve_worker};

/// How V8 treats compiled function code in a snapshot (see
/// `docs/performance.md` for the measurements behind the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeHandling {
    /// Keep compiled bytecode: bigger blobs, no recompilation after restore.
    Keep,
    /// Drop compiled code: smaller blobs, functions recompile lazily.
    Clear,
}

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
    /// Isolates alive at once; further runs wait their turn.
    pub max_concurrent_runs: usize,
    /// Largest snapshot payload stored or restored, in bytes.
    pub max_snapshot_bytes: usize,
    /// Worker processes for runs that create or restore snapshots, which
    /// go one at a time within a process; 0 runs them in this process.
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
            max_snapshot_bytes: 256 * 1024 * 1024,
            engine_workers: 0,
            worker_program: None,
            worker_max_jobs: 2000,
            warm_isolates: 0,
            fetch: crate::egress::FetchConfig::off(),
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
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        }
    }
}

/// A JavaScript error, or an engine error shaped like one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// What a run produced; the `run_js` tool returns it as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Unique per run.
    pub execution_id: Uuid,
    /// How it ended.
    pub status: RunStatus,
    /// The completion value: JSON when it has a JSON form, else readable text; `None` for `undefined`.
    pub result: Option<String>,
    /// Captured console output.
    pub output: String,
    /// Key of the new heap (completed stateful runs).
    pub heap: Option<HeapKey>,
    /// The heap the run was asked to start from.
    pub input_heap: Option<HeapKey>,
    /// Why it did not complete.
    pub error: Option<RunError>,
    /// Things the caller should know that did not stop the run.
    pub warnings: Vec<String>,
    /// Wall time of the whole run, loading and storing included.
    pub duration_ms: u64,
    /// Requests `fetch` made and the response bytes it read; absent when
    /// the run made none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetches: Option<crate::egress::FetchCount>,
}

/// An outcome plus what was really executed (JavaScript after type stripping),
/// which the session log records.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The outcome.
    pub outcome: RunOutcome,
    /// The JavaScript that ran.
    pub executed_code: String,
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
    /// Heap limit outside 8 ..= the configured maximum.
    #[error("heap limit must be between 8 and {max_mb} MiB, got {asked}")]
    HeapLimitOutOfRange {
        /// Requested.
        asked: usize,
        /// The cap.
        max_mb: usize,
    },
    /// A heap was named for a run that keeps no state.
    #[error("a stateless run cannot start from a heap")]
    HeapInStatelessRun,
    /// Stateful run without storage configured.
    #[error("stateful runs need a heap store, and none is configured")]
    NoHeapStore,
    /// The isolate thread died (a bug, reported rather than hidden).
    #[error("the engine thread failed: {0}")]
    Internal(String),
}

/// Runs code; cheap to share (`Arc`), safe to call from many tasks.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    heaps: Option<Arc<dyn HeapStore>>,
    permits: Semaphore,
    workers: Option<worker::WorkerPool>,
    warm: Option<warm::WarmPool>,
    /// `config.fetch`, shared with every job; `None` when fetch is off.
    fetch: Option<Arc<crate::egress::FetchConfig>>,
}

const MIN_HEAP_LIMIT_MB: usize = 8;

impl RunReport {
    /// A run of `request` that has not happened: failed until it completes.
    fn new(request: &RunRequest) -> Self {
        Self {
            outcome: RunOutcome {
                execution_id: Uuid::new_v4(),
                status: RunStatus::Failed,
                result: None,
                output: String::new(),
                heap: None,
                input_heap: request.heap.clone(),
                error: None,
                warnings: Vec::new(),
                duration_ms: 0,
                fetches: None,
            },
            executed_code: request.code.clone(),
        }
    }
}

impl Engine {
    /// An engine over `heaps` (required for stateful runs). Initialises V8
    /// once per process.
    pub fn new(config: EngineConfig, heaps: Option<Arc<dyn HeapStore>>) -> Self {
        platform::init();
        let permits = Semaphore::new(config.max_concurrent_runs.max(1));
        let workers = (config.engine_workers > 0).then(|| {
            let program = config
                .worker_program
                .clone()
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("mcp-v8-lambda"));
            worker::WorkerPool::new(program, config.engine_workers, config.worker_max_jobs)
        });
        let snapshots_here = heaps.is_some() && workers.is_none();
        let warm = if config.warm_isolates > 0 && !snapshots_here {
            let heap_limit_bytes = config.default_heap_limit_mb * 1024 * 1024;
            match warm::WarmPool::new(config.warm_isolates, heap_limit_bytes) {
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
            permits,
            workers,
            warm,
            fetch,
        }
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
    pub async fn run(&self, request: RunRequest) -> Result<RunReport, EngineError> {
        let started = Instant::now();
        let limits = self.check(&request)?;
        let mut report = RunReport::new(&request);
        let finish = |mut report: RunReport| {
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
            Ok(report)
        };

        let prepared = match typescript::prepare(&request.code, request.language) {
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

        let restore = match (&request.heap, &self.heaps) {
            (Some(key), Some(heaps)) => match self
                .load(heaps.as_ref(), &request.tenant, key, &limits)
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

        let job = isolate::Job {
            code: prepared.js,
            restore,
            stateful: request.stateful,
            timeout: limits.timeout,
            heap_limit_bytes: limits.heap_limit_mb * 1024 * 1024,
            max_output_bytes: self.config.max_output_bytes,
            code_handling: self.config.code_handling,
            control: request.control.clone(),
            fetch: self.fetch.clone(),
        };
        let mut result = self.execute(job).await?;
        if request.control.as_ref().is_some_and(|c| c.is_cancelled()) {
            // Whatever the run got to, the caller no longer wants it.
            result.status = RunStatus::Cancelled;
            result.result = None;
            result.blob = None;
            result.error = Some(RunError::new(
                "CancelledError",
                "the run was cancelled by the client and terminated; nothing was stored",
            ));
        }
        let outcome = &mut report.outcome;
        outcome.status = result.status;
        outcome.result = result
            .result
            .map(|text| cap_text(text, self.config.max_result_bytes, "result"));
        outcome.output = result.output;
        outcome.fetches = result.fetches;
        outcome.error = result.error;
        outcome.warnings.extend(result.warnings);
        if let (Some(blob), Some(heaps)) = (result.blob, &self.heaps) {
            match self.store(heaps.as_ref(), &request.tenant, &blob).await {
                Ok(key) => outcome.heap = Some(key),
                Err(error) => {
                    outcome.status = RunStatus::Failed;
                    outcome.result = None;
                    outcome.error = Some(error);
                }
            }
        }
        finish(report)
    }

    /// The payload of heap `key`, `None` when it is not stored, or the
    /// status and error that end the run before it starts.
    async fn load(
        &self,
        heaps: &dyn HeapStore,
        tenant: &Tenant,
        key: &HeapKey,
        limits: &Limits,
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
        })
    }

    /// Runs a job on a thread of its own (see `isolate::thread_builder`),
    /// or in a worker process when it touches snapshots and there are workers.
    async fn execute(&self, job: isolate::Job) -> Result<isolate::JobResult, EngineError> {
        if let Some(workers) = &self.workers
            && job.touches_snapshots()
        {
            return workers.execute(job).await;
        }
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        if let Some(warm) = self.warm.as_ref().filter(|_| !job.touches_snapshots()) {
            return warm
                .execute(job)
                .await
                .ok_or_else(|| EngineError::Internal("the isolate thread panicked".into()));
        }
        let (done, result) = oneshot::channel();
        isolate::thread_builder()
            .spawn(move || {
                let _ = done.send(isolate::execute(job));
            })
            .map_err(|e| EngineError::Internal(format!("spawning the isolate thread: {e}")))?;
        result
            .await
            .map_err(|_| EngineError::Internal("the isolate thread panicked".into()))
    }
}

/// Heap an isolate needs to restore a snapshot of `payload_len` bytes, in MiB.
///
/// V8 deserialises inside the isolate constructor, before a near-heap-limit
/// callback can be installed, so a snapshot that does not fit is a fatal
/// out-of-memory for the whole process. The heap limit is split between the
/// young and old generations and deserialisation allocates in the old one;
/// twice the payload plus a fixed reserve keeps it clear of the limit.
pub fn restore_needs_mb(payload_len: usize) -> usize {
    const RESERVE_MB: usize = 8;
    (payload_len * 2).div_ceil(1024 * 1024) + RESERVE_MB
}

struct Limits {
    timeout: Duration,
    heap_limit_mb: usize,
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
        HeapStoreError::Corrupt { .. } => "HeapError",
        _ => "StorageError",
    };
    RunError::new(name, err.to_string())
}

/// `text` cut to at most `max` bytes (at a character boundary) with a
/// marker naming `what` was cut and its length, like console output past
/// its cap.
pub fn cap_text(mut text: String, max: usize, what: &str) -> String {
    if text.len() <= max {
        return text;
    }
    let len = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[{what} truncated: {len} bytes, the first {end} shown]"
    ));
    text
}
