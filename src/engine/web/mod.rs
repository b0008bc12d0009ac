//! The Web platform inside a run: `URL`, `TextEncoder`, `structuredClone`,
//! `crypto`, events, `Blob`, `Headers`/`Request`/`Response`, the rest of
//! `console`, and the small globals (docs/engine.md lists them all).
//!
//! Each API family is a JavaScript file beside the Rust natives it calls.
//! A context gets only lazy data properties for the family's globals; the
//! first access evaluates the family's file (and those it loads) in that
//! context, and the property becomes a plain value. A run that uses none of
//! it pays for ~40 property definitions, and a snapshot of it holds no Web
//! code. A family once loaded is part of the heap like user code, so its
//! objects keep their prototypes (`instanceof`) across snapshots.

mod bytes;
mod clock;
mod clone;
mod console;
mod crypto;
mod display;
mod encoding;
mod fetch;
mod files;
mod guard;
mod host;
mod inspect;
mod mcp;
mod modules;
mod registry;
mod timers;
mod url;

pub use display::{Displayed, MAX_DISPLAY_BYTES, MAX_DISPLAYS};
pub(crate) use fetch::FetchRun;
pub(crate) use files::FilesRun;
pub use files::{FileLimits, FileSource};
pub(crate) use guard::unsnapshottable;
pub(crate) use inspect::{Rendered, inspect, render_result};
pub(crate) use mcp::McpRun;
pub(crate) use modules::ModuleRun;
pub(crate) use registry::script_origin;
pub(crate) use timers::Timers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use v8::MapFnTo;

use self::registry::{Natives, Registry};
use crate::egress::{Completion, FetchConfig, FetchCount};
use crate::engine::control::RunControl;
use crate::engine::memory::Budget;
use crate::upstream::{McpCount, UpstreamConfig};

/// One family: its file, evaluated to a function `(natives, load) => exports`.
struct Family {
    name: &'static str,
    source: &'static str,
    /// The host functions the file is handed as its first argument.
    natives: fn() -> Natives,
}

fn none() -> Natives {
    Vec::new()
}

const FAMILIES: &[Family] = &[
    Family {
        name: "events",
        source: include_str!("events.js"),
        natives: timers::events_natives,
    },
    Family {
        name: "encoding",
        source: include_str!("encoding.js"),
        natives: encoding::natives,
    },
    Family {
        name: "url",
        source: include_str!("url.js"),
        natives: url::natives,
    },
    Family {
        name: "clone",
        source: include_str!("clone.js"),
        natives: clone::natives,
    },
    Family {
        name: "crypto",
        source: include_str!("crypto.js"),
        natives: crypto::natives,
    },
    Family {
        name: "host",
        source: include_str!("host.js"),
        natives: host::natives,
    },
    Family {
        name: "blob",
        source: include_str!("blob.js"),
        natives: none,
    },
    Family {
        name: "http",
        source: include_str!("http.js"),
        natives: none,
    },
    Family {
        name: "console",
        source: include_str!("console.js"),
        natives: console::natives,
    },
    Family {
        name: "fetch",
        source: include_str!("fetch.js"),
        natives: fetch::natives,
    },
    Family {
        name: "guard",
        source: include_str!("guard.js"),
        natives: guard::natives,
    },
    Family {
        name: "intl",
        source: include_str!("intl.js"),
        natives: guard::intl_natives,
    },
    Family {
        name: "modules",
        source: include_str!("modules.js"),
        natives: modules::natives,
    },
    Family {
        name: "fs",
        source: include_str!("files.js"),
        natives: files::natives,
    },
    Family {
        name: "display",
        source: include_str!("display.js"),
        natives: display::natives,
    },
    Family {
        name: "mcp",
        source: include_str!("mcp.js"),
        natives: mcp::natives,
    },
];

