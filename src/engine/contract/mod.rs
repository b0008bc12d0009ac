//! What a run takes and what it gives: one description, used as it is in
//! this process and carried as it is across an engine worker's pipe (JSON,
//! with [`Section`]s of raw bytes beside it). Each capability declares its
//! own part of both ([`super::capability`]); nothing here copies them.

pub(super) mod registration;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use self::registration::{Asks, Reports};
use super::capability::control::RunControl;
use super::capability::outcome::{RunError, RunStatus};
use super::capability::positions::Positions;
use super::capability::section::Section;
use super::heap_limit::{HeapLimit, HeapLimitRule};
use super::host::TreeEntry;

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

/// The heap limit the next call is expected to ask for, carried to the
/// worker so that the ready isolate is made with it (`super::run::ready`):
/// the limit the run that made the heap asked for, else the rule a call
/// that names none gets ([`HeapLimit::for_ready`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ReadyLimits {
    pub rule: HeapLimitRule,
    /// The limit of the run that made the heap, if it asked for one.
    pub asked: Option<HeapLimit>,
    /// Collect garbage once restored (`EngineConfig::collect_ready_heaps`).
    #[serde(default)]
    pub settle: bool,
}

impl ReadyLimits {
    /// The heap limit for restoring a payload of `payload_len` bytes ahead
    /// of the next call.
    pub(crate) fn limit_for(&self, payload_len: usize) -> HeapLimit {
        HeapLimit::for_ready(self.asked, payload_len, self.rule)
    }
}

/// What a job does on its isolate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Task {
    /// Runs the code (JavaScript, types already stripped).
    Run { code: String },
    /// Resumes the run suspended in the restored heap with the responses
    /// to its elicitations (JSON, by key); `code` is what it ran, for
    /// positions.
    Resume { code: String, responses: String },
    /// Lists the restored heap's `/work` tree instead of running code
    /// (for `resources/read`).
    ListFiles,
}

/// What an isolate is asked to do.
#[derive(Serialize, Deserialize)]
pub(crate) struct Job {
    pub task: Task,
    /// Raw V8 payload to restore from, shared with the heap store's buffer
    /// so that handing it to a worker process copies it only into the pipe.
    pub restore: Option<Section>,
    /// `restore` went through [`super::web::before_snapshot`] (the
    /// prelude's heap, made by this process), so a plain isolate may
    /// restore it; any other heap is restored by a snapshot creator.
    pub plain_restore: bool,
    /// Restore from the heap this engine worker keeps ready instead of
    /// `restore` (the pool sends it only to the worker holding that heap).
    #[serde(default)]
    pub from_ready: bool,
    /// After a completed stateful run is snapshotted and its blob sent,
    /// restore the blob into a ready isolate for the next call
    /// ([`super::run::ready`]); only engine workers keep one.
    #[serde(default)]
    pub keep_ready: Option<ReadyLimits>,
    /// Send a completed stateful run's answer before its snapshot (a
    /// `Ran` frame); the result that follows then keeps only the heap.
    #[serde(default)]
    pub answer_first: bool,
    /// Names the job to its engine worker's pool: a snapshot that follows
    /// the job's result (`JobResult::snapshot_pending`) comes with it.
    #[serde(default)]
    pub seq: u64,
    /// Create the isolate as a snapshot creator and return a blob on success.
    pub stateful: bool,
    #[serde(with = "millis")]
    pub timeout: Duration,
    pub heap_limit: HeapLimit,
    /// Longest rendered result, applied where the run executes so that no
    /// larger one is copied further.
    pub max_result_bytes: usize,
    pub code_handling: CodeHandling,
    /// The caller's handle on the run. It stays in the caller's process: an
    /// engine worker gets a control of its own, which its pool stops by
    /// ending the process.
    #[serde(skip)]
    pub control: Option<Arc<RunControl>>,
    /// The caller asked for the run's console lines as they are written,
    /// from this level up ([`RunControl::forward_console`]): an engine
    /// worker's own control keeps and reports them.
    #[serde(default)]
    pub log_level: Option<crate::engine::capability::reports::LogLevel>,
    /// What the run may reach on the network (`fetch`, modules by URL);
    /// `None`: nothing.
    pub egress: Option<Arc<crate::egress::FetchConfig>>,
    /// Each capability's part of the run.
    pub asks: Asks,
}

