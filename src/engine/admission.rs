//! Which runs execute now: the engine's runners (engine worker processes,
//! or isolate threads in process) are handed out in arrival order; past its
//! share a tenant takes a runner only while another stays free, so other
//! tenants always find one; and a run that finds none free waits a bounded
//! time, then is refused with a message that says why.
//! With more runners than cores, a short run starts at once while others'
//! long runs hold their runners: the cores are shared by the system's
//! scheduler, not by the order of arrival.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::capability::outcome::EngineError;

/// How runs are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Runs at once, all tenants together.
    pub runners: usize,
    /// Runs at once of one authenticated tenant; the anonymous namespace (no
    /// authentication, or a shared namespace) is one team and has no share.
    pub tenant_share: usize,
    /// Longest wait for a runner before the run is refused.
    pub wait: Duration,
}

/// The runners and the runs waiting for one.
#[derive(Debug)]
pub(crate) struct Admission {
    rules: Rules,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    by_tenant: HashMap<String, usize>,
    queue: VecDeque<Waiter>,
    next_id: u64,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    tenant: Option<String>,
    admit: oneshot::Sender<()>,
}

impl State {
    /// Whether a run of `tenant` may take a runner now: one is free, and the
    /// tenant is within its share or leaves another runner free for other
    /// tenants (a deployment with one tenant is not held to a share).
    fn fits(&self, rules: &Rules, tenant: Option<&str>) -> bool {
        if self.running >= rules.runners {
            return false;
        }
        let Some(tenant) = tenant else {
            return true;
        };
        self.by_tenant.get(tenant).copied().unwrap_or(0) < rules.tenant_share
            || self.running + 1 < rules.runners
    }

    fn take(&mut self, tenant: Option<&str>) {
        self.running += 1;
        if let Some(tenant) = tenant {
            *self.by_tenant.entry(tenant.to_owned()).or_default() += 1;
        }
    }

    fn give_back(&mut self, tenant: Option<&str>) {
        self.running -= 1;
        if let Some(tenant) = tenant
            && let Some(count) = self.by_tenant.get_mut(tenant)
        {
            *count -= 1;
            if *count == 0 {
                self.by_tenant.remove(tenant);
            }
        }
    }

    /// Hands free runners to the first waiters that fit, in order.
    fn admit_waiters(&mut self, rules: &Rules) {
        let mut i = 0;
        while i < self.queue.len() && self.running < rules.runners {
            if self.fits(rules, self.queue[i].tenant.as_deref()) {
                let waiter = self.queue.remove(i).expect("in range");
                self.take(waiter.tenant.as_deref());
                if waiter.admit.send(()).is_err() {
                    // It stopped waiting just now; its drop found it gone
                    // from the queue, so the runner comes back here.
                    self.give_back(waiter.tenant.as_deref());
                }
            } else {
                i += 1;
            }
        }
    }
}

/// A run's runner; handed back when dropped.
#[derive(Debug)]
pub(crate) struct Pass<'a> {
    admission: &'a Admission,
    tenant: Option<String>,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut state = self.admission.state();
        state.give_back(self.tenant.as_deref());
        state.admit_waiters(&self.admission.rules);
    }
}

/// A run in the queue; leaves it when dropped (the caller went away).
struct Queued<'a> {
    admission: &'a Admission,
    id: u64,
    tenant: Option<String>,
    /// A [`Pass`] now owns the runner.
    passed: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.passed {
            return;
        }
        let mut state = self.admission.state();
        if let Some(at) = state.queue.iter().position(|w| w.id == self.id) {
            state.queue.remove(at);
        } else {
            // Admitted as it stopped waiting: the runner goes to the next.
            state.give_back(self.tenant.as_deref());
            state.admit_waiters(&self.admission.rules);
        }
    }
}