/// Globals and the family that exports each (under the same name).
const GLOBALS: &[(&str, &str)] = &[
    ("DOMException", "events"),
    ("Event", "events"),
    ("EventTarget", "events"),
    ("CustomEvent", "events"),
    ("AbortController", "events"),
    ("AbortSignal", "events"),
    ("TextEncoder", "encoding"),
    ("TextDecoder", "encoding"),
    ("atob", "encoding"),
    ("btoa", "encoding"),
    ("URL", "url"),
    ("URLSearchParams", "url"),
    ("structuredClone", "clone"),
    ("crypto", "crypto"),
    ("Crypto", "crypto"),
    ("CryptoKey", "crypto"),
    ("SubtleCrypto", "crypto"),
    ("performance", "host"),
    ("Performance", "host"),
    ("navigator", "host"),
    ("Navigator", "host"),
    ("reportError", "host"),
    ("Blob", "blob"),
    ("File", "blob"),
    ("FormData", "blob"),
    ("Headers", "http"),
    ("Request", "http"),
    ("Response", "http"),
    ("fetch", "fetch"),
    ("ArrayBuffer", "guard"),
    ("Intl", "intl"),
    ("FinalizationRegistry", "guard"),
    ("require", "modules"),
    // What a run's static `import` declarations become (engine/repl.rs).
    ("$__mcpv8_import", "modules"),
    ("display", "display"),
    ("mcp", "mcp"),
];

/// The built-ins the guard family wraps: on a context the layer is first
/// installed in, each is kept under the layer's registry ("intrinsics") for
/// the family to wrap, and replaced by a lazy property like the Web globals.
const GUARDED: &[&str] = &["ArrayBuffer", "Intl", "FinalizationRegistry"];

/// Methods added to `console`, from the console family.
const CONSOLE: &[&str] = &[
    "table",
    "dir",
    "trace",
    "assert",
    "count",
    "countReset",
    "time",
    "timeLog",
    "timeEnd",
    "group",
    "groupCollapsed",
    "groupEnd",
];

/// Where loaded families live: a private property of the global object, so
/// code cannot reach or replace it, and it is in every snapshot.
const REGISTRY: &str = "mcp-v8-lambda.web";

/// The layer's version in a heap, under its own private symbol. Bump it
/// when `GLOBALS` or `CONSOLE` gain a name, so heaps made by an earlier
/// layer gain the name on their next restore (1: the layer with `fetch`;
/// 2: the guarded `ArrayBuffer`, `Intl` and `FinalizationRegistry`; 3:
/// `require` and the loader of static `import`; 4: `display`; 5: `mcp`).
const LAYER_VERSION: i32 = 5;
const VERSION: &str = "mcp-v8-lambda.web.version";

fn registry_key<'s>(scope: &mut v8::PinScope<'s, '_>) -> v8::Local<'s, v8::Private> {
    let name = v8::String::new(scope, REGISTRY).expect("short name");
    v8::Private::for_api(scope, Some(name))
}

/// Puts the host functions on a fresh context's global object (`console`,
/// timers, `queueMicrotask`); a restored context already has them, as part
/// of its heap.
pub(crate) fn install_host<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) {
    console::install(scope, global);
    timers::install(scope, global);
}

/// Makes the Web platform available in `global`'s context: on a fresh
/// context, and on a restored one whose heap predates it (or lacks some
/// global, per [`LAYER_VERSION`]). Names the heap already has are left
/// alone, so a restored heap keeps its own `URL` if code defined one. Cheap
/// when the heap has it all: one private lookup.
pub(crate) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let version_name = v8::String::new(scope, VERSION).expect("short name");
    let version_key = v8::Private::for_api(scope, Some(version_name));
    let installed = global
        .get_private(scope, version_key)
        .and_then(|v| v.int32_value(scope));
    if installed == Some(LAYER_VERSION) {
        return;
    }
    let key = registry_key(scope);
    let registry = match global.get_private(scope, key) {
        Some(value) if value.is_object() => v8::Local::<v8::Object>::try_from(value).ok(),
        _ => None,
    };
    let registry = registry.unwrap_or_else(|| {
        let registry = v8::Object::new(scope);
        global.set_private(scope, key, registry.into());
        registry
    });
    guard_intrinsics(scope, global, registry);
    let version = v8::Integer::new(scope, LAYER_VERSION);
    global.set_private(scope, version_key, version.into());
    define_self(scope, global);
    // Snapshotting isolates have no WebAssembly; a run must not see it
    // depend on whether it is stateful.
    let wasm = v8::String::new(scope, "WebAssembly").expect("short name");
    global.delete(scope, wasm.into());
    stack_trace_limit(scope, global);
    for (name, _) in GLOBALS {
        define_lazy(scope, global, name);
    }
    let console_key = v8::String::new(scope, "console").expect("short name");
    if let Some(console) = global
        .get(scope, console_key.into())
        .and_then(|c| v8::Local::<v8::Object>::try_from(c).ok())
    {
        for name in CONSOLE {
            define_lazy(scope, console, name);
        }
    }
}

