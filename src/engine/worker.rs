//! Engine worker processes for runs that create or restore snapshots.
//!
//! V8 keeps one read-only heap per process, so isolates from different
//! snapshots cannot be alive together (see `run.rs`): in one process,
//! stateful runs go one at a time. A pool of worker processes, each the same
//! binary started with [`WORKER_ARG`] and each with its own V8, runs them in
//! parallel. A worker that dies (a V8 fatal error, a kill) fails only the run
//! it had, and the next run starts a new one.
//!
//! Jobs and results cross the worker's stdin and stdout as frames: a
//! little-endian `u32` length, a JSON header of that length, then the raw
//! snapshot payload whose length the header gives. While a run executes,
//! the worker also sends progress frames (console lines so far), which the
//! server hands to the run's control for progress notifications.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::control::{RunControl, Target};
use super::isolate;
use super::outcome::{EngineError, RunError, RunStatus};
use super::run::{self, CodeHandling, Job, JobResult};

/// The first argument that makes the binary an engine worker.
pub const WORKER_ARG: &str = "__engine-worker";

/// Headers are code and console output, both bounded far below this; a
/// larger length means the stream is not ours.
const MAX_HEADER_BYTES: usize = 256 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct JobHeader {
    code: String,
    stateful: bool,
    timeout_ms: u64,
    heap_limit_bytes: usize,
    max_output_bytes: usize,
    code_handling: CodeHandling,
    restore_len: Option<usize>,
    #[serde(default)]
    plain_restore: bool,
    /// The egress settings, injected headers included: they cross the pipe
    /// to the worker and are never written anywhere.
    #[serde(default)]
    fetch: Option<crate::egress::FetchConfig>,
    /// The upstream MCP servers, their headers included: as `fetch`'s.
    #[serde(default)]
    mcp: Option<crate::upstream::UpstreamConfig>,
    /// The installed packages and where their bundles are on this host.
    #[serde(default)]
    packages: Option<crate::packages::PackageView>,
    #[serde(default)]
    max_module_bytes: usize,
    /// Whether earlier files can be read: the worker asks for their bytes
    /// ([`WorkerFrame::NeedFile`]).
    #[serde(default)]
    files: bool,
    #[serde(default)]
    file_limits: super::web::FileLimits,
    /// The call's files, by path and length; their bytes follow the
    /// restore payload's.
    #[serde(default)]
    inputs: Vec<(String, usize)>,
    #[serde(default)]
    list_files: bool,
}

/// What a worker writes: progress while a run executes, then its result.
#[derive(Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "snake_case")]
enum WorkerFrame {
    Progress {
        console_lines: u64,
    },
    /// The bytes of a file the run opened; the server answers with a
    /// [`FileReply`] frame on the worker's stdin.
    NeedFile {
        key: String,
    },
    Result(Box<ResultHeader>),
}

/// The server's answer to [`WorkerFrame::NeedFile`]: the bytes follow.
#[derive(Serialize, Deserialize)]
struct FileReply {
    /// `Ok(Some(len))`: `len` bytes follow.
    found: Result<Option<usize>, String>,
}

/// How often a worker reports a running job's console lines, when they
/// changed.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

#[derive(Serialize, Deserialize)]
struct ResultHeader {
    status: RunStatus,
    result: Option<String>,
    #[serde(default)]
    display: Option<String>,
    output: String,
    error: Option<RunError>,
    warnings: Vec<String>,
    blob_len: Option<usize>,
    #[serde(default)]
    fetches: Option<crate::egress::FetchCount>,
    #[serde(default)]
    mcp_calls: Option<crate::upstream::McpCount>,
    /// Files written, by key and length; their bytes follow the blob's.
    #[serde(default)]
    files: Vec<(String, usize)>,
    /// The run's `display()` blocks; the bytes of those that have them
    /// follow the files' (`size` bytes each).
    #[serde(default)]
    displays: Vec<super::web::Displayed>,
    /// Which of `displays` have bytes.
    #[serde(default)]
    display_bytes: Vec<bool>,
}

fn write_frame(
    out: &mut impl Write,
    header: &impl Serialize,
    payload: Option<&[u8]>,
) -> io::Result<()> {
    let json = serde_json::to_vec(header)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|len| *len as usize <= MAX_HEADER_BYTES)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame header too large"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&json)?;
    if let Some(payload) = payload {
        out.write_all(payload)?;
    }
    out.flush()
}

/// The next header, or `None` at a clean end of the stream.
fn read_header<T: DeserializeOwned>(input: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame header of {len} bytes"),
        ));
    }
    let mut json = vec![0; len];
    input.read_exact(&mut json)?;
    serde_json::from_slice(&json)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn read_payload(input: &mut impl Read, len: Option<usize>) -> io::Result<Option<Vec<u8>>> {
    len.map(|len| {
        let mut payload = vec![0; len];
        input.read_exact(&mut payload).map(|()| payload)
    })
    .transpose()
}

