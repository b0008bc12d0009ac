//! A run answered before its heap is stored ([`Engine::run_then_save`]):
//! the answer, and the save that goes on after it.
//!
//! [`Engine::run_then_save`]: super::Engine::run_then_save

use tokio::sync::{oneshot, watch};

use super::capability::outcome::{EngineError, RunError, RunReport};
use super::contract;
use crate::heap::HeapKey;

/// A run that has ended, and the save of its heap when that goes on
/// after it ([`Engine::run_then_save`]).
///
/// [`Engine::run_then_save`]: super::Engine::run_then_save
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
    pub(super) done: oneshot::Receiver<Saved>,
    /// Whether an engine worker keeps the heap live for the next call
    /// (known a few milliseconds after the answer, when the run's engine
    /// worker has forked the copy that writes its snapshot).
    pub(super) live: watch::Receiver<Option<bool>>,
}

/// How a run answered first ended: its final result (the heap, the files
/// to keep) and how storing its heap went (`None`: it made none).
pub(super) type Saved =
    Result<(contract::JobResult, Option<Result<HeapKey, RunError>>), EngineError>;

impl Saving {
    /// Whether an engine worker keeps the heap live ([`RunRequest::continues`]
    /// may then name the run): `None` until known, and a closed channel when
    /// the run ended without saying.
    pub fn live(&self) -> watch::Receiver<Option<bool>> {
        self.live.clone()
    }

    /// How the save ended: the heap stored, replaced by a newer run's
    /// before its snapshot began, or failed.
    pub async fn ended(self) -> SaveEnded {
        match self.wait().await {
            Ok(key) => SaveEnded::Stored(key),
            Err(error) if error == RunError::superseded() => SaveEnded::Superseded,
            Err(error) => SaveEnded::Failed(error),
        }
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

/// How the save of a heap answered for first ended.
#[derive(Debug)]
pub enum SaveEnded {
    /// Stored under this key.
    Stored(HeapKey),
    /// Never snapshotted: a newer run that continued the heap live
    /// completed before its snapshot began, and that run's heap holds its
    /// effects (docs/protocol.md, "Coalesced saves").
    Superseded,
    /// Not stored, and why.
    Failed(RunError),
}

/// Aborts a task when dropped, unless disarmed.
pub(super) struct AbortOnDrop(pub(super) Option<tokio::task::AbortHandle>);

impl AbortOnDrop {
    pub(super) fn disarm(mut self) {
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
