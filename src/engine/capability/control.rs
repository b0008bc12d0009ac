//! What the caller of a run can do while it executes: watch its progress
//! (the console lines written so far) and cancel it, which terminates the
//! isolate at once (in an engine worker, the worker's own control does, told
//! by a signal; the worker is ended after the grace its run's host work has
//! to cancel what it started, such as upstream calls).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::reports::{ConsoleLog, LogEntry, LogLevel, RunProgress};
use crate::engine::services::work::WorkSink;

/// A run's control, shared between the caller and the thread running it.
#[derive(Debug, Default)]
pub struct RunControl {
    cancelled: AtomicBool,
    /// The run was answered ([`Self::settle`]): cancels change nothing.
    settled: AtomicBool,
    console_lines: AtomicU64,
    /// The latest progress of work the run waits on (an upstream tool's
    /// `notifications/progress`), for the caller's progress messages.
    note: Mutex<Option<String>>,
    target: Mutex<Option<Target>>,
    /// Woken by [`Self::cancel`].
    cancels: tokio::sync::Notify,
    /// Console lines the caller asked for as they are written
    /// ([`Self::forward_console`]).
    log: Mutex<Option<ConsoleLog>>,
    /// The run's own progress reports (`reportProgress()`) not yet taken.
    progress: Mutex<Progress>,
    /// Woken when log lines or progress reports wait to be taken.
    reported: tokio::sync::Notify,
}

/// Most progress reports waiting: past it the newest replaces the last
/// waiting one, as only the latest matters to a progress bar.
const MAX_WAITING_PROGRESS: usize = 64;

#[derive(Debug, Default)]
struct Progress {
    waiting: Vec<RunProgress>,
    /// The run reported progress at least once.
    any: bool,
    /// The latest report and how many came, for whoever shows where the
    /// run is without taking the queue (a task's status message).
    latest: Option<RunProgress>,
    count: u64,
}

/// The signal that tells an engine worker to cancel the run it executes
/// (its default action, before the worker listens, ends the process).
pub(crate) const CANCEL_SIGNAL: libc::c_int = libc::SIGUSR1;

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
                // The worker cancels its run as this process would, so that
                // its host work cancels what it started (an upstream call
                // gets `notifications/cancelled`); the pool ends the worker
                // once it answers, or after the grace (`pool::CANCEL_GRACE`).
                // A worker not yet listening dies of the signal instead.
                #[allow(unsafe_code)]
                // SAFETY: kill(2) with a pid this process spawned and has not
                // reaped yet (the worker is attached only while it runs a job).
                unsafe {
                    libc::kill(*pid as libc::pid_t, CANCEL_SIGNAL);
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
        self.cancels.notify_waiters();
    }

    /// Returns once the run is cancelled (at once when it was).
    pub(crate) async fn cancelled(&self) {
        let cancelled = self.cancels.notified();
        tokio::pin!(cancelled);
        // Registered before the flag is read: a cancel in between wakes it.
        cancelled.as_mut().enable();
        if self.is_cancelled() {
            return;
        }
        cancelled.await;
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

    /// The latest progress of what the run waits on, if any reported.
    pub fn note(&self) -> Option<String> {
        self.note
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets [`Self::note`] (also as an engine worker reported it).
    pub(crate) fn set_note(&self, note: String) {
        *self.note.lock().unwrap_or_else(PoisonError::into_inner) = Some(note);
    }

    /// From now on, console lines from `min` up are kept for
    /// [`Self::take_log`] (MCP log messages; a run in an engine worker
    /// reports its lines about every half second, and all of them before
    /// its answer).
    pub fn forward_console(&self, min: LogLevel) {
        *self.log_slot() = Some(ConsoleLog::new(min));
    }

    /// The level [`Self::forward_console`] was given, if it was called.
    pub fn forwarded_level(&self) -> Option<LogLevel> {
        self.log_slot().as_ref().map(ConsoleLog::min)
    }

    /// Keeps a console line the run wrote, when the caller asked for them.
    pub(crate) fn log_console_line(&self, line: &str) {
        let queued = self
            .log_slot()
            .as_mut()
            .is_some_and(|log| log.push_line(line));
        if queued {
            self.reported.notify_one();
        }
    }

    /// Lines an engine worker reported for the run it executes.
    pub(crate) fn report_log(&self, entries: Vec<LogEntry>) {
        if entries.is_empty() {
            return;
        }
        if let Some(log) = self.log_slot().as_mut() {
            log.push_entries(entries);
            self.reported.notify_one();
        }
    }

    /// The console lines kept since the last call, oldest first.
    pub fn take_log(&self) -> Vec<LogEntry> {
        self.log_slot()
            .as_mut()
            .map(ConsoleLog::take)
            .unwrap_or_default()
    }

    /// Returns once log lines or progress reports were kept since the last
    /// return of this (at once when some are waiting).
    pub async fn reported(&self) {
        self.reported.notified().await;
    }

    /// Keeps a progress report of the run (`reportProgress()`, or an
    /// engine worker's report of one).
    pub(crate) fn report_progress(&self, report: RunProgress) {
        let mut progress = self.progress_slot();
        progress.any = true;
        if progress.waiting.len() >= MAX_WAITING_PROGRESS {
            progress.waiting.pop();
        }
        progress.latest = Some(report.clone());
        progress.count += 1;
        progress.waiting.push(report);
        drop(progress);
        self.reported.notify_one();
    }

    /// The run's latest progress report and how many it made, without
    /// taking them from [`Self::take_progress`].
    pub fn latest_progress(&self) -> Option<(u64, RunProgress)> {
        let progress = self.progress_slot();
        progress
            .latest
            .clone()
            .map(|latest| (progress.count, latest))
    }

    /// The run's progress reports since the last call, oldest first.
    pub fn take_progress(&self) -> Vec<RunProgress> {
        std::mem::take(&mut self.progress_slot().waiting)
    }

    /// Whether the run reported its own progress: then the caller sends
    /// only the run's values, which must increase.
    pub fn reports_progress(&self) -> bool {
        self.progress_slot().any
    }

    fn progress_slot(&self) -> std::sync::MutexGuard<'_, Progress> {
        // Each push and take leaves the queue whole.
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn log_slot(&self) -> std::sync::MutexGuard<'_, Option<ConsoleLog>> {
        // Each push and take leaves the queue whole.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
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
