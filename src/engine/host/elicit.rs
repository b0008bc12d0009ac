//! `elicit()` (`elicit.js`): a run asks the person. The request is checked
//! here against what the client takes ([`crate::elicit::Reach`]); its
//! promise waits in the heap. When the run has nothing left to do but
//! wait, [`suspend`] keeps its completion value and the requests, and the
//! run ends suspended: its heap is the continuation. [`resume`] settles
//! the requests in a restored copy and gives the completion value back.

use serde_json::{Map, Value};
use v8::MapFnTo;

use crate::elicit::{ElicitAsk, MAX_PER_CALL, MAX_WAITING, Waiting};
use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::{Call, Capability, RunScope};
use crate::engine::layer::registry::{Family, LoaderSlot, Natives, throw_type_error};

/// The run's elicitations (an isolate slot).
pub(crate) struct ElicitRun {
    ask: ElicitAsk,
    /// Made in this round.
    made: usize,
    /// The run touched `elicit` (made one, or resumes): only then is the
    /// family consulted when the run ends.
    engaged: bool,
    /// Set when the run suspends: the requests it waits for.
    waiting: Option<Map<String, Value>>,
}

impl Capability for ElicitRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "elicit",
        source: include_str!("elicit.js"),
        deps: &[],
        natives,
        globals: &["elicit"],
        version: 8,
    });
    type Settings = ();
    type Ask = ElicitAsk;
    /// The requests of a run that suspended.
    type Report = Option<Waiting>;

    fn ask(_: &(), call: &mut Call<'_>) -> Result<ElicitAsk, String> {
        Ok(call.elicitation.clone())
    }

    fn show(waiting: &mut Option<Waiting>, shown: &mut RunReport) {
        shown.waiting = waiting.take();
    }

    fn begin(isolate: &mut v8::Isolate, ask: &ElicitAsk, _: &RunScope<'_>) {
        isolate.set_slot(Self {
            ask: ask.clone(),
            made: 0,
            engaged: false,
            waiting: None,
        });
    }

    fn end(isolate: &mut v8::Isolate) -> Option<Waiting> {
        let run = isolate.remove_slot::<Self>()?;
        let requests = run.waiting?;
        Some(Waiting {
            requests,
            asked: run.ask.asked_before + run.made,
        })
    }

    fn cancelled(waiting: &mut Option<Waiting>) {
        *waiting = None;
    }
}

fn natives() -> Natives {
    vec![("check", check.map_fn_to())]
}

/// `check(json, waiting)` → the params to send, as JSON; throws a
/// `TypeError` saying what is wrong, or that the client cannot be asked.
fn check<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let json = args.get(0).to_rust_string_lossy(scope);
    let waiting = args.get(1).integer_value(scope).unwrap_or(0) as usize;
    let Some(run) = scope.get_slot_mut::<ElicitRun>() else {
        throw_type_error(scope, "elicit works only while a run executes");
        return;
    };
    run.engaged = true;
    let params: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
    let checked = if waiting >= MAX_WAITING {
        Err(format!(
            "elicit: {MAX_WAITING} elicitations already wait for an answer; await some before asking more"
        ))
    } else if run.ask.asked_before + run.made >= MAX_PER_CALL {
        Err(format!(
            "elicit: this call has asked {MAX_PER_CALL} times, the most one call may; end the run \
             and ask in the next call"
        ))
    } else {
        crate::elicit::check_request(&params, &run.ask.reach)
    };
    match checked {
        Ok(sent) => {
            run.made += 1;
            // The request's number in this call, which names its key: the
            // family reads it from `natives.count` (heaps whose family
            // came before count in the heap, across calls).
            let count = (run.ask.asked_before + run.made) as i32;
            let receiver = args.this();
            if let Some(name) = v8::String::new(scope, "count") {
                let count = v8::Integer::new(scope, count);
                receiver.set(scope, name.into(), count.into());
            }
            if let Some(text) = v8::String::new(scope, &sent.to_string()) {
                rv.set(text.into());
            }
        }
        Err(message) => throw_type_error(scope, &message),
    }
}

/// The run's exports of the family, when it touched `elicit`.
fn family<'s>(scope: &mut v8::PinScope<'s, '_>) -> Option<v8::Local<'s, v8::Object>> {
    let engaged = scope.get_slot::<ElicitRun>().is_some_and(|run| run.engaged);
    if !engaged {
        return None;
    }
    let load = scope.get_slot::<LoaderSlot>()?.0;
    load(scope, "elicit")
}

fn call<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    exports: v8::Local<'s, v8::Object>,
    name: &str,
    arg: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Value>> {
    let key = v8::String::new(scope, name)?;
    let function = v8::Local::<v8::Function>::try_from(exports.get(scope, key.into())?).ok()?;
    let receiver = v8::undefined(scope).into();
    function.call(scope, receiver, &[arg])
}

/// When elicitations wait and nothing else is left: keeps `completion`
/// in the heap for [`resume`] and the requests in the run's slot, and
/// says the run suspends.
pub(crate) fn suspend<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    completion: v8::Local<'s, v8::Value>,
) -> bool {
    let Some(exports) = family(scope) else {
        return false;
    };
    let undefined = v8::undefined(scope).into();
    let waiting = call(scope, exports, "waiting", undefined)
        .and_then(|n| n.integer_value(scope))
        .unwrap_or(0);
    if waiting == 0 {
        return false;
    }
    let Some(json) = call(scope, exports, "suspend", completion) else {
        return false;
    };
    let json = json.to_rust_string_lossy(scope);
    let requests = serde_json::from_str(&json).unwrap_or_default();
    if let Some(run) = scope.get_slot_mut::<ElicitRun>() {
        run.waiting = Some(requests);
    }
    true
}

