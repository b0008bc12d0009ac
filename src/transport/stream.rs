//! Long tool calls: the runs in flight (so `notifications/cancelled` and a
//! client that goes away can stop them), and the answer as a
//! `text/event-stream` of `notifications/progress` (for a call that carries
//! a progress token) and `notifications/message` (for one whose client asked
//! for log messages), followed by the result.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::clock::unix_now;
use crate::protocol::jsonrpc::{Notification, RequestId};
use crate::protocol::logging::{self, LoggingMessageParams};
use crate::protocol::mcp::{ProgressParams, method};
use crate::session::{McpSessionId, SessionStore};
use crate::tools::RunControl;

/// How often a streamed call reports progress while it runs: inside the
/// 5 s docs/protocol.md promises, and far inside the request timeouts
/// clients reset on progress.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// How often a call past its first seconds asks the session store whether
/// another process received its cancel: at most one read per this much run
/// time, and none for a call that ends sooner.
pub(crate) const CANCEL_POLL_EVERY: Duration = Duration::from_secs(5);

/// How long a relayed cancel is kept: longer than any run can last (the
/// longest timeout, and Lambda's 15-minute invocation).
const CANCEL_KEPT_SECS: i64 = 900;

/// Runs `call`, polling the session store every [`CANCEL_POLL_EVERY`] for a
/// cancel of request `id` that another process recorded, and cancelling
/// `control` when one is there. A store that fails only logs: the run goes
/// on as it would without the relay.
pub(super) async fn watched<F: Future>(
    call: F,
    store: &dyn SessionStore,
    session: &McpSessionId,
    id: &RequestId,
    control: &RunControl,
) -> F::Output {
    let request = request_key(id);
    tokio::pin!(call);
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + CANCEL_POLL_EVERY,
        CANCEL_POLL_EVERY,
    );
    loop {
        tokio::select! {
            output = &mut call => return output,
            _ = ticker.tick(), if !control.is_cancelled() => {
                match store.request_cancelled(session, &request, unix_now()).await {
                    Ok(true) => {
                        tracing::info!("a cancel relayed through the session store stopped the run");
                        control.cancel();
                    }
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "could not look for a relayed cancel"),
                }
            }
        }
    }
}

/// How a relayed cancel names its request in the store: the id's JSON.
fn request_key(id: &RequestId) -> String {
    serde_json::to_string(id).expect("request ids serialize")
}

/// Records a cancel this process could not deliver (the call runs in
/// another process, e.g. another Lambda instance), for that process's
/// [`watched`] to find.
pub(super) async fn relay_cancel(store: &dyn SessionStore, session: &McpSessionId, id: &RequestId) {
    let request = request_key(id);
    if let Err(e) = store
        .cancel_request(session, &request, unix_now() + CANCEL_KEPT_SECS)
        .await
    {
        tracing::warn!(error = %e, "could not relay a cancel through the session store");
    }
}

/// How the endpoint runs tool calls: the runs in flight, and whether an
/// answer may be a stream (not behind a buffering host: Lambda's
/// `BUFFERED` function URLs).
#[derive(Debug)]
pub(super) struct Calls {
    pub(super) inflight: Arc<InFlight>,
    pub(super) streaming: bool,
    /// Requests sent on calls' streams that wait for the client's reply.
    pub(super) replies: Arc<super::asking::Replies>,
}

/// Calls running in this process, by transport session and request id.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    runs: Mutex<HashMap<(McpSessionId, RequestId), Arc<RunControl>>>,
}

impl InFlight {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(McpSessionId, RequestId), Arc<RunControl>>> {
        // Each insert and remove leaves the map whole.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call; the registration cancels it when dropped before
    /// the call ended (the client went away) and forgets it either way.
    pub(super) fn register(
        self: &Arc<Self>,
        session: Option<(&McpSessionId, &RequestId)>,
    ) -> Registration {
        let control = Arc::new(RunControl::default());
        let key = session.map(|(session, id)| (session.clone(), id.clone()));
        if let Some(key) = &key {
            self.lock().insert(key.clone(), control.clone());
        }
        Registration {
            inflight: self.clone(),
            key,
            control,
        }
    }