/// Moves the built-ins of [`GUARDED`] under the registry and leaves lazy
/// properties in their place, on the global object and, for `ArrayBuffer`,
/// on its prototype's `constructor`, the other way code reaches it. Done
/// once per context: a context whose registry has them is left alone.
fn guard_intrinsics<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    registry: v8::Local<'s, v8::Object>,
) {
    let key = v8::String::new(scope, "intrinsics").expect("short name");
    if registry.has_own_property(scope, key.into()) == Some(true) {
        return;
    }
    let intrinsics = v8::Object::new(scope);
    for name in GUARDED {
        let name = v8::String::new(scope, name).expect("short name");
        if let Some(original) = global.get(scope, name.into()) {
            intrinsics.set(scope, name.into(), original);
        }
        global.delete(scope, name.into());
    }
    registry.set(scope, key.into(), intrinsics.into());
    let name = v8::String::new(scope, "ArrayBuffer").expect("short name");
    if let Some(array_buffer) = intrinsics.get(scope, name.into())
        && let Ok(array_buffer) = v8::Local::<v8::Object>::try_from(array_buffer)
        && let Some(prototype) =
            v8::String::new(scope, "prototype").and_then(|p| array_buffer.get(scope, p.into()))
        && let Ok(prototype) = v8::Local::<v8::Object>::try_from(prototype)
    {
        let constructor = v8::String::new(scope, "constructor").expect("short name");
        prototype.delete(scope, constructor.into());
        define_lazy(scope, prototype, "constructor");
    }
}

/// V8 leaves `Error.stackTraceLimit` out of contexts made by a snapshot
/// creator, where errors would then have no `stack`; set V8's default.
fn stack_trace_limit<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let error = v8::String::new(scope, "Error").expect("short name");
    let limit = v8::String::new(scope, "stackTraceLimit").expect("short name");
    if let Some(error) = global.get(scope, error.into())
        && let Ok(error) = v8::Local::<v8::Object>::try_from(error)
        && error
            .get(scope, limit.into())
            .is_some_and(|v| v.is_undefined())
    {
        let ten = v8::Integer::new(scope, 10);
        error.set(scope, limit.into(), ten.into());
    }
}

/// Where [`before_snapshot`] keeps `Error.stackTraceLimit` in a heap.
const STACK_TRACE_LIMIT: &str = "mcpv8.stackTraceLimit";

fn error_function<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) -> Option<v8::Local<'s, v8::Object>> {
    let name = v8::String::new(scope, "Error")?;
    v8::Local::<v8::Object>::try_from(global.get(scope, name.into())?).ok()
}

/// Takes `Error.stackTraceLimit` out of the heap about to be snapshotted,
/// keeping its value under a private key. A plain isolate made from the
/// blob adds the property itself when it makes the context, and V8 aborts
/// the process if the heap already has it ([`after_restore`] puts the
/// value back).
pub(crate) fn before_snapshot<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) {
    let Some(error) = error_function(scope, global) else {
        return;
    };
    let limit = v8::String::new(scope, "stackTraceLimit").expect("short name");
    if error.has_own_property(scope, limit.into()) != Some(true) {
        return;
    }
    let Some(value) = error.get(scope, limit.into()) else {
        return;
    };
    let stash = v8::String::new(scope, STACK_TRACE_LIMIT).expect("short name");
    let stash = v8::Private::for_api(scope, Some(stash));
    error.set_private(scope, stash, value);
    error.delete(scope, limit.into());
}

/// Undoes [`before_snapshot`] in a context just restored; `plain`: the
/// isolate is not a snapshot creator, so V8 also gave the context what
/// creators leave out, which runs must not see depend on the isolate
/// (`WebAssembly`).
pub(crate) fn after_restore<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    plain: bool,
) {
    if plain {
        let wasm = v8::String::new(scope, "WebAssembly").expect("short name");
        global.delete(scope, wasm.into());
    }
    let Some(error) = error_function(scope, global) else {
        return;
    };
    let stash = v8::String::new(scope, STACK_TRACE_LIMIT).expect("short name");
    let stash = v8::Private::for_api(scope, Some(stash));
    if error.has_private(scope, stash) != Some(true) {
        return;
    }
    if let Some(value) = error.get_private(scope, stash) {
        let limit = v8::String::new(scope, "stackTraceLimit").expect("short name");
        error.set(scope, limit.into(), value);
    }
    error.delete_private(scope, stash);
}

