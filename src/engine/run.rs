//! The run core that every isolate path shares: the job and its result,
//! setting a run up on an isolate and taking it down, evaluation, the event
//! loop, and how a run ended (timeout, heap limit, cancellation, a throw).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::control::{RunControl, Target};
use super::memory::Budget;
use super::outcome::{RunError, RunStatus, cap_text};
use super::positions::{Positions, SCRIPT_NAME};
use super::rejections;
use super::repl;
use super::thrown::error_from;
use super::watchdog::Watchdog;
use super::web::{self, Rendered, RunSettings, Timers, render_result};
use crate::egress::{FetchConfig, FetchCount};
use crate::packages::PackageView;
use crate::upstream::{McpCount, UpstreamConfig};

/// How long the event loop waits for a request before looking at the
/// run's cancellation again.
const FETCH_WAIT_SLICE: Duration = Duration::from_millis(50);

/// How V8 treats compiled function code in a snapshot (see
/// `docs/performance.md` for the measurements behind the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeHandling {
    /// Keep compiled bytecode: bigger blobs, no recompilation after restore.
    Keep,
    /// Drop compiled code: smaller blobs, functions recompile lazily.
    Clear,
}

/// What an isolate thread is asked to do.
pub(crate) struct Job {
    pub code: String,
    /// Raw V8 payload to restore from, shared with the heap store's buffer
    /// so that handing it to a worker process copies it only into the pipe.
    pub restore: Option<Bytes>,
    /// `restore` went through [`super::web::before_snapshot`] (the
    /// prelude's heap, made by this process), so a plain isolate may
    /// restore it; any other heap is restored by a snapshot creator.
    pub plain_restore: bool,
    /// Create the isolate as a snapshot creator and return a blob on success.
    pub stateful: bool,
    pub timeout: Duration,
    pub heap_limit_bytes: usize,
    pub max_output_bytes: usize,
    /// Longest rendered result, applied where the run executes so that no
    /// larger one is copied further.
    pub max_result_bytes: usize,
    pub code_handling: CodeHandling,
    /// The caller's handle on the run (not sent to engine workers, whose
    /// process the pool stops instead).
    pub control: Option<Arc<RunControl>>,
    /// What `fetch` may reach; `None` (or an empty allow list): nothing.
    pub fetch: Option<Arc<FetchConfig>>,
    /// The upstream MCP servers `mcp` calls; `None`: none.
    pub mcp: Option<Arc<UpstreamConfig>>,
    /// The installed packages `import` and `require` may load.
    pub packages: Option<Arc<PackageView>>,
    /// Most module source one run may load, in bytes.
    pub max_module_bytes: usize,
    /// Where `/work`'s older files are read from; `None`: none exist.
    pub files: Option<Arc<dyn web::FileSource>>,
    /// Caps on `/work`.
    pub file_limits: web::FileLimits,
    /// Files the call brings (path, bytes), written to `/work` first.
    pub inputs: Vec<(String, Bytes)>,
    /// Instead of running `code`, answer the restored heap's `/work` tree
    /// as JSON in `result` (for `resources/read`).
    pub list_files: bool,
}

impl Job {
    /// A stateless run of `code` with the library's default limits.
    #[cfg(test)]
    pub(crate) fn fresh(code: String) -> Job {
        Job {
            code,
            restore: None,
            plain_restore: false,
            stateful: false,
            timeout: Duration::from_secs(30),
            heap_limit_bytes: 64 * 1024 * 1024,
            max_output_bytes: 1024 * 1024,
            max_result_bytes: 1024 * 1024,
            code_handling: CodeHandling::Keep,
            control: None,
            fetch: None,
            mcp: None,
            packages: None,
            max_module_bytes: 64 * 1024 * 1024,
            files: None,
            file_limits: web::FileLimits::default(),
            inputs: Vec::new(),
            list_files: false,
        }
    }

    /// Whether the run creates or restores a snapshot, which decides where
    /// it may run (see [`READ_ONLY_HEAP`]); the others run on a plain isolate.
    pub(crate) fn touches_snapshots(&self) -> bool {
        self.stateful || self.restore.is_some()
    }

    fn cancelled(&self) -> bool {
        self.control.as_ref().is_some_and(|c| c.is_cancelled())
    }
}

