//! Cancels of upstream calls whose runs went away: each dropped call sends
//! the upstream `notifications/cancelled` on the host runtime, counted
//! until it is sent, so that an engine worker can wait for them before it
//! is ended (rmcp's own guard queues the cancel with nothing to wait on).

use std::sync::Arc;

use rmcp::service::{Peer, RoleClient};

/// The `notifications/cancelled` of abandoned calls, sent on the runtime
/// and counted until sent.
#[derive(Debug)]
pub(super) struct Cancellations {
    runtime: tokio::runtime::Handle,
    pending: std::sync::atomic::AtomicUsize,
    sent: tokio::sync::Notify,
}

impl Cancellations {
    pub(super) fn new(runtime: tokio::runtime::Handle) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            pending: std::sync::atomic::AtomicUsize::new(0),
            sent: tokio::sync::Notify::new(),
        })
    }

    /// Returns once no cancel is left to send.
    pub(super) async fn sent(&self) {
        loop {
            let sent = self.sent.notified();
            tokio::pin!(sent);
            sent.as_mut().enable();
            if self.pending.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            sent.await;
        }
    }
}

/// A call whose answer is awaited: dropped before it came, it sends the
/// upstream `notifications/cancelled` (what rmcp's own guard does, but
/// counted, so that it can be waited for).
pub(super) struct Abandoned {
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) id: rmcp::model::RequestId,
    pub(super) cancellations: Arc<Cancellations>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let cancellations = self.cancellations.clone();
        cancellations
            .pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let notification =
            rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(
                Some(self.id.clone()),
                Some("request abandoned by the caller".to_owned()),
            ));
        let runtime = cancellations.runtime.clone();
        runtime.spawn(async move {
            // A closed connection has nothing left to cancel.
            let _ = peer.send_notification(notification.into()).await;
            if cancellations
                .pending
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
                == 1
            {
                cancellations.sent.notify_waiters();
            }
        });
    }
}