/// The worker's main loop: jobs from stdin, results to stdout, until stdin
/// closes (the server exited, or dropped this worker).
pub fn serve_stdio() -> io::Result<()> {
    super::platform::init();
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    while let Some(header) = read_header::<JobHeader>(&mut input)? {
        let restore = read_payload(&mut input, header.restore_len)?.map(Bytes::from);
        let mut inputs = Vec::with_capacity(header.inputs.len());
        for (path, len) in header.inputs {
            let bytes = read_payload(&mut input, Some(len))?.unwrap_or_default();
            inputs.push((path, Bytes::from(bytes)));
        }
        let control = Arc::new(RunControl::default());
        let (events, received) = mpsc::channel();
        let files: Option<Arc<dyn super::web::FileSource>> = header.files.then(|| {
            Arc::new(PipeFiles {
                events: Mutex::new(events.clone()),
            }) as Arc<dyn super::web::FileSource>
        });
        let job = Job {
            code: header.code,
            restore,
            plain_restore: header.plain_restore,
            stateful: header.stateful,
            timeout: Duration::from_millis(header.timeout_ms),
            heap_limit_bytes: header.heap_limit_bytes,
            max_output_bytes: header.max_output_bytes,
            code_handling: header.code_handling,
            control: Some(control.clone()),
            fetch: header.fetch.map(Arc::new),
            mcp: header.mcp.map(Arc::new),
            packages: header.packages.map(Arc::new),
            max_module_bytes: header.max_module_bytes,
            files,
            file_limits: header.file_limits,
            inputs,
            list_files: header.list_files,
        };
        let thread = run::thread_builder().spawn(move || {
            let _ = events.send(Event::Done(Box::new(isolate::execute(job))));
        })?;
        let mut reported = 0;
        let result = loop {
            match received.recv_timeout(PROGRESS_EVERY) {
                Ok(Event::Done(result)) => break result,
                Ok(Event::Need(key, reply)) => {
                    write_frame(&mut output, &WorkerFrame::NeedFile { key }, None)?;
                    let answer = read_header::<FileReply>(&mut input)?.ok_or_else(|| {
                        io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed stdin")
                    })?;
                    let found = match answer.found {
                        Ok(len) => Ok(read_payload(&mut input, len)?.map(Bytes::from)),
                        Err(why) => Err(why),
                    };
                    let _ = reply.send(found);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let lines = control.console_lines();
                    if lines != reported {
                        reported = lines;
                        let progress = WorkerFrame::Progress {
                            console_lines: lines,
                        };
                        write_frame(&mut output, &progress, None)?;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = thread.join();
                    return Err(io::Error::other("the isolate thread panicked"));
                }
            }
        };
        let _ = thread.join();
        let mut payload = result.blob.clone().unwrap_or_default();
        for (_, bytes) in &result.files {
            payload.extend_from_slice(bytes);
        }
        for bytes in result.displays.iter().filter_map(|d| d.bytes.as_ref()) {
            payload.extend_from_slice(bytes);
        }
        let header = ResultHeader {
            status: result.status,
            result: result.result,
            display: result.display,
            output: result.output,
            error: result.error,
            warnings: result.warnings,
            blob_len: result.blob.as_ref().map(Vec::len),
            fetches: result.fetches,
            mcp_calls: result.mcp_calls,
            files: result
                .files
                .iter()
                .map(|(key, bytes)| (key.clone(), bytes.len()))
                .collect(),
            display_bytes: result.displays.iter().map(|d| d.bytes.is_some()).collect(),
            displays: result.displays,
        };
        let has_payload = !payload.is_empty() || result.blob.is_some();
        write_frame(
            &mut output,
            &WorkerFrame::Result(Box::new(header)),
            has_payload.then_some(payload.as_slice()),
        )?;
    }
    Ok(())
}

/// What the isolate thread tells a worker's main loop.
enum Event {
    Done(Box<JobResult>),
    /// A file's bytes are needed, answered on the channel.
    Need(String, mpsc::Sender<Result<Option<Bytes>, String>>),
}

/// Files read through the server, which has the store.
struct PipeFiles {
    events: Mutex<mpsc::Sender<Event>>,
}

impl std::fmt::Debug for PipeFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PipeFiles")
    }
}

impl super::web::FileSource for PipeFiles {
    fn read(&self, key: &str, deadline: std::time::Instant) -> Result<Option<Bytes>, String> {
        let (reply, answer) = mpsc::channel();
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(Event::Need(key.to_owned(), reply))
            .map_err(|_| "the worker is ending".to_owned())?;
        answer
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .map_err(|_| "the run's time ran out while the file was read".to_owned())?
    }
}

