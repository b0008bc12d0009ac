//! Natives of the guard family (`guard.js`, and `intl.js` for Intl): the run's budget for the
//! memory resizable buffers may commit, and the objects V8 cannot write
//! into a heap snapshot, watched through weak handles so that a stateful run
//! that keeps one fails with a clear error instead of aborting the process.

use std::sync::Arc;

use v8::MapFnTo;

use crate::engine::capability::{family_capability, slot_capability};
use crate::engine::layer::registry::{Family, Natives};
use crate::engine::services::memory::Budget;
use crate::units::MIB;

pub(crate) fn natives() -> Natives {
    vec![
        ("reserve", reserve.map_fn_to()),
        ("track", track.map_fn_to()),
    ]
}

/// The natives of the Intl family's file (`intl.js`).
pub(crate) fn intl_natives() -> Natives {
    vec![("track", track.map_fn_to())]
}

/// The run's objects that must not be in its heap when it is snapshotted,
/// kept in an isolate slot.
#[derive(Default)]
pub(crate) struct Unsnapshottable {
    objects: Vec<(v8::Weak<v8::Object>, String)>,
}

slot_capability!(
    Unsnapshottable,
    Some(&Family {
        name: "guard",
        source: include_str!("guard.js"),
        deps: &[],
        natives,
        globals: &["ArrayBuffer", "FinalizationRegistry"],
        version: 2,
    })
);

family_capability!(
    /// `Intl`, wrapped so that a run knows the objects V8 cannot snapshot
    /// (`intl.js`).
    Intl,
    Family {
        name: "intl",
        source: include_str!("intl.js"),
        deps: &["guard"],
        natives: intl_natives,
        globals: &["Intl"],
        version: 2,
    }
);

/// The V8 built-ins the guard and Intl families wrap.
pub(crate) const GUARDED: &[&str] = &["ArrayBuffer", "Intl", "FinalizationRegistry"];

/// What the heap of `scope`'s isolate still holds that V8 cannot snapshot,
/// described for the caller; `None` when nothing. Collects garbage first
/// (only when such an object was ever made), so that one the code dropped
/// does not count.
pub(crate) fn unsnapshottable(scope: &mut v8::PinScope<'_, '_>) -> Option<String> {
    if scope
        .get_slot::<Unsnapshottable>()
        .is_none_or(|kept| kept.objects.is_empty())
    {
        return None;
    }
    scope.low_memory_notification();
    let kept = scope.get_slot::<Unsnapshottable>()?;
    kept.objects
        .iter()
        .find(|(object, _)| !object.is_empty())
        .map(|(_, kind)| kind.clone())
}

/// `reserve(maxByteLength)`: a resizable buffer may commit up to its
/// maximum outside the allocator, so its maximum is taken from the run's
/// budget when it is made (and kept until the isolate goes). Throws a
/// `RangeError` naming the limit when it does not fit.
fn reserve<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let bytes = args.get(0).number_value(scope).unwrap_or(f64::INFINITY);
    let Some(budget) = scope.get_slot::<Arc<Budget>>().cloned() else {
        return;
    };
    let fits = bytes.is_finite() && bytes >= 0.0 && budget.reserve(bytes as usize);
    if !fits {
        let message = format!(
            "Invalid array buffer max length: a resizable ArrayBuffer's maxByteLength counts \
             against the run's ArrayBuffer memory, {} MiB (heap_memory_max_mb), and {bytes} bytes \
             do not fit in what is left",
            budget.limit() / MIB
        );
        let message = v8::String::new(scope, &message).expect("short message");
        let exception = v8::Exception::range_error(scope, message);
        scope.throw_exception(exception);
    }
}

/// `track(object, kind)`: remembers an object V8 cannot snapshot.
fn track<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(object) = v8::Local::<v8::Object>::try_from(args.get(0)) else {
        return;
    };
    let kind = args.get(1).to_rust_string_lossy(scope);
    let weak = v8::Weak::new(scope, object);
    if let Some(kept) = scope.get_slot_mut::<Unsnapshottable>() {
        kept.objects.retain(|(object, _)| !object.is_empty());
        kept.objects.push((weak, kind));
    }
}
