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
mod gate;
mod pool;
mod wire;

pub(crate) use frames::{Blob, Unwritten};
pub(crate) use pool::WorkerPool;

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::capability::outcome::{RunError, RunStatus};
use super::capability::section::Section;
use super::contract::{Job, JobResult};
use super::run::watchdog::{STUCK_AFTER, STUCK_WORDS};
use super::services::FileRead;
use super::services::HostServices;
use crate::backends::content::ContentKey;
use crate::engine::heap_limit::HeapLimit;
use crate::heap::HeapKey;
use crate::tenant::Tenant;
use crate::units::MIB;
use wire::{FileReply, WorkerFrame};

/// The first argument that makes the binary an engine worker.
pub const WORKER_ARG: &str = "__engine-worker";

/// The argument after [`WORKER_ARG`] that has a worker keep a plain
/// isolate of the following heap limit (bytes) ready from its start.
const WARM_ARG: &str = "--warm-heap-mb";

/// The argument after [`WORKER_ARG`] that has a worker keep a completed
/// run's heap live for the next call, a forked copy of it writing the
/// snapshot (`engine/run/ready.rs`).
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
            warm = args
                .next()
                .and_then(|mb| mb.parse().ok())
                .map(HeapLimit::of_mb);
        } else if arg == LIVE_ARG {
            // SAFETY: the pool spawns a worker with this argument only with
            // the write end of its snapshot pipe as fd 3 (`Worker::spawn`).
            #[allow(unsafe_code)]
            let pipe = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3) };
            fork::allow_fork(pipe);
        }
    }
    child::serve_pipe(warm)
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
        const PIPE_BYTES: libc::c_int = MIB as libc::c_int;
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
        (warm_heap, live_heaps): (Option<HeapLimit>, bool),
        id: u64,
        live: Live,
    ) -> std::io::Result<Worker> {
        let mut command = Command::new(program);
        command.arg(WORKER_ARG);
        if let Some(limit) = warm_heap {
            command.arg(WARM_ARG).arg(limit.mb().to_string());
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
        mut ran: Option<EarlyResult>,
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
                WorkerFrame::Progress {
                    console_lines,
                    note,
                    log,
                    progress,
                } => {
                    if let Some(control) = &job.control {
                        control.report_console_lines(console_lines);
                        control.report_log(log);
                        for report in progress {
                            control.report_progress(report);
                        }
                        if let Some(note) = note {
                            control.set_note(note);
                        }
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
                WorkerFrame::Snapshot { .. } | WorkerFrame::Superseded { .. } => {}
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

/// Where a completed stateful run's result goes before its snapshot.
pub(crate) type EarlyResult = tokio::sync::oneshot::Sender<JobResult>;

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
    pub heap_limit: HeapLimit,
    pub cost_bytes: usize,
    pub made: Instant,
}

/// The worker holding the heap a job continues, taken from the idle ones.
#[derive(Debug)]
pub(crate) struct Claim(Worker);

impl Claim {
    /// The heap limit the ready isolate was made with.
    pub(crate) fn heap_limit(&self) -> HeapLimit {
        self.0
            .ready
            .as_ref()
            .map_or_else(HeapLimit::default, |r| r.heap_limit)
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
pub(crate) struct WorkerOutcome {
    pub result: JobResult,
    pub preparing: Option<u64>,
    pub snapshot: Option<tokio::sync::oneshot::Receiver<Blob>>,
}

impl WorkerOutcome {
    /// A job run in this process: nothing follows its result.
    pub(crate) fn here(result: JobResult) -> Self {
        Self {
            result,
            preparing: None,
            snapshot: None,
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
    let heap_mb = job.heap_limit.mb();
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
            heap_limit: HeapLimit::of_mb(64),
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
