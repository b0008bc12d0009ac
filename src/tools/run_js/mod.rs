//! `run_js`: run JavaScript or TypeScript, optionally from a saved heap.
//! Its description (`description`), its arguments (`arguments`) and
//! their plan (`plan`), the run then its save (here), and the answer and
//! what it leaves behind (`answer`).

mod after;
mod answer;
mod arguments;
mod asking;
mod description;
mod start;

use self::answer::{Shape, record, with_displays};
use self::arguments::RunJsCall;
pub(super) use self::arguments::asked_duration;
pub(super) use self::description::describe;
use self::start::{fresh_start_warning, plan, resolve_latest};
use crate::observe::{self, Refusal};

use super::answer::budget::Kept;
use super::toolbox::{CallContext, Instead, ToolAnswer, Toolbox};
use crate::clock::rfc3339_millis as rfc3339;
use tracing::Instrument;

use super::saves;
use crate::engine::{Ran, RunOutcome, RunStatus, Saving, stored_in};
use crate::heap::HeapKey;
use crate::protocol::mcp::CallToolResult;

/// The shortest wait for earlier saves a warning tells the model of.
const SAID_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

pub(super) const NAME: &str = "run_js";

/// What a model is told to change for a run to be answered directly
/// rather than as a task (where a task could not start).
pub const ANSWERED_DIRECTLY_IF: &str = "a shorter execution_timeout_secs answers directly";

pub(super) async fn call(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    call: RunJsCall,
    structured: bool,
) -> ToolAnswer {
    match context.retry {
        Some(retry) if retry.request_state.is_none() && retry.input_responses.is_some() => {
            answered_up_front(toolbox, context, retry, call, structured).await
        }
        _ => call_once(toolbox, context, call, structured).await,
    }
}

/// A call whose `inputResponses` came without a `requestState` (SEP-2322
/// lets a client answer up front): the run starts fresh and, each time it
/// asks only what those responses answer (by key: `elicit-1`, `elicit-2`,
/// ...), it is resumed with them at once, as a retry naming its state
/// would resume it. Keys nothing asked for are ignored; a question they do
/// not answer, or answer with what its form refuses, goes to the client as
/// usual.
async fn answered_up_front(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    retry: &crate::elicit::Retry,
    call: RunJsCall,
    structured: bool,
) -> ToolAnswer {
    let given = retry.input_responses.clone().unwrap_or_default();
    let fresh = CallContext {
        retry: None,
        ..context
    };
    let mut answer = call_once(toolbox, fresh, call.clone(), structured).await;
    // Each round answers at least one key given, so there are no more
    // rounds than keys.
    for _ in 0..given.len() {
        let Some(Instead::Ask(asked)) = &answer.instead else {
            break;
        };
        // A response that would be refused (not an answer to its form) is
        // not used: the question goes to the client again.
        let answered = asked.input_requests.iter().all(|(key, request)| {
            let params = request.get("params").unwrap_or(request);
            given
                .get(key)
                .is_some_and(|response| crate::elicit::check_response(params, response).is_ok())
        });
        if !answered {
            break;
        }
        let next = crate::elicit::Retry {
            input_responses: Some(given.clone()),
            request_state: Some(asked.request_state.clone()),
        };
        let round = CallContext {
            retry: Some(&next),
            ..context
        };
        answer = Box::pin(call_once(toolbox, round, call.clone(), structured)).await;
    }
    answer
}

