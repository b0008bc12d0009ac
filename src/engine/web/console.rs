//! Natives of the console methods written in JavaScript (`table`, `count`,
//! `time`, `group`, …): they print through the same output as `log`.

use v8::MapFnTo;

use super::Natives;
use super::bytes::string;
use crate::engine::inspect::inspect;
use crate::engine::natives::{self, RunState};

pub(super) fn natives() -> Natives {
    vec![
        ("print", print.map_fn_to()),
        ("indent", indent.map_fn_to()),
        ("inspect", inspect_value.map_fn_to()),
        ("now", now.map_fn_to()),
    ]
}

/// `print(text)`: one console entry (indented, counted, capped like `log`).
fn print<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let text = args.get(0).to_rust_string_lossy(scope);
    natives::print(scope, &text);
}

/// `indent(delta)`: `console.group` depth, which lasts until the run ends.
fn indent<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let delta = args.get(0).int32_value(scope).unwrap_or(0);
    if let Some(state) = scope.get_slot_mut::<RunState>() {
        state.group_depth = state
            .group_depth
            .saturating_add_signed(delta as isize)
            .min(64);
    }
}

fn inspect_value<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let text = inspect(scope, args.get(0));
    if let Some(text) = string(scope, &text) {
        rv.set(text.into());
    }
}

/// Wall-clock milliseconds: `console.time` labels live in the heap, so a
/// label started in one run may end in a later one, on another instance.
fn now<'s>(
    _scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    rv.set_double(super::host::unix_millis(std::time::SystemTime::now()));
}
