//! The timeout of a run: a thread per isolate that terminates the run when
//! its deadline passes, and keeps terminating it until the run is taken
//! down: code that V8 hands back control to after a termination (a getter
//! the result's rendering calls, a `toJSON`) is stopped again at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How often a run past its deadline is terminated again.
const REFIRE: Duration = Duration::from_millis(5);

/// How long a run past its deadline is given to say where it is (an
/// interrupt runs at the code's next stack check) before it is terminated.
const LOCATE: Duration = Duration::from_millis(20);

/// Where a run's code was when its deadline passed: line and column of the
/// frame nearest the top in the run's own script.
type Position = Arc<Mutex<Option<(usize, usize)>>>;

/// How long past its deadline a run may stay inside native code that no
/// termination reaches before an engine worker ends its own process.
pub(crate) const STUCK_AFTER: Duration = Duration::from_secs(1);

/// What an engine worker writes on stderr as its last line when it ends
/// itself for a stuck run; the server reads it to say why the run ended.
pub(crate) const STUCK_WORDS: &str = "mcp-v8-lambda engine worker: a run stayed in native code past its deadline; ending the process";

/// Set once by an engine worker: its process serves one run at a time for
/// a server that replaces it, so a run that cannot be stopped ends it.
static ENDS_PROCESS: AtomicBool = AtomicBool::new(false);

/// Makes every watchdog of this process end it when a run is stuck past
/// its deadline by [`STUCK_AFTER`]. Only for engine workers: a server
/// process must never end for one run.
pub(crate) fn end_process_when_stuck() {
    ENDS_PROCESS.store(true, Ordering::SeqCst);
}

/// Whether this process is an engine worker, which a server replaces: a
/// run that cannot be stopped, or that needs more heap than its headroom,
/// may end it.
pub(crate) fn ends_process() -> bool {
    ENDS_PROCESS.load(Ordering::SeqCst)
}

fn end_stuck_process() -> ! {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{STUCK_WORDS}");
    let _ = stderr.flush();
    // SAFETY: _exit ends the process without running destructors or
    // atexit handlers, which other threads (the isolate's) may be inside.
    #[allow(unsafe_code)]
    unsafe {
        libc::_exit(70)
    }
}

/// Terminates the isolate's run when its timeout passes, unless disarmed
/// first. One thread per isolate, armed for each run: a warm isolate serves
/// many runs, and a thread spawned and joined per run cost more than the
/// run. Arming and disarming only take a lock; neither waits for the thread.
pub(crate) struct Watchdog {
    shared: Arc<(Mutex<Countdown>, Condvar)>,
    position: Position,
    thread: Option<thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Countdown {
    deadline: Option<Instant>,
    /// When the thread will look again on its own (`None`: only when woken).
    wakes_at: Option<Instant>,
    fired: bool,
    /// The run was asked where it is (once per deadline).
    located: bool,
    closed: bool,
}

impl Watchdog {
    pub(crate) fn new(handle: v8::IsolateHandle) -> Self {
        let shared = Arc::new((Mutex::new(Countdown::default()), Condvar::new()));
        let watched = shared.clone();
        let position: Position = Arc::default();
        let located = position.clone();
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
                        Some(_) if !countdown.located => {
                            // First where the code is, for the message.
                            countdown.located = true;
                            let data = Arc::into_raw(located.clone()).cast_mut().cast();
                            if !handle.request_interrupt(locate, data) {
                                // SAFETY: the isolate is gone and will not
                                // call `locate`; the pointer is ours again.
                                #[allow(unsafe_code)]
                                drop(unsafe {
                                    Arc::from_raw(
                                        data.cast_const().cast::<Mutex<Option<(usize, usize)>>>(),
                                    )
                                });
                            }
                            countdown.wakes_at = Some(Instant::now() + LOCATE);
                            wake.wait_timeout(countdown, LOCATE)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0
                        }
                        Some(deadline) => {
                            // Under the lock, so a disarm that returned has
                            // already cleared the deadline. The deadline
                            // stays: until the run is disarmed, anything it
                            // runs is terminated again.
                            handle.terminate_execution();
                            countdown.fired = true;
                            if ends_process() && deadline.elapsed() >= STUCK_AFTER {
                                end_stuck_process();
                            }
                            countdown.wakes_at = Some(Instant::now() + REFIRE);
                            wake.wait_timeout(countdown, REFIRE)
                                .unwrap_or_else(PoisonError::into_inner)
                                .0
                        }
                    };
                }
            })
            .expect("spawning the watchdog thread");
        Self {
            shared,
            position,
            thread: Some(thread),
        }
    }

    /// Where the run was when its deadline passed, if it said in time.
    pub(crate) fn position(&self) -> Option<(usize, usize)> {
        *self.position.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn countdown(&self) -> std::sync::MutexGuard<'_, Countdown> {
        self.shared.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts down to `deadline`, the one the run's host work (fetch,
    /// timers) also ends at, so neither sees the run's time up first.
    pub(crate) fn arm(&mut self, deadline: Instant) {
        *self.position.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let mut countdown = self.countdown();
        countdown.deadline = Some(deadline);
        countdown.fired = false;
        countdown.located = false;
        // Runs with the same timeout arm later deadlines than the one the
        // thread sleeps towards: it finds the new one when it wakes, and the
        // run costs it no wake-up.
        let in_time = countdown.wakes_at.is_some_and(|at| at <= deadline);
        drop(countdown);
        if !in_time {
            self.shared.1.notify_one();
        }
    }

    /// Stops the countdown and says whether it had fired, and whether the
    /// deadline had passed (a fetch that ran out of time can end a run just
    /// before the thread wakes). After this returns no termination can
    /// arrive late (e.g. during snapshot creation).
    pub(crate) fn disarm(&mut self) -> Disarmed {
        let mut countdown = self.countdown();
        let overdue = countdown
            .deadline
            .take()
            .is_some_and(|deadline| Instant::now() >= deadline);
        Disarmed {
            fired: std::mem::take(&mut countdown.fired),
            overdue,
        }
    }
}

