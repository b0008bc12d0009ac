//! Node's `process` (and `global`) for runs (the family in `process.js`): an environment
//! the operator chooses (`MCP_V8_PROCESS_ENV`, empty by default) read live
//! from the run's ask, V8's version and the isolate's memory. Nothing of the
//! host's own process, environment or files reaches a run.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use crate::engine::capability::{Call, Capability, RunScope};
use crate::engine::layer::bytes::{string, string_array};
use crate::engine::layer::registry::{Family, Natives};

/// What a run asks of `process`: the operator's settings of it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProcessSettings {
    /// `process.env` as the operator set it.
    pub env: Arc<BTreeMap<String, String>>,
}

/// The run's environment (an isolate slot).
pub(crate) struct ProcessRun {
    env: Arc<BTreeMap<String, String>>,
}

impl Capability for ProcessRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "process",
        source: include_str!("process.js"),
        deps: &[],
        natives,
        globals: &["process", "global"],
        version: 6,
    });
    type Settings = ProcessSettings;
    type Ask = ProcessSettings;
    type Report = ();

    fn ask(settings: &ProcessSettings, _: &mut Call<'_>) -> Result<ProcessSettings, String> {
        Ok(settings.clone())
    }

    fn begin(isolate: &mut v8::Isolate, ask: &ProcessSettings, _: &RunScope<'_>) {
        isolate.set_slot(Self {
            env: ask.env.clone(),
        });
    }

    fn end(isolate: &mut v8::Isolate) {
        drop(isolate.remove_slot::<Self>());
    }
}

fn natives() -> Natives {
    vec![
        ("env", env.map_fn_to()),
        ("envKeys", env_keys.map_fn_to()),
        ("v8Version", v8_version.map_fn_to()),
        ("memoryUsage", memory_usage.map_fn_to()),
    ]
}

/// `env(name)`: the operator's value, `undefined` when unset (and outside
/// a run).
fn env<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let value = scope
        .get_slot::<ProcessRun>()
        .and_then(|run| run.env.get(&name).cloned());
    if let Some(text) = value.and_then(|value| string(scope, &value)) {
        rv.set(text.into());
    }
}

/// `envKeys()`: the operator's names.
fn env_keys<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let names: Vec<String> = scope
        .get_slot::<ProcessRun>()
        .map(|run| run.env.keys().cloned().collect())
        .unwrap_or_default();
    rv.set(string_array(scope, &names).into());
}

fn v8_version<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    if let Some(text) = string(scope, v8::V8::get_version()) {
        rv.set(text.into());
    }
}

/// `memoryUsage()`: Node's fields, from the isolate's heap (a run has no
/// process of its own: `rss` is the heap's total).
fn memory_usage<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let stats = scope.get_heap_statistics();
    let usage = v8::Object::new(scope);
    for (name, value) in [
        ("rss", stats.total_heap_size() + stats.external_memory()),
        ("heapTotal", stats.total_heap_size()),
        ("heapUsed", stats.used_heap_size()),
        ("external", stats.external_memory()),
        ("arrayBuffers", stats.external_memory()),
    ] {
        if let Some(key) = string(scope, name) {
            let value = v8::Number::new(scope, value as f64);
            usage.set(scope, key.into(), value.into());
        }
    }
    rv.set(usage.into());
}
