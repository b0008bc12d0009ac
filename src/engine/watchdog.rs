//! The timeout of a run: a thread per isolate that terminates the run when
//! its deadline passes.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// Terminates the isolate's run when its timeout passes, unless disarmed
/// first. One thread per isolate, armed for each run: a warm isolate serves
/// many runs, and a thread spawned and joined per run cost more than the
/// run. Arming and disarming only take a lock; neither waits for the thread.
pub(super) struct Watchdog {
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
    pub(super) fn new(handle: v8::IsolateHandle) -> Self {
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

    pub(super) fn arm(&mut self, timeout: Duration) {
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
    pub(super) fn disarm(&mut self) -> bool {
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
