//! The run core that every isolate path shares: setting a run up on an
//! isolate and taking it down, evaluation, the event loop, and how a run
//! ended (timeout, heap limit, cancellation, a throw). What a run takes and
//! gives is [`super::contract`]; each capability's part, [`super::capability`].

pub(super) mod checksum;
mod ended;
pub(super) mod isolate;
pub(super) mod load_check;
mod package_hint;
pub(super) mod plain;
pub(super) mod platform;
mod process_events;
pub(super) mod ready;
pub(super) mod rejections;
pub(super) mod repl;
pub(super) mod typescript;
pub(super) mod watchdog;

use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Instant;

use self::ended::{Classified, Ended, caught, classify, what_held};
use self::package_hint::add_package_hint;
use self::watchdog::Watchdog;
use super::capability::RunScope;
use super::capability::control::{RunControl, Target};
use super::capability::outcome::{RunError, RunStatus, cap_text};
use super::capability::positions::{Positions, SCRIPT_NAME};
use super::contract::registration;
use super::contract::{Job, JobResult, Task};
use super::host::fs;
use super::layer;
use super::services::HostServices;
use super::services::memory::Budget;
use super::services::work::HostWork;
use super::web::thrown::error_from;
use super::web::{Timers, render_result};
use crate::engine::heap_limit::HeapLimit;
use crate::units::MIB;

/// V8 keeps one read-only heap per process, shared by every isolate, and
/// snapshot creation promotes objects into the read-only space of the blob it
/// writes. Isolates restored from different blobs (or a snapshot creator next
/// to them) therefore cannot be alive at once: V8 aborts while deserialising.
/// Isolates on the built-in snapshot share one read-only heap and may run
/// together (read lock); any isolate that creates or restores a snapshot runs
/// alone (write lock).
/// Plain isolates take it with `read_recursive`: a thread that holds one
/// while it makes the next (a warm pool refilling) must not queue behind a
/// waiting writer, which waits for the first: that is a deadlock.
pub(super) static READ_ONLY_HEAP: parking_lot::RwLock<()> = parking_lot::const_rwlock(());

/// The thread a run executes on: isolates are `!Send`, block while
/// JavaScript runs, and need a known stack size for deep recursion to end in
/// a `RangeError` rather than a crash.
pub(crate) fn thread_builder() -> thread::Builder {
    thread::Builder::new()
        .name("v8-run".into())
        .stack_size(8 * MIB)
}

