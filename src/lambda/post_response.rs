//! Lambda's post-response phase: the function answers a run before its heap
//! is stored, and an internal extension keeps the environment running until
//! the saves that invocation started are stored.
//!
//! Lambda returns a function's response as soon as the runtime posts it and
//! freezes the environment only once the runtime *and every registered
//! extension* wait on their `next` (the Extensions API; the time in between
//! is the `PostRuntimeExtensionsDuration` metric). So the runtime posts the
//! answer, [`MarkFinished`] records that it did, and the extension's INVOKE
//! handler ([`PostResponse::after`]) waits for that mark and then for every
//! save this process has going before it asks for the next event. Nothing
//! is left running when the environment freezes (docs/protocol.md, "Answer
//! first, save after").

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_http::lambda_runtime::LambdaInvocation;
use tokio::sync::Notify;

use crate::tools::Lifecycle;

/// The extension's name, unique within the function.
pub const EXTENSION_NAME: &str = "mcp-v8-saves";

/// How long before the invocation's deadline the extension stops waiting
/// and records every save still going as lost: room to write those records
/// (a DynamoDB write each) before Lambda ends the invocation.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(800);

/// How long the phase waits for heaps being restored when the invocation
/// names no deadline (`cargo lambda watch`): a restore of the largest heap.
const SETTLE_WITHOUT_DEADLINE: Duration = Duration::from_secs(60);

/// What a save still going at the invocation's deadline is recorded with.
pub const CUT_SHORT: &str = "the Lambda invocation that answered it reached its deadline before the heap \
was stored (the function's Timeout is too short for saving a heap of this size; raise it)";

/// Invocations whose response the runtime has posted, by request id, until
/// the extension has seen them.
#[derive(Debug, Default)]
pub struct Finished {
    ids: Mutex<HashSet<String>>,
    changed: Notify,
}

/// Most invocations kept unseen: past it the extension is not taking them
/// (an emulator that gives extensions no INVOKE), and they are forgotten
/// rather than kept for the life of the process.
const MOST_UNSEEN: usize = 1024;

impl Finished {
    fn finish(&self, request_id: String) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.len() >= MOST_UNSEEN {
            ids.clear();
        }
        ids.insert(request_id);
        drop(ids);
        self.changed.notify_waiters();
    }

    /// Waits until the runtime has posted the response of `request_id`.
    async fn wait(&self, request_id: &str) {
        loop {
            // Registered before looking, so a finish in between wakes it.
            let changed = self.changed.notified();
            if self
                .ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(request_id)
            {
                return;
            }
            changed.await;
        }
    }
}

/// The runtime's outermost layer: marks an invocation finished once its
/// response (or error) is posted, which is when this service's future ends.
/// It sees every invocation, also one whose event no handler could read.
#[derive(Clone)]
pub struct MarkFinished<S> {
    inner: S,
    finished: Option<Arc<Finished>>,
}

/// Makes [`MarkFinished`] services, marking in one [`Finished`]; with
/// `None` (no extension reads the marks) they mark nothing.
#[derive(Clone)]
pub struct MarkFinishedLayer(pub Option<Arc<Finished>>);

impl<S> tower::Layer<S> for MarkFinishedLayer {
    type Service = MarkFinished<S>;

    fn layer(&self, inner: S) -> MarkFinished<S> {
        MarkFinished {
            inner,
            finished: self.0.clone(),
        }
    }
}

type Posted = Result<(), lambda_http::Error>;

impl<S> tower::Service<LambdaInvocation> for MarkFinished<S>
where
    S: tower::Service<LambdaInvocation, Response = (), Error = lambda_http::Error>,
    S::Future: Send + 'static,
{
    type Response = ();
    type Error = lambda_http::Error;
    type Future = Pin<Box<dyn Future<Output = Posted> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
        let request_id = invocation.context.request_id.clone();
        let posted = self.inner.call(invocation);
        let finished = self.finished.clone();
        Box::pin(async move {
            let posted = posted.await;
            if let Some(finished) = finished {
                finished.finish(request_id);
            }
            posted
        })
    }
}