/// One round of a call: a fresh run, or the resumption of the suspended
/// run its retry names.
async fn call_once(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    call: RunJsCall,
    structured: bool,
) -> ToolAnswer {
    // The code as sent: the advice, the digest a retry is checked against.
    let code = call.args.code.clone();
    let digest = crate::elicit::state::call_digest(NAME, &code);
    if let Some(heap) = call.args.heap.as_deref()
        && let Some(message) = start::heap_given_as_run(toolbox, context, heap).await
    {
        return CallToolResult::error(message).into();
    }
    let mut planned = match plan(toolbox, context, call) {
        Ok(planned) => planned,
        Err(message) => return CallToolResult::error(message).into(),
    };
    // Whom a run of this call can ask; a retry resumes its suspended run.
    let reach = crate::elicit::Reach::of(
        context.elicitation,
        toolbox.stateless.then_some(crate::elicit::STATELESS),
    );
    let resumed = match context.retry {
        Some(retry) => match asking::resume(toolbox, context, retry, &digest).await {
            Ok(resumed) => Some(resumed),
            Err(asking::NotResumed::Refused(message)) => {
                return CallToolResult::error(message).into();
            }
            Err(asking::NotResumed::Invalid(message)) => {
                return asking::instead(Instead::InvalidParams(message));
            }
            Err(asking::NotResumed::AskAgain(asked)) => return asking::ask(asked),
            Err(asking::NotResumed::Unnamed) => None,
        },
        None => None,
    };
    match &resumed {
        Some(resumed) => resumed.plan(&mut planned, reach),
        None => planned.request.elicitation.reach = reach,
    }
    if planned.latest
        && let Err(message) = resolve_latest(toolbox, context, &mut planned, true).await
    {
        return CallToolResult::error(message).into();
    }
    let heap = planned.request.heap.as_ref().map(HeapKey::as_str);
    let span = tracing::Span::current();
    span.record("input_heap", heap);
    if let Some(name) = &planned.logical_session {
        span.record("logical_session", name.as_str());
    }
    let started = resumed
        .as_ref()
        .map_or_else(crate::clock::unix_now_millis, asking::Resumed::started_ms);
    // Kept to run again by key if the live heap went meanwhile.
    let again = planned.continued.is_some().then(|| planned.request.clone());
    let request = std::mem::take(&mut planned.request);
    let ran = match toolbox.engine.run_then_save(request).await {
        Err(crate::engine::EngineError::NotLive(_)) if again.is_some() => {
            planned.request = again.expect("kept above");
            planned.request.continues = None;
            planned.continued = None;
            if let Err(message) = resolve_latest(toolbox, context, &mut planned, false).await {
                return CallToolResult::error(message).into();
            }
            let request = std::mem::take(&mut planned.request);
            toolbox.engine.run_then_save(request).await
        }
        ran => ran,
    };
    let Ran { mut report, save } = match ran {
        Ok(ran) => ran,
        Err(e) => {
            observe::refused(match e {
                crate::engine::EngineError::Busy { .. } => Refusal::Busy,
                _ => Refusal::Bounds,
            });
            return CallToolResult::error(super::answer::advice::refused(&e)).into();
        }
    };
    observe::run_ended(
        "run_js",
        report.outcome.status.as_str(),
        std::time::Duration::from_millis(report.outcome.duration_ms),
        report.heap_used_bytes,
    );
    if let Some(resumed) = &resumed {
        resumed.carry(&mut report.outcome);
    }
    if report.outcome.status == RunStatus::InputRequired {
        let call = asking::Asking {
            code: &code,
            digest: &digest,
            session: planned.logical_session.as_ref(),
            started_ms: started,
        };
        return asking::suspended(toolbox, context, &mut report, call).await;
    }
    let completed_at = crate::clock::unix_now_millis();
    let mut had = super::answer::advice::Had::of(&report, &code);
    had.continued_live = planned.continued.is_some();
    let mut outcome = report.outcome;
    super::answer::advice::advise(&mut outcome, toolbox.engine.config(), &had);
    let repl = report.repl;
    let displays = report.displays;
    outcome.warnings.append(&mut planned.warnings);
    if let Some((waited, why)) = planned.save_wait.take() {
        outcome.save_wait_ms = Some(waited.as_millis() as u64);
        // A wait too short to matter is in save_wait_ms only.
        if waited >= SAID_WAIT {
            let waited = if waited < std::time::Duration::from_secs(1) {
                format!("{} ms", waited.as_millis())
            } else {
                format!("{:.1} s", waited.as_secs_f64())
            };
            outcome.warnings.push(format!(
                "this call waited {waited} before it ran, for earlier heaps to be stored: {why}"
            ));
        }
    }
    let first = match (save, &planned.logical_session) {
        // A caller that continues `latest` continues with it; one that
        // passed a key (or none) gets a key back.
        // A run that continued a heap still being stored is answered
        // first as well: its save is logged after that one.
        (Some(save), Some(session))
            if planned.latest
                && toolbox.answer_before_save_bytes.is_some_and(|least| {
                    report.heap_used_bytes >= least || planned.continued.is_some()
                }) =>
        {
            let earlier = toolbox.saves.unstored(context.tenant, session);
            let marker = saves::pending(
                &toolbox.saves,
                (outcome.execution_id, earlier),
                rfc3339(completed_at),
                context.deadline,
            );
            match toolbox
                .meta
                .put_pending_save(context.tenant, session, &marker)
                .await
            {
                Ok(()) => Some((save, session.clone(), marker)),
                Err(e) => {
                    // Without the marker a lost save could go unnoticed: wait.
                    tracing::warn!(error = %e, "the pending save was not written; the answer waits for the save");
                    wait_stored(&mut outcome, save).await;
                    None
                }
            }
        }
        (Some(save), _) => {
            wait_stored(&mut outcome, save).await;
            None
        }
        (None, _) => None,
    };
    span.record("execution_id", outcome.execution_id.to_string());
    span.record("status", outcome.status.as_str());
    span.record("heap", outcome.heap.as_ref().map(HeapKey::as_str));
    if let Some((save, session, marker)) = first {
        let (ticket, previous) = toolbox.saves.begin(
            context.tenant,
            &session,
            outcome.execution_id,
            (report.heap_used_bytes, save.live()),
        );
        // Short: every answer on a large heap carries it.
        outcome.heap_saving = Some(format!(
            "stored after this answer: continue with heap: \"latest\" in session {:?}; its files \
             read now as mcp-v8://heaps/{}/files/PATH",
            session.as_str(),
            outcome.execution_id
        ));
        let after = after::AfterAnswer {
            toolbox: toolbox.clone(),
            tenant: context.tenant.clone(),
            outcome: outcome.clone(),
            times: (started, completed_at),
            code: report.executed_code,
            session,
            tags: planned.tags.take(),
            marker,
            previous,
            continued: planned.continued.take(),
            key: ticket.key_sender(),
            superseded: ticket.superseded_sender(),
            answered: std::time::Instant::now(),
        };
        tokio::spawn(
            async move {
                let mut ticket = ticket;
                let ended = after.save(save, ticket.abandoned()).await;
                ticket.end(ended);
            }
            .instrument(span.clone()),
        );
        let warning = fresh_start_warning(toolbox, context, &planned, None).await;
        outcome.warnings.extend(warning);
        let shape = Shape::new(toolbox, &outcome, false, structured, context.ui_extension);
        return with_displays(toolbox, context.tenant, outcome, repl, displays, shape).await;
    }
    // A stateless server keeps nothing: no tool could read a record. A
    // cancelled run leaves nothing either: no log entry, no record.
    let mut metadata_failed = false;
    if !toolbox.stateless && outcome.status != RunStatus::Cancelled {
        let recorded = record(
            toolbox,
            context.tenant,
            &mut outcome,
            (started, completed_at),
            report.executed_code,
            planned.logical_session.as_ref(),
            planned.tags.as_ref(),
        )
        .await;
        metadata_failed = !recorded.written;
        // After the record: the warning needs the index the log gave the
        // run. The execution record keeps the run's own warnings.
        let warning = fresh_start_warning(toolbox, context, &planned, recorded.logged_at).await;
        if let Some(warning) = warning {
            outcome.warnings.push(warning);
        }
    }
    let is_error = outcome.status != RunStatus::Completed || metadata_failed;
    let mut shape = Shape::new(
        toolbox,
        &outcome,
        is_error,
        structured,
        context.ui_extension,
    );
    if metadata_failed {
        // A link to a record that was not written would only fail.
        shape.kept = Kept::Nowhere("the run's record was not written");
    }
    with_displays(toolbox, context.tenant, outcome, repl, displays, shape).await
}

