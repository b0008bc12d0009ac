//! A session-era call whose run asks the person (2025-11-25): the run is
//! suspended as a heap exactly as on 2026-07-28, and the process holding
//! the call's stream plays the client's side of the multi round-trip
//! itself. It sends each `elicitation/create` as a request on the stream
//! and waits for the client's replies (POSTed to this process, or to
//! another one that relays them through the session store, as cancels
//! are); the call (`super::call`) retries with them, until the run ends. docs/protocol.md, "A run
//! that asks".

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::clock::unix_now;
use crate::protocol::jsonrpc::{Reply, RequestId};
use crate::protocol::mcp::InputRequiredResult;
use crate::session::{McpSessionId, SessionStore};
use crate::tools::RunControl;

/// How often a process waiting for a reply asks the session store whether
/// another process received it.
const REPLY_POLL_EVERY: Duration = Duration::from_secs(2);

/// How long before the host's deadline (a Lambda invocation's end) the
/// wait gives up, so the answer that says so still reaches the client.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

/// The most bytes of a reply relayed through the session store: more than
/// any response a run is given ([`crate::elicit::MAX_RESPONSE_BYTES`]) and
/// well inside a DynamoDB item.
const MAX_RELAYED_BYTES: usize = 256 * 1024;

/// How a reply travels through the store: a JSON-RPC response's `result`
/// or `error`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Relayed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// A client's reply: the `result`, or the `error` it answered instead.
type ClientReply = Result<Value, Value>;

/// Requests this process sent on a call's stream and waits to hear back
/// about, by transport session and the id it gave them.
#[derive(Debug, Default)]
pub(super) struct Replies {
    waiting: Mutex<HashMap<(McpSessionId, RequestId), oneshot::Sender<ClientReply>>>,
}

impl Replies {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(McpSessionId, RequestId), oneshot::Sender<ClientReply>>>
    {
        // Each insert and remove leaves the map whole.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits, from now on, for the reply to `id` of `session`.
    fn expect(&self, session: &McpSessionId, id: &RequestId) -> oneshot::Receiver<ClientReply> {
        let (sender, receiver) = oneshot::channel();
        self.lock().insert((session.clone(), id.clone()), sender);
        receiver
    }

    fn forget(&self, session: &McpSessionId, id: &RequestId) {
        self.lock().remove(&(session.clone(), id.clone()));
    }
}

/// Hands the client's `reply` to request `id` of `session` to the call
/// waiting for it: in this process, or through the session store for the
/// process that holds its stream, kept there `kept_secs` (as long as a
/// suspended run waits).
pub(super) async fn deliver(
    replies: &Replies,
    store: &dyn SessionStore,
    session: &McpSessionId,
    id: RequestId,
    reply: Reply,
    kept_secs: i64,
) {
    let answered = match &reply {
        Reply::Result(raw) => serde_json::from_str(raw.get()).map(Ok),
        Reply::Error(raw) => serde_json::from_str(raw.get()).map(Err),
    };
    let Ok(answered) = answered else {
        tracing::warn!("ignored a reply that is not JSON");
        return;
    };
    let waiting = replies.lock().remove(&(session.clone(), id.clone()));
    if let Some(waiting) = waiting {
        tracing::info!("a reply reached the call waiting for it");
        let _ = waiting.send(answered);
        return;
    }
    let relayed = match answered {
        Ok(result) => Relayed {
            result: Some(result),
            error: None,
        },
        Err(error) => Relayed {
            result: None,
            error: Some(error),
        },
    };
    let mut text = serde_json::to_string(&relayed).expect("JSON values serialize");
    if text.len() > MAX_RELAYED_BYTES {
        // The run refuses a response this large anyway; say so instead of
        // storing it.
        text = json!({ "error": { "code": crate::protocol::jsonrpc::code::INVALID_PARAMS,
            "message": format!("the reply was {} bytes; at most {} are relayed", text.len(), MAX_RELAYED_BYTES) } })
        .to_string();
    }
    let kept_until = unix_now() + kept_secs;
    match store
        .relay_reply(session, &request_key(&id), &text, kept_until)
        .await
    {
        Ok(()) => tracing::info!("relayed a reply through the session store"),
        Err(e) => tracing::warn!(error = %e, "could not relay a reply through the session store"),
    }
}

/// How a relayed reply names its request in the store: the id's JSON.
fn request_key(id: &RequestId) -> String {
    serde_json::to_string(id).expect("request ids serialize")
}

/// What a call that asks needs besides the call itself.
pub(super) struct Conversation<'a> {
    /// The call's transport session, whose store relays the replies that
    /// reach another process.
    pub(super) session: &'a McpSessionId,
    pub(super) store: &'a dyn SessionStore,
    /// When the host stops waiting for the answer (a Lambda invocation's
    /// deadline).
    pub(super) deadline: Option<SystemTime>,
    /// How long a suspended run waits, in seconds.
    pub(super) kept_secs: i64,
    pub(super) replies: &'a Replies,
    pub(super) control: &'a RunControl,
    /// The call's stream.
    pub(super) events: &'a mpsc::Sender<Bytes>,
}

