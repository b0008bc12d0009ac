//! The plain-isolate path: stateless runs on isolates of V8's built-in
//! snapshot. A [`PlainIsolate`] serves one run (a cold run) or many one
//! after another, and a [`WarmPool`] keeps one ready on each of its threads.

use std::sync::{Arc, Mutex, PoisonError, mpsc};

use tokio::sync::oneshot;

use crate::engine::contract::{Job, JobResult};
use crate::engine::heap_limit::HeapLimit;
use crate::engine::layer;
use crate::engine::run::watchdog::Watchdog;
use crate::engine::run::{self, HeapGuard, READ_ONLY_HEAP, thread_builder};
use crate::engine::services::HostServices;

/// A plain isolate on V8's built-in snapshot that serves stateless runs one
/// after another, each in a context of its own made before the run arrives
/// (the host functions installed), as `node:vm` does. Nothing a run leaves
/// reaches the next: globals and built-ins belong to the context, microtasks
/// to the context's own queue, output and timers to the run's slot. An
/// isolate that was terminated (timeout, heap limit) is not reused, nor one
/// that has served [`PlainIsolate::MAX_RUNS`] runs or holds more than a quarter of
/// its heap limit, so what the isolate itself keeps (compiled code, the
/// `Symbol.for` registry) stays bounded. Fields drop in order: contexts and
/// queues while the isolate lives, the guard after the isolate's last
/// callback, the lock last.
pub(crate) struct PlainIsolate {
    /// The next run's context and its queue. Dropping the handle after the
    /// run is safe: in the `v8` crate's default build (`v8_cppgc_microtask_queue`)
    /// the context keeps its queue alive.
    next: Option<(v8::Global<v8::Context>, v8::MicrotaskQueueHandle)>,
    watchdog: Watchdog,
    isolate: v8::OwnedIsolate,
    guard: Box<HeapGuard>,
    heap_limit: HeapLimit,
    runs: usize,
    /// A termination reached the isolate (the watchdog fired, or one was
    /// pending when the run ended): it serves no other run.
    terminated: bool,
    _shared: parking_lot::RwLockReadGuard<'static, ()>,
}

impl PlainIsolate {
    /// Runs one isolate serves before it is replaced.
    pub(crate) const MAX_RUNS: usize = 256;

    pub(crate) fn new(heap_limit: HeapLimit) -> Self {
        crate::engine::run::platform::init();
        let shared = READ_ONLY_HEAP.read_recursive();
        let guard = HeapGuard::new(heap_limit);
        let mut isolate = v8::Isolate::new(guard.params());
        guard.arm(&mut isolate);
        isolate.set_slot(layer::MakesCodeCaches);
        let watchdog = Watchdog::new(isolate.thread_safe_handle());
        let mut warm = Self {
            next: None,
            watchdog,
            isolate,
            guard,
            heap_limit,
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
            layer::install_host(scope, global);
            layer::install(scope, global);
            v8::Global::new(scope, context)
        };
        (context, queue)
    }

    /// The heap limit the isolate was made with.
    pub(crate) fn heap_limit(&self) -> HeapLimit {
        self.heap_limit
    }

    /// Runs a stateless job in the prepared context.
    pub(crate) fn run(&mut self, job: &Job, services: &HostServices) -> JobResult {
        let (context, queue) = match self.next.take() {
            Some(next) => next,
            None => self.new_context(),
        };
        self.runs += 1;
        let started = run::start(
            &mut self.isolate,
            job,
            services,
            &mut self.watchdog,
            &self.guard,
        );
        let classified = {
            v8::scope!(let scope, &mut self.isolate);
            let context = v8::Local::new(scope, context);
            let scope = &mut v8::ContextScope::new(scope, context);
            let ended = started.evaluate(scope, job, Some(&queue));
            let (classified, terminated) = run::settle(ended, job, &mut self.watchdog, &self.guard);
            self.terminated = terminated || scope.is_execution_terminating();
            classified
        };
        run::finish(&mut self.isolate, job, classified)
    }

    /// Whether the isolate may serve another run; if so, its next context is
    /// made now.
    pub(crate) fn renew(&mut self) -> bool {
        if self.terminated || self.runs >= Self::MAX_RUNS || self.guard.hit() {
            return false;
        }
        let stats = self.isolate.get_heap_statistics();
        let quarter = self.heap_limit.bytes() / 4;
        if stats.used_heap_size() > quarter || self.guard.external_bytes() > quarter {
            return false;
        }
        self.next = Some(self.new_context());
        true
    }
}

/// Threads that each keep a [`PlainIsolate`] ready, so a stateless run
/// starts at its code: creating the context, and the isolate when one is
/// replaced, happen between runs instead of inside one. Only for processes
/// where no isolate ever creates or restores a snapshot (a stateless server,
/// or one whose snapshots go to worker processes): an idle warm isolate
/// holds the shared read-only heap, which such isolates need exclusively.
#[derive(Debug)]
pub(crate) struct WarmPool {
    jobs: mpsc::Sender<Queued>,
}

/// A job, the host's services for it, and where its result goes.
type Queued = (Job, HostServices, oneshot::Sender<JobResult>);

type Queue = Arc<Mutex<mpsc::Receiver<Queued>>>;

impl WarmPool {
    /// `threads` runners, each with an isolate of `heap_limit` ready;
    /// a job asking for another limit gets a new isolate on a runner.
    pub(crate) fn new(threads: usize, heap_limit: HeapLimit) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel();
        let queue: Queue = Arc::new(Mutex::new(queue));
        for _ in 0..threads.max(1) {
            let queue = queue.clone();
            thread_builder()
                .name("v8-warm".into())
                .spawn(move || warm_runner(&queue, heap_limit))?;
        }
        Ok(Self { jobs })
    }

    /// Runs a stateless job on the next free runner.
    pub(crate) async fn run(&self, job: Job, services: HostServices) -> Option<JobResult> {
        let (done, result) = oneshot::channel();
        self.jobs.send((job, services, done)).ok()?;
        result.await.ok()
    }
}

/// Ends when the pool is dropped. A panicking run loses its answer (the
/// caller sees the engine thread fail) and its isolate, not the runner.
fn warm_runner(queue: &Queue, heap_limit: HeapLimit) {
    let mut kept: Option<PlainIsolate> = None;
    loop {
        let mut warm = kept.take().unwrap_or_else(|| PlainIsolate::new(heap_limit));
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((job, services, done)) = next else {
            return;
        };
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if job.heap_limit.mb() == heap_limit.mb() {
                warm.run(&job, &services)
            } else {
                PlainIsolate::new(job.heap_limit).run(&job, &services)
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