/// The internal extension's side: what it waits for after each INVOKE.
#[derive(Clone)]
pub struct PostResponse {
    /// Where the runtime marks the invocations it has answered.
    pub finished: Arc<Finished>,
    /// The saves of heaps answered for first, going in this process, and
    /// the engine whose workers finish restoring the heaps they keep ready
    /// before the phase ends, so that no freeze cuts a restore in two and
    /// the next call only runs.
    pub lifecycle: Lifecycle,
}

impl PostResponse {
    /// The post-response phase of `request_id`: returns once the runtime
    /// has posted its response, every save going in this process is
    /// stored and the heaps kept ready are restored, or, `DEADLINE_MARGIN`
    /// before `deadline_ms`, once the saves still going are recorded as
    /// lost ([`CUT_SHORT`]).
    pub async fn after(&self, request_id: &str, deadline_ms: u64) {
        let started = std::time::Instant::now();
        let work = async {
            self.finished.wait(request_id).await;
            self.lifecycle.saves().drain().await;
        };
        let deadline = UNIX_EPOCH + Duration::from_millis(deadline_ms);
        // `cargo lambda watch` sends a duration where an epoch time belongs:
        // a deadline already past is none.
        let left = deadline
            .duration_since(SystemTime::now())
            .ok()
            .map(|left| left.saturating_sub(DEADLINE_MARGIN));
        // A restore the deadline would cut short is left to the next call.
        let by = std::time::Instant::now() + left.unwrap_or(SETTLE_WITHOUT_DEADLINE);
        match left {
            None => work.await,
            Some(left) => {
                if tokio::time::timeout(left, work).await.is_err() {
                    tracing::error!(
                        request_id,
                        "the invocation's deadline is near and heaps answered for are still being stored: \
                         recording them as lost"
                    );
                    self.lifecycle.saves().abandon(CUT_SHORT);
                    // Each save writes its own record of the loss; they
                    // have the margin for it.
                    let _ =
                        tokio::time::timeout(DEADLINE_MARGIN / 2, self.lifecycle.saves().drain())
                            .await;
                }
            }
        }
        let ready_heaps_restored = self.lifecycle.settle_ready_heaps(by).await;
        tracing::debug!(
            request_id,
            post_response_ms = started.elapsed().as_millis() as u64,
            ready_heaps_restored,
            "post-response phase over"
        );
    }
}

/// Registers the internal extension (before the runtime's first `next`,
/// as Lambda requires) and returns its event loop, to run beside the
/// runtime. Its INVOKE handler never fails: a failure would end the
/// extension, and with it the environment.
pub async fn register(
    post: PostResponse,
) -> Result<impl Future<Output = Result<(), lambda_http::Error>>, lambda_http::Error> {
    use lambda_extension::{Extension, LambdaEvent, NextEvent, service_fn};
    let extension = Extension::new()
        // Internal extensions get INVOKE only.
        .with_events(&["INVOKE"])
        .with_events_processor(service_fn(move |event: LambdaEvent| {
            let post = post.clone();
            async move {
                if let NextEvent::Invoke(invoke) = event.next {
                    post.after(&invoke.request_id, invoke.deadline_ms).await;
                }
                Ok::<(), lambda_http::Error>(())
            }
        }))
        .with_extension_name(EXTENSION_NAME)
        .register()
        .await?;
    Ok(extension.run())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_phase_waits_for_the_runtimes_post_of_its_own_invocation() {
        use futures_util::FutureExt;
        let post = PostResponse {
            finished: Arc::default(),
            lifecycle: Lifecycle::default(),
        };
        // A deadline of 0 is none (as `cargo lambda watch` sends).
        let mut phase = std::pin::pin!(post.after("b", 0));
        post.finished.finish("a".into());
        assert!(
            (&mut phase).now_or_never().is_none(),
            "another invocation's post ended it"
        );
        post.finished.finish("b".into());
        assert!(
            (&mut phase).now_or_never().is_some(),
            "its own post did not end it"
        );
    }

    #[test]
    fn invocations_no_extension_sees_are_not_kept_for_ever() {
        let finished = Finished::default();
        for i in 0..=MOST_UNSEEN * 3 {
            finished.finish(format!("invocation-{i}"));
        }
        assert!(finished.ids.lock().unwrap().len() <= MOST_UNSEEN);
    }
}