/// `self`, as in workers and Deno: the global object itself.
fn define_self<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let key = v8::String::new(scope, "self").expect("short name");
    if global.has_own_property(scope, key.into()) != Some(true) {
        global.set(scope, key.into(), global.into());
    }
}

fn define_lazy<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    target: v8::Local<'s, v8::Object>,
    name: &str,
) {
    let key = v8::String::new(scope, name).expect("short name");
    if target.has_own_property(scope, key.into()) == Some(true) {
        return;
    }
    // Non-enumerable, as Web IDL defines interface objects and operations.
    target.set_lazy_data_property_with_data(
        scope,
        key.into(),
        lazy_value,
        v8::undefined(scope).into(),
        v8::PropertyAttribute::DONT_ENUM,
        v8::SideEffectType::HasSideEffect,
        v8::SideEffectType::HasSideEffect,
    );
}

/// The first read of a lazy global or console method: loads its family.
fn lazy_value<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    key: v8::Local<'s, v8::Name>,
    _args: v8::PropertyCallbackArguments<'s>,
    mut rv: v8::ReturnValue<v8::Value>,
) {
    let mut name = key.to_rust_string_lossy(scope);
    // The one lazy property not on the global object or `console`:
    // `ArrayBuffer.prototype.constructor`.
    if name == "constructor" {
        name = "ArrayBuffer".to_owned();
    }
    let family = if CONSOLE.contains(&name.as_str()) {
        "console"
    } else {
        match GLOBALS.iter().find(|(global, _)| *global == name) {
            Some((_, family)) => family,
            None => return,
        }
    };
    let Some(exports) = load(scope, family) else {
        return;
    };
    let Some(name) = v8::String::new(scope, &name) else {
        return;
    };
    if let Some(value) = exports.get(scope, name.into()) {
        rv.set(value);
    }
}

/// The family's exports in the current context, evaluating its file on the
/// first call. `None` with an exception pending when evaluation threw.
fn load<'s>(scope: &mut v8::PinScope<'s, '_>, name: &str) -> Option<v8::Local<'s, v8::Object>> {
    let global = scope.get_current_context().global(scope);
    let key = registry_key(scope);
    let registry = match global.get_private(scope, key) {
        Some(value) if value.is_object() => v8::Local::<v8::Object>::try_from(value).ok()?,
        _ => {
            let registry = v8::Object::new(scope);
            global.set_private(scope, key, registry.into());
            registry
        }
    };
    let family_key = v8::String::new(scope, name)?;
    if let Some(loaded) = registry.get(scope, family_key.into())
        && let Ok(loaded) = v8::Local::<v8::Object>::try_from(loaded)
    {
        return Some(loaded);
    }
    let family = FAMILIES.iter().find(|f| f.name == name)?;
    let factory = compile(scope, family)?.run(scope)?;
    let factory = v8::Local::<v8::Function>::try_from(factory).ok()?;
    let natives = v8::Object::new(scope);
    for (name, callback) in (family.natives)() {
        let function = v8::Function::new_raw(scope, callback)?;
        let key = v8::String::new(scope, name)?;
        natives.set(scope, key.into(), function.into());
    }
    let loader = v8::Function::new(scope, load_native)?;
    let receiver = v8::undefined(scope).into();
    let exports = factory.call(scope, receiver, &[natives.into(), loader.into()])?;
    let exports = v8::Local::<v8::Object>::try_from(exports).ok()?;
    registry.set(scope, family_key.into(), exports.into());
    Some(exports)
}

/// The dynamic `import()` of every isolate: the loader's namespace, as a
/// promise. Set on each isolate, since V8 keeps it outside the heap.
pub(crate) fn arm_modules(isolate: &mut v8::Isolate) {
    isolate.set_host_import_module_dynamically_callback(dynamic_import);
}

