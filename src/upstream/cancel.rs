//! Upstream calls in flight, and the cancels of those whose runs went away:
//! a dropped call sends the upstream `notifications/cancelled` on the host
//! runtime, and counts as in flight until it is sent, so that an engine
//! worker can wait for its cancelled run's calls before it is ended
//! (rmcp's own guard queues the cancel with nothing to wait on).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{CancelledNotification, CancelledNotificationParam, RequestId};
use rmcp::service::{Peer, RoleClient};

/// The calls of one host's upstreams that are neither answered nor
/// cancelled at the upstream yet.
#[derive(Debug)]
pub(super) struct Cancellations {
    runtime: tokio::runtime::Handle,
    in_flight: AtomicUsize,
    settled: tokio::sync::Notify,
}

impl Cancellations {
    pub(super) fn new(runtime: tokio::runtime::Handle) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            in_flight: AtomicUsize::new(0),
            settled: tokio::sync::Notify::new(),
        })
    }

    /// Returns once every call is answered or its cancel sent. A run's
    /// calls are dropped on the runtime after the run ends, so they are
    /// counted from their start, not from their drop.
    pub(super) async fn sent(&self) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            settled.await;
        }
    }

    fn settle_one(&self) {
        if self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.settled.notify_waiters();
        }
    }
}

/// A call whose answer is awaited, in flight from [`Abandoned::start`]:
/// dropped before [`Abandoned::answered`], it sends the upstream
/// `notifications/cancelled` (what rmcp's own guard does, but counted).
pub(super) struct Abandoned {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
    cancellations: Arc<Cancellations>,
    /// The upstream task the request waits on (a task-only tool's), which
    /// `tasks/cancel` ends too.
    task: Option<String>,
}

impl Abandoned {
    /// Call `id` on `peer`, in flight from now.
    pub(super) fn start(
        peer: &Peer<RoleClient>,
        id: RequestId,
        cancellations: &Arc<Cancellations>,
    ) -> Self {
        cancellations.in_flight.fetch_add(1, Ordering::SeqCst);
        Self {
            peer: Some(peer.clone()),
            id,
            cancellations: cancellations.clone(),
            task: None,
        }
    }

    /// Dropped unanswered, also cancels the upstream task `task`.
    pub(super) fn with_task(mut self, task: String) -> Self {
        self.task = Some(task);
        self
    }

    /// The answer came: nothing to cancel.
    pub(super) fn answered(mut self) {
        self.peer = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            self.cancellations.settle_one();
            return;
        };
        let cancellations = self.cancellations.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("request abandoned by the caller".to_owned()),
        ));
        let task = self.task.take();
        let runtime = cancellations.runtime.clone();
        runtime.spawn(async move {
            // A closed connection has nothing left to cancel.
            let _ = peer.send_notification(notification.into()).await;
            if let Some(task) = task {
                use rmcp::model::{ClientRequest, CustomRequest};
                let cancel =
                    CustomRequest::new("tasks/cancel", Some(serde_json::json!({ "taskId": task })));
                let _ = tokio::time::timeout(
                    std::time::Duration::from_secs(2),
                    peer.send_request(ClientRequest::CustomRequest(cancel)),
                )
                .await;
            }
            cancellations.settle_one();
        });
    }
}