/// A snapshot (~400 KB) crosses a pipe in one go instead of in 64 KB turns,
/// each of which wakes the other process. Best effort: a pipe left at the
/// default size still works.
fn widen_pipe(pipe: &impl std::os::fd::AsRawFd) {
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

/// One worker process and its pipes.
struct Worker {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    /// Jobs run so far.
    jobs: u64,
}

impl Worker {
    fn spawn(program: &Path) -> io::Result<Worker> {
        let mut child = Command::new(program)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the worker's pipes are missing"));
        };
        widen_pipe(&input);
        widen_pipe(&output);
        Ok(Worker {
            child,
            input: BufWriter::new(input),
            output: BufReader::new(output),
            jobs: 0,
        })
    }

    fn run(&mut self, job: Job) -> io::Result<JobResult> {
        self.jobs += 1;
        // Files are read for the worker until the run's time is up.
        let deadline = std::time::Instant::now() + job.timeout;
        let header = JobHeader {
            code: job.code,
            stateful: job.stateful,
            timeout_ms: u64::try_from(job.timeout.as_millis()).unwrap_or(u64::MAX),
            heap_limit_bytes: job.heap_limit_bytes,
            max_output_bytes: job.max_output_bytes,
            code_handling: job.code_handling,
            restore_len: job.restore.as_ref().map(Bytes::len),
            plain_restore: job.plain_restore,
            files: job.files.is_some(),
            file_limits: job.file_limits,
            fetch: job.fetch.as_deref().cloned(),
            mcp: job.mcp.as_deref().cloned(),
            packages: job.packages.as_deref().cloned(),
            max_module_bytes: job.max_module_bytes,
            inputs: job
                .inputs
                .iter()
                .map(|(path, bytes)| (path.clone(), bytes.len()))
                .collect(),
            list_files: job.list_files,
        };
        if job.inputs.is_empty() {
            write_frame(&mut self.input, &header, job.restore.as_deref())?;
        } else {
            // Rare, and small next to a heap: one copy keeps one frame.
            let mut payload = job
                .restore
                .as_deref()
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            for (_, bytes) in &job.inputs {
                payload.extend_from_slice(bytes);
            }
            write_frame(&mut self.input, &header, Some(&payload))?;
        }
        let header = loop {
            let frame: WorkerFrame = read_header(&mut self.output)?.ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "the worker closed its output")
            })?;
            match frame {
                WorkerFrame::Progress { console_lines } => {
                    if let Some(control) = &job.control {
                        control.report_console_lines(console_lines);
                    }
                }
                WorkerFrame::NeedFile { key } => {
                    let found = match &job.files {
                        Some(source) => source.read(&key, deadline),
                        None => Ok(None),
                    };
                    let reply = FileReply {
                        found: found
                            .as_ref()
                            .map(|bytes| bytes.as_ref().map(Bytes::len))
                            .map_err(Clone::clone),
                    };
                    let payload = found.ok().flatten();
                    write_frame(&mut self.input, &reply, payload.as_deref())?;
                }
                WorkerFrame::Result(header) => break *header,
            }
        };
        let blob = read_payload(&mut self.output, header.blob_len)?;
        let mut files = Vec::with_capacity(header.files.len());
        for (key, len) in header.files {
            let bytes = read_payload(&mut self.output, Some(len))?.unwrap_or_default();
            files.push((key, Bytes::from(bytes)));
        }
        let mut displays = header.displays;
        for (displayed, has_bytes) in displays.iter_mut().zip(header.display_bytes) {
            if has_bytes {
                let bytes = read_payload(&mut self.output, Some(displayed.size))?;
                displayed.bytes = Some(Bytes::from(bytes.unwrap_or_default()));
            }
        }
        Ok(JobResult {
            status: header.status,
            result: header.result,
            display: header.display,
            output: header.output,
            error: header.error,
            warnings: header.warnings,
            blob,
            fetches: header.fetches,
            mcp_calls: header.mcp_calls,
            files,
            displays,
        })
    }

    /// Ends the process and says how it ended.
    fn end(&mut self) -> String {
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(status) => status.to_string(),
            Err(e) => format!("status unknown: {e}"),
        }
    }
}

impl Drop for Worker {
    // Closing stdin alone would end the worker after its current job; a pool
    // that drops a worker wants it gone, and reaped.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Worker processes, started on demand up to a fixed count.
#[derive(Debug)]
pub(crate) struct WorkerPool {
    program: PathBuf,
    idle: Mutex<Vec<WorkerSlot>>,
    permits: Semaphore,
    max_jobs: u64,
}

/// `Worker` without `Debug` noise.
struct WorkerSlot(Worker);

impl std::fmt::Debug for WorkerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker pid {}", self.0.child.id())
    }
}

