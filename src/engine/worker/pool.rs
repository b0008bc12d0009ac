//! The pool of engine worker processes: started on demand up to the
//! engine's runners, handed jobs, replaced after their jobs or their death,
//! and asked for the heaps they keep ready.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::{
    Claim, EarlyResult, Live, ReadyHeap, Wanted, Worker, WorkerOutcome, died, resident_bytes,
};
use crate::engine::capability::control::Target;
use crate::engine::capability::outcome::EngineError;
use crate::engine::contract::Job;
use crate::engine::heap_limit::HeapLimit;
use crate::engine::services::HostServices;
use crate::heap::HeapKey;
use crate::tenant::Tenant;

/// How long a worker told to cancel its run has to answer: what the run's
/// host work cancels (an upstream call's notification) is sent within
/// `child::HOST_WORK_GRACE`, shorter than this.
pub(crate) const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Worker processes, started on demand up to the engine's runners (the
/// engine admits no more runs than that at once).
#[derive(Debug)]
pub(crate) struct WorkerPool {
    program: PathBuf,
    /// The heap limit of the plain isolate each worker keeps ready, for an
    /// engine whose runs are all stateless.
    warm_heap: Option<HeapLimit>,
    idle: Mutex<Vec<Worker>>,
    max_jobs: u64,
    /// Most bytes the workers keeping heaps ready may hold resident; past
    /// it the least recently made are dropped.
    ready_bytes: usize,
    next_id: std::sync::atomic::AtomicU64,
    /// Workers alive, idle or running.
    live: Arc<std::sync::atomic::AtomicUsize>,
    /// Most workers alive at once (the engine's runners): below it a run
    /// gets a new worker rather than one keeping a heap ready.
    max_workers: usize,
    /// Workers keep a completed run's heap live, a forked copy writing its
    /// snapshot (Linux, where the pool keeps ready heaps at all).
    live_heaps: bool,
    /// Names each job, for the snapshot that may follow its result.
    next_seq: std::sync::atomic::AtomicU64,
}