impl Conversation<'_> {
    /// Sends each request of `asked` on the stream and waits for every
    /// reply: the `inputResponses` of the retry, or why there are none
    /// (the call's answer, as a tool error).
    pub(super) async fn ask(
        &self,
        asked: &InputRequiredResult,
    ) -> Result<Map<String, Value>, String> {
        let session = self.session;
        let mut pending = Vec::new();
        for (key, request) in &asked.input_requests {
            let id = RequestId::String(format!("elicit-{}", uuid::Uuid::new_v4()));
            let receiver = self.replies.expect(session, &id);
            let message = json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": request.get("method").cloned().unwrap_or(Value::Null),
                "params": request.get("params").cloned().unwrap_or(Value::Null),
            });
            let event = Bytes::from(format!("event: message\ndata: {message}\n\n"));
            pending.push((key.clone(), id, receiver));
            if self.events.send(event).await.is_err() {
                break;
            }
        }
        tracing::info!(
            requests = pending.len(),
            "a session-era call asks the person on its stream"
        );
        let mut responses = Map::new();
        let mut outcome = Ok(());
        for (key, id, receiver) in pending {
            if outcome.is_ok() {
                match self.reply(&id, receiver).await {
                    Ok(response) => {
                        responses.insert(key, response);
                    }
                    Err(why) => outcome = Err(why),
                }
            }
            self.replies.forget(session, &id);
        }
        outcome.map(|()| responses)
    }

    /// The reply to `id`: from `receiver` when the client answered this
    /// process, or from the store when it answered another.
    async fn reply(
        &self,
        id: &RequestId,
        mut receiver: oneshot::Receiver<ClientReply>,
    ) -> Result<Value, String> {
        let (session, store) = (self.session, self.store);
        let wait = self.longest_wait();
        let until = tokio::time::Instant::now() + wait;
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + REPLY_POLL_EVERY,
            REPLY_POLL_EVERY,
        );
        let key = request_key(id);
        let answered = loop {
            tokio::select! {
                answered = &mut receiver => match answered {
                    Ok(answered) => break answered,
                    Err(_) => return Err("the call stopped waiting for the person".into()),
                },
                () = self.events.closed() => {
                    return Err("the client closed the call's stream while the person decided".into());
                }
                () = tokio::time::sleep_until(until) => {
                    return Err(format!(
                        "the person did not answer within {} s, so the run waits no longer (its \
                         suspended heap expires unused); call run_js again to ask again",
                        wait.as_secs()
                    ));
                }
                _ = ticker.tick() => {
                    if self.control.is_cancelled() {
                        return Err("the call was cancelled while the person decided".into());
                    }
                    match store.relayed_reply(session, &key, unix_now()).await {
                        Ok(Some(text)) => match serde_json::from_str::<Relayed>(&text) {
                            Ok(Relayed { result: Some(result), .. }) => break Ok(result),
                            Ok(Relayed { error, .. }) => break Err(error.unwrap_or(Value::Null)),
                            Err(e) => tracing::warn!(error = %e, "a relayed reply does not read"),
                        },
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "could not look for a relayed reply"),
                    }
                }
            }
        };
        Ok(match answered {
            Ok(result) => result,
            Err(error) => {
                // A client that cannot or will not answer (its callback
                // failed): the run hears that the person did not answer.
                tracing::info!(%error, "the client answered an elicitation with an error");
                json!({ "action": "cancel" })
            }
        })
    }

    /// How long the call waits for the person: as long as a suspended run
    /// is kept, and never past the host's deadline.
    fn longest_wait(&self) -> Duration {
        let kept = Duration::from_secs(self.kept_secs.max(1).unsigned_abs());
        match self.deadline {
            Some(deadline) => deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default()
                .saturating_sub(DEADLINE_MARGIN)
                .min(kept),
            None => kept,
        }
    }
}

/// The call's params with the retry's `inputResponses` and `requestState`
/// (a task's requests have none: the task names the run).
pub(super) fn retry_params(
    params: Option<&RawValue>,
    responses: Map<String, Value>,
    state: &str,
) -> Box<RawValue> {
    let mut params: Map<String, Value> = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    params.insert("inputResponses".into(), Value::Object(responses));
    if !state.is_empty() {
        params.insert("requestState".into(), Value::String(state.to_owned()));
    }
    serde_json::value::to_raw_value(&params).expect("JSON values serialize")
}
