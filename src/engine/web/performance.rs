//! Natives of the host family (`performance`, `navigator`, `reportError`).

use std::time::{Instant, SystemTime};

use v8::MapFnTo;

use super::console;
use super::inspect::inspect;
use crate::clock::unix_millis;
use crate::engine::capability::{Capability, RunScope};
use crate::engine::layer::registry::{Family, Natives};

pub(crate) fn natives() -> Natives {
    vec![
        ("now", now.map_fn_to()),
        ("timeOrigin", time_origin.map_fn_to()),
        ("version", version.map_fn_to()),
        ("report", report.map_fn_to()),
    ]
}

/// Milliseconds since the run started, to the microsecond: a run is the
/// "page load" here, and a heap restored elsewhere has no earlier clock.
fn now<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let elapsed = scope
        .get_slot::<RunStart>()
        .map(|clock| clock.started.elapsed().as_micros() as f64 / 1000.0)
        .unwrap_or(0.0);
    rv.set_double(elapsed);
}

/// The wall-clock time the run started, in Unix milliseconds.
fn time_origin<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let started = scope
        .get_slot::<RunStart>()
        .map(|clock| clock.started_wall)
        .unwrap_or_else(std::time::SystemTime::now);
    rv.set_double(unix_millis(started));
}

fn version<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let text = concat!("mcp-v8-lambda/", env!("CARGO_PKG_VERSION"));
    if let Some(text) = v8::String::new(scope, text) {
        rv.set(text.into());
    }
}

/// `reportError(e)`: the error reaches the output as an uncaught one would.
fn report<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let error = args.get(0);
    let text = match v8::Local::<v8::Object>::try_from(error) {
        Ok(object) if error.is_native_error() => {
            let key = v8::String::new(scope, "stack").expect("short name");
            match object.get(scope, key.into()) {
                Some(stack) if stack.is_string() => stack.to_rust_string_lossy(scope),
                _ => inspect(scope, error),
            }
        }
        _ => inspect(scope, error),
    };
    console::print(scope, &format!("[ERROR] Uncaught {text}"));
}

/// When the run started (an isolate slot): `performance.now()` counts
/// from it and `performance.timeOrigin` is its wall-clock time.
pub(crate) struct RunStart {
    started: Instant,
    started_wall: SystemTime,
}

impl Capability for RunStart {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "host",
        source: include_str!("performance.js"),
        deps: &[],
        natives,
        globals: &[
            "performance",
            "Performance",
            "navigator",
            "Navigator",
            "reportError",
        ],
        version: 1,
    });
    type Settings = ();
    type Ask = ();
    type Report = ();

    fn begin(isolate: &mut v8::Isolate, _: &(), _: &RunScope<'_>) {
        isolate.set_slot(Self {
            started: Instant::now(),
            started_wall: SystemTime::now(),
        });
    }

    fn end(isolate: &mut v8::Isolate) {
        isolate.remove_slot::<Self>();
    }
}
