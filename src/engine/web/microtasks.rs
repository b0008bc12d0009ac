//! Callbacks queued with `queueMicrotask` (and so `process.nextTick`),
//! each run through [`call`], which keeps what one throws. Node gives such
//! an exception to 'uncaughtException' listeners or ends the process with
//! it; the event loop does the same for the run (run/process_events.rs),
//! as when a timer's callback throws. V8 itself would drop it, and the run
//! completed as if nothing had happened.

use v8::MapFnTo;

use crate::engine::capability::outcome::RunError;
use crate::engine::capability::slot_capability;
use crate::engine::layer::registry::{Family, Natives};
use crate::engine::web::thrown::error_from;

/// The exceptions queued callbacks threw since the event loop last took
/// them, at most [`KEPT`].
#[derive(Default)]
pub(crate) struct Uncaught(Vec<Thrown>);

/// One callback's exception: the value (for listeners) and the error it
/// ends the run with.
pub(crate) struct Thrown {
    pub(crate) value: v8::Global<v8::Value>,
    pub(crate) error: RunError,
}

/// Exceptions kept between two turns of the event loop; a callback that
/// throws in a loop has the first ones heard, which is enough to fail
/// the run or tell its listeners.
const KEPT: usize = 64;

// The family has no globals and is never loaded: it places `call` in the
// table of natives, which a heap holding a queued callback's function
// indexes (a heap is taken only once the queue is empty, but the entry
// keeps that true of any heap).
slot_capability!(
    Uncaught,
    Some(&Family {
        name: "microtasks",
        source: include_str!("microtasks.js"),
        deps: &[],
        natives,
        globals: &[],
        version: 1,
    })
);

fn natives() -> Natives {
    vec![("call", call.map_fn_to())]
}

/// Queues `callback` to run as a microtask, through [`call`].
pub(crate) fn enqueue(scope: &mut v8::PinScope<'_, '_>, callback: v8::Local<'_, v8::Function>) {
    let Some(wrapped) = v8::Function::builder(call)
        .data(callback.into())
        .build(scope)
    else {
        return;
    };
    scope.enqueue_microtask(wrapped);
}

/// The exceptions queued callbacks threw since the last call, in order.
pub(crate) fn take(isolate: &mut v8::Isolate) -> Vec<Thrown> {
    isolate
        .get_slot_mut::<Uncaught>()
        .map(|u| std::mem::take(&mut u.0))
        .unwrap_or_default()
}

/// Calls the queued callback (the function's data), keeping what it
/// throws; a termination goes on as it came.
fn call<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(callback) = v8::Local::<v8::Function>::try_from(args.data()) else {
        return;
    };
    v8::tc_scope!(let tc, scope);
    let receiver = v8::undefined(tc).into();
    if callback.call(tc, receiver, &[]).is_some() {
        return;
    }
    if tc.has_terminated() || tc.is_execution_terminating() {
        tc.rethrow();
        return;
    }
    let Some(exception) = tc.exception() else {
        return;
    };
    let message = tc.message();
    if tc.get_slot::<Uncaught>().is_some_and(|u| u.0.len() < KEPT) {
        let error = error_from(tc, exception, message);
        let value = v8::Global::new(tc, exception);
        if let Some(slot) = tc.get_slot_mut::<Uncaught>() {
            slot.0.push(Thrown { value, error });
        }
    }
}
