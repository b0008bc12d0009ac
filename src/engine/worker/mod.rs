//! Engine worker processes: where the server's runs execute.
//!
//! A run's code can make V8 end its process: one string, array or JSON text
//! larger than any heap limit allows ends in V8's fatal out-of-memory or
//! invalid-size error, which no callback can turn into an exception. So
//! the serving process never hosts an isolate: every run goes to a worker,
//! the same binary started with [`WORKER_ARG`], one run at a time each. A
//! worker that dies fails only its run, which is told why from the last
//! words V8 wrote on the worker's stderr, and the next run starts a new
//! worker. (V8 also keeps one read-only heap per process, so snapshot runs
//! go one at a time in a process: workers run them in parallel.)
//!
//! Jobs and results cross the worker's stdin and stdout as frames
//! ([`wire`]). While a run executes, the worker also sends progress frames
//! (console lines so far) and asks for the bytes of `/work` files it opens.

mod child;
mod fork;
mod frames;
mod wire;

pub(crate) use frames::Blob;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::contract::{Job, JobResult};
use super::control::Target;
use super::outcome::{EngineError, RunError, RunStatus};
use super::section::Section;
use super::services::FileRead;
use super::services::HostServices;
use super::watchdog::{STUCK_AFTER, STUCK_WORDS};
use crate::backends::content::ContentKey;
use crate::heap::HeapKey;
use crate::tenant::Tenant;
use wire::{FileReply, WorkerFrame};

/// The first argument that makes the binary an engine worker.
pub const WORKER_ARG: &str = "__engine-worker";

/// The argument after [`WORKER_ARG`] that has a worker keep a plain
/// isolate of the following heap limit (bytes) ready from its start.
const WARM_ARG: &str = "--warm-heap-bytes";

/// The argument after [`WORKER_ARG`] that has a worker keep a completed
/// run's heap live for the next call, a forked copy of it writing the
/// snapshot (`engine/ready.rs`).
const LIVE_ARG: &str = "--live-heaps";

/// How long after a run's deadline the server waits for a worker that has
/// not answered before it ends the process: room for restoring and
/// snapshotting the largest heap, which no termination interrupts. A run
/// inside its code is stopped by the worker itself ([`STUCK_AFTER`]).
const UNANSWERED_AFTER: Duration = Duration::from_secs(300);

/// Lines of a worker's stderr kept to say why it died.
const LAST_WORDS_LINES: usize = 24;

/// The engine worker's main, for the binary: `args` are those after
/// [`WORKER_ARG`].
pub fn serve_worker(args: impl Iterator<Item = String>) -> std::io::Result<()> {
    let mut args = args;
    let mut warm = None;
    while let Some(arg) = args.next() {
        if arg == WARM_ARG {
            warm = args.next().and_then(|bytes| bytes.parse().ok());
        } else if arg == LIVE_ARG {
            // SAFETY: the pool spawns a worker with this argument only with
            // the write end of its snapshot pipe as fd 3 (`Worker::spawn`).
            #[allow(unsafe_code)]
            let pipe = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3) };
            fork::allow_fork(pipe);
        }
    }
    child::serve_stdio(warm)
}

/// A snapshot (~400 KB) crosses a pipe in one go instead of in 64 KB turns,
/// each of which wakes the other process. Best effort: a pipe left at the
/// default size still works.
fn widen_pipe(pipe: &impl std::os::fd::AsRawFd) {
    widen_fd(pipe);
}