    /// Cancels the call `id` of `session` when this process runs it; says
    /// whether it did.
    pub(super) fn cancel(&self, session: &McpSessionId, id: &RequestId) -> bool {
        let control = self.lock().get(&(session.clone(), id.clone())).cloned();
        match control {
            Some(control) => {
                control.cancel();
                true
            }
            None => false,
        }
    }
}

/// A registered call; see [`InFlight::register`].
#[derive(Debug)]
pub(super) struct Registration {
    inflight: Arc<InFlight>,
    key: Option<(McpSessionId, RequestId)>,
    control: Arc<RunControl>,
}

impl Registration {
    /// The call's control, for its run.
    pub(super) fn control(&self) -> &Arc<RunControl> {
        &self.control
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // A run that already ended has nothing to stop: its isolate is
        // detached from the control, so this only matters while it runs.
        self.control.cancel();
        if let Some(key) = self.key.take() {
            self.inflight.lock().remove(&key);
        }
    }
}

/// One server-sent event carrying a JSON-RPC message.
fn event(json: &str) -> Bytes {
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

/// What the run reported since the last call: its progress as
/// `notifications/progress` (with the call's progress `token`; without
/// one they are dropped), and its console lines as `notifications/message`
/// (only a call whose client asked for log messages keeps any).
async fn send_reports(control: &RunControl, token: Option<&Value>, events: &mpsc::Sender<Bytes>) {
    let reports = control.take_progress();
    if let Some(token) = token {
        for report in reports {
            let notification = Notification::new(
                method::PROGRESS,
                ProgressParams {
                    progress_token: token.clone(),
                    progress: report.progress,
                    total: report.total,
                    message: report.message,
                },
            );
            let json = serde_json::to_string(&notification).expect("notifications serialize");
            // A closed stream has cancelled the run; the call ends soon.
            let _ = events.send(event(&json)).await;
        }
    }
    for entry in control.take_log() {
        let message = Notification::new(
            logging::MESSAGE,
            LoggingMessageParams {
                level: crate::tools::wire_log_level(entry.level),
                logger: Some("console".to_owned()),
                data: Value::String(entry.text),
            },
        );
        let json = serde_json::to_string(&message).expect("notifications serialize");
        // A closed stream has cancelled the run; the call ends soon.
        let _ = events.send(event(&json)).await;
    }
}

/// The progress of a run so far.
fn progress(token: &Value, started: Instant, control: &RunControl) -> String {
    let elapsed = started.elapsed().as_secs_f64();
    let lines = control.console_lines();
    let notification = Notification::new(
        method::PROGRESS,
        ProgressParams {
            progress_token: token.clone(),
            progress: (elapsed * 10.0).round() / 10.0,
            total: None,
            message: Some({
                let mut message = format!(
                    "running for {elapsed:.0} s; {lines} console line{} so far",
                    if lines == 1 { "" } else { "s" }
                );
                // What an upstream tool the run waits on said last.
                if let Some(note) = control.note() {
                    message.push_str("; ");
                    message.push_str(&note);
                }
                message
            }),
        },
    );
    serde_json::to_string(&notification).expect("notifications serialize")
}

/// Answers a call as an event stream: with a progress `token`,
/// `notifications/progress` every [`PROGRESS_EVERY`] while `work` runs;
/// whatever `work` sends on the stream (requests to the client); then the
/// message `work` makes. The stream holds `registration`: a client that
/// closes it cancels the run.
pub(super) fn respond<W, F>(token: Option<Value>, registration: Registration, work: W) -> Response
where
    W: FnOnce(Arc<RunControl>, mpsc::Sender<Bytes>) -> F,
    F: Future<Output = Box<RawValue>> + Send + 'static,
{
    let control = registration.control().clone();
    let (events, received) = mpsc::channel::<Bytes>(4);
    let call = work(control.clone(), events.clone());
    // The request's span: the run records its fields there, and the line
    // below carries them (the request's own line was written when the
    // stream began).
    let span = tracing::Span::current();
    let task = async move {
        let started = Instant::now();
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer,
                // Once the run reports its own progress, only its values
                // go out: MCP requires each to be greater than the last.
                _ = ticker.tick(), if token.is_some() && !control.reports_progress() => {
                    // A closed stream has already cancelled the run (its
                    // registration went with it); the call ends soon.
                    if let Some(token) = &token {
                        let _ = events.send(event(&progress(token, started, &control))).await;
                    }
                }
                _ = control.reported() => send_reports(&control, token.as_ref(), &events).await,
            }
        };
        // A worker reports every line before its answer: none is left out.
        send_reports(&control, token.as_ref(), &events).await;
        let _ = events.send(event(answer.get())).await;
        tracing::info!(
            stream_ms = started.elapsed().as_millis() as u64,
            "streamed answer ended"
        );
    };
    tokio::spawn(tracing::Instrument::instrument(task, span));
    let body = futures_util::stream::unfold(
        (received, registration),
        |(mut received, registration)| async move {
            let next = received.recv().await?;
            Some((Ok::<_, Infallible>(next), (received, registration)))
        },
    );
    let mut response = (StatusCode::OK, Body::from_stream(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