/// What came out of the isolate.
pub(crate) struct JobResult {
    pub status: RunStatus,
    pub result: Option<String>,
    /// The completion value as a REPL displays it (completed runs).
    pub display: Option<String>,
    pub output: String,
    pub error: Option<RunError>,
    pub warnings: Vec<String>,
    /// The new raw V8 payload, for completed stateful runs only.
    pub blob: Option<Vec<u8>>,
    /// What the run fetched, when it fetched anything.
    pub fetches: Option<FetchCount>,
    /// What the run called upstream, when it called anything.
    pub mcp_calls: Option<McpCount>,
    /// Bytes of the files a completed stateful run wrote and left in
    /// `/work`, by key: stored before its heap.
    pub files: Vec<(String, Bytes)>,
    /// The run's `display()` blocks, in call order.
    pub displays: Vec<web::Displayed>,
}

impl JobResult {
    /// A run that ended `failed` with `error` before it produced anything.
    pub(crate) fn failed(error: RunError) -> Self {
        Self {
            status: RunStatus::Failed,
            result: None,
            display: None,
            output: String::new(),
            error: Some(error),
            warnings: Vec::new(),
            blob: None,
            fetches: None,
            mcp_calls: None,
            files: Vec::new(),
            displays: Vec::new(),
        }
    }

    /// The result of a run the caller cancelled: whatever it got to, the
    /// caller no longer wants it, so nothing is kept. The one place that
    /// decides what a cancellation leaves.
    pub(crate) fn cancel(&mut self) {
        self.status = RunStatus::Cancelled;
        self.result = None;
        self.display = None;
        self.blob = None;
        self.files.clear();
        self.displays.clear();
        self.warnings.clear();
        self.error = Some(RunError::new(
            "CancelledError",
            "the run was cancelled by the client and terminated; nothing was stored",
        ));
    }

    /// Every position the caller reads, mapped through `positions` to the
    /// code before that step.
    pub(crate) fn remap(&mut self, positions: &Positions) {
        if let Some(error) = &mut self.error {
            positions.remap_in_place(&mut error.message, true);
            if let Some(stack) = &mut error.stack {
                positions.remap_in_place(stack, true);
            }
        }
        for warning in &mut self.warnings {
            positions.remap_in_place(warning, false);
        }
        positions.remap_in_place(&mut self.output, false);
    }

    /// `self`, cancelled when `control` says the caller cancelled the run.
    pub(crate) fn cancelled_by(mut self, control: Option<&RunControl>) -> Self {
        if control.is_some_and(RunControl::is_cancelled) {
            self.cancel();
        }
        self
    }
}

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
        .stack_size(8 * 1024 * 1024)
}

/// An isolate's memory bounds: its heap limit, watched by the
/// near-heap-limit callback (which reaches this through a raw pointer), and
/// the budget its `ArrayBuffer` allocator counts against.
pub(super) struct HeapGuard {
    handle: OnceLock<v8::IsolateHandle>,
    hit: AtomicBool,
    budget: Arc<Budget>,
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
const HEADROOM_SLACK: usize = 64 * 1024 * 1024;

impl HeapGuard {
    /// Bounds of `heap_limit_bytes` on the heap and as many on the
    /// buffers outside it.
    pub(super) fn new(heap_limit_bytes: usize) -> Box<Self> {
        Box::new(Self {
            handle: OnceLock::new(),
            hit: AtomicBool::new(false),
            budget: Budget::new(heap_limit_bytes),
            ceiling: if super::watchdog::ends_process() {
                heap_limit_bytes
                    .saturating_mul(HEADROOM_FACTOR)
                    .saturating_add(HEADROOM_SLACK)
            } else {
                usize::MAX
            },
        })
    }