fn widen_fd(pipe: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    {
        const PIPE_BYTES: libc::c_int = 1024 * 1024;
        // SAFETY: F_SETPIPE_SZ on a pipe this process owns; no memory is touched.
        unsafe {
            libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// The last lines a worker wrote on stderr, which the server also passes
/// on to its own stderr (the worker's log lines, V8's fatal messages).
type LastWords = Arc<Mutex<VecDeque<String>>>;

/// One worker process and its pipes, seen from the server.
struct Worker {
    child: Child,
    pid: u32,
    input: ChildStdin,
    /// Its frames but snapshots, read as they come by a task of their own.
    frames: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<WorkerFrame>>,
    /// The snapshots it owes, delivered as they come.
    owed: Arc<frames::Owed>,
    last_words: LastWords,
    /// Ends when the worker's stderr does (the process is gone).
    stderr: tokio::task::JoinHandle<()>,
    /// Jobs run so far.
    jobs: u64,
    /// Names the worker to [`WorkerPool::mark_ready`].
    id: u64,
    /// The heap the worker keeps ready, once the engine has named it.
    ready: Option<ReadyHeap>,
    /// The worker is restoring the heap it just sent into a ready isolate.
    preparing: bool,
    /// The worker has not yet said that restore ended
    /// ([`WorkerFrame::Readied`]); unlike `preparing`, naming the heap
    /// does not end it.
    restoring: bool,
    /// Counts the worker among the pool's live ones until it is dropped.
    _live: Live,
}

/// One live worker of a pool's count: decrements it when dropped.
struct Live(Arc<std::sync::atomic::AtomicUsize>);

impl Live {
    fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Live {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Live(count.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker pid {}", self.pid)
    }
}

impl Worker {
    fn spawn(
        program: &Path,
        (warm_heap_bytes, live_heaps): (Option<usize>, bool),
        id: u64,
        live: Live,
    ) -> std::io::Result<Worker> {
        let mut command = Command::new(program);
        command.arg(WORKER_ARG);
        if let Some(bytes) = warm_heap_bytes {
            command.arg(WARM_ARG).arg(bytes.to_string());
        }
        // The pipe the worker's forked copies write snapshots to (its fd
        // 3): theirs, not the worker's stdout, so a snapshot outlives a
        // worker that dies or is ended while a copy writes it.
        let snapshots = if live_heaps {
            command.arg(LIVE_ARG);
            let (read, write) = snapshot_pipe()?;
            let raw = std::os::fd::AsRawFd::as_raw_fd(&write);
            // SAFETY: dup2(2) in the child between fork and exec, on a
            // descriptor the parent keeps open until the spawn returns; the
            // duplicate at fd 3 has close-on-exec cleared, as dup2 does.
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || {
                    if libc::dup2(raw, 3) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            Some((read, write))
        } else {
            None
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(input), Some(output), Some(stderr), Some(pid)) = (
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
            child.id(),
        ) else {
            return Err(std::io::Error::other("the worker's pipes are missing"));
        };
        widen_pipe(&input);
        widen_pipe(&output);
        let last_words = LastWords::default();
        let kept = last_words.clone();
        let stderr = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == LAST_WORDS_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        let (sender, frames) = tokio::sync::mpsc::unbounded_channel();
        let owed = Arc::new(frames::Owed::default());
        tokio::spawn(frames::read(output, sender, owed.clone(), false));
        match snapshots {
            // The write end goes with the worker: the pipe ends once the
            // worker and every copy of it have.
            Some((read, write)) => {
                drop(write);
                let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(read)?;
                let (unused, _) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(frames::read(pipe, unused, owed.clone(), true));
            }
            // Without a pipe of its own, a worker's stdout is where any
            // snapshot it owes would come from.
            None => owed.come_on_stdout(),
        }
        Ok(Worker {
            child,
            pid,
            input,
            frames,
            owed,
            last_words,
            stderr,
            jobs: 0,
            id,
            ready: None,
            preparing: false,
            restoring: false,
            _live: live,
        })
    }

    /// Runs `job`; an I/O error means the worker died (or was killed).
    /// `ran` gets a completed stateful run's result before its snapshot.
    async fn run(
        &mut self,
        job: &Job,
        services: &HostServices,
        mut ran: Option<Ran>,
    ) -> std::io::Result<JobResult> {
        self.jobs += 1;
        // Only what this run's process says tells how this run ended.
        self.last_words
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        // Files are read for the worker until the run's time is up.
        let deadline = Instant::now() + job.timeout;
        self.write(&wire::encode(job)?).await?;
        let answered_by = tokio::time::Instant::from_std(deadline + UNANSWERED_AFTER);
        loop {
            let frame = tokio::time::timeout_at(answered_by, self.frames.recv())
                .await
                .map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::TimedOut, "the worker did not answer")
                })?
                .unwrap_or_else(|| Err(std::io::ErrorKind::UnexpectedEof.into()))?;
            match frame {
                WorkerFrame::Progress { console_lines } => {
                    if let Some(control) = &job.control {
                        control.report_console_lines(console_lines);
                    }
                }
                WorkerFrame::NeedFile { key } => {
                    let found = read_file(services, &key, deadline).await;
                    let reply = FileReply {
                        found: found.map(|bytes| bytes.map(Section)),
                    };
                    self.write(&wire::encode(&reply)?).await?;
                }
                WorkerFrame::Ran(result) => {
                    if let Some(ran) = ran.take() {
                        let _ = ran.send(*result);
                    }
                }
                WorkerFrame::Result(result) => return Ok(*result),
                // The restore before this job, which the worker finished
                // before reading it.
                WorkerFrame::Readied { .. } => self.restoring = false,
                // Delivered by the reader, never here.
                WorkerFrame::Snapshot { .. } => {}
            }
        }
    }

    /// Waits until the worker says its restore ended, until `by`: whether
    /// it restored the heap, or `None` when `by` came first. An I/O error
    /// means the worker died or its pipe can no longer be read.
    async fn readied(&mut self, by: tokio::time::Instant) -> std::io::Result<Option<bool>> {
        loop {
            let frame = match tokio::time::timeout_at(by, self.frames.recv()).await {
                Err(_) => return Ok(None),
                Ok(None) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(Some(frame)) => frame?,
            };
            if let WorkerFrame::Readied { restored } = frame {
                self.restoring = false;
                return Ok(Some(restored));
            }
        }
    }

    async fn write(&mut self, frame: &wire::Frame) -> std::io::Result<()> {
        self.input.write_all(&frame.start).await?;
        for section in &frame.sections {
            self.input.write_all(section).await?;
        }
        self.input.flush().await
    }

    /// Ends the process; how it ended, and the last lines it wrote.
    async fn end(mut self) -> (Option<ExitStatus>, Vec<String>) {
        let _ = self.child.start_kill();
        let status = self.child.wait().await.ok();
        // Its stderr ends with it; what it said last is read to the end.
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr).await;
        let words = self
            .last_words
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        (status, words)
    }
}

/// Worker processes, started on demand up to the engine's runners (the
/// engine admits no more runs than that at once).
#[derive(Debug)]
pub(crate) struct WorkerPool {
    program: PathBuf,
    /// The heap limit of the plain isolate each worker keeps ready, for an
    /// engine whose runs are all stateless.
    warm_heap_bytes: Option<usize>,
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

/// Where a completed stateful run's result goes before its snapshot.
pub(crate) type Ran = tokio::sync::oneshot::Sender<JobResult>;

/// A heap an idle worker keeps ready: whose, which, with what limit, and
/// what it is counted as against the pool's bound where the worker's
/// resident memory cannot be read.
#[derive(Debug, Clone)]
pub(crate) struct ReadyHeap {
    pub tenant: Tenant,
    /// Its key, once its snapshot is stored.
    pub key: Option<HeapKey>,
    /// The run that made it (a live heap), claimable by the run's id
    /// before its key is known.
    pub run: Option<uuid::Uuid>,
    pub heap_limit_bytes: usize,
    pub cost_bytes: usize,
    pub made: Instant,
}

/// The worker holding the heap a job continues, taken from the idle ones.
#[derive(Debug)]
pub(crate) struct Claim(Worker);

impl Claim {
    /// The heap limit the ready isolate was made with.
    pub(crate) fn heap_limit_bytes(&self) -> usize {
        self.0.ready.as_ref().map_or(0, |r| r.heap_limit_bytes)
    }
}

/// Which heap a claim asks for: by its key, or by the run that made it
/// (a live heap whose snapshot may still be on its way).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wanted<'a> {
    Key(&'a HeapKey),
    Run(uuid::Uuid),
}

/// A job's result, and what follows it: the worker now keeping the
/// job's heap (for [`WorkerPool::mark_ready`]) and, for a live heap, its
/// snapshot on its way.
#[derive(Debug)]
pub(crate) struct Executed {
    pub result: JobResult,
    pub preparing: Option<u64>,
    pub snapshot: Option<tokio::sync::oneshot::Receiver<Blob>>,
}

impl Executed {
    /// A job run in this process: nothing follows its result.
    pub(crate) fn here(result: JobResult) -> Self {
        Self {
            result,
            preparing: None,
            snapshot: None,
        }
    }
}

impl WorkerPool {
    /// A pool of workers running `program` (this binary), each replaced
    /// after `max_jobs` runs.
    pub(crate) fn new(
        program: PathBuf,
        warm_heap_bytes: Option<usize>,
        max_jobs: u64,
        ready_bytes: usize,
        max_workers: usize,
    ) -> Self {
        Self {
            program,
            warm_heap_bytes,
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
        asked_limit_bytes: Option<usize>,
    ) -> Option<Claim> {
        let mut idle = self.idle();
        let at = idle.iter().position(|w| {
            w.ready.as_ref().is_some_and(|r| {
                let same = match wanted {
                    Wanted::Key(key) => r.key.as_ref() == Some(key),
                    Wanted::Run(run) => r.run == Some(run),
                };
                same && r.tenant == *tenant
                    && asked_limit_bytes.is_none_or(|asked| asked == r.heap_limit_bytes)
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
        self.warm_heap_bytes = None;
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn(&self) -> Result<Worker, EngineError> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let live = Live::new(&self.live);
        let kinds = (self.warm_heap_bytes, self.live_heaps);
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
    pub(crate) async fn execute(
        &self,
        job: Job,
        services: &HostServices,
        ran: Option<Ran>,
        claim: Option<Claim>,
    ) -> Result<Executed, EngineError> {
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
        // which kills it: nothing half-run is reused.
        let outcome = worker.run(&job, services, ran).await;
        if !outcome.as_ref().is_ok_and(|result| result.snapshot_pending) {
            worker.owed.forget(job.seq);
            snapshot = None;
        }
        if let Some(control) = &control {
            control.detach();
        }
        // A cancel may have killed the worker just as its run ended.
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
                Ok(Executed {
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
                Ok(Executed {
                    result: died(&job, &ended, &words, io.kind()),
                    preparing: None,
                    snapshot: None,
                })
            }
        }
    }
}

/// A pipe whose two ends close on exec (the write end reaches the worker
/// as its fd 3 only).
fn snapshot_pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2(2) fills the two descriptors of a new pipe.
    #[allow(unsafe_code)]
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: descriptors pipe2 just returned, owned from here on.
    #[allow(unsafe_code)]
    let ends = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    widen_fd(&ends.1);
    Ok(ends)
}

/// The memory process `pid` holds resident (Linux: `/proc/PID/statm`),
/// which is what keeping its worker alive costs.
fn resident_bytes(pid: u32) -> Option<usize> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system; no memory is touched.
    #[allow(unsafe_code)]
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * usize::try_from(page).ok()?)
}

/// The bytes of `/work` file `key` for a worker's run, read until its
/// `deadline`.
async fn read_file(
    services: &HostServices,
    key: &ContentKey,
    deadline: Instant,
) -> Result<Option<Bytes>, String> {
    let read = match &services.files {
        Some(source) => source.read(key),
        None => return Ok(None),
    };
    match read {
        FileRead::Ready(found) => found,
        FileRead::Pending(work) => {
            tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), work)
                .await
                .unwrap_or_else(|_| Err("the run's time ran out while the file was read".into()))
        }
    }
}

/// The result of a run whose worker died under it, told from the worker's
/// last words: what happened, what it means for the run, what to do.
fn died(job: &Job, ended: &str, words: &[String], io: std::io::ErrorKind) -> JobResult {
    const AFTER: &str = "nothing was stored, the input heap is unchanged, and the next run starts a new engine process";
    let heap_mb = job.heap_limit_bytes / (1024 * 1024);
    let said = |needle: &str| words.iter().rev().find(|line| line.contains(needle));
    let (status, name, message) = if words.iter().any(|line| line == STUCK_WORDS) {
        (
            RunStatus::TimedOut,
            "TimeoutError",
            format!(
                "execution did not finish within {} ms, and the run was still inside a built-in \
                 function {} ms after that, where no timeout reaches, so its engine process was \
                 ended; {AFTER}. Work on smaller pieces of data per call",
                job.timeout.as_millis(),
                STUCK_AFTER.as_millis()
            ),
        )
    } else if let Some(line) = said("out of memory") {
        (
            RunStatus::OutOfMemory,
            "OutOfMemoryError",
            format!(
                "the run needed more memory than its {heap_mb} MiB heap limit at once (V8: {}), \
                 which ends V8's process: one string, array or JSON text too large to build; \
                 {AFTER}. Build large values in pieces (or stream them to a /work file), or ask \
                 for a larger heap_memory_max_mb",
                v8_words(line)
            ),
        )
    } else if let Some(line) = said("invalid size error").or_else(|| said("invalid array length")) {
        (
            RunStatus::Failed,
            "RangeError",
            format!(
                "the run made a value past the largest size V8 allows (V8: {}; a string holds at \
                 most 2**29 - 24 characters, an array about 2**27 elements), which ends V8's \
                 process; {AFTER}. Split the data into smaller values",
                v8_words(line)
            ),
        )
    } else if io == std::io::ErrorKind::TimedOut {
        (
            RunStatus::TimedOut,
            "TimeoutError",
            format!(
                "the engine process running this code did not answer within {} s after the run's \
                 deadline and was stopped; {AFTER}",
                UNANSWERED_AFTER.as_secs()
            ),
        )
    } else {
        let last = words
            .iter()
            .rev()
            .find(|line| line.starts_with("# ") && line.len() > 2)
            .map(|line| format!("; V8: {}", v8_words(line)))
            .unwrap_or_default();
        (
            RunStatus::Failed,
            "EngineCrashed",
            format!("the engine process running this code died ({ended}{last}); {AFTER}"),
        )
    };
    JobResult {
        status,
        ..JobResult::failed(RunError::new(name, message))
    }
}

/// A line of V8's fatal message without its `# ` frame.
fn v8_words(line: &str) -> &str {
    line.trim_start_matches('#').trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            heap_limit_bytes: 64 * 1024 * 1024,
            ..crate::engine::plan::fresh_job(String::new())
        }
    }

    fn words(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn a_worker_that_died_of_v8s_out_of_memory_says_so_and_what_to_do() {
        let said = words(&[
            "<--- Last few GCs --->",
            "#",
            "# Fatal JavaScript out of memory: Reached heap limit",
            "#",
        ]);
        let result = died(
            &job(),
            "signal: 5 (SIGTRAP)",
            &said,
            std::io::ErrorKind::UnexpectedEof,
        );
        assert_eq!(result.status, RunStatus::OutOfMemory);
        let error = result.error.unwrap();
        assert!(error.message.contains("64 MiB"), "{error:?}");
        assert!(error.message.contains("Reached heap limit"), "{error:?}");
        assert!(error.message.contains("heap_memory_max_mb"), "{error:?}");
    }

    #[test]
    fn a_worker_that_died_of_an_invalid_size_names_the_sizes() {
        let said =
            words(&["# Fatal JavaScript invalid size error 536870888 (see crbug.com/1201626)"]);
        let result = died(
            &job(),
            "signal: 5 (SIGTRAP)",
            &said,
            std::io::ErrorKind::UnexpectedEof,
        );
        assert_eq!(result.status, RunStatus::Failed);
        assert!(result.error.unwrap().message.contains("2**29 - 24"));
    }

    #[test]
    fn a_worker_that_ended_itself_for_a_stuck_run_reports_a_timeout() {
        let said = words(&[STUCK_WORDS]);
        let result = died(
            &job(),
            "exit status: 70",
            &said,
            std::io::ErrorKind::UnexpectedEof,
        );
        assert_eq!(result.status, RunStatus::TimedOut);
    }

    #[test]
    fn any_other_death_is_an_engine_crash_naming_how_it_ended() {
        let result = died(
            &job(),
            "signal: 9 (SIGKILL)",
            &[],
            std::io::ErrorKind::UnexpectedEof,
        );
        assert_eq!(result.status, RunStatus::Failed);
        let error = result.error.unwrap();
        assert_eq!(error.name, "EngineCrashed");
        assert!(error.message.contains("SIGKILL"), "{error:?}");
    }
}