/// Waits for `save` and puts its outcome into `outcome`, counting the wait
/// in `duration_ms`, which then covers storing the heap as the field says:
/// the engine measured only up to the end of the code.
async fn wait_stored(outcome: &mut RunOutcome, save: Saving) {
    let waited = std::time::Instant::now();
    let stored = save.wait().await;
    outcome.duration_ms += waited.elapsed().as_millis() as u64;
    stored_in(outcome, stored);
}

/// `run_js` of `code` for this call from a fresh isolate (no heap kept),
/// within `timeout_secs`: its whole answer. A run that asks the person
/// answers with its asks, as `run_js` does. A tool a build adds does its
/// work this way (the conformance fixtures').
pub async fn run_fresh(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    code: String,
    timeout_secs: f64,
) -> ToolAnswer {
    let call = serde_json::from_value(serde_json::json!({
        "code": code,
        "heap": "",
        "execution_timeout_secs": timeout_secs,
    }))
    .expect("run_js arguments of a code and a timeout decode");
    self::call(toolbox, context, call, false).await
}

#[cfg(test)]
mod tests {

    use serde_json::{Value, json};

    use super::rfc3339;
    use crate::engine::EngineConfig;
    use crate::protocol::mcp::CallToolParams;
    use crate::tenant::Tenant;
    use crate::tools::{CallContext, Toolbox};

