//! The engine's configuration and what one run is asked.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::capability::control::RunControl;
use super::contract::CodeHandling;
use super::contract::registration::CapabilitySettings;
use super::run::typescript::Language;
use crate::heap::HeapKey;
use crate::tenant::Tenant;
use crate::units::MIB;

/// The smallest heap limit a run may ask for, in MiB.
pub const MIN_HEAP_LIMIT_MB: usize = 8;

/// The largest heap limit the engine allows, in MiB: a deployment's
/// `max_heap_limit_mb` is at most this.
pub const MAX_HEAP_LIMIT_MB: usize = 1024;

impl EngineConfig {
    /// The default and maximum a run's heap limit is decided within.
    pub(crate) fn heap_limit_rule(&self) -> super::heap_limit::HeapLimitRule {
        super::heap_limit::HeapLimitRule {
            default_mb: self.default_heap_limit_mb,
            max_mb: self.max_heap_limit_mb,
        }
    }
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
    /// worker. The default is `serve`'s ([`EngineConfig::serve_workers`]).
    /// 0 runs V8 in this process, where such code ends it: only
    /// [`EngineConfig::in_process`] asks for that, and the binary never does.
    pub engine_workers: usize,
    /// The binary workers run (started with [`super::WORKER_ARG`]); this
    /// process's own executable when unset, so a program that embeds the
    /// library and keeps the default names the `mcp-v8-lambda` binary here
    /// or answers [`super::WORKER_ARG`] itself as the binary does.
    pub worker_program: Option<PathBuf>,
    /// Runs after which a worker is replaced by a new process.
    pub worker_max_jobs: u64,
    /// Isolates kept ready for stateless runs; 0 creates each isolate when
    /// its run starts. Ignored where this process creates or restores
    /// snapshots itself; why the default is 0: docs/performance.md, "Warm
    /// isolates".
    pub warm_isolates: usize,
    /// What runs may reach on the network, by `fetch` and by importing
    /// modules by URL: the run's egress policy (off by default).
    pub fetch: crate::egress::FetchConfig,
    /// The operator's settings of each capability of a run (console
    /// output kept, `mcp`'s upstream servers, `/work`'s caps, …).
    pub capabilities: CapabilitySettings,
    /// Most bytes of heaps engine workers keep restored for the call that
    /// continues them (`MCP_V8_READY_HEAPS_MB`); 0 keeps none, as does an
    /// engine without workers.
    pub ready_heaps_bytes: usize,
    /// A worker collects garbage in a heap it has just restored for the
    /// next call, which also ends the sweeping V8 goes on with in the
    /// background after a restore: where the host is frozen between calls
    /// (standard Lambda), that work would otherwise wait out the freeze and
    /// hold up the next call (about 14 ms on ~50 MB, docs/performance.md).
    pub collect_ready_heaps: bool,
}

impl EngineConfig {
    /// Engine workers `serve` starts unless told: two per core, at least
    /// four, so a short run starts while others' long runs hold theirs
    /// (docs/reliability.md, "Runners").
    pub fn serve_workers() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        (2 * cores).max(4)
    }

    /// The defaults with V8 in this process (no engine workers), where code
    /// that makes V8 end its process ends this one: for the library's unit
    /// tests, the fuzz targets and the benchmarks that cannot start the
    /// binary, never for serving.
    pub fn in_process() -> Self {
        Self {
            engine_workers: 0,
            ..Self::default()
        }
    }
}

/// The engine the binary runs: `serve`'s engine workers, each run in one.
impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(300),
            default_heap_limit_mb: 64,
            max_heap_limit_mb: MAX_HEAP_LIMIT_MB,
            max_code_bytes: MIB,
            max_result_bytes: MIB,
            code_handling: CodeHandling::Keep,
            max_concurrent_runs: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            tenant_runs: None,
            queue_wait: Duration::from_secs(10),
            max_snapshot_bytes: 256 * MIB,
            engine_workers: Self::serve_workers(),
            worker_program: None,
            worker_max_jobs: 2000,
            warm_isolates: 0,
            fetch: crate::egress::FetchConfig::off(),
            capabilities: CapabilitySettings::default(),
            ready_heaps_bytes: 0,
            collect_ready_heaps: false,
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
    /// The run whose heap to continue while it is not stored yet: an
    /// engine worker keeps it live ([`Engine::holds_live`]); `heap` is then
    /// `None`. A run whose worker no longer keeps it is refused with
    /// [`EngineError::NotLive`], and the caller continues it by key once
    /// stored.
    ///
    /// [`Engine::holds_live`]: super::Engine::holds_live
    /// [`EngineError::NotLive`]: super::EngineError::NotLive
    pub continues: Option<uuid::Uuid>,
    /// Whose heaps `heap` names and the run's heap goes to.
    pub tenant: Tenant,
    /// Snapshot the heap afterwards and return its key.
    pub stateful: bool,
    /// Language of `code`.
    pub language: Language,
    /// Overrides the default timeout.
    pub timeout: Option<Duration>,
    /// When the host must have the run's heap stored by (a Lambda
    /// invocation's deadline): the run's timeout is cut to end before it,
    /// leaving the time storing the heap takes, and a run with too little
    /// time left is refused ([`EngineError::DeadlineTooSoon`]).
    ///
    /// [`EngineError::DeadlineTooSoon`]: super::EngineError::DeadlineTooSoon
    pub deadline: Option<SystemTime>,
    /// Overrides the default heap limit, in MiB.
    pub heap_limit_mb: Option<usize>,
    /// Lets the caller watch and cancel the run while it executes.
    pub control: Option<Arc<RunControl>>,
    /// The call's arguments that capabilities take, by name (`files`:
    /// what to write under `/work` before the code runs); each is checked
    /// by its capability, and one no capability takes refuses the run.
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Whom the run's `elicit()` can ask, and the responses a suspended
    /// run resumes with (`heap` is then its suspended heap).
    pub elicitation: crate::elicit::ElicitContext,
}
