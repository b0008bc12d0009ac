//! `reportProgress(progress, total?, message?)`: a run says how far it has
//! come, and a caller that gave a progress token gets it as
//! `notifications/progress` (docs/protocol.md, "Progress"). MCP requires
//! progress to increase with each notification, so a report that does not
//! is refused with a `RangeError` rather than sent or dropped; the values
//! are the run's own, so the count starts again with each run, not each heap.

use std::sync::Arc;

use v8::MapFnTo;

use crate::engine::capability::control::RunControl;
use crate::engine::capability::reports::RunProgress;
use crate::engine::capability::{Capability, RunScope};
use crate::engine::layer::registry::{Family, Natives, throw_type_error};

/// A run's progress reports so far (an isolate slot).
pub(crate) struct ProgressRun {
    control: Option<Arc<RunControl>>,
    last: Option<f64>,
}

impl Capability for ProgressRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "progress",
        source: include_str!("progress.js"),
        deps: &[],
        natives,
        globals: &["reportProgress"],
        // Above every other family's: heaps of the layer before get the
        // global on their next restore.
        version: 9,
    });
    type Settings = ();
    type Ask = ();
    type Report = ();

    fn begin(isolate: &mut v8::Isolate, _: &(), run: &RunScope<'_>) {
        isolate.set_slot(Self {
            control: run.control.cloned(),
            last: None,
        });
    }

    fn end(isolate: &mut v8::Isolate) {
        isolate.remove_slot::<Self>();
    }
}

fn natives() -> Natives {
    vec![("report", report.map_fn_to())]
}

/// `report(progress, total, message)`; throws what is wrong with them.
fn report<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let number = |value: v8::Local<'s, v8::Value>| {
        value
            .is_number()
            .then(|| value.number_value(scope))
            .flatten()
            .filter(|n| n.is_finite())
    };
    let Some(progress) = number(args.get(0)) else {
        let shown = args.get(0).to_rust_string_lossy(scope);
        throw_type_error(
            scope,
            &format!("reportProgress: progress must be a finite number, got {shown}"),
        );
        return;
    };
    let total = args.get(1);
    let total = if total.is_null_or_undefined() {
        None
    } else if let Some(total) = number(total) {
        Some(total)
    } else {
        let shown = total.to_rust_string_lossy(scope);
        throw_type_error(
            scope,
            &format!("reportProgress: total must be a finite number or left out, got {shown}"),
        );
        return;
    };
    let message = args.get(2);
    let message = if message.is_null_or_undefined() {
        None
    } else if message.is_string() {
        Some(message.to_rust_string_lossy(scope))
    } else {
        throw_type_error(
            scope,
            "reportProgress: message must be a string or left out",
        );
        return;
    };
    let Some(run) = scope.get_slot_mut::<ProgressRun>() else {
        throw_type_error(scope, "reportProgress works only while a run executes");
        return;
    };
    if let Some(last) = run.last.filter(|last| progress <= *last) {
        let text = format!(
            "reportProgress: progress must increase with each report (MCP progress); \
             this run last reported {last}, then {progress}"
        );
        let text = v8::String::new(scope, &text).expect("short message");
        let error = v8::Exception::range_error(scope, text);
        scope.throw_exception(error);
        return;
    }
    run.last = Some(progress);
    if let Some(control) = &run.control {
        control.report_progress(RunProgress {
            progress,
            total,
            message,
        });
    }
}
