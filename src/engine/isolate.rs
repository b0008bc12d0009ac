//! One run inside one isolate, on the calling (dedicated) thread.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::inspect::{inspect, render_result};
use super::natives::{self, RunState};
use super::typescript::wrap_top_level_await;
use super::{CodeHandling, RunError, RunStatus};

const SCRIPT_NAME: &str = "run_js.js";

/// What the isolate thread is asked to do.
pub(crate) struct Job {
    pub code: String,
    /// Raw V8 payload to restore from, shared with the heap store's buffer
    /// so that handing it to a worker process copies it only into the pipe.
    pub restore: Option<Bytes>,
    /// Create the isolate as a snapshot creator and return a blob on success.
    pub stateful: bool,
    pub timeout: Duration,
    pub heap_limit_bytes: usize,
    pub max_output_bytes: usize,
    pub code_handling: CodeHandling,
}

impl Job {
    /// Whether the run creates or restores a snapshot, which decides where
    /// it may run (see [`READ_ONLY_HEAP`]); the others run on a plain isolate.
    pub(crate) fn touches_snapshots(&self) -> bool {
        self.stateful || self.restore.is_some()
    }
}

/// What came out of the isolate.
pub(crate) struct JobResult {
    pub status: RunStatus,
    pub result: Option<String>,
    pub output: String,
    pub error: Option<RunError>,
    pub warnings: Vec<String>,
    /// The new raw V8 payload, for completed stateful runs only.
    pub blob: Option<Vec<u8>>,
}

/// How evaluation ended, before termination causes are told apart.
enum Ended {
    Value {
        result: Option<String>,
        warnings: Vec<String>,
    },
    Threw(RunError),
    Terminated,
    DeadlineBeforeTimer,
}

/// Shared with the near-heap-limit callback through a raw pointer.
struct HeapGuard {
    handle: OnceLock<v8::IsolateHandle>,
    hit: AtomicBool,
}

impl HeapGuard {
    fn new() -> Box<Self> {
        Box::new(Self {
            handle: OnceLock::new(),
            hit: AtomicBool::new(false),
        })
    }

    /// Installs the near-heap-limit callback and the microtask policy every
    /// run relies on. V8 keeps a pointer to `self`: it must stay where it is
    /// (boxed, as `new` makes it) and outlive `isolate`.
    fn arm(&self, isolate: &mut v8::OwnedIsolate) {
        let _ = self.handle.set(isolate.thread_safe_handle());
        isolate
            .add_near_heap_limit_callback(near_heap_limit, self as *const HeapGuard as *mut c_void);
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
    }

    fn hit(&self) -> bool {
        self.hit.load(Ordering::SeqCst)
    }
}

/// Called by V8 on the isolate's thread when the heap nears its limit.
unsafe extern "C" fn near_heap_limit(
    data: *mut c_void,
    current_heap_limit: usize,
    _initial: usize,
) -> usize {
    // SAFETY: `data` points at the `HeapGuard` boxed in `execute`, which is
    // declared before the isolate and so outlives every callback V8 makes.
    let guard = unsafe { &*(data as *const HeapGuard) };
    guard.hit.store(true, Ordering::SeqCst);
    if let Some(handle) = guard.handle.get() {
        handle.terminate_execution();
    }
    // Room for the termination to unwind; returning the same limit would let
    // V8 reach its fatal out-of-memory path and kill the process.
    current_heap_limit.saturating_mul(2)
}