fn dynamic_import<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _options: v8::Local<'s, v8::Data>,
    _resource: v8::Local<'s, v8::Value>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let exports = load(scope, "modules")?;
    let key = v8::String::new(scope, "import")?;
    let import = v8::Local::<v8::Function>::try_from(exports.get(scope, key.into())?).ok()?;
    let receiver = v8::undefined(scope).into();
    let promise = import.call(scope, receiver, &[specifier.into()])?;
    v8::Local::<v8::Promise>::try_from(promise).ok()
}

/// Code caches of the families' files, made by the first isolate of the
/// process that loads each. A stateless run gets a new isolate (unless a
/// warm one serves it), so without them every run that used `fetch`
/// parsed and compiled half the layer again (docs/performance.md).
fn code_caches() -> &'static Mutex<HashMap<&'static str, &'static [u8]>> {
    static CACHES: OnceLock<Mutex<HashMap<&'static str, &'static [u8]>>> = OnceLock::new();
    CACHES.get_or_init(Default::default)
}

fn compile<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    family: &Family,
) -> Option<v8::Local<'s, v8::Script>> {
    let source = v8::String::new(scope, family.source)?;
    let origin = script_origin(scope, &format!("web/{}.js", family.name))?;
    if scope.get_slot::<MakesCodeCaches>().is_none() {
        return v8::Script::compile(scope, source, Some(&origin));
    }
    let cached = code_caches()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(family.name)
        .copied();
    if let Some(data) = cached {
        let mut source = v8::script_compiler::Source::new_with_cached_data(
            source,
            Some(&origin),
            v8::CachedData::new(data),
        );
        let script = v8::script_compiler::compile(
            scope,
            &mut source,
            v8::script_compiler::CompileOptions::ConsumeCodeCache,
            v8::script_compiler::NoCacheReason::NoReason,
        );
        // A rejected cache still compiles, from source.
        return script;
    }
    let mut plain = v8::script_compiler::Source::new(source, Some(&origin));
    let script = v8::script_compiler::compile(
        scope,
        &mut plain,
        v8::script_compiler::CompileOptions::EagerCompile,
        v8::script_compiler::NoCacheReason::NoReason,
    )?;
    if let Some(data) = script.get_unbound_script(scope).create_code_cache() {
        let data: &'static [u8] = Box::leak(data.to_vec().into_boxed_slice());
        code_caches()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(family.name)
            .or_insert(data);
    }
    Some(script)
}

/// `load(name)` inside a family's file: another family's exports.
fn load_native<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    if let Some(exports) = load(scope, &name) {
        rv.set(exports.into());
    }
}

/// The native table, in the order stored heaps rely on: the host functions
/// of the first release (console, timers), then the layer's own accessor
/// and loader, then each family's natives.
fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.functions("console", console::globals());
    registry.functions("timers", timers::globals());
    registry.pointer("web.lazyValue", lazy_value_ref());
    registry.functions("web", vec![("load", load_native.map_fn_to())]);
    for family in FAMILIES {
        registry.functions(family.name, (family.natives)());
    }
    registry
}

/// Every native callback, for isolates that create or restore snapshots.
pub(crate) fn external_references() -> Vec<v8::ExternalReference> {
    registry().into_references()
}

fn lazy_value_ref() -> *mut std::ffi::c_void {
    let getter: v8::AccessorNameGetterCallback = lazy_value.map_fn_to();
    getter as *mut std::ffi::c_void
}

/// Marks an isolate that may make and use code caches of the families'
/// files: V8 aborts the process if a snapshot creator makes one, and a
/// restored isolate that used one would put every function's bytecode in
/// its heap. Set once, when a plain isolate is created.
pub(crate) struct MakesCodeCaches;

/// What a run hands the families for its duration.
pub(crate) struct RunSettings<'a> {
    pub max_output_bytes: usize,
    pub budget: Arc<Budget>,
    pub control: Option<Arc<RunControl>>,
    pub fetch: Option<&'a FetchConfig>,
    /// The upstream MCP servers `mcp` calls.
    pub mcp: Option<&'a UpstreamConfig>,
    pub deadline: Instant,
    /// What `import` and `require` may load.
    pub modules: ModuleRun,
    /// The bytes of `/work`'s files.
    pub files: FilesRun,
}

