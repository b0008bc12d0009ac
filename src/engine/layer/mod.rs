//! The JavaScript layer of every context: the Web platform and the host's
//! capabilities beyond it, as families of lazy globals (docs/engine.md
//! lists them all). The families come in a [`registry::Table`] the engine's
//! registration hands over with each isolate ([`arm`]); the layer names
//! none of them.
//!
//! Each family is a JavaScript file beside the Rust natives it calls. A
//! context gets only lazy data properties for the families' globals; the
//! first access evaluates the family's file (and those it loads) in that
//! context, and the property becomes a plain value. A run that uses none of
//! it pays for ~40 property definitions, and a snapshot of it holds no layer
//! code. A family once loaded is part of the heap like user code, so its
//! objects keep their prototypes (`instanceof`) across snapshots.

pub(crate) mod bytes;
pub(crate) mod registry;

pub(crate) use registry::script_origin;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use v8::MapFnTo;

use self::registry::{Family, Registry, Table, registry_key};

/// The table an isolate was armed with ([`arm`]), in one of its slots so
/// that V8's callbacks find it.
#[derive(Clone, Copy)]
struct Armed(&'static Table);

/// The table of `scope`'s isolate. Every isolate is armed before any
/// context of it runs code.
fn table(scope: &v8::Isolate) -> &'static Table {
    scope
        .get_slot::<Armed>()
        .expect("every isolate is armed with the layer's table")
        .0
}

const VERSION: &str = "mcp-v8-lambda.web.version";

/// Puts the host functions on a fresh context's global object (`console`,
/// timers, `queueMicrotask`); a restored context already has them, as part
/// of its heap.
pub(crate) fn install_host<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
) {
    for first in table(scope).first {
        (first.install)(scope, global);
    }
}

/// Makes the Web platform available in `global`'s context: on a fresh
/// context, and on a restored one whose heap predates it (or lacks some
/// global, per the table's version). Names the heap already has are left
/// alone, so a restored heap keeps its own `URL` if code defined one. Cheap
/// when the heap has it all: one private lookup.
pub(crate) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let version_name = v8::String::new(scope, VERSION).expect("short name");
    let version_key = v8::Private::for_api(scope, Some(version_name));
    let installed = global
        .get_private(scope, version_key)
        .and_then(|v| v.int32_value(scope));
    let table = table(scope);
    if installed == Some(table.version()) {
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
    guard_intrinsics(scope, global, registry, table.guarded);
    let version = v8::Integer::new(scope, table.version());
    global.set_private(scope, version_key, version.into());
    define_self(scope, global);
    // Snapshotting isolates have no WebAssembly; a run must not see it
    // depend on whether it is stateful.
    let wasm = v8::String::new(scope, "WebAssembly").expect("short name");
    global.delete(scope, wasm.into());
    stack_trace_limit(scope, global);
    for family in table.families() {
        for name in family.globals {
            define_lazy(scope, global, name);
        }
    }
    let console_key = v8::String::new(scope, "console").expect("short name");
    if let Some(console) = global
        .get(scope, console_key.into())
        .and_then(|c| v8::Local::<v8::Object>::try_from(c).ok())
    {
        for name in table.console.1 {
            define_lazy(scope, console, name);
        }
    }
}

/// Moves the built-ins `guarded` under the registry and leaves lazy
/// properties in their place, on the global object and, for `ArrayBuffer`,
/// on its prototype's `constructor`, the other way code reaches it. Done
/// once per context: a context whose registry has them is left alone.
fn guard_intrinsics<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    registry: v8::Local<'s, v8::Object>,
    guarded: &[&str],
) {
    let key = v8::String::new(scope, "intrinsics").expect("short name");
    if registry.has_own_property(scope, key.into()) == Some(true) {
        return;
    }
    let intrinsics = v8::Object::new(scope);
    for name in guarded {
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
    let Some(family) = table(scope).family_of(&name) else {
        return;
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

/// The family's exports in the current context when a run already loaded
/// it; `None` (and nothing evaluated) when none did.
pub(crate) fn loaded<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::Local<'s, v8::Object>> {
    let global = scope.get_current_context().global(scope);
    let key = registry_key(scope);
    let registry = v8::Local::<v8::Object>::try_from(global.get_private(scope, key)?).ok()?;
    let family_key = v8::String::new(scope, name)?;
    v8::Local::<v8::Object>::try_from(registry.get(scope, family_key.into())?).ok()
}

/// The family's exports in the current context, evaluating its file on the
/// first call. `None` with an exception pending when evaluation threw.
pub(crate) fn load<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::Local<'s, v8::Object>> {
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
    let family = table(scope).families().find(|f| f.name == name)?;
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

/// Arms an isolate with the layer's `table` (which its contexts'
/// globals come from) and the dynamic `import()` every isolate has, the
/// loader's namespace as a promise (V8 keeps that outside the heap).
pub(crate) fn arm(isolate: &mut v8::Isolate, table: &'static Table) {
    isolate.set_slot(Armed(table));
    isolate.set_slot(registry::LoaderSlot(load));
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
pub(crate) fn registry(table: &Table) -> Registry {
    let mut registry = Registry::default();
    for first in table.first {
        registry.functions(first.name, (first.natives)());
    }
    registry.pointer("web.lazyValue", lazy_value_ref());
    registry.functions("web", vec![("load", load_native.map_fn_to())]);
    for family in table.families() {
        // What a family loads is in the table (its order is checked in
        // full by registration's tests).
        debug_assert!(
            family
                .deps
                .iter()
                .all(|dep| table.families().any(|f| f.name == *dep)),
            "family {} depends on a family the table lacks",
            family.name
        );
        registry.functions(family.name, (family.natives)());
    }
    registry
}

/// Every native callback of `table`, for isolates that create or restore
/// snapshots.
pub(crate) fn external_references(table: &Table) -> Vec<v8::ExternalReference> {
    registry(table).into_references()
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