/// Terminates the isolate's run when its timeout passes, unless disarmed
/// first. One thread per isolate, armed for each run: a warm isolate serves
/// many runs, and a thread spawned and joined per run cost more than the
/// run. Arming and disarming only take a lock; neither waits for the thread.
struct Watchdog {
    shared: Arc<(Mutex<Countdown>, Condvar)>,
    thread: Option<thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Countdown {
    deadline: Option<Instant>,
    /// When the thread will look again on its own (`None`: only when woken).
    wakes_at: Option<Instant>,
    fired: bool,
    closed: bool,
}

impl Watchdog {
    fn new(handle: v8::IsolateHandle) -> Self {
        let shared = Arc::new((Mutex::new(Countdown::default()), Condvar::new()));
        let watched = shared.clone();
        let thread = thread::Builder::new()
            .name("v8-watchdog".into())
            .spawn(move || {
                let (lock, wake) = &*watched;
                let mut countdown = lock.lock().unwrap_or_else(PoisonError::into_inner);
                while !countdown.closed {
                    countdown = match countdown.deadline {
                        None => {
                            countdown.wakes_at = None;
                            wake.wait(countdown).unwrap_or_else(PoisonError::into_inner)
                        }
                        Some(deadline) if Instant::now() < deadline => {
                            countdown.wakes_at = Some(deadline);
                            let left = deadline.saturating_duration_since(Instant::now());
                            wake.wait_timeout(countdown, left)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0
                        }
                        Some(_) => {
                            // Under the lock, so a disarm that returned has
                            // already cleared the deadline.
                            handle.terminate_execution();
                            countdown.deadline = None;
                            countdown.fired = true;
                            countdown
                        }
                    };
                }
            })
            .expect("spawning the watchdog thread");
        Self {
            shared,
            thread: Some(thread),
        }
    }

    fn countdown(&self) -> std::sync::MutexGuard<'_, Countdown> {
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn arm(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut countdown = self.countdown();
        countdown.deadline = Some(deadline);
        countdown.fired = false;
        // Runs with the same timeout arm later deadlines than the one the
        // thread sleeps towards: it finds the new one when it wakes, and the
        // run costs it no wake-up.
        let in_time = countdown.wakes_at.is_some_and(|at| at <= deadline);
        drop(countdown);
        if !in_time {
            self.shared.1.notify_one();
        }
    }

