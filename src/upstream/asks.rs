//! An upstream that asks the person during a call: code mode relays the
//! question as the run's own `elicit()` (so the run is suspended as a heap
//! like any run that asks) and carries the answer back.
//!
//! - An upstream of 2026-07-28 answers the call with an
//!   `InputRequiredResult`: its questions and an opaque `requestState`.
//!   The call is over; the answer is a new `tools/call` with
//!   `inputResponses` and the state ([`Resume::Retry`]), from any process.
//! - An upstream of the session era sends `elicitation/create` on the
//!   call's stream and waits for the reply inside its call. That call is
//!   held in the process that made it ([`Held`]) while the run waits
//!   suspended; the answer reaches it only there ([`Resume::Held`]).
//!
//! # Contract
//! - Only `elicitation/create` is relayed; an upstream asking for sampling
//!   or roots gets a failure that names the method.
//! - A held call lasts at most the suspended-run time
//!   (`MCP_V8_SUSPENDED_RUN_TTL_SECS`); dropping it cancels it at the
//!   upstream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::call::CallError;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ErrorData, ProgressNotificationParam,
    ProgressToken, RequestId,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

/// The one method relayed (the spec's name; the `elicit` module is above this
/// layer).
pub(super) const ELICIT: &str = "elicitation/create";

/// The key a session-era upstream's question has in the run's asks.
pub(super) const HELD_KEY: &str = "upstream";

/// How a call that asked goes on once the person answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Resume {
    /// A new `tools/call` with the answers and the upstream's state.
    #[serde(rename_all = "camelCase")]
    Retry {
        /// The upstream's `requestState`, echoed as it was.
        request_state: Option<String>,
    },
    /// The held call of this process named `token`.
    Held {
        /// Names the call in [`HeldCalls`].
        token: String,
    },
}

/// What an upstream asked: its requests (key → `{method, params}`) and how
/// the call goes on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asks {
    /// Key → `{"method": "elicitation/create", "params": …}`.
    pub requests: Map<String, Value>,
    /// How the answers reach the upstream.
    pub resume: Resume,
}

/// The person's answers to [`Asks`], with how the call goes on.
#[derive(Debug, Clone, Deserialize)]
pub struct Answers {
    /// As [`Asks::resume`] said.
    pub resume: Resume,
    /// Key → the elicitation result.
    pub responses: Map<String, Value>,
}

/// What a call gave: a value, or questions for the person.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamAnswer {
    /// The tool's value.
    Value(Value),
    /// The upstream asked.
    Asks(Asks),
}

/// A session-era upstream's question, for the call it came on.
pub(super) struct Question {
    pub(super) params: Value,
    pub(super) reply: oneshot::Sender<Value>,
}

/// Where a call's upstream progress goes: `"3/5 Analyzing"`, as said.
pub type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

/// Calls in progress: where each one's questions go, by request id, and
/// its progress, by progress token.
#[derive(Default)]
pub(super) struct Registry {
    questions: HashMap<RequestId, mpsc::UnboundedSender<Question>>,
    progress: HashMap<ProgressToken, ProgressSink>,
}

