//! What the caller of a run can do while it executes: watch its progress
//! (the console lines written so far) and cancel it, which terminates the
//! isolate (or kills the engine worker running it) at once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::engine::services::work::WorkSink;

/// A run's control, shared between the caller and the thread running it.
#[derive(Debug, Default)]
pub struct RunControl {
    cancelled: AtomicBool,
    /// The run was answered ([`Self::settle`]): cancels change nothing.
    settled: AtomicBool,
    console_lines: AtomicU64,
    target: Mutex<Option<Target>>,
}

/// What a cancel stops.
#[derive(Debug)]
pub(crate) enum Target {
    /// An isolate of this process, and its run's host work, whose wait a
    /// cancel ends.
    Isolate(v8::IsolateHandle, WorkSink),
    /// An engine worker process, by pid.
    Worker(u32),
}

impl Target {
    fn stop(&self) {
        match self {
            Target::Isolate(handle, work) => {
                handle.terminate_execution();
                work.wake();
            }
            Target::Worker(pid) => {
                // The worker runs nothing else; killing it is how its run
                // ends, and the pool replaces it for the next run.
                #[allow(unsafe_code)]
                // SAFETY: kill(2) with a pid this process spawned and has not
                // reaped yet (the worker is attached only while it runs a job).
                unsafe {
                    libc::kill(*pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
    }
}

impl RunControl {
    /// Stops the run: nothing it made is kept. Safe to call at any time,
    /// from any thread, more than once; a run that has not started yet
    /// stops as soon as it does.
    pub fn cancel(&self) {
        let target = self.lock();
        if self.settled.load(Ordering::SeqCst) {
            return;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(target) = target.as_ref() {
            target.stop();
        }
    }

    /// Marks the run answered, unless it was cancelled first (`false`):
    /// its heap is being saved, which a late cancel (or the client going
    /// away once it has the answer) must not stop.
    pub(crate) fn settle(&self) -> bool {
        let mut target = self.lock();
        if self.is_cancelled() {
            return false;
        }
        self.settled.store(true, Ordering::SeqCst);
        target.take();
        true
    }

    /// Whether [`Self::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Console lines the run has written so far (a run in an engine worker
    /// reports its count about every half second).
    pub fn console_lines(&self) -> u64 {
        self.console_lines.load(Ordering::Relaxed)
    }

    pub(crate) fn count_console_line(&self) {
        self.console_lines.fetch_add(1, Ordering::Relaxed);
    }

    /// The count an engine worker reported for the run it executes.
    pub(crate) fn report_console_lines(&self, lines: u64) {
        self.console_lines.fetch_max(lines, Ordering::Relaxed);
    }

    /// From now until [`Self::detach`], a cancel stops `target`; stops it
    /// at once when the run was cancelled before it started.
    pub(crate) fn attach(&self, target: Target) {
        let mut slot = self.lock();
        if self.is_cancelled() {
            target.stop();
        }
        *slot = Some(target);
    }

    /// No cancel reaches the target after this returns (e.g. during
    /// snapshot creation, which a termination must not interrupt).
    pub(crate) fn detach(&self) {
        self.lock().take();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Target>> {
        // The slot is whole between statements; a panic elsewhere cannot
        // leave it half-written.
        self.target.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