    /// Stops the countdown and says whether it had fired. After this returns
    /// no termination can arrive late (e.g. during snapshot creation).
    fn disarm(&mut self) -> bool {
        let mut countdown = self.countdown();
        countdown.deadline = None;
        std::mem::take(&mut countdown.fired)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.countdown().closed = true;
        self.shared.1.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// V8 keeps one read-only heap per process, shared by every isolate, and
/// snapshot creation promotes objects into the read-only space of the blob it
/// writes. Isolates restored from different blobs (or a snapshot creator next
/// to them) therefore cannot be alive at once: V8 aborts while deserialising.
/// Isolates on the built-in snapshot share one read-only heap and may run
/// together (read lock); any isolate that creates or restores a snapshot runs
/// alone (write lock).
static READ_ONLY_HEAP: RwLock<()> = RwLock::new(());

/// The thread a run executes on: isolates are `!Send`, block while
/// JavaScript runs, and need a known stack size for deep recursion to end in
/// a `RangeError` rather than a crash.
pub(crate) fn thread_builder() -> thread::Builder {
    thread::Builder::new()
        .name("v8-run".into())
        .stack_size(8 * 1024 * 1024)
}

pub(crate) fn execute(job: Job) -> JobResult {
    super::platform::init();
    if !job.touches_snapshots() {
        return Warm::new(job.heap_limit_bytes).run(&job);
    }
    // A panic in another run cannot leave V8 half-used; the lock guards no data.
    let _exclusive = READ_ONLY_HEAP
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    let guard = HeapGuard::new();
    let params = v8::CreateParams::default().heap_limits(0, job.heap_limit_bytes);
    let fresh = job.restore.is_none();
    let refs = natives::external_references();
    let mut isolate = match (job.stateful, job.restore) {
        (true, Some(payload)) => v8::Isolate::snapshot_creator_from_existing_snapshot(
            Vec::from(payload).into(),
            Some(refs),
            Some(params),
        ),
        (true, None) => v8::Isolate::snapshot_creator(Some(refs), Some(params)),
        (false, Some(payload)) => v8::Isolate::new(
            params
                .snapshot_blob(Vec::from(payload).into())
                .external_references(refs),
        ),
        (false, None) => v8::Isolate::new(params),
    };
    guard.arm(&mut isolate);
    isolate.set_slot(RunState::new(job.max_output_bytes));

    let mut watchdog = Watchdog::new(isolate.thread_safe_handle());
    let deadline = Instant::now() + job.timeout;
    watchdog.arm(job.timeout);
    let (status, result, error, warnings) = {
        v8::scope!(let scope, &mut isolate);
        let context = v8::Context::new(scope, Default::default());
        let scope = &mut v8::ContextScope::new(scope, context);
        if fresh {
            let global = context.global(scope);
            natives::install(scope, global);
        }
        let ended = evaluate(scope, &job.code, deadline, None);
        watchdog.disarm();
        let (status, result, error, warnings) =
            classify(ended, guard.hit(), job.timeout, job.heap_limit_bytes);
        if job.stateful {
            if status == RunStatus::Completed {
                scope.set_default_context(context);
            } else {
                // The blob of a failed run is thrown away, but V8 insists on
                // one being made. A new copy of the input context keeps that
                // cheap: the failed run's garbage is unreachable from it.
                scope.cancel_terminate_execution();
                let clean = v8::Context::new(scope, Default::default());
                scope.set_default_context(clean);
            }
        }
        (status, result, error, warnings)
    };

    let output = take_output(&mut isolate);

    let mut blob = None;
    let mut status = status;
    let mut error = error;
    if job.stateful {
        let handling = match job.code_handling {
            CodeHandling::Keep => v8::FunctionCodeHandling::Keep,
            CodeHandling::Clear => v8::FunctionCodeHandling::Clear,
        };
        let created = isolate.create_blob(handling);
        if status == RunStatus::Completed {
            match created {
                Some(data) => blob = Some(data.to_vec()),
                None => {
                    status = RunStatus::Failed;
                    error = Some(RunError::new(
                        "SnapshotError",
                        "V8 could not create a snapshot of the heap",
                    ));
                }
            }
        }
    } else {
        drop(isolate);
    }
    drop(guard);
    JobResult {
        status,
        result,
        output,
        error,
        warnings,
        blob,
    }
}

/// The console output of the run, taken out of the isolate. Timer handles
/// are globals and go with it, as a snapshot must not hold them.
fn take_output(isolate: &mut v8::OwnedIsolate) -> String {
    match isolate.remove_slot::<RunState>() {
        Some(mut state) => {
            state.timers.clear_all();
            state.output.into_string()
        }
        None => String::new(),
    }
}

/// A plain isolate on V8's built-in snapshot that serves stateless runs one
/// after another, each in a context of its own made before the run arrives
/// (the host functions installed), as `node:vm` does. Nothing a run leaves
/// reaches the next: globals and built-ins belong to the context, microtasks
/// to the context's own queue, output and timers to the run's slot. An
/// isolate that was terminated (timeout, heap limit) is not reused, nor one
/// that has served [`Warm::MAX_RUNS`] runs or holds more than a quarter of
/// its heap limit, so what the isolate itself keeps (compiled code, the
/// `Symbol.for` registry) stays bounded. Fields drop in order: contexts and
/// queues while the isolate lives, the guard after the isolate's last
/// callback, the lock last.
pub(crate) struct Warm {
    /// The next run's context and its queue. Dropping the handle after the
    /// run is safe: in the `v8` crate's default build (`v8_cppgc_microtask_queue`)
    /// the context keeps its queue alive.
    next: Option<(v8::Global<v8::Context>, v8::MicrotaskQueueHandle)>,
    watchdog: Watchdog,
    isolate: v8::OwnedIsolate,
    guard: Box<HeapGuard>,
    heap_limit_bytes: usize,
    runs: usize,
    /// A termination reached the isolate (the watchdog fired, or one was
    /// pending when the run ended): it serves no other run.
    terminated: bool,
    _shared: RwLockReadGuard<'static, ()>,
}

impl Warm {
    /// Runs one isolate serves before it is replaced.
    pub(crate) const MAX_RUNS: usize = 256;

    pub(crate) fn new(heap_limit_bytes: usize) -> Self {
        super::platform::init();
        // A panic in another run cannot leave V8 half-used; the lock guards no data.
        let shared = READ_ONLY_HEAP
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let guard = HeapGuard::new();
        let params = v8::CreateParams::default().heap_limits(0, heap_limit_bytes);
        let mut isolate = v8::Isolate::new(params);
        guard.arm(&mut isolate);
        let watchdog = Watchdog::new(isolate.thread_safe_handle());
        let mut warm = Self {
            next: None,
            watchdog,
            isolate,
            guard,
            heap_limit_bytes,
            runs: 0,
            terminated: false,
            _shared: shared,
        };
        warm.next = Some(warm.new_context());
        warm
    }

    /// A context with the host functions and its own microtask queue.
    fn new_context(&mut self) -> (v8::Global<v8::Context>, v8::MicrotaskQueueHandle) {
        let queue = v8::MicrotaskQueue::new(&mut self.isolate, v8::MicrotasksPolicy::Explicit);
        let context = {
            v8::scope!(let scope, &mut self.isolate);
            let options = v8::ContextOptions {
                microtask_queue: Some(&*queue as *const v8::MicrotaskQueue as *mut _),
                ..Default::default()
            };
            let context = v8::Context::new(scope, options);
            let scope = &mut v8::ContextScope::new(scope, context);
            let global = context.global(scope);
            natives::install(scope, global);
            v8::Global::new(scope, context)
        };
        (context, queue)
    }

    /// Runs a stateless job in the prepared context.
    pub(crate) fn run(&mut self, job: &Job) -> JobResult {
        let (context, queue) = match self.next.take() {
            Some(next) => next,
            None => self.new_context(),
        };
        self.runs += 1;
        self.isolate.set_slot(RunState::new(job.max_output_bytes));
        let deadline = Instant::now() + job.timeout;
        self.watchdog.arm(job.timeout);
        let (status, result, error, warnings) = {
            v8::scope!(let scope, &mut self.isolate);
            let context = v8::Local::new(scope, context);
            let scope = &mut v8::ContextScope::new(scope, context);
            let ended = evaluate(scope, &job.code, deadline, Some(&queue));
            let fired = self.watchdog.disarm();
            self.terminated = fired || scope.is_execution_terminating();
            classify(ended, self.guard.hit(), job.timeout, job.heap_limit_bytes)
        };
        JobResult {
            status,
            result,
            output: take_output(&mut self.isolate),
            error,
            warnings,
            blob: None,
        }
    }

    /// Whether the isolate may serve another run; if so, its next context is
    /// made now.
    pub(crate) fn renew(&mut self) -> bool {
        if self.terminated || self.runs >= Self::MAX_RUNS || self.guard.hit() {
            return false;
        }
        let stats = self.isolate.get_heap_statistics();
        if stats.used_heap_size() > self.heap_limit_bytes / 4 {
            return false;
        }
        self.next = Some(self.new_context());
        true
    }
}

/// Threads that each keep a [`Warm`] isolate ready, so a stateless run
/// starts at its code: creating the context, and the isolate when one is
/// replaced, happen between runs instead of inside one. Only for processes
/// where no isolate ever creates or restores a snapshot (a stateless server,
/// or one whose snapshots go to worker processes): an idle warm isolate
/// holds the shared read-only heap, which such isolates need exclusively.
#[derive(Debug)]
pub(crate) struct WarmPool {
    jobs: mpsc::Sender<(Job, oneshot::Sender<JobResult>)>,
}

type Queue = Arc<Mutex<mpsc::Receiver<(Job, oneshot::Sender<JobResult>)>>>;

impl WarmPool {
    /// `threads` runners, each with an isolate of `heap_limit_bytes` ready;
    /// a job asking for another limit gets a new isolate on a runner.
    pub(crate) fn new(threads: usize, heap_limit_bytes: usize) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel();
        let queue: Queue = Arc::new(Mutex::new(queue));
        for _ in 0..threads.max(1) {
            let queue = queue.clone();
            thread_builder()
                .name("v8-warm".into())
                .spawn(move || warm_runner(&queue, heap_limit_bytes))?;
        }
        Ok(Self { jobs })
    }

    /// Runs a stateless job on the next free runner.
    pub(crate) async fn execute(&self, job: Job) -> Option<JobResult> {
        let (done, result) = oneshot::channel();
        self.jobs.send((job, done)).ok()?;
        result.await.ok()
    }
}

/// Ends when the pool is dropped. A panicking run loses its answer (the
/// caller sees the engine thread fail) and its isolate, not the runner.
fn warm_runner(queue: &Queue, heap_limit_bytes: usize) {
    let mut kept: Option<Warm> = None;
    loop {
        let mut warm = kept.take().unwrap_or_else(|| Warm::new(heap_limit_bytes));
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((job, done)) = next else {
            return;
        };
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if job.heap_limit_bytes == heap_limit_bytes {
                warm.run(&job)
            } else {
                Warm::new(job.heap_limit_bytes).run(&job)
            }
        }));
        // After a panic the isolate may be half-used: it goes.
        let Ok(result) = ran else {
            continue;
        };
        let _ = done.send(result);
        // Only now, with the answer on its way, is the isolate readied for
        // the next run or replaced.
        if warm.renew() {
            kept = Some(warm);
        }
    }
}