impl WorkerPool {
    /// A pool of `size` workers running `program` (this binary), each
    /// replaced after `max_jobs` runs.
    pub(crate) fn new(program: PathBuf, size: usize, max_jobs: u64) -> Self {
        Self {
            program,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size.max(1)),
            max_jobs: max_jobs.max(1),
        }
    }

    /// Runs `job` in a worker. A worker that dies fails this run only.
    pub(crate) async fn execute(&self, job: Job) -> Result<JobResult, EngineError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let program = self.program.clone();
        let (worker, outcome, cancelled) = tokio::task::spawn_blocking(move || {
            let mut worker = match idle {
                Some(WorkerSlot(worker)) => worker,
                None => Worker::spawn(&program).map_err(|e| {
                    EngineError::Internal(format!(
                        "starting an engine worker ({}): {e}",
                        program.display()
                    ))
                })?,
            };
            let control = job.control.clone();
            if let Some(control) = &control {
                control.attach(Target::Worker(worker.child.id()));
            }
            let outcome = worker.run(job);
            if let Some(control) = &control {
                control.detach();
            }
            // A cancel may have killed the worker just as its run ended.
            let cancelled = control.is_some_and(|c| c.is_cancelled());
            Ok::<_, EngineError>((worker, outcome, cancelled))
        })
        .await
        .map_err(|e| EngineError::Internal(format!("the worker thread failed: {e}")))??;
        match outcome {
            Ok(result) => {
                // V8 keeps 1–1.6 KB per snapshot isolate for the life of the
                // process (docs/performance.md, "Load"); a worker that has run
                // its share is replaced, which keeps memory flat.
                if cancelled {
                    tokio::task::spawn_blocking(move || {
                        let mut worker = worker;
                        worker.end()
                    });
                } else if worker.jobs < self.max_jobs {
                    self.idle
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(WorkerSlot(worker));
                }
                Ok(result)
            }
            Err(io) => {
                let pid = worker.child.id();
                let ended = tokio::task::spawn_blocking(move || {
                    let mut worker = worker;
                    worker.end()
                })
                .await
                .unwrap_or_else(|e| e.to_string());
                if cancelled {
                    tracing::debug!(pid, %ended, "a cancelled run's engine worker was stopped");
                } else {
                    tracing::error!(pid, %ended, error = %io, "an engine worker died during a run");
                }
                Ok(crashed(&ended))
            }
        }
    }
}

/// The result of a run whose worker died under it.
fn crashed(ended: &str) -> JobResult {
    JobResult {
        status: RunStatus::Failed,
        result: None,
        display: None,
        output: String::new(),
        error: Some(RunError::new(
            "EngineCrashed",
            format!(
                "the engine process running this code died ({ended}); nothing was stored. \
                 The input heap is unchanged and the next run starts a new process"
            ),
        )),
        warnings: Vec::new(),
        blob: None,
        fetches: None,
        mcp_calls: None,
        files: Vec::new(),
        displays: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_and_without_payload() {
        let header = ResultHeader {
            status: RunStatus::Completed,
            result: Some("2".into()),
            display: Some("2".into()),
            output: "log\n".into(),
            error: None,
            warnings: vec!["w".into()],
            blob_len: Some(3),
            fetches: None,
            mcp_calls: None,
            files: Vec::new(),
            displays: Vec::new(),
            display_bytes: Vec::new(),
        };
        let mut wire = Vec::new();
        write_frame(&mut wire, &header, Some(&[1, 2, 3])).unwrap();
        write_frame(
            &mut wire,
            &ResultHeader {
                blob_len: None,
                ..header
            },
            None,
        )
        .unwrap();
        let mut input = wire.as_slice();
        let first: ResultHeader = read_header(&mut input).unwrap().unwrap();
        assert_eq!(first.result.as_deref(), Some("2"));
        assert_eq!(
            read_payload(&mut input, first.blob_len).unwrap(),
            Some(vec![1, 2, 3])
        );
        let second: ResultHeader = read_header(&mut input).unwrap().unwrap();
        assert_eq!(read_payload(&mut input, second.blob_len).unwrap(), None);
        assert!(
            read_header::<ResultHeader>(&mut input).unwrap().is_none(),
            "clean end"
        );
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_hangs() {
        let mut huge = &u32::MAX.to_le_bytes()[..];
        assert!(read_header::<ResultHeader>(&mut huge).is_err());
        let mut not_json = &[2, 0, 0, 0, b'{', b'x'][..];
        assert!(read_header::<ResultHeader>(&mut not_json).is_err());
        let mut truncated = &[9, 0, 0, 0, b'{'][..];
        assert!(read_header::<ResultHeader>(&mut truncated).is_err());
        let mut short = &[1u8][..];
        assert!(read_payload(&mut short, Some(2)).is_err());
    }
}