impl Admission {
    pub(crate) fn new(rules: Rules) -> Self {
        Self {
            rules: Rules {
                runners: rules.runners.max(1),
                tenant_share: rules.tenant_share.max(1),
                wait: rules.wait,
            },
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every update leaves the counts and the queue whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A runner for a run of `tenant` (`None`: the anonymous namespace),
    /// once one is free and the tenant is within its share; or why not,
    /// after the longest wait.
    pub(crate) async fn enter(&self, tenant: Option<&str>) -> Result<Pass<'_>, EngineError> {
        let started = Instant::now();
        let (admitted, id) = {
            let mut state = self.state();
            // No waiter fits (each is admitted as soon as one does), so a run
            // that fits takes no one's turn.
            if state.fits(&self.rules, tenant) {
                state.take(tenant);
                return Ok(self.pass(tenant));
            }
            let (admit, admitted) = oneshot::channel();
            state.next_id += 1;
            let id = state.next_id;
            state.queue.push_back(Waiter {
                id,
                tenant: tenant.map(str::to_owned),
                admit,
            });
            (admitted, id)
        };
        let mut queued = Queued {
            admission: self,
            id,
            tenant: tenant.map(str::to_owned),
            passed: false,
        };
        let waited = tokio::time::timeout(self.rules.wait, admitted).await;
        let state = self.state();
        let still_queued = state.queue.iter().any(|w| w.id == id);
        if matches!(waited, Ok(Ok(()))) || !still_queued {
            queued.passed = true;
            drop(state);
            return Ok(self.pass(tenant));
        }
        let held = tenant.map(|t| state.by_tenant.get(t).copied().unwrap_or(0));
        drop(state);
        Err(EngineError::Busy {
            runners: self.rules.runners,
            waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            tenant_runs: held.filter(|held| *held >= self.rules.tenant_share),
        })
    }

    fn pass(&self, tenant: Option<&str>) -> Pass<'_> {
        Pass {
            admission: self,
            tenant: tenant.map(str::to_owned),
        }
    }

    /// Runs holding a runner now, for tests and logs.
    #[cfg(test)]
    fn running(&self) -> usize {
        self.state().running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(runners: usize, tenant_share: usize, wait_ms: u64) -> Admission {
        Admission::new(Rules {
            runners,
            tenant_share,
            wait: Duration::from_millis(wait_ms),
        })
    }

    #[tokio::test]
    async fn runs_past_the_runners_wait_and_are_refused_after_the_bound() {
        let admission = admission(2, 2, 50);
        let first = admission.enter(None).await.unwrap();
        let _second = admission.enter(None).await.unwrap();
        let refused = admission.enter(None).await.unwrap_err();
        assert!(
            matches!(
                refused,
                EngineError::Busy {
                    runners: 2,
                    tenant_runs: None,
                    ..
                }
            ),
            "{refused:?}"
        );
        let message = refused.to_string();
        assert!(message.contains("MCP_V8_ENGINE_WORKERS"), "{message}");
        assert!(message.contains("MCP_V8_QUEUE_WAIT_MS"), "{message}");
        drop(first);
        let _third = admission.enter(None).await.unwrap();
        assert_eq!(admission.running(), 2);
    }

    #[tokio::test]
    async fn past_its_share_a_tenant_never_takes_the_last_free_runner() {
        let admission = admission(3, 1, 50);
        let _a = admission.enter(Some("a")).await.unwrap();
        let _again = admission.enter(Some("a")).await.unwrap();
        assert!(
            admission.enter(Some("a")).await.is_err(),
            "one runner stays for others"
        );
        let _b = admission.enter(Some("b")).await.unwrap();
    }

    #[tokio::test]
    async fn a_tenant_past_its_share_waits_while_another_tenant_runs() {
        let admission = admission(2, 1, 50);
        let _a = admission.enter(Some("a")).await.unwrap();
        let refused = admission.enter(Some("a")).await.unwrap_err();
        assert!(
            matches!(
                refused,
                EngineError::Busy {
                    tenant_runs: Some(1),
                    ..
                }
            ),
            "{refused:?}"
        );
        assert!(
            refused.to_string().contains("MCP_V8_TENANT_RUNS"),
            "{refused}"
        );
        let _b = admission.enter(Some("b")).await.unwrap();
    }

    #[tokio::test]
    async fn a_freed_runner_goes_to_the_first_waiter_within_its_share() {
        let admission = admission(2, 1, 5_000);
        let _a = admission.enter(Some("a")).await.unwrap();
        let other = admission.enter(None).await.unwrap();
        let (a_again, b, ()) = tokio::join!(
            tokio::time::timeout(Duration::from_millis(300), admission.enter(Some("a"))),
            admission.enter(Some("b")),
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                drop(other);
            }
        );
        assert!(a_again.is_err(), "a waits: its one run is its share");
        assert!(b.is_ok(), "b, queued behind a, got the freed runner");
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_leaves_the_queue_and_loses_no_runner() {
        let admission = admission(1, 1, 5_000);
        let held = admission.enter(None).await.unwrap();
        let gave_up = tokio::time::timeout(Duration::from_millis(20), admission.enter(None)).await;
        assert!(gave_up.is_err(), "still waiting when dropped");
        drop(held);
        assert_eq!(admission.running(), 0);
        let _next = admission.enter(None).await.unwrap();
        assert_eq!(admission.running(), 1);
    }
}