    /// The parameters of an isolate these bounds apply to.
    pub(super) fn params(&self, heap_limit_bytes: usize) -> v8::CreateParams {
        v8::CreateParams::default()
            .heap_limits(0, heap_limit_bytes)
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
        web::arm_modules(isolate);
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

/// A run set up on an isolate: its families' state in slots, the caller's
/// cancel pointed at the isolate, the watchdog armed.
pub(super) struct Started {
    deadline: Instant,
}

/// Sets `job` up on `isolate`, bounded by `guard`; [`settle`] takes it down.
pub(super) fn start(
    isolate: &mut v8::OwnedIsolate,
    job: &Job,
    watchdog: &mut Watchdog,
    guard: &HeapGuard,
) -> Started {
    let deadline = Instant::now() + job.timeout;
    isolate.remove_slot::<Rewritten>();
    rejections::begin(isolate);
    web::begin_run(
        isolate,
        RunSettings {
            max_output_bytes: job.max_output_bytes,
            budget: guard.budget.clone(),
            control: job.control.clone(),
            fetch: job.fetch.as_deref(),
            mcp: job.mcp.as_deref(),
            deadline,
            modules: web::ModuleRun::new(
                job.packages.clone(),
                job.max_module_bytes,
                job.fetch.clone(),
                deadline,
                job.control.clone(),
            ),
            files: web::FilesRun::new(job.files.clone(), deadline, job.file_limits),
        },
    );
    if let Some(control) = &job.control {
        control.attach(Target::Isolate(isolate.thread_safe_handle()));
    }
    watchdog.arm(job.timeout);
    Started { deadline }
}

impl Started {
    /// Evaluates the job's code in the current context, `queue` being the
    /// context's own microtask queue if it has one.
    pub(super) fn evaluate(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        job: &Job,
        queue: Option<&v8::MicrotaskQueue>,
    ) -> Ended {
        if job.list_files {
            return match web::tree(scope) {
                Some(tree) => Ended::Value {
                    rendered: Rendered {
                        result: Some(web::tree_json(&tree)),
                        display: String::new(),
                    },
                    warnings: Vec::new(),
                },
                None => Ended::Threw(RunError::new(
                    "HeapError",
                    "this heap's /work was made by a version before file resources; run any code on it to list its files",
                )),
            };
        }
        if !job.inputs.is_empty() {
            v8::tc_scope!(let tc, scope);
            web::write_inputs(tc, &job.inputs);
            if let Some(exception) = tc.exception() {
                let mut error = error_from(tc, exception, None);
                error.message = format!(
                    "the files argument could not be written to /work, so the code did not run: {}",
                    error.message
                );
                return Ended::Threw(error);
            }
        }
        evaluate(
            scope,
            &job.code,
            self.deadline,
            job.control.as_deref(),
            queue,
            job.max_result_bytes,
        )
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
    let fired = watchdog.disarm();
    if let Some(control) = &job.control {
        control.detach();
    }
    let cancelled = job.cancelled();
    let mut classified = if cancelled {
        Classified::Cancelled
    } else {
        classify(ended, guard.hit(), fired, job.timeout, job.heap_limit_bytes)
    };
    if guard.budget.take_refused() {
        classified.name_buffer_limit(guard.budget.limit());
    }
    (classified, fired || cancelled)
}

/// The run's result, with the families' state taken out of `isolate`, its
/// texts within the job's caps.
pub(super) fn finish(isolate: &mut v8::Isolate, job: &Job, classified: Classified) -> JobResult {
    rejections::end(isolate);
    let rewritten = isolate.remove_slot::<Rewritten>();
    let ended = web::end_run(isolate);
    let mut result = JobResult {
        status: RunStatus::Completed,
        result: None,
        display: None,
        output: ended.output,
        error: None,
        warnings: Vec::new(),
        blob: None,
        fetches: ended.fetches,
        mcp_calls: ended.mcp_calls,
        files: ended.files,
        displays: ended.displays,
    };
    match classified {
        Classified::Ended(status, error) => {
            result.status = status;
            result.error = Some(error);
        }
        Classified::Completed { rendered, warnings } => {
            let cap = |text: String| cap_text(text, job.max_result_bytes, "result");
            result.result = rendered.result.map(cap);
            result.display = Some(cap(rendered.display));
            result.warnings = warnings;
        }
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

/// How evaluation ended, before termination causes are told apart.
pub(super) enum Ended {
    Value {
        rendered: Rendered,
        warnings: Vec<String>,
    },
    Threw(RunError),
    Terminated,
    DeadlineBeforeTimer,
}

/// How a run ended, causes told apart.
pub(super) enum Classified {
    Completed {
        rendered: Rendered,
        warnings: Vec<String>,
    },
    /// Failed, timed out or out of memory, with the error saying which.
    Ended(RunStatus, RunError),
    Cancelled,
}

impl Classified {
    pub(super) fn completed(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }

    /// A completed run whose heap cannot be snapshotted: failed, saying
    /// what it keeps and what to do.
    pub(super) fn unsnapshottable(kept: &str) -> Self {
        Self::Ended(
            RunStatus::Failed,
            RunError::new(
                "SnapshotError",
                format!(
                    "the run completed, but its heap keeps {kept}, which V8 cannot write into a \
                     heap snapshot; nothing was stored and the input heap is unchanged. Make such \
                     objects inside functions when they are needed, or drop them before the run \
                     ends (delete the global, or set it to null)"
                ),
            ),
        )
    }

    /// After the allocator refused a buffer: V8's bare "Array buffer
    /// allocation failed" says nothing of why, so the error (or, when the
    /// code caught it, a warning) names the limit and what counts.
    fn name_buffer_limit(&mut self, limit: usize) {
        let why = format!(
            "ArrayBuffer memory (typed arrays, Blob, TextEncoder output, structuredClone \
             copies, fetch bodies) is limited to {} MiB per run, the run's heap_memory_max_mb; \
             an allocation past it was refused",
            limit / (1024 * 1024)
        );
        match self {
            Self::Ended(RunStatus::Failed, error)
                if error.message.contains("Array buffer allocation failed") =>
            {
                error.message = format!("{}: {why}", error.message);
            }
            // V8 may treat a refused buffer as the heap running out, which
            // terminates the run (and cannot be caught).
            Self::Ended(RunStatus::OutOfMemory, error) => {
                error.message = format!("{why}, and the run was terminated");
            }
            // V8 retries a refused buffer after collecting garbage, so a
            // run may complete past a refusal; or the code caught it.
            Self::Completed { warnings, .. } => warnings.push(format!(
                "{why} once (the code caught the RangeError, or V8 freed memory and retried)"
            )),
            _ => {}
        }
    }
}

/// `fired`: the deadline passed before the run was taken down, so whatever
/// value it had is not its answer (a run past its deadline never completes).
fn classify(
    ended: Ended,
    out_of_memory: bool,
    fired: bool,
    timeout: Duration,
    heap_limit_bytes: usize,
) -> Classified {
    match ended {
        _ if out_of_memory => Classified::Ended(
            RunStatus::OutOfMemory,
            RunError::new(
                "OutOfMemoryError",
                format!(
                    "the JavaScript heap reached its {} MiB limit and the run was terminated",
                    heap_limit_bytes / (1024 * 1024)
                ),
            ),
        ),
        Ended::Terminated | Ended::DeadlineBeforeTimer => timed_out(timeout),
        Ended::Value { .. } | Ended::Threw(_) if fired => timed_out(timeout),
        Ended::Value { rendered, warnings } => Classified::Completed { rendered, warnings },
        Ended::Threw(error) => Classified::Ended(RunStatus::Failed, error),
    }
}

fn timed_out(timeout: Duration) -> Classified {
    Classified::Ended(
        RunStatus::TimedOut,
        RunError::new(
            "TimeoutError",
            format!(
                "execution did not finish within {} ms and was terminated",
                timeout.as_millis()
            ),
        ),
    )
}

fn evaluate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    code: &str,
    deadline: Instant,
    control: Option<&RunControl>,
    queue: Option<&v8::MicrotaskQueue>,
    max_result_bytes: usize,
) -> Ended {
    v8::tc_scope!(let tc, scope);
    let mut refused = None;
    let Some(script) = compile(tc, code).or_else(|| {
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
            return Ended::Threw(RunError {
                name: "SyntaxError".into(),
                stack: Some(format!(
                    "SyntaxError: {}\n    at {SCRIPT_NAME}:{}:{}",
                    not_a_run.message, not_a_run.line, not_a_run.column
                )),
                message: not_a_run.message,
            });
        }
        return caught(tc);
    };
    let Some(value) = script.run(tc) else {
        return caught(tc);
    };
    let value = v8::Global::new(tc, value);
    if let Err(ended) = run_event_loop(tc, deadline, control, queue) {
        return ended;
    }
    let value = v8::Local::new(tc, &value);
    let completion = v8::Local::<v8::Promise>::try_from(value).ok();
    let mut warnings = rejections::warnings(tc, completion);
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
    let rendered = render_result(tc, value, max_result_bytes);
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Ended::Terminated;
    }
    Ended::Value { rendered, warnings }
}

fn compile<'s>(scope: &mut v8::PinScope<'s, '_>, code: &str) -> Option<v8::Local<'s, v8::Script>> {
    let source = v8::String::new(scope, code)?;
    let origin = web::script_origin(scope, SCRIPT_NAME)?;
    v8::Script::compile(scope, source, Some(&origin))
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
        let fetching = web::host_pending(tc);
        let next_timer = tc.get_slot::<Timers>().and_then(|timers| {
            if fetching {
                timers.next_due_any()
            } else {
                timers.next_due()
            }
        });
        if fetching {
            // Requests and upstream calls are pending work like timers:
            // wait for whichever comes first, in slices so a cancel is
            // seen while waiting.
            let until = next_timer
                .unwrap_or(deadline)
                .min(deadline)
                .min(Instant::now() + FETCH_WAIT_SLICE);
            if let Some(arrived) = web::wait_host(tc, until) {
                web::deliver_host(tc, arrived);
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
                None
            } else {
                Some(caught(inner))
            }
        };
        if let Some(ended) = called {
            return Err(ended);
        }
        if let Some(timers) = tc.get_slot_mut::<Timers>() {
            timers.finish(timer);
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
