//! A worker's frames, read as they come by a task of their own: those of
//! the job running to the run waiting for them, a heap's snapshot to the
//! save waiting for it. A snapshot that a forked copy of the worker writes
//! after a job's result (`engine/run/ready.rs`) may come while the worker is
//! idle or between the frames of a later job, so nothing else may read the
//! worker's stdout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use tokio::io::{AsyncRead, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::wire::{self, WorkerFrame};

/// How a heap's snapshot came: its blob, or why there is none.
pub(crate) type Blob = Result<Bytes, Unwritten>;

/// Why a heap's snapshot did not come.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unwritten {
    /// It could not be made or written: why.
    #[error("{0}")]
    Failed(String),
    /// A newer run of its line completed before its turn: the newer
    /// heap holds its effects (`gate.rs`).
    #[error("a newer run of its line completed before its snapshot began")]
    Superseded,
}

/// The snapshots a worker still owes, by job.
#[derive(Debug, Default)]
pub(super) struct Owed {
    waiting: Mutex<HashMap<u64, oneshot::Sender<Blob>>>,
    /// Set once no snapshot can come any more: why, for every later ask.
    ended: Mutex<Option<String>>,
    /// Snapshots come on the worker's stdout, whose end then ends them.
    on_stdout: std::sync::atomic::AtomicBool,
}

impl Owed {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Blob>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where the snapshot of job `seq` will be delivered (asked before the
    /// job is sent, so that it cannot come first).
    pub(super) fn expect(&self, seq: u64) -> oneshot::Receiver<Blob> {
        let (sender, receiver) = oneshot::channel();
        let ended = self
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match ended {
            Some(why) => {
                let _ = sender.send(Err(Unwritten::Failed(why)));
            }
            None => {
                self.lock().insert(seq, sender);
            }
        }
        receiver
    }

    /// Job `seq` will send no snapshot after all.
    pub(super) fn forget(&self, seq: u64) {
        self.lock().remove(&seq);
    }

    fn deliver(&self, seq: u64, blob: Blob) {
        if let Some(sender) = self.lock().remove(&seq) {
            let _ = sender.send(blob);
        }
    }

    fn end(&self, why: &str) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(why.to_owned());
        for (_, sender) in self.lock().drain() {
            let _ = sender.send(Err(Unwritten::Failed(why.to_owned())));
        }
    }

    /// Snapshots come on the worker's stdout (a worker without a pipe for
    /// them): its end is the end of them too.
    pub(super) fn come_on_stdout(&self) {
        self.on_stdout
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Reads `output` to its end: snapshots to `owed`, every other frame to
/// `frames`. The end, or a frame that cannot be read, is the last item;
/// on the snapshot pipe (`snapshots`), or on stdout where it is the only
/// way snapshots come, it also fails every snapshot still owed.
pub(super) async fn read(
    output: impl AsyncRead + Unpin,
    frames: mpsc::UnboundedSender<std::io::Result<WorkerFrame>>,
    owed: Arc<Owed>,
    snapshots: bool,
) {
    let mut output = BufReader::with_capacity(256 * 1024, output);
    loop {
        match wire::read_frame_async::<WorkerFrame>(&mut output).await {
            Ok(WorkerFrame::Snapshot { seq, blob }) => {
                owed.deliver(
                    seq,
                    blob.map(|section| section.0).map_err(Unwritten::Failed),
                );
            }
            Ok(WorkerFrame::Superseded { seq }) => owed.deliver(seq, Err(Unwritten::Superseded)),
            // A frame nobody waits for any more (the run's caller left).
            Ok(frame) => drop(frames.send(Ok(frame))),
            Err(error) => {
                if snapshots || owed.on_stdout.load(std::sync::atomic::Ordering::SeqCst) {
                    owed.end(&format!(
                        "the engine process holding the heap ended before its snapshot was written ({error})"
                    ));
                }
                let _ = frames.send(Err(error));
                return;
            }
        }
    }
}