/// Work the host does for a run and hands back through its event loop.
pub(crate) enum Arrived {
    /// A `fetch` head or body.
    Fetch(Completion),
    /// An `mcp` call's answer.
    Mcp(mcp::Answer),
}

/// How long one wait on `fetch` lasts while `mcp` calls are pending too:
/// the two have their own channels, so the loop takes turns.
const BOTH_SLICE: std::time::Duration = std::time::Duration::from_millis(1);

/// Whether requests or calls of the run are still to come.
pub(crate) fn host_pending(scope: &mut v8::PinScope<'_, '_>) -> bool {
    scope
        .get_slot::<FetchRun>()
        .is_some_and(|f| f.pending() > 0)
        || scope.get_slot::<McpRun>().is_some_and(|m| m.pending() > 0)
}

/// The next thing the host hands back, waiting until `until` at most.
pub(crate) fn wait_host(scope: &mut v8::PinScope<'_, '_>, until: Instant) -> Option<Arrived> {
    let fetching = scope
        .get_slot::<FetchRun>()
        .is_some_and(|f| f.pending() > 0);
    let calling = scope.get_slot::<McpRun>().is_some_and(|m| m.pending() > 0);
    match (fetching, calling) {
        (true, false) => scope
            .get_slot_mut::<FetchRun>()?
            .wait(until)
            .map(Arrived::Fetch),
        (false, true) => scope
            .get_slot_mut::<McpRun>()?
            .wait(until)
            .map(Arrived::Mcp),
        (true, true) => loop {
            if let Some(answer) = scope.get_slot_mut::<McpRun>()?.try_next() {
                return Some(Arrived::Mcp(answer));
            }
            let slice = until.min(Instant::now() + BOTH_SLICE);
            if let Some(completion) = scope.get_slot_mut::<FetchRun>()?.wait(slice) {
                return Some(Arrived::Fetch(completion));
            }
            if Instant::now() >= until {
                return None;
            }
        },
        (false, false) => None,
    }
}

/// Settles what [`wait_host`] handed back.
pub(crate) fn deliver_host(scope: &mut v8::PinScope<'_, '_>, arrived: Arrived) {
    match arrived {
        Arrived::Fetch(completion) => fetch::deliver(scope, completion),
        Arrived::Mcp(answer) => mcp::deliver(scope, answer),
    }
}

/// Gives each family its state for one run, in slots of `isolate`.
pub(crate) fn begin_run(isolate: &mut v8::Isolate, settings: RunSettings<'_>) {
    isolate.set_slot(console::Console::new(
        settings.max_output_bytes,
        settings.control,
    ));
    isolate.set_slot(Timers::default());
    isolate.set_slot(clock::Clock::start());
    isolate.set_slot(settings.budget);
    isolate.set_slot(guard::Unsnapshottable::default());
    if let Some(fetch) = FetchRun::new(settings.fetch, settings.deadline) {
        isolate.set_slot(fetch);
    }
    if let Some(mcp) = McpRun::new(settings.mcp) {
        isolate.set_slot(mcp);
    }
    isolate.set_slot(settings.modules);
    isolate.set_slot(settings.files);
    isolate.set_slot(display::Displays::default());
}

/// A function `fs` exports, when the context has loaded `fs` (never loads
/// it: a run that did not use `/work` has none).
fn fs_export<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::Local<'s, v8::Function>> {
    let global = scope.get_current_context().global(scope);
    let key = registry_key(scope);
    let registry = v8::Local::<v8::Object>::try_from(global.get_private(scope, key)?).ok()?;
    let fs = v8::String::new(scope, "fs")?;
    let exports = v8::Local::<v8::Object>::try_from(registry.get(scope, fs.into())?).ok()?;
    let name = v8::String::new(scope, name)?;
    v8::Local::<v8::Function>::try_from(exports.get(scope, name.into())?).ok()
}

/// One entry of a heap's `/work`, as `fs`'s `entries()` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeEntry {
    /// Absolute, under `/work`.
    pub path: String,
    /// `None` for a directory; the bytes' key otherwise (`None` too for an
    /// empty file, which has no stored bytes).
    pub key: Option<String>,
    /// A directory.
    pub dir: bool,
    /// Bytes of a file; 0 for a directory.
    pub size: u64,
    /// Last modified, Unix milliseconds.
    pub mtime_ms: f64,
}

