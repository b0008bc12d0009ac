//! The engine worker process: jobs from stdin, results to stdout, one at a
//! time, on one runner thread that reads, runs and writes itself, so a run
//! costs one wake-up each way. Between stateless runs the runner keeps a
//! plain isolate ready, as the in-process warm pool does; a run that
//! creates or restores a snapshot drops it first (V8's read-only heap is
//! the process's, `run.rs`).

use std::io::{self, BufReader, BufWriter, Stdin, Stdout};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::engine::heap_limit::HeapLimit;

use super::wire::{self, FileReply, WorkerFrame};
use crate::backends::content::ContentKey;
use crate::engine::capability::control::RunControl;
use crate::engine::capability::outcome::{RunError, RunStatus};
use crate::engine::contract::{Job, JobResult};
use crate::engine::run;
use crate::engine::run::isolate;
use crate::engine::run::plain::PlainIsolate;
use crate::engine::run::ready::Ready;
use crate::engine::run::{platform, watchdog};
use crate::engine::services::{Clients, FileRead, FileSource, HostServices};

/// How often a worker reports a running job's console lines, when they
/// changed.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// How long a cancelled run's host work has to send what cancels its
/// upstream calls before the worker answers (and is ended).
const HOST_WORK_GRACE: Duration = Duration::from_secs(2);

/// The worker's pipes: stdout carries the runner's frames and the progress
/// thread's, whole frames under the lock.
struct Pipes {
    input: Mutex<BufReader<Stdin>>,
    output: Mutex<BufWriter<Stdout>>,
    /// The control of the run executing now.
    current: Mutex<Option<Arc<RunControl>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each guards a pipe or a slot that every use leaves whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The worker's main: until stdin closes (the server exited, or dropped
/// this worker). `warm_heap`: keep a plain isolate of that heap limit
/// ready from the start (a stateless server's workers).
pub(super) fn serve_pipe(warm_heap: Option<HeapLimit>) -> io::Result<()> {
    platform::init();
    watchdog::end_process_when_stuck();
    let pipes = Arc::new(Pipes {
        input: Mutex::new(BufReader::new(io::stdin())),
        output: Mutex::new(BufWriter::new(io::stdout())),
        current: Mutex::new(None),
    });
    let reporter = pipes.clone();
    std::thread::Builder::new()
        .name("worker-progress".into())
        .spawn(move || report_progress(&reporter))?;
    // The worker's host services: its own runtime for host work, the
    // server's files through the pipes, clients kept for its life. Host
    // work is I/O (fetch, upstream calls) for one run at a time: one thread
    // drives it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("worker-host")
        .enable_all()
        .build()?;
    // The server's cancel of the running job (control.rs, CANCEL_SIGNAL):
    // the run is cancelled here, as in the server's own process.
    let mut cancels = {
        let _entered = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(
            crate::engine::capability::control::CANCEL_SIGNAL,
        ))?
    };
    let listener = pipes.clone();
    runtime.spawn(async move {
        while cancels.recv().await.is_some() {
            if let Some(control) = lock(&listener.current).clone() {
                control.cancel();
            }
        }
    });
    let services = HostServices {
        runtime: runtime.handle().clone(),
        files: Some(Arc::new(PipeFiles {
            pipes: pipes.clone(),
        })),
        clients: Arc::new(Clients::default()),
    };
    let runner = run::thread_builder()
        .name("v8-worker".into())
        .spawn(move || runner(&pipes, &services, warm_heap))?;
    runner
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the runner thread panicked")))
}