/// The isolate of a job that creates or restores a snapshot: a snapshot
/// creator (`creator`), from `restore` when there is a payload.
pub(super) fn snapshot_isolate(
    creator: bool,
    restore: Option<bytes::Bytes>,
    params: v8::CreateParams,
) -> v8::OwnedIsolate {
    let refs: Cow<'static, [v8::ExternalReference]> =
        Cow::Owned(layer::external_references(&registration::LAYER));
    match (creator, restore) {
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

/// An isolate's memory bounds: its heap limit, watched by the
/// near-heap-limit callback (which reaches this through a raw pointer), and
/// the budget its `ArrayBuffer` allocator counts against.
pub(super) struct HeapGuard {
    handle: OnceLock<v8::IsolateHandle>,
    hit: AtomicBool,
    budget: Arc<Budget>,
    /// V8's heap bound.
    heap_limit_bytes: usize,
    /// The most heap the callback grants for a terminated run to unwind.
    ceiling: usize,
}

/// In an engine worker, the headroom granted past the heap limit for a
/// terminated run to unwind, as a multiple of the limit plus a fixed slack;
/// past it V8 ends the worker (`worker/mod.rs` tells the run why), so a
/// built-in that allocates one huge value cannot grow the worker without
/// bound. A process that must survive its runs (the library's in-process
/// mode) grants headroom without a ceiling, as long as V8 can.
const HEADROOM_FACTOR: usize = 4;
const HEADROOM_SLACK: usize = 64 * MIB;

impl HeapGuard {
    /// Bounds of `heap_limit` on the heap and as many bytes on the
    /// buffers outside it: where a heap limit becomes bytes.
    pub(super) fn new(heap_limit: HeapLimit) -> Box<Self> {
        let heap_limit_bytes = heap_limit.bytes();
        Box::new(Self {
            heap_limit_bytes,
            handle: OnceLock::new(),
            hit: AtomicBool::new(false),
            budget: Budget::new(heap_limit_bytes),
            ceiling: if self::watchdog::ends_process() {
                heap_limit_bytes
                    .saturating_mul(HEADROOM_FACTOR)
                    .saturating_add(HEADROOM_SLACK)
            } else {
                usize::MAX
            },
        })
    }

    /// The parameters of an isolate these bounds apply to.
    pub(super) fn params(&self) -> v8::CreateParams {
        v8::CreateParams::default()
            .heap_limits(0, self.heap_limit_bytes)
            .array_buffer_allocator(self.budget.allocator())
    }

    /// Bytes of buffers the isolate holds now.
    pub(super) fn external_bytes(&self) -> usize {
        self.budget.used()
    }

    /// Installs the near-heap-limit callback and the microtask policy every
    /// run relies on. V8 keeps a pointer to `self`: it must stay where it is
    /// (boxed, as `new` makes it) and outlive `isolate`.
    pub(super) fn arm(&self, isolate: &mut v8::OwnedIsolate) {
        let _ = self.handle.set(isolate.thread_safe_handle());
        isolate
            .add_near_heap_limit_callback(near_heap_limit, self as *const HeapGuard as *mut c_void);
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
        layer::arm(isolate, &registration::LAYER);
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
    // SAFETY: `data` points at a boxed `HeapGuard` that its owner keeps
    // alive until after the isolate is gone, so it outlives every callback.
    let guard = unsafe { &*(data as *const HeapGuard) };
    guard.hit.store(true, Ordering::SeqCst);
    if let Some(handle) = guard.handle.get() {
        handle.terminate_execution();
    }
    // Room for the termination to unwind; returning the same limit lets V8
    // reach its fatal out-of-memory path, which ends the process: past the
    // ceiling, only a value no run may build is still being made.
    current_heap_limit
        .saturating_mul(2)
        .min(guard.ceiling)
        .max(current_heap_limit)
}

/// A run set up on an isolate: its capabilities' state in slots, the
/// caller's cancel pointed at the isolate, the watchdog armed.
pub(super) struct Started {
    deadline: Instant,
}

/// Sets `job` up on `isolate` with the host's `services`, bounded by
/// `guard`; [`settle`] and [`finish`] take it down.
pub(super) fn start(
    isolate: &mut v8::OwnedIsolate,
    job: &Job,
    services: &HostServices,
    watchdog: &mut Watchdog,
    guard: &HeapGuard,
) -> Started {
    let deadline = Instant::now() + job.timeout;
    isolate.remove_slot::<Rewritten>();
    rejections::begin(isolate);
    let work = HostWork::new(services.runtime.clone(), deadline);
    let sink = work.sink();
    isolate.set_slot(work);
    isolate.set_slot(guard.budget.clone());
    registration::begin(
        isolate,
        &job.asks,
        &RunScope {
            deadline,
            control: job.control.as_ref(),
            host: services,
            work: sink.clone(),
            egress: job.egress.as_ref(),
        },
    );
    if let Some(control) = &job.control {
        control.attach(Target::Isolate(isolate.thread_safe_handle(), sink));
    }
    watchdog.arm(deadline);
    Started { deadline }
}

impl Started {
    /// Carries out the job's task in the current context, `queue` being
    /// the context's own microtask queue if it has one.
    pub(super) fn evaluate(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        job: &Job,
        queue: Option<&v8::MicrotaskQueue>,
    ) -> Ended {
        let (code, responses) = match &job.task {
            Task::Run { code } => (code, None),
            Task::Resume { code, responses } => (code, Some(responses.as_str())),
            Task::ListFiles => {
                return match fs::tree(scope) {
                    Some(tree) => Ended::Listed(tree),
                    None => Ended::Threw(RunError::new(
                        "HeapError",
                        "this heap's /work was made by a version before file resources; run any code on it to list its files",
                    )),
                };
            }
        };
        // A resumed run had its steps before its code in its first round.
        if responses.is_none()
            && let Err(error) = registration::before_code(scope, &job.asks, layer::load)
        {
            return Ended::Threw(error);
        }
        // While the code runs, a timeout's interrupt can find where it is.
        let context = scope.get_current_context();
        let run_context = self::watchdog::RunContext(v8::Global::new(scope, context));
        scope.set_slot(run_context);
        let run = Evaluation {
            deadline: self.deadline,
            control: job.control.as_deref(),
            queue,
            max_result_bytes: job.max_result_bytes,
        };
        let ended = match responses {
            None => evaluate(scope, code, &run),
            Some(responses) => resume(scope, code, responses, &run),
        };
        drop(scope.remove_slot::<self::watchdog::RunContext>());
        ended
    }
}

/// How the run of `job` ended, told apart: disarms the watchdog and detaches
/// the caller's cancel first. Also says whether a termination reached the
/// isolate (the watchdog fired, or a cancel), which a reused isolate must
/// know.
pub(super) fn settle(
    ended: Ended,
    job: &Job,
    watchdog: &mut Watchdog,
    guard: &HeapGuard,
) -> (Classified, bool) {
    let disarmed = watchdog.disarm();
    let stopped_at = watchdog.position();
    if let Some(control) = &job.control {
        control.detach();
    }
    let cancelled = job.cancelled();
    let mut classified = if cancelled {
        Classified::Cancelled
    } else {
        classify(
            ended,
            guard.hit(),
            disarmed.fired || disarmed.overdue,
            (job.timeout, stopped_at),
            job.heap_limit,
        )
    };
    if guard.budget.take_refused() {
        classified.name_buffer_limit(guard.budget.limit());
    }
    (classified, disarmed.fired || cancelled)
}

/// The run's result, with the capabilities' state taken out of `isolate`,
/// its texts within the job's caps.
pub(super) fn finish(
    isolate: &mut v8::Isolate,
    job: &Job,
    mut classified: Classified,
) -> JobResult {
    if let Classified::Ended(RunStatus::OutOfMemory, error) = &mut classified
        && let Some(held) = what_held(isolate)
    {
        error.message = format!("{}; {held}", error.message);
    }
    if let Classified::Ended(RunStatus::TimedOut, error) = &mut classified
        && let Some(pending) = isolate
            .get_slot::<super::web::Timers>()
            .and_then(super::web::Timers::pending_description)
    {
        error.message = format!("{}; {pending}", error.message);
    }
    rejections::end(isolate);
    let rewritten = isolate.remove_slot::<Rewritten>();
    let reports = registration::end(isolate);
    // Work still running reports to no one once the run's side is gone.
    drop(isolate.remove_slot::<HostWork>());
    drop(isolate.remove_slot::<Arc<Budget>>());
    let mut result = JobResult {
        status: RunStatus::Completed,
        result: None,
        repl: None,
        error: None,
        warnings: Vec::new(),
        blob: None,
        listing: None,
        reports,
        heap_used_bytes: 0,
        snapshot_pending: false,
    };
    match classified {
        Classified::Ended(status, error) => {
            result.status = status;
            result.error = Some(error);
        }
        Classified::Completed { rendered, warnings } => {
            let cap = |text: String| cap_text(text, job.max_result_bytes, "result");
            result.result = rendered.result.map(cap);
            result.repl = Some(cap(rendered.repl));
            result.warnings = warnings;
        }
        Classified::Listed(tree) => result.listing = Some(tree),
        Classified::Suspended => result.status = RunStatus::InputRequired,
        Classified::Cancelled => result.cancel(),
    }
    if let Some(Rewritten(positions)) = rewritten {
        result.remap(&positions);
    }
    result
}

/// The positions of code [`repl::wrap`] rewrote, from compiling it to the
/// end of the run (an isolate slot).
struct Rewritten(Positions);

/// How one evaluation runs: its deadline, cancel, microtask queue and
/// result cap.
struct Evaluation<'a> {
    deadline: Instant,
    control: Option<&'a RunControl>,
    queue: Option<&'a v8::MicrotaskQueue>,
    max_result_bytes: usize,
}

fn evaluate<'s>(scope: &mut v8::PinScope<'s, '_>, code: &str, run: &Evaluation<'_>) -> Ended {
    v8::tc_scope!(let tc, scope);
    let script = match prepare(tc, code) {
        Ok(script) => script,
        Err(ended) => return ended,
    };
    let Some(value) = script.run(tc) else {
        return caught(tc);
    };
    let value = v8::Global::new(tc, value);
    conclude(tc, value, run)
}

/// Continues the run suspended in this heap: its elicitations settled with
/// `responses`, then on as any run, from the completion value it had.
fn resume<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    code: &str,
    responses: &str,
    run: &Evaluation<'_>,
) -> Ended {
    v8::tc_scope!(let tc, scope);
    // Compiled again, not run: a rewritten run's positions map its errors.
    if prepare(tc, code).is_err() {
        tc.reset();
    }
    let Some(value) = super::host::elicit::resume(tc, responses) else {
        if tc.has_caught() {
            return caught(tc);
        }
        return Ended::Threw(RunError::new(
            "ElicitError",
            "this heap holds no run waiting for input: it was resumed already, or it is not a suspended run's",
        ));
    };
    let value = v8::Global::new(tc, value);
    conclude(tc, value, run)
}

