//! A run_js call that asks the person (2026-07-28, SEP-2322): a run that
//! suspended is answered with an `InputRequiredResult` whose
//! `requestState` this deployment signed, and the retry that carries the
//! responses resumes the run from its stored heap, wherever it lands.

use serde_json::{Map, Value, json};

use super::start::CallPlan;
use crate::elicit::{ElicitContext, Reach, RequestState, StateKey, Suspension};
use crate::engine::{RunOutcome, RunReport};
use crate::protocol::mcp::{CallToolResult, InputRequiredResult};
use crate::session::LogicalSession;
use crate::tools::toolbox::{CallContext, Instead, ToolAnswer, Toolbox};

/// Why a retry does not resume its run.
pub(super) enum NotResumed {
    /// The tool error to answer; nothing changed.
    Refused(String),
    /// The state is not one this server issued for this caller and call
    /// (forged, altered, another tenant's or call's): -32602, nothing
    /// changed.
    Invalid(String),
    /// The retry carries responses but no state: nothing names a run to
    /// continue, so the call starts over (and asks again).
    Unnamed,
    /// Some requests have no response: they are asked again, under the
    /// same state (SEP-2322: a missing response is requested again).
    AskAgain(InputRequiredResult),
}

impl From<String> for NotResumed {
    fn from(message: String) -> Self {
        Self::Refused(message)
    }
}

impl From<&str> for NotResumed {
    fn from(message: &str) -> Self {
        Self::Refused(message.to_owned())
    }
}

/// The `inputRequests` of `requests` (key → params).
fn input_requests(requests: &Map<String, Value>) -> Map<String, Value> {
    requests
        .iter()
        .map(|(key, params)| {
            let request = json!({ "method": crate::elicit::METHOD, "params": params });
            (key.clone(), request)
        })
        .collect()
}

/// A retry's suspended run, claimed for this call, with its responses
/// checked.
pub(super) struct Resumed {
    suspension: Suspension,
    responses: Map<String, Value>,
}

/// The deployment's request-state key, read from the store once per
/// process.
async fn state_key(toolbox: &Toolbox) -> Result<StateKey, String> {
    toolbox
        .state_key
        .get_or_try_init(|| async {
            toolbox
                .meta
                .state_key()
                .await
                .map(StateKey::new)
                .map_err(|e| format!("could not read the deployment's request-state key: {e}"))
        })
        .await
        .cloned()
}

/// The suspended run the retry `retry` of the call `digest` names
/// ([`call_digest`](crate::elicit::state::call_digest)) answers: its
/// state verified, its responses checked against what was asked, and the
/// run claimed, so that it continues once. `Err` changes nothing.
pub(super) async fn resume(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    retry: &crate::elicit::Retry,
    digest: &str,
) -> Result<Resumed, NotResumed> {
    let Some(sealed) = retry.request_state.as_deref() else {
        return Err(NotResumed::Unnamed);
    };
    let key = state_key(toolbox).await?;
    let now = crate::clock::unix_now();
    let state =
        RequestState::open(sealed, &key, context.tenant, digest, now).map_err(|e| match e {
            crate::elicit::state::StateError::Expired(_) => NotResumed::Refused(e.to_string()),
            _ => NotResumed::Invalid(e.to_string()),
        })?;
    let suspension = toolbox
        .meta
        .get_suspension(context.tenant, state.suspension, now)
        .await
        .map_err(|e| format!("could not read the suspended run: {e}"))?
        .ok_or(
            "the run this requestState names is no longer waiting (it expired); call the tool \
             again without requestState to start over",
        )?;
    let given = retry.input_responses.clone().unwrap_or_default();
    if suspension
        .requests
        .keys()
        .any(|key| !given.contains_key(key))
    {
        return Err(NotResumed::AskAgain(InputRequiredResult {
            input_requests: input_requests(&suspension.requests),
            request_state: sealed.to_owned(),
        }));
    }
    let mut responses = Map::new();
    let mut refused = Vec::new();
    for (key, request) in &suspension.requests {
        match crate::elicit::check_response(request, &given[key]) {
            Ok(checked) => {
                responses.insert(key.clone(), checked);
            }
            Err(why) => refused.push((key.clone(), why)),
        }
    }
    if !refused.is_empty() {
        use crate::elicit::state::MAX_REFUSALS;
        // The person is asked again, told why, under a state that counts
        // the refusals; past the bound the run decides.
        if state.refused + 1 < MAX_REFUSALS {
            let mut requests = input_requests(&suspension.requests);
            for (key, why) in &refused {
                if let Some(request) = requests.get_mut(key) {
                    crate::elicit::state::ask_again(request, why);
                }
            }
            let again = RequestState {
                refused: state.refused + 1,
                ..state
            };
            return Err(NotResumed::AskAgain(InputRequiredResult {
                input_requests: requests,
                request_state: again.seal(&key),
            }));
        }
        for (key, why) in refused {
            responses.insert(key, crate::elicit::state::refused_for_good(&why));
        }
    }
    let claimed = toolbox
        .meta
        .claim_suspension(context.tenant, suspension.id)
        .await
        .map_err(|e| format!("could not claim the suspended run: {e}"))?;
    if !claimed {
        return Err(NotResumed::Refused(format!(
            "this requestState was answered already: its run continued once (execution {}); \
             get_execution reads its outcome",
            suspension.execution_id
        )));
    }
    Ok(Resumed {
        suspension,
        responses,
    })
}