impl Job {
    /// Whether the run creates or restores a snapshot, which decides where
    /// it may run (see [`super::run::READ_ONLY_HEAP`]); the others run on a
    /// plain isolate.
    pub(crate) fn touches_snapshots(&self) -> bool {
        self.stateful || self.restore.is_some() || self.from_ready
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.control.as_ref().is_some_and(|c| c.is_cancelled())
    }
}

/// What came out of the isolate.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JobResult {
    pub status: RunStatus,
    /// Up to the record's bound (`MCP_V8_RECORD_MAX_MB`): a section of the
    /// frame when long.
    #[serde(default, with = "crate::engine::capability::section::text::opt")]
    pub result: Option<String>,
    /// The completion value as Node's REPL shows it (completed runs).
    pub repl: Option<String>,
    pub error: Option<RunError>,
    pub warnings: Vec<String>,
    /// The new raw V8 payload, for completed stateful runs only.
    pub blob: Option<Section>,
    /// The heap's `/work` tree, for [`Task::ListFiles`].
    pub listing: Option<Vec<TreeEntry>>,
    /// Each capability's report.
    pub reports: Reports,
    /// V8's used heap when the code ended (stateful runs), which decides
    /// whether the answer may go before the save (docs/protocol.md).
    #[serde(default)]
    pub heap_used_bytes: u64,
    /// A completed stateful run whose blob a forked copy of its engine
    /// worker is writing: it follows the result, and the worker keeps the
    /// heap live for the next call (`engine/run/ready.rs`).
    #[serde(default)]
    pub snapshot_pending: bool,
}

impl JobResult {
    /// A run that ended `failed` with `error` before it produced anything.
    pub(crate) fn failed(error: RunError) -> Self {
        Self {
            status: RunStatus::Failed,
            result: None,
            repl: None,
            error: Some(error),
            warnings: Vec::new(),
            blob: None,
            listing: None,
            reports: Reports::default(),
            heap_used_bytes: 0,
            snapshot_pending: false,
        }
    }

    /// What the answer of a completed run needs, moved out of `self` before
    /// its heap is snapshotted: `self` keeps the status and what saving
    /// needs (the `/work` files), and gains the blob.
    pub(crate) fn answer(&mut self) -> JobResult {
        let mut reports = std::mem::take(&mut self.reports);
        self.reports.files = std::mem::take(&mut reports.files);
        self.reports.disk = std::mem::take(&mut reports.disk);
        JobResult {
            status: self.status,
            result: self.result.take(),
            repl: self.repl.take(),
            error: self.error.clone(),
            warnings: std::mem::take(&mut self.warnings),
            blob: None,
            listing: None,
            reports,
            heap_used_bytes: self.heap_used_bytes,
            snapshot_pending: false,
        }
    }

    /// The result of a run the caller cancelled: whatever it got to, the
    /// caller no longer wants it, so nothing is kept. The one place that
    /// decides what a cancellation leaves.
    pub(crate) fn cancel(&mut self) {
        self.status = RunStatus::Cancelled;
        self.result = None;
        self.repl = None;
        self.blob = None;
        self.listing = None;
        self.warnings.clear();
        self.reports.cancelled();
        self.error = Some(RunError::new(
            "CancelledError",
            "the run was cancelled by the client and terminated; nothing was stored",
        ));
    }

    /// Every position the caller reads, mapped through `positions` to the
    /// code before that step.
    pub(crate) fn remap(&mut self, positions: &Positions) {
        if let Some(error) = &mut self.error {
            positions.remap_in_place(&mut error.message, true);
            if let Some(stack) = &mut error.stack {
                positions.remap_in_place(stack, true);
            }
        }
        for warning in &mut self.warnings {
            positions.remap_in_place(warning, false);
        }
        self.reports.remap(positions);
    }

    /// `self`, cancelled when `control` says the caller cancelled the run.
    pub(crate) fn cancelled_by(mut self, control: Option<&RunControl>) -> Self {
        if control.is_some_and(RunControl::is_cancelled) {
            self.cancel();
        }
        self
    }
}

/// A `Duration` as whole milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