/// The code compiled as a script, rewritten where it awaits or imports at
/// top level (the rewrite's positions in a slot), or how the run ended.
fn prepare<'s>(
    tc: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    code: &str,
) -> Result<v8::Local<'s, v8::Script>, Ended> {
    let mut refused = None;
    // `String(await (p))` compiles as a script calling a function named
    // `await`; where the code awaits at top level read as a module, it is
    // run as top-level await, as Node's REPL does. Only code that compiled
    // is parsed for that: code that did not goes to the rewrite anyway.
    let script =
        compile(tc, code).filter(|_| !(code.contains("await") && repl::awaits_at_top_level(code)));
    let Some(script) = script.or_else(|| {
        // In a classic script `await` is an identifier and `import` a
        // syntax error, and top-level await fails in several ways ("await
        // is only valid…", "missing ) after argument list" for
        // `f(await g())`, …). Code that mentions either is rewritten (an
        // async function for `await`, bindings for `import`); if that
        // fails too, the error shown is the code's own, with its own line
        // numbers.
        let asynchronous = code.contains("await");
        if !asynchronous && !code.contains("import") && !code.contains("export") {
            return None;
        }
        tc.reset();
        let wrapped = match repl::wrap(code, asynchronous) {
            Ok(wrapped) => wrapped,
            Err(not_a_run) => {
                refused = Some(not_a_run);
                return None;
            }
        };
        match compile(tc, &wrapped.js) {
            Some(script) => {
                tc.set_slot(Rewritten(wrapped.positions));
                Some(script)
            }
            None => {
                tc.reset();
                compile(tc, code)
            }
        }
    }) else {
        if let Some(not_a_run) = refused {
            return Err(Ended::Threw(RunError {
                name: "SyntaxError".into(),
                stack: Some(format!(
                    "SyntaxError: {}\n    at {SCRIPT_NAME}:{}:{}",
                    not_a_run.message, not_a_run.line, not_a_run.column
                )),
                message: not_a_run.message,
            }));
        }
        return Err(caught(tc));
    };
    Ok(script)
}