impl Resumed {
    /// The run of `planned` continues the suspended one: its heap, its
    /// session, the responses, and no `latest` to resolve.
    pub(super) fn plan(&self, planned: &mut CallPlan, reach: Reach) {
        let request = &mut planned.request;
        request.heap = Some(self.suspension.heap.clone());
        request.stateful = true;
        request.elicitation = ElicitContext {
            reach,
            asked_before: self.suspension.asked,
            responses: Some(self.responses.clone()),
        };
        planned.logical_session = self.suspension.session.clone();
        planned.latest = false;
        planned.implied_latest = false;
        planned.heap_omitted = false;
    }

    /// A round's outcome as the call's: the call's execution id and input
    /// heap, with what its earlier rounds printed and warned before.
    pub(super) fn carry(&self, outcome: &mut RunOutcome) {
        let earlier = &self.suspension;
        outcome.execution_id = earlier.execution_id;
        outcome.input_heap = earlier.input_heap.clone();
        outcome.output = format!("{}{}", earlier.output, outcome.output);
        let mut warnings = earlier.warnings.clone();
        warnings.append(&mut outcome.warnings);
        outcome.warnings = warnings;
    }

    /// Unix milliseconds: when the call's first round began.
    pub(super) fn started_ms(&self) -> i128 {
        i128::from(self.suspension.started_ms)
    }
}

/// The answer that asks the person.
pub(super) fn ask(asked: InputRequiredResult) -> ToolAnswer {
    instead(Instead::Ask(asked))
}

/// An answer that is not a tool result (its `result` is never read).
pub(super) fn instead(instead: Instead) -> ToolAnswer {
    ToolAnswer {
        result: CallToolResult::error(String::new()),
        json_len: None,
        instead: Some(instead),
    }
}

/// What the suspension of a call's run keeps besides its report.
pub(super) struct Asking<'a> {
    pub(super) code: &'a str,
    /// [`call_digest`](crate::elicit::state::call_digest) of the tool and code.
    pub(super) digest: &'a str,
    pub(super) session: Option<&'a LogicalSession>,
    /// Unix milliseconds: when the call's first round began.
    pub(super) started_ms: i128,
}

/// The answer of a round that suspended: the suspended run written where
/// any instance finds it, and what to ask with a state naming it.
pub(super) async fn suspended(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    report: &mut RunReport,
    call: Asking<'_>,
) -> ToolAnswer {
    let outcome = &report.outcome;
    let (Some(waiting), Some(heap)) = (report.waiting.take(), outcome.heap.clone()) else {
        return CallToolResult::error(format!(
            "the run asked the person, but its heap was not stored, so it cannot wait: {}",
            outcome
                .error
                .as_ref()
                .map_or("no heap", |error| error.message.as_str())
        ))
        .into();
    };
    let suspension = Suspension {
        id: uuid::Uuid::new_v4(),
        execution_id: outcome.execution_id,
        heap,
        input_heap: outcome.input_heap.clone(),
        session: call.session.cloned(),
        code: call.code.to_owned(),
        requests: waiting.requests,
        asked: waiting.asked,
        output: outcome.output.clone(),
        warnings: outcome.warnings.clone(),
        started_ms: i64::try_from(call.started_ms).unwrap_or(i64::MAX),
        expires_at: crate::clock::unix_now() + toolbox.suspended_run_ttl_secs,
    };
    let key = match state_key(toolbox).await {
        Ok(key) => key,
        Err(why) => return CallToolResult::error(why).into(),
    };
    let ttl = toolbox.suspended_run_ttl_secs.max(1);
    let window = crate::clock::unix_now().div_euclid(ttl);
    let limit = crate::elicit::MAX_SUSPENDED_PER_WINDOW;
    match toolbox
        .meta
        .admit_suspension(context.tenant, window, limit, (window + 2) * ttl)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            return CallToolResult::error(format!(
                "the run asked the person, but {limit} runs of this caller already waited for \
                 answers within the last {} min, the most this server keeps: its work was not \
                 kept. Answer or drop the waiting ones (they expire), or ask in your reply",
                ttl / 60
            ))
            .into();
        }
        Err(e) => {
            return CallToolResult::error(format!(
                "the run asked the person, but it could not be suspended ({e}); nothing changed"
            ))
            .into();
        }
    }
    if let Err(e) = toolbox
        .meta
        .put_suspension(context.tenant, &suspension)
        .await
    {
        return CallToolResult::error(format!(
            "the run asked the person, but it could not be suspended ({e}); nothing changed"
        ))
        .into();
    }
    tracing::info!(
        suspension = %suspension.id,
        heap = suspension.heap.as_str(),
        requests = suspension.requests.len(),
        "a run asked the person and was suspended"
    );
    let state = RequestState {
        tenant: context.tenant.partition().to_owned(),
        suspension: suspension.id,
        call: call.digest.to_owned(),
        expires_at: suspension.expires_at,
        refused: 0,
    };
    ask(InputRequiredResult {
        input_requests: input_requests(&suspension.requests),
        request_state: state.seal(&key),
    })
}
