//! One run inside one isolate, on the calling (dedicated) thread.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::control::Target;
use super::inspect::{inspect, render_result};
use super::natives::{self, RunState};
use super::typescript::wrap_top_level_await;
use super::watchdog::Watchdog;
use super::{CodeHandling, RunError, RunStatus};

const SCRIPT_NAME: &str = "run_js.js";

/// How long the event loop waits for a request before looking at the
/// run's cancellation again.
const FETCH_WAIT_SLICE: Duration = Duration::from_millis(50);

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
    /// The caller's handle on the run (not sent to engine workers, whose
    /// process the pool stops instead).
    pub control: Option<std::sync::Arc<super::RunControl>>,
    /// What `fetch` may reach; `None` (or an empty allow list): nothing.
    pub fetch: Option<std::sync::Arc<crate::egress::FetchConfig>>,
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
    /// What the run fetched, when it fetched anything.
    pub fetches: Option<crate::egress::FetchCount>,
}

/// How evaluation ended, before termination causes are told apart.
pub(super) enum Ended {
    Value {
        result: Option<String>,
        warnings: Vec<String>,
    },
    Threw(RunError),
    Terminated,
    DeadlineBeforeTimer,
}

/// Shared with the near-heap-limit callback through a raw pointer.
pub(super) struct HeapGuard {
    handle: OnceLock<v8::IsolateHandle>,
    hit: AtomicBool,
}

impl HeapGuard {
    pub(super) fn new() -> Box<Self> {
        Box::new(Self {
            handle: OnceLock::new(),
            hit: AtomicBool::new(false),
        })
    }

    /// Installs the near-heap-limit callback and the microtask policy every
    /// run relies on. V8 keeps a pointer to `self`: it must stay where it is
    /// (boxed, as `new` makes it) and outlive `isolate`.
    pub(super) fn arm(&self, isolate: &mut v8::OwnedIsolate) {
        let _ = self.handle.set(isolate.thread_safe_handle());
        isolate
            .add_near_heap_limit_callback(near_heap_limit, self as *const HeapGuard as *mut c_void);
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
    }

