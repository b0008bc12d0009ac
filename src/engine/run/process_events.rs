//! Node's `process` events in a run's event loop, for a heap whose code
//! loaded `process` (the family's `uncaught`, `rejected` and `ended` in
//! `node/process.js`): what a timer's or a queued callback threw to
//! 'uncaughtException' listeners, and at the loop's end 'unhandledRejection' to its listeners,
//! 'beforeExit' (whose listeners may queue more work) and, when the run
//! completes, 'exit'. A heap that never touched `process`, or loaded it before these
//! hooks existed, has nothing called.

use super::ended::{Ended, caught};
use super::rejections;
use crate::engine::layer;

/// Calls the process family's hook `name` (`uncaught`, `rejected` or
/// `ended`) with `args`: `Ok(None)` when the heap never loaded `process` or
/// loaded it before the hook existed, whether a listener heard it, or how
/// the run ended when a listener threw.
fn call<'s>(
    tc: &mut v8::PinScope<'s, '_>,
    name: &str,
    args: &[v8::Local<'s, v8::Value>],
) -> Result<Option<bool>, Ended> {
    let Some(exports) = layer::loaded(tc, "process") else {
        return Ok(None);
    };
    let Some(key) = v8::String::new(tc, name) else {
        return Ok(None);
    };
    let Some(hook) = exports
        .get(tc, key.into())
        .and_then(|hook| v8::Local::<v8::Function>::try_from(hook).ok())
    else {
        return Ok(None);
    };
    v8::tc_scope!(let inner, tc);
    let receiver = v8::undefined(inner).into();
    match hook.call(inner, receiver, args) {
        Some(heard) => Ok(Some(heard.is_true())),
        None => Err(caught(inner)),
    }
}

/// Offers what a callback threw to 'uncaughtException' listeners: whether
/// one took it (the run goes on), else the run ends with it.
pub(super) fn uncaught<'s>(
    tc: &mut v8::PinScope<'s, '_>,
    thrown: v8::Local<'s, v8::Value>,
) -> Result<bool, Ended> {
    Ok(call(tc, "uncaught", &[thrown])? == Some(true))
}

/// What a timer's callback threw, pending in `tc`: to 'uncaughtException'
/// listeners, as a queued callback's throw goes ([`uncaught`]); how the run
/// ends when none took it.
pub(super) fn uncaught_in(
    tc: &mut v8::PinnedRef<'_, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
) -> Result<(), Ended> {
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Err(Ended::Terminated);
    }
    match tc.exception() {
        Some(thrown) if uncaught(tc, thrown)? => Ok(()),
        _ => Err(caught(tc)),
    }
}

/// Hands the rejections nothing handled (`completion`, the run's own value,
/// aside) to 'unhandledRejection' listeners, which take them out of the
/// run's warnings.
pub(super) fn rejected(
    tc: &mut v8::PinScope<'_, '_>,
    completion: Option<v8::Local<'_, v8::Promise>>,
) -> Result<(), Ended> {
    if layer::loaded(tc, "process").is_none() {
        return Ok(());
    }
    rejections::offer(tc, completion, |tc, promise| {
        let reason = promise.result(tc);
        Ok(call(tc, "rejected", &[reason, promise.into()])? == Some(true))
    })
}

/// Emits `phase` ("beforeExit" or "exit"): whether any listener heard it.
pub(super) fn ended(tc: &mut v8::PinScope<'_, '_>, phase: &str) -> Result<bool, Ended> {
    let Some(phase) = v8::String::new(tc, phase) else {
        return Ok(false);
    };
    Ok(call(tc, "ended", &[phase.into()])? == Some(true))
}
