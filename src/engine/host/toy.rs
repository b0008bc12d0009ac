//! A capability that exists only in the library's tests: a global with a
//! host call, a setting (the operator's, which a call argument overrides)
//! and a report that shows in the run's outcome, registered by one line in
//! `capabilities!`. It shows, and keeps showing, that a capability needs
//! nothing outside its own files: its family, its natives, its state, its
//! settings, its argument, its part of the request and of the report.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::{Argument, Call, Capability, RunScope};
use crate::engine::layer::registry::Family;
use crate::engine::layer::registry::{Natives, throw_type_error};
use crate::engine::services::work::WorkSink;

/// The run's toy state (an isolate slot).
pub(crate) struct Toy {
    factor: f64,
    calls: u32,
    next_id: u32,
    waiting: HashMap<u32, v8::Global<v8::PromiseResolver>>,
    work: WorkSink,
    runtime: tokio::runtime::Handle,
}

/// What a run asks of the toy.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct ToyAsk {
    /// What `toy.double` multiplies by.
    pub factor: f64,
}

impl Default for ToyAsk {
    fn default() -> Self {
        Self { factor: 2.0 }
    }
}

impl Capability for Toy {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "toy",
        source: include_str!("toy.js"),
        deps: &[],
        natives,
        globals: &["toy"],
        version: 11,
    });
    const ARGUMENT: Option<Argument> = Some(Argument {
        name: "toy_factor",
        schema: |generator| generator.subschema_for::<f64>(),
    });
    /// The operator's factor, when the call names none.
    type Settings = ToyAsk;
    type Ask = ToyAsk;
    /// Calls the run made.
    type Report = u32;

    fn ask(settings: &ToyAsk, call: &mut Call<'_>) -> Result<ToyAsk, String> {
        match call.take::<f64>("toy_factor")? {
            Some(factor) if factor.is_finite() => Ok(ToyAsk { factor }),
            Some(_) => Err("toy_factor must be a finite number".into()),
            None => Ok(*settings),
        }
    }

    fn show(calls: &mut u32, shown: &mut RunReport) {
        if *calls > 0 {
            shown
                .outcome
                .reports
                .insert("toy_calls".into(), (*calls).into());
        }
    }

    fn begin(isolate: &mut v8::Isolate, ask: &ToyAsk, run: &RunScope<'_>) {
        isolate.set_slot(Self {
            factor: ask.factor,
            calls: 0,
            next_id: 0,
            waiting: HashMap::new(),
            work: run.work.clone(),
            runtime: run.host.runtime.clone(),
        });
    }

    fn pending(isolate: &v8::Isolate) -> bool {
        isolate
            .get_slot::<Self>()
            .is_some_and(|toy| !toy.waiting.is_empty())
    }

    fn end(isolate: &mut v8::Isolate) -> u32 {
        isolate.remove_slot::<Self>().map_or(0, |toy| toy.calls)
    }
}

fn natives() -> Natives {
    vec![("double", double.map_fn_to())]
}

/// `double(n)` → a promise the host settles with `n` times the factor.
fn double<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let n = args.get(0).number_value(scope).unwrap_or(f64::NAN);
    let Some(resolver) = v8::PromiseResolver::new(scope) else {
        return;
    };
    let promise = resolver.get_promise(scope);
    let resolver = v8::Global::new(scope, resolver);
    let Some(toy) = scope.get_slot_mut::<Toy>() else {
        throw_type_error(scope, "toy works only while a run executes");
        return;
    };
    toy.calls += 1;
    toy.next_id += 1;
    let (id, factor, work) = (toy.next_id, toy.factor, toy.work.clone());
    toy.waiting.insert(id, resolver);
    toy.runtime.spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        work.deliver(move |scope| {
            let Some(resolver) = scope
                .get_slot_mut::<Toy>()
                .and_then(|toy| toy.waiting.remove(&id))
            else {
                return;
            };
            let resolver = v8::Local::new(scope, resolver);
            let value = v8::Number::new(scope, n * factor);
            resolver.resolve(scope, value.into());
        });
    });
    rv.set(promise.into());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::engine::contract::Task;
    use crate::engine::run::isolate;
    use crate::engine::run::plain::PlainIsolate;
    use crate::engine::services::HostServices;

    fn services(runtime: &tokio::runtime::Runtime) -> HostServices {
        HostServices {
            runtime: runtime.handle().clone(),
            files: None,
            clients: Arc::default(),
        }
    }

    #[test]
    fn a_capability_of_one_registration_line_takes_its_ask_and_gives_its_report() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let services = services(&runtime);
        let mut job =
            crate::engine::plan::fresh_job("await toy.double(7) + await toy.double(1)".into());
        job.asks.toy.factor = 3.0;
        let result = PlainIsolate::new(job.heap_limit).run(&job, &services);
        assert_eq!(result.result.as_deref(), Some("24"), "{result:?}");
        assert_eq!(result.reports.toy, 2);

        // Its global and natives are in heaps like every family's.
        let mut job =
            crate::engine::plan::fresh_job("globalThis.kept = await toy.double(5)".into());
        job.stateful = true;
        let made = isolate::run(job, &services, &mut None, &mut |_| {}, None);
        let blob = made.blob.expect("a heap");
        let mut job = crate::engine::plan::fresh_job(String::new());
        job.task = Task::Run {
            code: "kept + await toy.double(1)".into(),
        };
        job.stateful = true;
        job.restore = Some(blob);
        let result = isolate::run(job, &services, &mut None, &mut |_| {}, None);
        assert_eq!(result.result.as_deref(), Some("12"), "{result:?}");
        assert_eq!(result.reports.toy, 1);
    }
}