/// After the code's first turn: the event loop to its end, then the run
/// suspends (elicitations wait and nothing else is left) or its value is
/// rendered.
fn conclude(
    tc: &mut v8::PinnedRef<'_, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
    value: v8::Global<v8::Value>,
    run: &Evaluation<'_>,
) -> Ended {
    let value = v8::Local::new(tc, &value);
    let completion = v8::Local::<v8::Promise>::try_from(value).ok();
    if let Err(ended) = drain(tc, run, completion) {
        return ended;
    }
    if super::host::elicit::suspend(tc, value) {
        if tc.has_terminated() || tc.is_execution_terminating() {
            return Ended::Terminated;
        }
        return Ended::Suspended;
    }
    // Node's 'exit', to code that listens on `process`; what its listeners
    // queue still runs before the run ends, since a heap is taken empty.
    let exited = process_events::ended(tc, "exit")
        .and_then(|_| run_event_loop(tc, run.deadline, run.control, run.queue));
    if let Err(ended) = exited {
        return ended;
    }
    let mut warnings = rejections::warnings(tc, completion);
    let value = match v8::Local::<v8::Promise>::try_from(value) {
        Ok(promise) => match promise.state() {
            v8::PromiseState::Fulfilled => promise.result(tc),
            v8::PromiseState::Rejected => {
                let reason = promise.result(tc);
                let mut error = error_from(tc, reason, None);
                add_package_hint(tc, &mut error);
                return Ended::Threw(error);
            }
            v8::PromiseState::Pending => {
                warnings.push(
                    "the completion value is a promise that never settled: was an `await` missing? \
                     (`await p` gives the value once it settles; a promise waiting for an event that \
                     never comes never settles)"
                        .to_owned(),
                );
                value
            }
        },
        Err(_) => value,
    };
    let rendered = render_result(tc, value, run.max_result_bytes);
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Ended::Terminated;
    }
    Ended::Value { rendered, warnings }
}