    fn toolbox(config: EngineConfig, dir: &tempfile::TempDir) -> Toolbox {
        crate::tools::toolbox::for_tests(config, dir, true)
    }

    /// A 2025-06-18 call of `tenant`, outside any session.
    fn context(tenant: &Tenant) -> CallContext<'_> {
        crate::tools::toolbox::context_for_tests(tenant, "2025-06-18")
    }

    async fn run(toolbox: &Toolbox, arguments: Value) -> (bool, Value, String) {
        let tenant = Tenant::anonymous();
        let context = context(&tenant);
        let params = CallToolParams {
            name: super::NAME.into(),
            arguments: Some(serde_json::value::to_raw_value(&arguments).unwrap()),
            task: None,
            input_responses: None,
            request_state: None,
        };
        let result = crate::tools::ToolRouter::builtin()
            .call(toolbox, context, params)
            .await
            .unwrap();
        let text = serde_json::to_value(&result.content).unwrap()[0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (
            result.is_error,
            result.structured_content.unwrap_or_default(),
            text,
        )
    }

    /// The test-only toy capability (engine/host/toy.rs) is registered by
    /// one line, yet its setting comes from the engine's configuration, a
    /// call argument overrides it, `run_js` lists that argument, and its
    /// report shows in the tool's result.
    #[tokio::test]
    async fn a_capability_takes_its_setting_and_argument_and_shows_its_report_in_run_js() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::in_process();
        config.capabilities.toy.factor = 10.0;
        let toolbox = toolbox(config, &dir);

        let code = "await toy.double(2) + await toy.double(3)";
        let (failed, outcome, _) = run(&toolbox, json!({ "code": code })).await;
        assert!(!failed, "{outcome}");
        assert_eq!(outcome["result"], "50", "the operator's factor: {outcome}");
        assert_eq!(outcome["toy_calls"], 2, "{outcome}");

        let (failed, outcome, _) = run(&toolbox, json!({ "code": code, "toy_factor": 3 })).await;
        assert!(!failed, "{outcome}");
        assert_eq!(outcome["result"], "15", "the call's factor: {outcome}");

        let (failed, _, text) = run(&toolbox, json!({ "code": code, "toy_factor": "x" })).await;
        assert!(failed);
        assert!(text.contains("toy_factor"), "{text}");
        let (failed, _, text) = run(&toolbox, json!({ "code": code, "no_such": 1 })).await;
        assert!(failed);
        assert!(text.contains("no_such"), "{text}");

        let tenant = Tenant::anonymous();
        let listed = crate::tools::ToolRouter::builtin()
            .list(&toolbox, context(&tenant))
            .await;
        let schema = &listed.tools[0].input_schema;
        assert_eq!(
            schema["properties"]["toy_factor"]["type"], "number",
            "{schema}"
        );
        assert_eq!(schema["properties"]["files"]["type"], "object", "{schema}");
    }

    /// An answer with `display()` blocks is measured once, as it is
    /// shaped; the length it carries to the response limit is its JSON's,
    /// with an MCP Apps host's `_meta` and without.
    #[tokio::test]
    async fn an_answer_with_displays_carries_the_length_of_its_json() {
        let dir = tempfile::tempdir().unwrap();
        let toolbox = toolbox(EngineConfig::in_process(), &dir);
        let tenant = Tenant::anonymous();
        let code = "display(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2])); \
                    display('text with \"quotes\" and é'); display({ a: 1 }); 42";
        for view in [false, true] {
            let mut context = context(&tenant);
            context.ui_extension = view;
            let call = serde_json::from_value(json!({ "code": code })).unwrap();
            let answer = super::call(&toolbox, context, call, true).await;
            assert_eq!(answer.result.content.len(), 4, "{:?}", answer.result);
            assert_eq!(answer.result.meta.is_some(), view, "{:?}", answer.result);
            assert_eq!(
                answer.json_len,
                Some(crate::tools::toolbox::result_json_len(&answer.result)),
                "view: {view}"
            );
        }
    }

    #[test]
    fn timestamps_have_three_fractional_digits_and_sort_as_strings() {
        let half = rfc3339(1_764_000_005_500);
        let later = rfc3339(1_764_000_005_510);
        assert_eq!(half, "2025-11-24T16:00:05.500Z");
        assert!(half < later, "{half} < {later}");
        assert_eq!(rfc3339(1_764_000_006_000), "2025-11-24T16:00:06.000Z");
    }
}