fn runner(
    pipes: &Arc<Pipes>,
    services: &HostServices,
    warm_heap: Option<HeapLimit>,
) -> io::Result<()> {
    let mut warm = warm_heap.map(PlainIsolate::new);
    let mut ready: Option<Ready> = None;
    let gate = Arc::new(super::gate::Gate::default());
    // The line of the heap `ready` holds: the job that began it.
    let mut line = 0;
    loop {
        let job = wire::read_frame::<Job>(&mut *lock(&pipes.input))?;
        let Some(mut job) = job else {
            return Ok(());
        };
        let control = Arc::new(RunControl::default());
        if let Some(level) = job.log_level {
            control.forward_console(level);
        }
        job.control = Some(control.clone());
        *lock(&pipes.current) = Some(control.clone());
        let stateless = !job.touches_snapshots();
        let continues_line = job.from_ready;
        let heap_limit = job.heap_limit;
        let keep_ready = job.keep_ready;
        let seq = job.seq;
        let mut forked = None;
        let mut fork = |isolate: &mut v8::OwnedIsolate,
                        context: &v8::Global<v8::Context>,
                        handling: v8::FunctionCodeHandling| {
            match super::fork::fork_snapshot(isolate, context, handling, seq) {
                Ok(copy) => {
                    forked = Some(copy);
                    true
                }
                Err(error) => {
                    tracing::warn!(%error, "no forked copy could write the snapshot; writing it here");
                    false
                }
            }
        };
        let keep_live: Option<isolate::KeepLive<'_>> = super::fork::forks().then_some(&mut fork);
        let mut early = |answer: JobResult| {
            // The answer goes out while the heap is snapshotted; a failed
            // write means the server is gone, which the result's write sees.
            send_reports(pipes, &control);
            let frame = WorkerFrame::Ran(Box::new(answer));
            let _ = wire::write_frame(&mut *lock(&pipes.output), &frame);
        };
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_job(&mut warm, &mut ready, job, services, &mut early, keep_live)
        }));
        lock(&pipes.current).take();
        if control.is_cancelled() {
            // The server ends this worker once it has the answer: what the
            // run's host work cancelled (an upstream call) is said first.
            services.runtime.block_on(async {
                let _ =
                    tokio::time::timeout(HOST_WORK_GRACE, services.clients.cancellations_sent())
                        .await;
            });
        }
        let result = ran.unwrap_or_else(|_| {
            // A half-used isolate goes with the panic.
            warm = None;
            ready = None;
            JobResult::failed(RunError::new(
                "EngineError",
                "the engine failed while running this code (a bug, logged by the worker); nothing was stored",
            ))
        });
        let blob = result.blob.clone();
        let completed = result.status == RunStatus::Completed;
        // Every line the caller asked for arrives before the answer.
        send_reports(pipes, &control);
        wire::write_result(&mut *lock(&pipes.output), result)?;
        if !continues_line {
            line = seq;
        }
        // A completed run that keeps its heap replaces the heaps of its
        // line still waiting to be snapshotted: they are never written.
        if completed && (blob.is_some() || forked.is_some()) {
            for replaced in gate.replaced(line) {
                let frame = WorkerFrame::Superseded { seq: replaced };
                wire::write_frame(&mut *lock(&pipes.output), &frame)?;
            }
        }
        // The heap stays live here; the forked copy writes its snapshot to
        // the server in its turn. A copy that dies without writing it is
        // told of here.
        if let Some(mut forked) = forked.take() {
            if let Some(go) = forked.take_go() {
                gate.add(seq, line, go);
            }
            let pipes = pipes.clone();
            let gate = gate.clone();
            std::thread::Builder::new()
                .name("worker-snapshot".into())
                .spawn(move || {
                    let died = forked.wait();
                    gate.ended(seq);
                    if let Some(why) = died {
                        let frame = WorkerFrame::Snapshot {
                            seq,
                            blob: Err(why),
                        };
                        // A failed write means the server is gone.
                        let _ = wire::write_frame(&mut *lock(&pipes.output), &frame);
                    }
                })?;
        }
        // The heap just sent is restored for the call that continues it
        // while the server stores it and the agent reads the answer; the
        // next job on this pipe waits for it.
        if let (Some(limits), Some(blob)) = (keep_ready, blob) {
            let limit = limits.limit_for(blob.0.len());
            let restored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Ready::restore(blob.0, limit, limits.settle)
            }));
            ready = restored.ok();
            // A Lambda environment may be frozen once the server has this:
            // the restore is done, not cut in two by the freeze.
            let frame = WorkerFrame::Readied {
                restored: ready.is_some(),
            };
            wire::write_frame(&mut *lock(&pipes.output), &frame)?;
        }
        // With the answer on its way, the next stateless run's isolate is
        // readied (or replaced); a worker of stateful runs keeps none.
        if stateless {
            let renewed = warm.as_mut().is_some_and(PlainIsolate::renew);
            if !renewed {
                drop(warm.take());
                warm = Some(PlainIsolate::new(heap_limit));
            }
        }
    }
}