type Classified = (RunStatus, Option<String>, Option<RunError>, Vec<String>);

fn classify(
    ended: Ended,
    out_of_memory: bool,
    timeout: Duration,
    heap_limit_bytes: usize,
) -> Classified {
    let timed_out = || {
        RunError::new(
            "TimeoutError",
            format!(
                "execution did not finish within {} ms and was terminated",
                timeout.as_millis()
            ),
        )
    };
    match ended {
        _ if out_of_memory => (
            RunStatus::OutOfMemory,
            None,
            Some(RunError::new(
                "OutOfMemoryError",
                format!(
                    "the JavaScript heap reached its {} MiB limit and the run was terminated",
                    heap_limit_bytes / (1024 * 1024)
                ),
            )),
            Vec::new(),
        ),
        Ended::Terminated | Ended::DeadlineBeforeTimer => {
            (RunStatus::TimedOut, None, Some(timed_out()), Vec::new())
        }
        // A value that arrived just as the watchdog fired still counts.
        Ended::Value { result, warnings } => (RunStatus::Completed, result, None, warnings),
        Ended::Threw(error) => (RunStatus::Failed, None, Some(error), Vec::new()),
    }
}

/// `queue`: the context's own microtask queue, if it has one (otherwise the
/// isolate's).
fn evaluate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    code: &str,
    deadline: Instant,
    queue: Option<&v8::MicrotaskQueue>,
) -> Ended {
    v8::tc_scope!(let tc, scope);
    let Some(script) = compile(tc, code).or_else(|| {
        let is_top_level_await = tc
            .message()
            .map(|m| m.get(tc).to_rust_string_lossy(tc))
            .is_some_and(|m| m.contains("await is only valid"));
        if is_top_level_await {
            tc.reset();
            compile(tc, &wrap_top_level_await(code))
        } else {
            None
        }
    }) else {
        return caught(tc);
    };
    let Some(value) = script.run(tc) else {
        return caught(tc);
    };
    let value = v8::Global::new(tc, value);
    if let Err(ended) = run_event_loop(tc, deadline, queue) {
        return ended;
    }
    let value = v8::Local::new(tc, &value);
    let mut warnings = Vec::new();
    let value = match v8::Local::<v8::Promise>::try_from(value) {
        Ok(promise) => match promise.state() {
            v8::PromiseState::Fulfilled => promise.result(tc),
            v8::PromiseState::Rejected => {
                let reason = promise.result(tc);
                return Ended::Threw(error_from(tc, reason, None));
            }
            v8::PromiseState::Pending => {
                warnings.push("the completion value is a promise that never settled".to_owned());
                value
            }
        },
        Err(_) => value,
    };
    let result = render_result(tc, value);
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Ended::Terminated;
    }
    Ended::Value { result, warnings }
}