fn compile<'s>(scope: &mut v8::PinScope<'s, '_>, code: &str) -> Option<v8::Local<'s, v8::Script>> {
    let source = v8::String::new(scope, code)?;
    let origin = layer::script_origin(scope, SCRIPT_NAME)?;
    v8::Script::compile(scope, source, Some(&origin))
}

/// The event loop until nothing is left, with `process`'s events where the
/// code listens: rejections nothing handled go to 'unhandledRejection'
/// listeners, and 'beforeExit' listeners may queue more work, as in Node.
fn drain(
    tc: &mut v8::PinScope<'_, '_>,
    run: &Evaluation<'_>,
    completion: Option<v8::Local<'_, v8::Promise>>,
) -> Result<(), Ended> {
    loop {
        run_event_loop(tc, run.deadline, run.control, run.queue)?;
        process_events::rejected(tc, completion)?;
        if !process_events::ended(tc, "beforeExit")? {
            return Ok(());
        }
        let alive = registration::pending(tc)
            || tc
                .get_slot::<Timers>()
                .is_some_and(|t| t.next_due().is_some());
        if !alive {
            return run_event_loop(tc, run.deadline, run.control, run.queue);
        }
    }
}

/// Runs microtasks, timers and request completions until nothing is left,
/// the deadline passes or an exception escapes.
fn run_event_loop(
    tc: &mut v8::PinScope<'_, '_>,
    deadline: Instant,
    control: Option<&RunControl>,
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
        for thrown in super::web::microtasks::take(tc) {
            let value = v8::Local::new(tc, &thrown.value);
            if !process_events::uncaught(tc, value)? {
                let mut error = thrown.error;
                add_package_hint(tc, &mut error);
                return Err(Ended::Threw(error));
            }
        }
        let waiting = registration::pending(tc);
        let next_timer = tc.get_slot::<Timers>().and_then(|timers| {
            if waiting {
                timers.next_due_any()
            } else {
                timers.next_due()
            }
        });
        if waiting {
            // Host work is pending work like timers: wait for whichever
            // comes first. A cancel ends the wait.
            let until = next_timer.unwrap_or(deadline).min(deadline);
            let next = tc
                .get_slot_mut::<HostWork>()
                .and_then(|work| work.next(until));
            if let Some(delivery) = next {
                delivery(tc);
                continue;
            }
            if control.is_some_and(RunControl::is_cancelled) {
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
        let Some(timer) = tc.get_slot_mut::<Timers>().and_then(Timers::pop) else {
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
                Ok(())
            } else {
                process_events::uncaught_in(inner)
            }
        };
        called?;
        if let Some(timers) = tc.get_slot_mut::<Timers>() {
            timers.finish(timer);
        }
    }
}
