//! The one event source of a run's pending host work: `fetch` requests,
//! `mcp` calls, file reads and modules by URL run on the host's runtime and
//! report on one channel, which the run's event loop waits on (and a native
//! that needs one answer before it returns, such as `readFileSync`). A
//! cancel wakes the wait; the run's deadline bounds it. Nothing polls.

use std::any::Any;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Instant;

/// What settles a completed piece of work in the isolate (resolves its
/// promise), run by the event loop on the isolate's thread.
pub(crate) type Delivery = Box<dyn FnOnce(&mut v8::PinScope<'_, '_>) + Send>;

enum Event {
    Deliver(Delivery),
    /// The output of [`HostWork::block_on`]'s work, by its number.
    Answer(u64, Box<dyn Any + Send>),
    /// The run was cancelled: stop waiting.
    Wake,
}

/// The sending side of a run's host work: cheap to clone, handed to the
/// tasks that do it.
#[derive(Clone)]
pub(crate) struct WorkSink(Sender<Event>);

impl std::fmt::Debug for WorkSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkSink")
    }
}

impl WorkSink {
    /// Hands `settle` to the run, to be called on its thread. A run that
    /// has ended drops it.
    pub(crate) fn deliver(&self, settle: impl FnOnce(&mut v8::PinScope<'_, '_>) + Send + 'static) {
        let _ = self.0.send(Event::Deliver(Box::new(settle)));
    }

    /// Ends the run's current wait (a cancel).
    pub(crate) fn wake(&self) {
        let _ = self.0.send(Event::Wake);
    }
}

/// Why [`HostWork::block_on`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The run's time ran out.
    Deadline,
    /// The caller cancelled the run.
    Cancelled,
}

/// A run's receiving side (an isolate slot, set by the run core for the
/// length of one run).
pub(crate) struct HostWork {
    sink: WorkSink,
    events: Receiver<Event>,
    /// Deliveries that arrived while a native waited for its own answer,
    /// for the event loop, in order.
    held: VecDeque<Delivery>,
    runtime: tokio::runtime::Handle,
    deadline: Instant,
    next_answer: u64,
    woken: bool,
}

impl HostWork {
    /// The host work of a run that ends at `deadline`, done on `runtime`.
    pub(crate) fn new(runtime: tokio::runtime::Handle, deadline: Instant) -> Self {
        let (sender, events) = channel();
        Self {
            sink: WorkSink(sender),
            events,
            held: VecDeque::new(),
            runtime,
            deadline,
            next_answer: 0,
            woken: false,
        }
    }

    pub(crate) fn sink(&self) -> WorkSink {
        self.sink.clone()
    }

    /// When the run's time is up.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The next delivery, waiting until `until` (never past the deadline)
    /// at most; `None` when that time came or the run was woken.
    pub(crate) fn next(&mut self, until: Instant) -> Option<Delivery> {
        if let Some(held) = self.held.pop_front() {
            return Some(held);
        }
        let until = until.min(self.deadline);
        loop {
            if self.woken {
                return None;
            }
            let left = until.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Deliver(delivery)) => return Some(delivery),
                Ok(Event::Wake) => self.woken = true,
                // The answer of work whose waiter gave up.
                Ok(Event::Answer(..)) => {}
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Runs `work` on the host's runtime and waits for its output, for a
    /// native that answers synchronously; deliveries that arrive meanwhile
    /// wait for the event loop. Gives up (aborting `work`) at the run's
    /// deadline or its cancel.
    pub(crate) fn block_on<T: Send + 'static>(
        &mut self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, Interrupted> {
        self.next_answer += 1;
        let number = self.next_answer;
        let sink = self.sink.0.clone();
        let task = self.runtime.spawn(async move {
            let _ = sink.send(Event::Answer(number, Box::new(work.await)));
        });
        let answer = loop {
            if self.woken {
                break Err(Interrupted::Cancelled);
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Answer(n, value)) if n == number => {
                    break value
                        .downcast::<T>()
                        .map(|value| *value)
                        .map_err(|_| Interrupted::Cancelled);
                }
                Ok(Event::Answer(..)) => {}
                Ok(Event::Deliver(delivery)) => self.held.push_back(delivery),
                Ok(Event::Wake) => self.woken = true,
                Err(_) => break Err(Interrupted::Deadline),
            }
        };
        task.abort();
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn an_answer_comes_back_and_deliveries_meanwhile_are_kept_in_order() {
        let rt = runtime();
        let mut work = HostWork::new(rt.handle().clone(), Instant::now() + Duration::from_secs(5));
        let sink = work.sink();
        sink.deliver(|_| {});
        sink.deliver(|_| {});
        let got = work.block_on(async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            7
        });
        assert_eq!(got, Ok(7));
        assert!(work.next(Instant::now()).is_some());
        assert!(work.next(Instant::now()).is_some());
        assert!(work.next(Instant::now()).is_none());
    }

    #[test]
    fn a_wake_ends_a_wait_at_once_and_the_deadline_bounds_it() {
        let rt = runtime();
        let mut work = HostWork::new(
            rt.handle().clone(),
            Instant::now() + Duration::from_secs(60),
        );
        let sink = work.sink();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            sink.wake();
        });
        let started = Instant::now();
        let got = work.block_on(std::future::pending::<()>());
        assert_eq!(got, Err(Interrupted::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(
            work.next(Instant::now() + Duration::from_secs(60))
                .is_none()
        );

        let mut work = HostWork::new(
            rt.handle().clone(),
            Instant::now() + Duration::from_millis(50),
        );
        assert_eq!(
            work.block_on(std::future::pending::<()>()),
            Err(Interrupted::Deadline)
        );
    }
}