fn compile<'s>(scope: &mut v8::PinScope<'s, '_>, code: &str) -> Option<v8::Local<'s, v8::Script>> {
    let source = v8::String::new(scope, code)?;
    let name = v8::String::new(scope, SCRIPT_NAME)?;
    let origin = v8::ScriptOrigin::new(
        scope,
        name.into(),
        0,
        0,
        false,
        0,
        None,
        false,
        false,
        false,
        None,
    );
    v8::Script::compile(scope, source, Some(&origin))
}

/// Runs microtasks and timers until nothing is left, the deadline passes or
/// an exception escapes.
fn run_event_loop(
    tc: &mut v8::PinScope<'_, '_>,
    deadline: Instant,
    queue: Option<&v8::MicrotaskQueue>,
) -> Result<(), Ended> {
    loop {
        match queue {
            Some(queue) => queue.perform_checkpoint(tc),
            None => tc.perform_microtask_checkpoint(),
        }
        if tc.is_execution_terminating() {
            return Err(Ended::Terminated);
        }
        let Some(due) = tc.get_slot::<RunState>().and_then(|s| s.timers.next_due()) else {
            return Ok(());
        };
        if due > deadline {
            return Err(Ended::DeadlineBeforeTimer);
        }
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        let Some(timer) = tc.get_slot_mut::<RunState>().and_then(|s| s.timers.pop()) else {
            return Ok(());
        };
        let called = {
            v8::tc_scope!(let inner, tc);
            let callback = v8::Local::new(inner, &timer.callback);
            let args: Vec<v8::Local<v8::Value>> = timer
                .args
                .iter()
                .map(|a| v8::Local::new(inner, a))
                .collect();
            let receiver = v8::undefined(inner).into();
            if callback.call(inner, receiver, &args).is_some() {
                None
            } else {
                Some(caught(inner))
            }
        };
        if let Some(ended) = called {
            return Err(ended);
        }
        if let Some(state) = tc.get_slot_mut::<RunState>() {
            state.timers.finish(timer);
        }
    }
}