/// What [`Watchdog::disarm`] found.
pub(crate) struct Disarmed {
    /// A termination was sent to the isolate.
    pub(crate) fired: bool,
    /// The run's deadline had passed, fired or not.
    pub(crate) overdue: bool,
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

/// The context of the run going, an isolate slot while its code runs, for
/// [`locate`] (an interrupt has the isolate only). Removed before the run
/// ends: a snapshot must hold no handle.
pub(crate) struct RunContext(pub(crate) v8::Global<v8::Context>);

/// The interrupt a run past its deadline gets: writes where its code is
/// into the [`Position`] `data` holds (an `Arc` handed over by the
/// watchdog).
#[allow(unsafe_code)]
unsafe extern "C" fn locate(mut isolate: v8::UnsafeRawIsolatePtr, data: *mut std::ffi::c_void) {
    // SAFETY: `data` is the `Arc::into_raw` of the watchdog's request.
    let position: Position =
        unsafe { Arc::from_raw(data.cast_const().cast::<Mutex<Option<(usize, usize)>>>()) };
    // SAFETY: V8 calls interrupts on the isolate's own thread, inside it.
    let isolate = unsafe { v8::Isolate::ref_from_raw_isolate_ptr_mut(&mut isolate) };
    let Some(context) = isolate.get_slot::<RunContext>().map(|run| run.0.clone()) else {
        return;
    };
    v8::scope!(let scope, isolate);
    let context = v8::Local::new(scope, &context);
    let scope = &mut v8::ContextScope::new(scope, context);
    let Some(trace) = v8::StackTrace::current_stack_trace(scope, 16) else {
        return;
    };
    for index in 0..trace.get_frame_count() {
        let Some(frame) = trace.get_frame(scope, index) else {
            continue;
        };
        let ours = frame.get_script_name(scope).is_some_and(|name| {
            name.to_rust_string_lossy(scope) == crate::engine::capability::positions::SCRIPT_NAME
        });
        if ours {
            *position.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((frame.get_line_number(), frame.get_column()));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_ended_past_its_deadline_is_overdue_though_the_watchdog_had_not_fired() {
        crate::engine::run::platform::init();
        let isolate = v8::Isolate::new(Default::default());
        let mut watchdog = Watchdog::new(isolate.thread_safe_handle());

        watchdog.arm(Instant::now() + Duration::from_secs(3600));
        let disarmed = watchdog.disarm();
        assert!(!disarmed.fired && !disarmed.overdue);

        // The thread sleeps towards the first deadline; a run that ends past
        // a second, earlier one before the thread wakes is still overdue.
        watchdog.arm(Instant::now() + Duration::from_secs(3600));
        {
            let mut countdown = watchdog.countdown();
            countdown.deadline = Some(Instant::now());
        }
        let disarmed = watchdog.disarm();
        assert!(disarmed.overdue, "a deadline passed is overdue");
        assert!(!disarmed.fired, "the thread had not woken");
        drop(watchdog);
        drop(isolate);
    }
}