impl WorkerPool {
    /// A pool of workers running `program` (this binary), each replaced
    /// after `max_jobs` runs.
    pub(crate) fn new(
        program: PathBuf,
        warm_heap: Option<HeapLimit>,
        max_jobs: u64,
        ready_bytes: usize,
        max_workers: usize,
    ) -> Self {
        Self {
            program,
            warm_heap,
            idle: Mutex::new(Vec::new()),
            max_jobs: max_jobs.max(1),
            ready_bytes,
            next_id: std::sync::atomic::AtomicU64::new(0),
            live: Arc::default(),
            max_workers: max_workers.max(1),
            live_heaps: ready_bytes > 0 && cfg!(target_os = "linux"),
            next_seq: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Whether an idle worker keeps the heap of `tenant`'s run `run` live.
    pub(crate) fn holds_run(&self, tenant: &Tenant, run: uuid::Uuid) -> bool {
        self.idle().iter().any(|w| {
            w.ready
                .as_ref()
                .is_some_and(|r| r.run == Some(run) && r.tenant == *tenant)
        })
    }

    /// Names the key of the heap worker `id` keeps for run `run`, once
    /// stored (`None`: it was not, and the heap is dropped from the ready
    /// ones: nothing could continue it by key).
    pub(crate) fn name_ready(&self, id: u64, run: uuid::Uuid, key: Option<HeapKey>) {
        let mut idle = self.idle();
        let Some(worker) = idle
            .iter_mut()
            .find(|w| w.id == id && w.ready.as_ref().is_some_and(|r| r.run == Some(run)))
        else {
            return;
        };
        match key {
            Some(key) => {
                if let Some(ready) = &mut worker.ready {
                    ready.key = Some(key);
                }
            }
            None => worker.ready = None,
        }
    }

    /// Whether workers keep heaps ready at all.
    pub(crate) fn keeps_ready(&self) -> bool {
        self.ready_bytes > 0
    }

    /// The idle worker keeping `tenant`'s heap `key` ready with the limit
    /// the call asked for (`None`: the limit it was made with).
    pub(crate) fn claim(
        &self,
        tenant: &Tenant,
        wanted: Wanted<'_>,
        asked: Option<HeapLimit>,
    ) -> Option<Claim> {
        let mut idle = self.idle();
        let at = idle.iter().position(|w| {
            w.ready.as_ref().is_some_and(|r| {
                let same = match wanted {
                    Wanted::Key(key) => r.key.as_ref() == Some(key),
                    Wanted::Run(run) => r.run == Some(run),
                };
                same && r.tenant == *tenant
                    && asked.is_none_or(|asked| asked.mb() == r.heap_limit.mb())
            })
        })?;
        Some(Claim(idle.swap_remove(at)))
    }

    /// Names the heap worker `id` is restoring (the one its last run
    /// made), if it is still idle, and drops the least recently made
    /// ready heaps past the bound by ending their workers: an ended
    /// process gives its memory back, a dropped isolate may not.
    pub(crate) fn mark_ready(&self, id: u64, heap: ReadyHeap) {
        let ended = {
            let mut idle = self.idle();
            let Some(worker) = idle.iter_mut().find(|w| w.id == id && w.preparing) else {
                tracing::debug!(id, "the worker restoring a heap was taken for another run");
                return;
            };
            tracing::debug!(id, key = ?heap.key, run = ?heap.run, "a heap is kept ready");
            worker.preparing = false;
            worker.ready = Some(heap);
            let mut ended = Vec::new();
            loop {
                let held: usize = idle
                    .iter()
                    .filter_map(|w| {
                        w.ready
                            .as_ref()
                            .map(|r| resident_bytes(w.pid).unwrap_or(r.cost_bytes))
                    })
                    .sum();
                if held <= self.ready_bytes {
                    break;
                }
                let oldest = idle
                    .iter()
                    .enumerate()
                    .filter_map(|(at, w)| w.ready.as_ref().map(|r| (at, r.made)))
                    .min_by_key(|(_, made)| *made)
                    .map(|(at, _)| at);
                match oldest {
                    Some(at) => ended.push(idle.swap_remove(at)),
                    None => break,
                }
            }
            ended
        };
        for worker in ended {
            tracing::debug!(
                pid = worker.pid,
                "a ready heap was dropped to stay within MCP_V8_READY_HEAPS_MB"
            );
            tokio::spawn(worker.end());
        }
    }

    /// Waits, until `by`, for the idle workers still restoring heaps for
    /// the next call to finish; returns how many did. Lambda freezes an
    /// environment once its invocation's post-response phase is over, and a
    /// restore the freeze cuts in two finishes only when the next call has
    /// come, which then waits for it. The workers are out of the idle list
    /// meanwhile: no run may go on beside this (a standard Lambda
    /// environment, one invocation at a time).
    pub(crate) async fn settle(&self, by: Instant) -> usize {
        let restoring: Vec<Worker> = {
            let mut idle = self.idle();
            let (restoring, rest) = std::mem::take(&mut *idle)
                .into_iter()
                .partition(|w| w.restoring);
            *idle = rest;
            restoring
        };
        let by = tokio::time::Instant::from_std(by);
        let waits = restoring.into_iter().map(|mut worker| async move {
            let said = worker.readied(by).await;
            (worker, said)
        });
        let mut restored = 0;
        for (mut worker, said) in futures_util::future::join_all(waits).await {
            match said {
                Ok(Some(true)) => restored += 1,
                Ok(Some(false)) => {
                    worker.ready = None;
                    worker.preparing = false;
                }
                // Still restoring: the next run waits for it as before.
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(pid = worker.pid, %error, "an engine worker restoring a heap failed");
                    tokio::spawn(worker.end());
                    continue;
                }
            }
            self.idle().push(worker);
        }
        restored
    }

    /// Workers started from now on keep no isolate ready (fresh runs
    /// restore the prelude's heap, which drops it).
    pub(crate) fn keep_no_warm_isolate(&mut self) {
        self.warm_heap = None;
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn(&self) -> Result<Worker, EngineError> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let live = Live::new(&self.live);
        let kinds = (self.warm_heap, self.live_heaps);
        Worker::spawn(&self.program, kinds, id, live).map_err(|e| {
            EngineError::Internal(format!(
                "starting an engine worker ({}): {e}",
                self.program.display()
            ))
        })
    }

    /// Starts one worker ahead of the first run, so that its V8 starts
    /// while the process answers its first requests (a cold start).
    pub(crate) fn prestart(&self) {
        match self.spawn() {
            Ok(worker) => self.idle().push(worker),
            Err(error) => tracing::warn!(%error, "no engine worker was started ahead of time"),
        }
    }

    /// An idle worker for a job that continues no ready heap: one that
    /// keeps none first; else none while a new one may start (the caller
    /// starts it); else the one whose ready heap is oldest.
    fn take_idle(&self) -> Option<Worker> {
        let mut idle = self.idle();
        let (at, keeps) = idle
            .iter()
            .enumerate()
            .map(|(at, w)| {
                let rank = match &w.ready {
                    None if !w.preparing => (0, None),
                    None => (1, None),
                    Some(ready) => (2, Some(ready.made)),
                };
                (at, rank)
            })
            .min_by_key(|(_, rank)| *rank)
            .map(|(at, rank)| (at, rank.0 > 0))?;
        if keeps {
            // A worker drops a ready heap only by writing it out once more
            // (V8's rule for a snapshot creator): ending the process is
            // cheaper, and a new worker takes the run.
            if self.live.load(std::sync::atomic::Ordering::SeqCst) >= self.max_workers {
                tokio::spawn(idle.swap_remove(at).end());
            }
            return None;
        }
        Some(idle.swap_remove(at))
    }

    /// Runs `job` in a worker (`claim`'s, when the job continues its ready
    /// heap). A worker that dies fails this run only. Also returns the id
    /// of the worker now restoring the run's heap, for [`Self::mark_ready`].
    pub(crate) async fn run(
        &self,
        job: Job,
        services: &HostServices,
        ran: Option<EarlyResult>,
        claim: Option<Claim>,
    ) -> Result<WorkerOutcome, EngineError> {
        let mut job = job;
        job.seq = self
            .next_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let idle = match claim {
            Some(Claim(mut worker)) => {
                worker.ready = None;
                Some(worker)
            }
            None => self.take_idle(),
        };
        let mut worker = match idle {
            Some(worker) => worker,
            None => self.spawn()?,
        };
        let control = job.control.clone();
        if let Some(control) = &control {
            control.attach(Target::Worker(worker.pid));
        }
        // Asked for before the job goes, so that it cannot come first.
        let live = self.live_heaps && job.stateful && job.keep_ready.is_some();
        let mut snapshot = live.then(|| worker.owed.expect(job.seq));
        // Dropping this future (the caller went away) drops the worker,
        // which kills it: nothing half-run is reused. A cancelled run's
        // worker has the grace to cancel its host work and answer; past it
        // the worker is ended where it is.
        let outcome = {
            let running = worker.run(&job, services, ran);
            match &control {
                Some(control) => tokio::select! {
                    outcome = running => outcome,
                    () = async {
                        control.cancelled().await;
                        tokio::time::sleep(CANCEL_GRACE).await;
                    } => Err(std::io::Error::other("the cancelled run's worker did not answer in time")),
                },
                None => running.await,
            }
        };
        if !outcome.as_ref().is_ok_and(|result| result.snapshot_pending) {
            worker.owed.forget(job.seq);
            snapshot = None;
        }
        if let Some(control) = &control {
            control.detach();
        }
        // A cancelled run's worker is ended: it may have been cut anywhere.
        let cancelled = control.is_some_and(|c| c.is_cancelled());
        match outcome {
            Ok(result) => {
                // V8 keeps 1–1.6 KB per snapshot isolate for the life of the
                // process (docs/performance.md, "Load"); a worker that has run
                // its share is replaced, which keeps memory flat.
                let mut preparing = None;
                if cancelled {
                    tokio::spawn(worker.end());
                } else if worker.jobs < self.max_jobs {
                    if job.keep_ready.is_some()
                        && (result.blob.is_some() || result.snapshot_pending)
                    {
                        worker.preparing = true;
                        // A blob sent is restored next; a live heap is ready.
                        worker.restoring = result.blob.is_some();
                        preparing = Some(worker.id);
                    }
                    self.idle().push(worker);
                }
                // A worker ended here leaves the snapshot its forked copy
                // writes: the copy writes to the server itself.
                Ok(WorkerOutcome {
                    result,
                    preparing,
                    snapshot,
                })
            }
            Err(io) => {
                let pid = worker.pid;
                let (status, words) = worker.end().await;
                let ended = status.map_or_else(|| "status unknown".to_owned(), |s| s.to_string());
                if cancelled {
                    tracing::debug!(pid, %ended, "a cancelled run's engine worker was stopped");
                } else {
                    tracing::error!(pid, %ended, error = %io, "an engine worker died during a run");
                }
                Ok(WorkerOutcome {
                    result: died(&job, &ended, &words, io.kind()),
                    preparing: None,
                    snapshot: None,
                })
            }
        }
    }
}