/// Settles the waiting elicitations with `responses` (JSON, by key) and
/// gives back the completion value the run had when it suspended; `None`
/// when the heap holds no suspended run.
pub(crate) fn resume<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    responses: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    if let Some(run) = scope.get_slot_mut::<ElicitRun>() {
        run.engaged = true;
    }
    let exports = family(scope)?;
    let undefined = v8::undefined(scope).into();
    let waiting = call(scope, exports, "waiting", undefined)?.integer_value(scope)?;
    if waiting == 0 {
        return None;
    }
    let json = v8::String::new(scope, responses)?;
    call(scope, exports, "resume", json.into())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::elicit::Reach;
    use crate::engine::capability::outcome::RunStatus;
    use crate::engine::contract::{Job, Task};
    use crate::engine::run::isolate;
    use crate::engine::services::HostServices;

    fn services(runtime: &tokio::runtime::Runtime) -> HostServices {
        HostServices {
            runtime: runtime.handle().clone(),
            files: None,
            clients: Arc::default(),
        }
    }

    /// `job` on a snapshot isolate, as a stateful run takes it.
    fn run(job: Job, services: &HostServices) -> crate::engine::contract::JobResult {
        isolate::run(job, services, &mut None, &mut |_| {}, None)
    }

    fn job(task: Task, restore: Option<crate::engine::capability::section::Section>) -> Job {
        let mut job = crate::engine::plan::fresh_job(String::new());
        job.task = task;
        job.stateful = true;
        job.restore = restore;
        job.asks.elicit.reach = Reach {
            form: true,
            url: false,
            refused: None,
        };
        job
    }

    /// A run that awaits two asks inside a loop suspends with both (one
    /// round each), its heap holding the loop; resumed from that heap with
    /// the responses, it finishes the loop with the right sum. A heap with
    /// no waiting run refuses to resume.
    #[test]
    fn a_run_suspends_as_a_heap_and_resumes_from_it_with_the_responses() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let services = services(&runtime);
        let code = "let sum = 0; \
            for (let i = 1; i <= 2; i++) { \
              const r = await elicit({ message: `n${i}?`, requestedSchema: { type: 'object', \
                properties: { n: { type: 'integer' } }, required: ['n'] } }); \
              sum += i * r.content.n; console.log('got', r.content.n); \
            } \
            sum";
        // Each round carries what the call asked before, as the tool does.
        let run = |task, restore, asked_before| {
            let mut job = job(task, restore);
            job.asks.elicit.asked_before = asked_before;
            run(job, &services)
        };
        let first = run(Task::Run { code: code.into() }, None, 0);
        assert_eq!(first.status, RunStatus::InputRequired, "{first:?}");
        let waiting = first.reports.elicit.clone().expect("its requests");
        assert_eq!(waiting.requests.len(), 1);
        assert_eq!(waiting.requests["elicit-1"]["message"], "n1?");
        let resume = |blob, key: &str, n: i64, asked_before| {
            let responses =
                serde_json::json!({ key: { "action": "accept", "content": { "n": n } } });
            run(
                Task::Resume {
                    code: code.into(),
                    responses: responses.to_string(),
                },
                blob,
                asked_before,
            )
        };
        let second = resume(first.blob, "elicit-1", 10, waiting.asked);
        assert_eq!(second.status, RunStatus::InputRequired, "{second:?}");
        assert!(
            second
                .reports
                .elicit
                .as_ref()
                .unwrap()
                .requests
                .contains_key("elicit-2")
        );
        let asked = second.reports.elicit.as_ref().unwrap().asked;
        let third = resume(second.blob, "elicit-2", 100, asked);
        assert_eq!(third.status, RunStatus::Completed, "{third:?}");
        assert_eq!(third.result.as_deref(), Some("210"));
        let again = resume(third.blob, "elicit-2", 100, asked);
        assert_eq!(again.status, RunStatus::Failed, "{again:?}");
        assert!(again.error.unwrap().message.contains("no run waiting"));
    }

    /// Asks made together (`Promise.all`) wait together: one round.
    #[test]
    fn asks_made_together_wait_together() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let services = services(&runtime);
        let code = "const schema = { type: 'object', properties: { ok: { type: 'boolean' } } }; \
            const [a, b] = await Promise.all([elicit({ message: 'a', requestedSchema: schema }), \
              elicit({ message: 'b', requestedSchema: schema })]); [a.action, b.action]";
        let first = run(job(Task::Run { code: code.into() }, None), &services);
        assert_eq!(first.status, RunStatus::InputRequired, "{first:?}");
        assert_eq!(first.reports.elicit.as_ref().unwrap().requests.len(), 2);
        // A bad schema is an error at the call, before anything is sent.
        let bad = "await elicit({ message: 'm', requestedSchema: { type: 'object', properties: { o: { type: 'object' } } } })";
        let failed = run(job(Task::Run { code: bad.into() }, None), &services);
        assert_eq!(failed.status, RunStatus::Failed, "{failed:?}");
        let error = failed.error.unwrap();
        assert_eq!(error.name, "TypeError");
        assert!(error.message.contains("flat"), "{error:?}");
    }
}