/// Turns the exception pending in a `TryCatch` into how the run ended.
fn caught<'s>(tc: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>) -> Ended {
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Ended::Terminated;
    }
    match tc.exception() {
        Some(exception) => {
            let message = tc.message();
            Ended::Threw(error_from(tc, exception, message))
        }
        None => Ended::Threw(RunError::new(
            "Error",
            "the script failed without an exception",
        )),
    }
}

fn error_from<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    exception: v8::Local<'s, v8::Value>,
    message: Option<v8::Local<'s, v8::Message>>,
) -> RunError {
    let mut error = match v8::Local::<v8::Object>::try_from(exception) {
        Ok(object) if exception.is_native_error() => {
            let text = |scope: &mut v8::PinScope<'s, '_>, name: &str| -> Option<String> {
                let key = v8::String::new(scope, name)?;
                let value = object.get(scope, key.into())?;
                (!value.is_undefined()).then(|| value.to_rust_string_lossy(scope))
            };
            RunError {
                name: text(scope, "name").unwrap_or_else(|| "Error".to_owned()),
                message: text(scope, "message").unwrap_or_default(),
                stack: text(scope, "stack"),
            }
        }
        _ => RunError {
            name: "Uncaught".to_owned(),
            message: inspect(scope, exception),
            stack: None,
        },
    };
    // Compile errors carry their position only on the message object.
    if error.name == "SyntaxError"
        && let Some(message) = message
        && let Some(line) = message.get_line_number(scope)
    {
        let column = message.get_start_column() + 1;
        error.message = format!("{} (line {line}, column {column})", error.message);
        error.stack = Some(format!(
            "SyntaxError: {}\n    at {SCRIPT_NAME}:{line}:{column}",
            error.message
        ));
    }
    error
}
