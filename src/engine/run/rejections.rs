//! Promise rejections nobody handled. Node prints them (and by default
//! exits); a run's caller would otherwise never learn that
//! `Promise.reject(new Error("x")); "after"` lost an error. V8 reports each
//! rejection without a handler, and each handler added later, to the
//! isolate's callback; those still unhandled when a run completes become
//! warnings. The run's status is unchanged, as Deno's and Node's REPLs
//! leave the session going.

use crate::engine::web::thrown::error_from;

/// The run's rejected promises without a handler, in the order V8 reported
/// them; kept in an isolate slot from [`begin`] to [`end`].
#[derive(Default)]
struct Unhandled(Vec<v8::Global<v8::Promise>>);

/// At most this many are named; the rest are counted.
const MAX_NAMED: usize = 5;

/// Starts tracking for a run on `isolate`.
pub(crate) fn begin(isolate: &mut v8::Isolate) {
    isolate.set_promise_reject_callback(on_reject);
    isolate.set_slot(Unhandled::default());
}

/// Stops tracking: the handles go before the isolate is snapshotted.
pub(crate) fn end(isolate: &mut v8::Isolate) {
    isolate.remove_slot::<Unhandled>();
}

extern "C" fn on_reject(message: v8::PromiseRejectMessage) {
    v8::callback_scope!(unsafe scope, &message);
    let promise = message.get_promise();
    match message.get_event() {
        v8::PromiseRejectEvent::PromiseRejectWithNoHandler => {
            let global = v8::Global::new(scope, promise);
            if let Some(Unhandled(list)) = scope.get_slot_mut::<Unhandled>() {
                list.push(global);
            }
        }
        v8::PromiseRejectEvent::PromiseHandlerAddedAfterReject => {
            if let Some(Unhandled(list)) = scope.get_slot_mut::<Unhandled>() {
                list.retain(|kept| *kept != promise);
            }
        }
        _ => {}
    }
}

/// Offers each rejection still unhandled (`completion` aside) to `take`;
/// those it takes are no longer unhandled. Rejections the offer itself
/// causes stay for the next offer or the warnings.
pub(crate) fn offer<'s, E>(
    scope: &mut v8::PinScope<'s, '_>,
    completion: Option<v8::Local<'_, v8::Promise>>,
    mut take: impl FnMut(&mut v8::PinScope<'s, '_>, v8::Local<'s, v8::Promise>) -> Result<bool, E>,
) -> Result<(), E> {
    let Some(Unhandled(list)) = scope.get_slot_mut::<Unhandled>() else {
        return Ok(());
    };
    let mut offered = std::mem::take(list).into_iter();
    let mut kept = Vec::new();
    let mut result = Ok(());
    for global in offered.by_ref() {
        let promise = v8::Local::new(scope, &global);
        if completion.is_some_and(|c| c == promise) {
            kept.push(global);
            continue;
        }
        match take(scope, promise) {
            Ok(true) => {}
            Ok(false) => kept.push(global),
            Err(error) => {
                kept.push(global);
                result = Err(error);
                break;
            }
        }
    }
    kept.extend(offered);
    if let Some(Unhandled(list)) = scope.get_slot_mut::<Unhandled>() {
        let since = std::mem::take(list);
        *list = kept;
        list.extend(since);
    }
    result
}

/// Warnings for the rejections still unhandled, `completion` (the run's
/// own value, reported as its result or error) left out.
pub(crate) fn warnings(
    scope: &mut v8::PinScope<'_, '_>,
    completion: Option<v8::Local<'_, v8::Promise>>,
) -> Vec<String> {
    let Some(Unhandled(list)) = scope.get_slot_mut::<Unhandled>() else {
        return Vec::new();
    };
    let list = std::mem::take(list);
    let mut warnings = Vec::new();
    let mut unnamed = 0;
    for kept in list {
        let promise = v8::Local::new(scope, &kept);
        if completion.is_some_and(|c| c == promise) {
            continue;
        }
        if warnings.len() == MAX_NAMED {
            unnamed += 1;
            continue;
        }
        let reason = promise.result(scope);
        let error = error_from(scope, reason, None);
        let at = error
            .stack
            .as_deref()
            .and_then(|stack| stack.lines().find(|l| l.trim_start().starts_with("at ")))
            .map(|line| format!(" ({})", line.trim()))
            .unwrap_or_default();
        warnings.push(format!(
            "a promise was rejected and nothing handled it: {}: {}{at}. The run went on; await the \
             promise or add .catch() to handle the error",
            error.name, error.message
        ));
    }
    if unnamed > 0 {
        warnings.push(format!(
            "{unnamed} more promises were rejected and nothing handled them"
        ));
    }
    warnings
}