/// The tree of `/work` in the current context; empty when the heap never
/// used `/work`, `None` when its `fs` predates `entries()` (layer 3).
pub(crate) fn tree(scope: &mut v8::PinScope<'_, '_>) -> Option<Vec<TreeEntry>> {
    let Some(entries) = fs_export(scope, "entries") else {
        return fs_export(scope, "keys").is_none().then(Vec::new);
    };
    let receiver = v8::undefined(scope).into();
    let list = v8::Local::<v8::Array>::try_from(entries.call(scope, receiver, &[])?).ok()?;
    let mut tree = Vec::with_capacity(list.length() as usize);
    for i in 0..list.length() {
        let row = v8::Local::<v8::Array>::try_from(list.get_index(scope, i)?).ok()?;
        let field = |n: u32| row.get_index(scope, n);
        let (path, dir, key, size, mtime) = (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        tree.push(TreeEntry {
            path: path.to_rust_string_lossy(scope),
            dir: dir.is_true(),
            key: key.is_string().then(|| key.to_rust_string_lossy(scope)),
            size: size.number_value(scope).unwrap_or(0.0) as u64,
            mtime_ms: mtime.number_value(scope).unwrap_or(0.0),
        });
    }
    Some(tree)
}

/// `tree` as the JSON [`parse_tree`] reads: the one form it crosses a
/// worker's pipe in.
pub(crate) fn tree_json(tree: &[TreeEntry]) -> String {
    let rows: Vec<_> = tree
        .iter()
        .map(|e| serde_json::json!([e.path, e.dir, e.key, e.size, e.mtime_ms]))
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// What [`tree_json`] wrote.
pub(crate) fn parse_tree(json: &str) -> Option<Vec<TreeEntry>> {
    let rows: Vec<(String, bool, Option<String>, u64, f64)> = serde_json::from_str(json).ok()?;
    Some(
        rows.into_iter()
            .map(|(path, dir, key, size, mtime_ms)| TreeEntry {
                path,
                dir,
                key,
                size,
                mtime_ms,
            })
            .collect(),
    )
}

/// The keys of the files `/work` has as the run leaves it, when the run
/// used `/work` at all (their bytes go into the run's result), and the
/// path of each, for `display()`'s links.
pub(crate) fn files_kept(scope: &mut v8::PinScope<'_, '_>) {
    let mut kept = KeptFiles::default();
    if let Some(entries) = tree(scope) {
        for entry in entries {
            if let Some(key) = entry.key.filter(|_| !entry.dir && entry.size > 0) {
                kept.paths.entry(key.clone()).or_insert(entry.path);
                kept.keys.push(key);
            }
        }
    } else if let Some(keys) = fs_export(scope, "keys") {
        // A heap whose `fs` was loaded by layer 3 lists only keys.
        let receiver = v8::undefined(scope).into();
        if let Some(list) = keys
            .call(scope, receiver, &[])
            .and_then(|l| v8::Local::<v8::Array>::try_from(l).ok())
        {
            for i in 0..list.length() {
                if let Some(value) = list.get_index(scope, i) {
                    kept.keys.push(value.to_rust_string_lossy(scope));
                }
            }
        }
    }
    kept.keys.sort_unstable();
    kept.keys.dedup();
    scope.set_slot(kept);
}

/// Writes the call's input files into `/work`; an exception (a path
/// outside `/work`, a cap) is left in `scope` for the caller's try-catch.
pub(crate) fn write_inputs(scope: &mut v8::PinScope<'_, '_>, inputs: &[(String, ::bytes::Bytes)]) {
    let Some(exports) = load(scope, "fs") else {
        return;
    };
    let Some(write) = v8::String::new(scope, "writeInputs")
        .and_then(|k| exports.get(scope, k.into()))
        .and_then(|f| v8::Local::<v8::Function>::try_from(f).ok())
    else {
        return;
    };
    let mut pairs = Vec::with_capacity(inputs.len());
    for (path, bytes) in inputs {
        let (Some(path), Some(bytes)) = (
            v8::String::new(scope, path),
            bytes::uint8_array(scope, bytes),
        ) else {
            return;
        };
        pairs.push(v8::Array::new_with_elements(scope, &[path.into(), bytes.into()]).into());
    }
    let list = v8::Array::new_with_elements(scope, &pairs);
    let receiver = v8::undefined(scope).into();
    write.call(scope, receiver, &[list.into()]);
}

/// What [`files_kept`] found.
#[derive(Default)]
struct KeptFiles {
    keys: Vec<String>,
    /// Key → a path holding it.
    paths: HashMap<String, String>,
}

/// Takes the families' state out of `isolate` when the run ends: its
/// console output and what it fetched. Timer callbacks and pending
/// requests' promises are handles a snapshot must not hold; they go with
/// it, and dropping the requests aborts those still running.
pub(crate) fn end_run(isolate: &mut v8::Isolate) -> Ended {
    let kept = isolate.remove_slot::<KeptFiles>();
    let files = match (isolate.remove_slot::<FilesRun>(), &kept) {
        (Some(mut run), Some(kept)) => run.take_written(&kept.keys),
        _ => Vec::new(),
    };
    let mut displays = isolate
        .remove_slot::<display::Displays>()
        .map(display::Displays::into_shown)
        .unwrap_or_default();
    if let Some(kept) = &kept {
        display::link(&mut displays, &kept.paths);
    }
    drop(isolate.remove_slot::<Timers>());
    isolate.remove_slot::<clock::Clock>();
    drop(isolate.remove_slot::<Arc<Budget>>());
    drop(isolate.remove_slot::<guard::Unsnapshottable>());
    drop(isolate.remove_slot::<ModuleRun>());
    let fetches = isolate
        .remove_slot::<FetchRun>()
        .and_then(|fetch| fetch.count());
    let mcp_calls = isolate.remove_slot::<McpRun>().and_then(|mcp| mcp.count());
    let output = isolate
        .remove_slot::<console::Console>()
        .map(console::Console::into_output)
        .unwrap_or_default();
    Ended {
        output,
        fetches,
        mcp_calls,
        files,
        displays,
    }
}

/// What the families leave when a run ends.
pub(crate) struct Ended {
    pub output: String,
    pub fetches: Option<FetchCount>,
    /// What `mcp` called, when it called anything.
    pub mcp_calls: Option<McpCount>,
    /// Bytes of files the run wrote that its `/work` still has, by key
    /// (only when [`files_kept`] was asked: a completed stateful run).
    pub files: Vec<(String, ::bytes::Bytes)>,
    /// The run's `display()` blocks, in call order.
    pub displays: Vec<Displayed>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored heaps find their natives by index: a native added anywhere
    /// but at the end, or one removed, would point old heaps' functions at
    /// the wrong code. Extend this list at its end only.
    #[test]
    fn the_reference_table_only_grows_at_the_end() {
        let registry = registry();
        let pinned = [
            "console.log",
            "console.info",
            "console.warn",
            "console.error",
            "console.debug",
            "timers.setTimeout",
            "timers.setInterval",
            "timers.clearTimeout",
            "timers.queueMicrotask",
            "web.lazyValue",
            "web.load",
            "events.setTimeout",
            "events.clearTimeout",
            "encoding.encode",
            "encoding.encodeInto",
            "encoding.label",
            "encoding.decode",
            "encoding.atob",
            "encoding.btoa",
            "url.parse",
            "url.set",
            "url.formParse",
            "url.formSerialize",
            "clone.clone",
            "crypto.randomFill",
            "crypto.randomUUID",
            "crypto.digest",
            "crypto.hmacSign",
            "crypto.hmacVerify",
            "host.now",
            "host.timeOrigin",
            "host.version",
            "host.report",
            "console.print",
            "console.indent",
            "console.inspect",
            "console.now",
            "fetch.start",
            "fetch.abort",
            "guard.reserve",
            "guard.track",
            "intl.track",
            "modules.resolve",
            "modules.compile",
            "modules.nodeModules",
            "fs.put",
            "fs.get",
            "fs.limits",
            "display.show",
            "mcp.servers",
            "mcp.start",
        ];
        assert_eq!(registry.names(), pinned);
        assert_eq!(external_references().len(), pinned.len());
    }

    #[test]
    fn every_global_and_console_method_has_a_family() {
        for (name, family) in GLOBALS {
            assert!(FAMILIES.iter().any(|f| f.name == *family), "{name}");
        }
        assert!(FAMILIES.iter().any(|f| f.name == "console"));
    }
}