/// The registry a connection's client shares with its calls.
pub(super) type Listeners = Arc<Mutex<Registry>>;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every use leaves the map whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The client side of an upstream connection: declares elicitation (form
/// and URL) and hands each `elicitation/create` to the call whose stream
/// it came on.
#[derive(Clone)]
pub(super) struct Asker {
    pub(super) info: ClientConfig,
    pub(super) listeners: Listeners,
}

/// Registers a call for its questions and progress until dropped.
pub(super) struct Listening {
    listeners: Listeners,
    id: RequestId,
    token: ProgressToken,
}

impl Listening {
    pub(super) fn new(
        listeners: &Listeners,
        id: RequestId,
        token: ProgressToken,
        progress: Option<ProgressSink>,
    ) -> (Self, mpsc::UnboundedReceiver<Question>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        {
            let mut registry = lock(listeners);
            registry.questions.insert(id.clone(), sender);
            if let Some(progress) = progress {
                registry.progress.insert(token.clone(), progress);
            }
        }
        (
            Self {
                listeners: listeners.clone(),
                id,
                token,
            },
            receiver,
        )
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let mut registry = lock(&self.listeners);
        registry.questions.remove(&self.id);
        registry.progress.remove(&self.token);
    }
}

impl rmcp::ClientHandler for Asker {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = lock(&self.listeners)
            .progress
            .get(&params.progress_token)
            .cloned();
        if let Some(sink) = sink {
            let mut said = match params.total {
                Some(total) => format!("{}/{}", params.progress, total),
                None => params.progress.to_string(),
            };
            if let Some(message) = params.message.filter(|m| !m.is_empty()) {
                said.push(' ');
                said.push_str(&message.chars().take(200).collect::<String>());
            }
            sink(said);
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let listener = {
            let listeners = &lock(&self.listeners).questions;
            match context.extensions.get::<InboundStreamOrigin>() {
                Some(InboundStreamOrigin::OutboundRequest(id)) => listeners.get(id).cloned(),
                // Not on a call's stream: only a single call can be meant.
                _ if listeners.len() == 1 => listeners.values().next().cloned(),
                _ => None,
            }
        };
        let Some(listener) = listener else {
            return Err(ErrorData::invalid_request(
                "elicitation/create is answered only for a tools/call in progress, on its stream",
                None,
            ));
        };
        let params = serde_json::to_value(&request)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let (reply, answered) = oneshot::channel();
        listener
            .send(Question { params, reply })
            .map_err(|_| ErrorData::invalid_request("the call that asked has ended", None))?;
        let cancel = || ElicitResult::new(rmcp::model::ElicitationAction::Cancel);
        // A run that ended, or an answer that never came, is a cancel.
        match answered.await {
            Ok(answer) => Ok(serde_json::from_value(answer).unwrap_or_else(|_| cancel())),
            Err(_) => Ok(cancel()),
        }
    }
}

/// The questions of a 2026-07-28 `InputRequiredResult`, each as
/// `{method, params}`; only elicitations are relayed.
pub(super) fn asks_of(
    server: &str,
    tool: &str,
    result: rmcp::model::InputRequiredResult,
) -> Result<Asks, CallError> {
    let mut requests = serde_json::Map::new();
    for (key, request) in result.input_requests.unwrap_or_default() {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let method = request.get("method").and_then(Value::as_str).unwrap_or("?");
        if method != ELICIT {
            return Err(CallError::Failed {
                server: server.to_owned(),
                tool: tool.to_owned(),
                reason: format!(
                    "the upstream asked the client for {method}, which code mode does not \
                     relay (only {} reaches the person)",
                    ELICIT
                ),
            });
        }
        requests.insert(key, request);
    }
    Ok(Asks {
        requests,
        resume: Resume::Retry {
            request_state: result.request_state,
        },
    })
}

/// Session-era calls waiting, in this process, for the person's answer.
pub(super) struct HeldCalls<F> {
    calls: Mutex<HashMap<String, (Instant, F)>>,
    /// How long one is kept.
    hold_for: std::time::Duration,
}

impl<F> HeldCalls<F> {
    pub(super) fn new(hold_for: std::time::Duration) -> Self {
        Self {
            calls: Mutex::new(HashMap::new()),
            hold_for,
        }
    }

    /// Keeps `call` and names it; those past their time are dropped (each
    /// drop cancels its call at the upstream).
    pub(super) fn hold(&self, call: F) -> String {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let now = Instant::now();
        let expired: Vec<F> = {
            let mut calls = lock(&self.calls);
            let old: Vec<String> = calls
                .iter()
                .filter(|(_, (until, _))| *until <= now)
                .map(|(token, _)| token.clone())
                .collect();
            let expired = old
                .iter()
                .filter_map(|token| calls.remove(token).map(|(_, call)| call))
                .collect();
            calls.insert(token.clone(), (now + self.hold_for, call));
            expired
        };
        drop(expired);
        token
    }

    /// The call named `token`, while it is kept.
    pub(super) fn take(&self, token: &str) -> Option<F> {
        let (until, call) = lock(&self.calls).remove(token)?;
        (until > Instant::now()).then_some(call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_call_is_taken_once_and_not_past_its_time() {
        let held = HeldCalls::new(std::time::Duration::from_secs(60));
        let token = held.hold(7);
        assert_eq!(held.take(&token), Some(7));
        assert_eq!(held.take(&token), None);
        let brief = HeldCalls::new(std::time::Duration::ZERO);
        let token = brief.hold(8);
        assert_eq!(brief.take(&token), None);
    }

    #[test]
    fn resume_round_trips_as_code_sends_it_back() {
        for resume in [
            Resume::Retry {
                request_state: Some("s".into()),
            },
            Resume::Held { token: "t".into() },
        ] {
            let json = serde_json::to_value(&resume).unwrap();
            assert_eq!(serde_json::from_value::<Resume>(json).unwrap(), resume);
        }
    }
}