    pub(super) fn hit(&self) -> bool {
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

/// V8 keeps one read-only heap per process, shared by every isolate, and
/// snapshot creation promotes objects into the read-only space of the blob it
/// writes. Isolates restored from different blobs (or a snapshot creator next
/// to them) therefore cannot be alive at once: V8 aborts while deserialising.
/// Isolates on the built-in snapshot share one read-only heap and may run
/// together (read lock); any isolate that creates or restores a snapshot runs
/// alone (write lock).
pub(super) static READ_ONLY_HEAP: RwLock<()> = RwLock::new(());

/// The thread a run executes on: isolates are `!Send`, block while
/// JavaScript runs, and need a known stack size for deep recursion to end in
/// a `RangeError` rather than a crash.
pub(crate) fn thread_builder() -> thread::Builder {
    thread::Builder::new()
        .name("v8-run".into())
        .stack_size(8 * 1024 * 1024)
}

/// Runs one job on the calling thread: a stateless job on a fresh plain
/// isolate, any other alone in the process (see [`READ_ONLY_HEAP`]).
pub(crate) fn execute(mut job: Job) -> JobResult {
    super::platform::init();
    if !job.touches_snapshots() {
        return super::warm::Warm::new(job.heap_limit_bytes).run(&job);
    }
    // A panic in another run cannot leave V8 half-used; the lock guards no data.
    let _exclusive = READ_ONLY_HEAP
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    let guard = HeapGuard::new();
    let fresh = job.restore.is_none();
    let mut isolate = snapshot_isolate(job.stateful, job.restore.take(), job.heap_limit_bytes);
    guard.arm(&mut isolate);
    let deadline = Instant::now() + job.timeout;
    isolate.set_slot(RunState::new(
        job.max_output_bytes,
        job.control.clone(),
        job.fetch.as_deref(),
        deadline,
    ));
    if let Some(control) = &job.control {
        control.attach(Target::Isolate(isolate.thread_safe_handle()));
    }

    let mut watchdog = Watchdog::new(isolate.thread_safe_handle());
    watchdog.arm(job.timeout);
    let (status, result, error, warnings) = {
        v8::scope!(let scope, &mut isolate);
        let context = v8::Context::new(scope, Default::default());
        let scope = &mut v8::ContextScope::new(scope, context);
        let global = context.global(scope);
        if fresh {
            natives::install(scope, global);
        }
        // A restored heap made before the Web layer gains it here.
        super::web::install(scope, global);
        let ended = evaluate(scope, &job.code, deadline, None);
        watchdog.disarm();
        if let Some(control) = &job.control {
            control.detach();
        }
        let classified = cancelled_or(
            job.control.as_deref(),
            classify(ended, guard.hit(), job.timeout, job.heap_limit_bytes),
        );
        if job.stateful {
            if classified.0 == RunStatus::Completed {
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
        classified
    };
    let (output, fetches) = take_output(&mut isolate);
    let (status, error, blob) = if job.stateful {
        snapshot(isolate, job.code_handling, status, error)
    } else {
        drop(isolate);
        (status, error, None)
    };
    drop(guard);
    JobResult {
        status,
        result,
        output,
        error,
        warnings,
        blob,
        fetches,
    }
}

/// The isolate of a job that creates or restores a snapshot: a snapshot
/// creator for a stateful job, from `restore` when there is a payload.
fn snapshot_isolate(
    stateful: bool,
    restore: Option<Bytes>,
    heap_limit_bytes: usize,
) -> v8::OwnedIsolate {
    let params = v8::CreateParams::default().heap_limits(0, heap_limit_bytes);
    let refs = natives::external_references();
    match (stateful, restore) {
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
    }
}

/// Consumes a snapshot creator: the blob of a completed run, or a failure
/// when V8 could not make one. V8 makes a blob of a failed run too; it is
/// dropped.
fn snapshot(
    isolate: v8::OwnedIsolate,
    handling: CodeHandling,
    status: RunStatus,
    error: Option<RunError>,
) -> (RunStatus, Option<RunError>, Option<Vec<u8>>) {
    let handling = match handling {
        CodeHandling::Keep => v8::FunctionCodeHandling::Keep,
        CodeHandling::Clear => v8::FunctionCodeHandling::Clear,
    };
    let created = isolate.create_blob(handling);
    if status != RunStatus::Completed {
        return (status, error, None);
    }
    match created {
        Some(data) => (status, error, Some(data.to_vec())),
        None => (
            RunStatus::Failed,
            Some(RunError::new(
                "SnapshotError",
                "V8 could not create a snapshot of the heap",
            )),
            None,
        ),
    }
}

/// The console output of the run and what it fetched, taken out of the
/// isolate. Timer handles and pending requests' promises are globals and go
/// with it, as a snapshot must not hold them; dropping the requests aborts
/// those still running.
pub(super) fn take_output(
    isolate: &mut v8::OwnedIsolate,
) -> (String, Option<crate::egress::FetchCount>) {
    match isolate.remove_slot::<RunState>() {
        Some(mut state) => {
            state.timers.clear_all();
            let fetches = state.fetch.take().and_then(|f| f.count());
            (state.output.into_string(), fetches)
        }
        None => (String::new(), None),
    }
}

pub(super) type Classified = (RunStatus, Option<String>, Option<RunError>, Vec<String>);

/// `classified`, unless the caller cancelled the run: then `Cancelled`,
/// which keeps nothing (a stateful run makes no blob of it).
pub(super) fn cancelled_or(
    control: Option<&super::RunControl>,
    classified: Classified,
) -> Classified {
    match control {
        Some(control) if control.is_cancelled() => (
            RunStatus::Cancelled,
            None,
            Some(RunError::new(
                "CancelledError",
                "the run was cancelled by the client and terminated; nothing was stored",
            )),
            Vec::new(),
        ),
        _ => classified,
    }
}

pub(super) fn classify(
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
pub(super) fn evaluate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    code: &str,
    deadline: Instant,
    queue: Option<&v8::MicrotaskQueue>,
) -> Ended {
    v8::tc_scope!(let tc, scope);
    let Some(script) = compile(tc, code).or_else(|| {
        // In a classic script `await` is an identifier, so top-level await
        // fails in several ways ("await is only valid…", "missing ) after
        // argument list" for `f(await g())`, …). Code that mentions it is
        // tried as an async function; if that fails too, the error shown is
        // the code's own, with its own line numbers.
        if !code.contains("await") {
            return None;
        }
        tc.reset();
        compile(tc, &wrap_top_level_await(code)).or_else(|| {
            tc.reset();
            compile(tc, code)
        })
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
        let (next_timer, fetching) = tc
            .get_slot::<RunState>()
            .map(|s| {
                let fetching = s.fetch.as_ref().is_some_and(|f| f.pending() > 0);
                let due = if fetching {
                    s.timers.next_due_any()
                } else {
                    s.timers.next_due()
                };
                (due, fetching)
            })
            .unwrap_or((None, false));
        if fetching {
            // Requests are pending work like timers: wait for whichever
            // comes first, in slices so a cancel is seen while waiting.
            let until = next_timer
                .unwrap_or(deadline)
                .min(deadline)
                .min(Instant::now() + FETCH_WAIT_SLICE);
            let arrived = tc
                .get_slot_mut::<RunState>()
                .and_then(|s| s.fetch.as_mut())
                .and_then(|f| f.wait(until));
            if let Some(completion) = arrived {
                super::web::deliver(tc, completion);
                continue;
            }
            let cancelled = tc
                .get_slot::<RunState>()
                .and_then(|s| s.control.as_ref())
                .is_some_and(|c| c.is_cancelled());
            if cancelled {
                return Err(Ended::Terminated);
            }
            if Instant::now() >= deadline {
                return Err(Ended::DeadlineBeforeTimer);
            }
            if next_timer.is_none_or(|due| due > Instant::now()) {
                continue;
            }
        }
        let Some(due) = next_timer else {
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