/// Runs `job` on the ready isolate when it fits, on a new one otherwise.
fn run_job(
    warm: &mut Option<PlainIsolate>,
    ready: &mut Option<Ready>,
    job: Job,
    services: &HostServices,
    ran: &mut dyn FnMut(JobResult),
    keep_live: Option<isolate::KeepLive<'_>>,
) -> JobResult {
    if job.touches_snapshots() {
        *warm = None;
        return isolate::run(job, services, ready, ran, keep_live);
    }
    // A plain isolate shares the read-only heap a restored one holds alone.
    *ready = None;
    if warm
        .as_ref()
        .is_none_or(|w| w.heap_limit().mb() != job.heap_limit.mb())
    {
        *warm = None;
        *warm = Some(PlainIsolate::new(job.heap_limit));
    }
    warm.as_mut().expect("made above").run(&job, services)
}

/// Writes the running job's console count and note every
/// [`PROGRESS_EVERY`] when either changed. Lives as long as the process.
fn report_progress(pipes: &Pipes) {
    let mut reported: Option<(*const RunControl, u64, Option<String>)> = None;
    loop {
        std::thread::sleep(PROGRESS_EVERY);
        let Some(control) = lock(&pipes.current).clone() else {
            continue;
        };
        let lines = control.console_lines();
        let note = control.note();
        let now = (Arc::as_ptr(&control), lines, note);
        let fresh = reported.as_ref() != Some(&now);
        // Taken under the output's lock, so lines and reports reach the
        // server in the order they were made, whichever thread sends them.
        let mut output = lock(&pipes.output);
        let (log, progress) = (control.take_log(), control.take_progress());
        if (lines > 0 || now.2.is_some()) && fresh || !log.is_empty() || !progress.is_empty() {
            let frame = WorkerFrame::Progress {
                console_lines: lines,
                note: now.2.clone(),
                log,
                progress,
            };
            reported = Some(now);
            // A failed write means the server is gone; the runner sees it too.
            let _ = wire::write_frame(&mut *output, &frame);
        }
    }
}

/// Sends the console lines and progress reports `control` kept since the
/// last report, if any.
fn send_reports(pipes: &Pipes, control: &RunControl) {
    let mut output = lock(&pipes.output);
    let (log, progress) = (control.take_log(), control.take_progress());
    if log.is_empty() && progress.is_empty() {
        return;
    }
    let frame = WorkerFrame::Progress {
        console_lines: control.console_lines(),
        note: control.note(),
        log,
        progress,
    };
    // A failed write means the server is gone; the result's write sees it.
    let _ = wire::write_frame(&mut *output, &frame);
}

/// Files read through the server, which has the store: asked for on
/// stdout, answered on stdin, by the runner thread inside the run.
struct PipeFiles {
    pipes: Arc<Pipes>,
}

impl std::fmt::Debug for PipeFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PipeFiles")
    }
}

impl FileSource for PipeFiles {
    /// Asked and answered at once on the runner thread, inside the run:
    /// the server bounds its read by the run's deadline and answers in any
    /// case (or ends this process).
    fn read(&self, key: &ContentKey) -> FileRead {
        FileRead::Ready(self.exchange(key))
    }
}

impl PipeFiles {
    fn exchange(&self, key: &ContentKey) -> Result<Option<bytes::Bytes>, String> {
        let asked = WorkerFrame::NeedFile { key: key.clone() };
        wire::write_frame(&mut *lock(&self.pipes.output), &asked)
            .map_err(|e| format!("asking the server for the file: {e}"))?;
        let reply: FileReply = wire::read_frame(&mut *lock(&self.pipes.input))
            .map_err(|e| format!("reading the file from the server: {e}"))?
            .ok_or("the server closed the worker's input")?;
        reply.found.map(|found| found.map(|section| section.0))
    }
}
