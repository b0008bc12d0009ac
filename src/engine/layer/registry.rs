//! The one ordered table of native callbacks, below every family.
//!
//! V8 records a native in a snapshot as its index in the table handed to
//! the isolate, so the same table, in the same order, must be given when a
//! heap is created and whenever it is restored. Each entry has a name, so a
//! test can pin the order: an entry added anywhere but at the end, or one
//! removed, would point stored heaps' functions at the wrong code.

/// `(name, callback)` pairs a family hands to its JavaScript file or
/// installs as globals; every callback is also an entry of the table.
pub(crate) type Natives = Vec<(&'static str, v8::FunctionCallback)>;

/// The table under construction, in the order stored heaps rely on.
#[derive(Default)]
pub(crate) struct Registry {
    names: Vec<String>,
    references: Vec<v8::ExternalReference>,
}

impl Registry {
    /// Appends a family's callbacks as `family.name` entries.
    pub(crate) fn functions(&mut self, family: &str, natives: Natives) {
        for (name, callback) in natives {
            self.names.push(format!("{family}.{name}"));
            self.references
                .push(v8::ExternalReference { function: callback });
        }
    }

    /// Appends a raw pointer (an accessor's getter) under `name`.
    pub(crate) fn pointer(&mut self, name: &str, pointer: *mut std::ffi::c_void) {
        self.names.push(name.to_owned());
        self.references.push(v8::ExternalReference { pointer });
    }

    /// The entries' names, in table order.
    #[cfg(test)]
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The table V8 is handed.
    pub(crate) fn into_references(self) -> Vec<v8::ExternalReference> {
        self.references
    }
}

/// Throws a `TypeError` with `message` in the current context.
pub(crate) fn throw_type_error(scope: &mut v8::PinScope, message: &str) {
    let message = v8::String::new(scope, message).expect("short message");
    let exception = v8::Exception::type_error(scope, message);
    scope.throw_exception(exception);
}

/// Throws an `Error` with Node's `code` property (`ENOENT`,
/// `ERR_MODULE_NOT_FOUND`, …), which code tests rather than the message.
pub(crate) fn throw_error_with_code(scope: &mut v8::PinScope<'_, '_>, message: &str, code: &str) {
    let Some(text) = v8::String::new(scope, message) else {
        return;
    };
    let error = v8::Exception::error(scope, text);
    if let (Ok(object), Some(key), Some(code)) = (
        v8::Local::<v8::Object>::try_from(error),
        v8::String::new(scope, "code"),
        v8::String::new(scope, code),
    ) {
        object.set(scope, key.into(), code.into());
    }
    scope.throw_exception(error);
}

/// Defines `natives` as named functions on `target` (the global object,
/// `console`): host functions a fresh context gets before any code runs.
pub(crate) fn define<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    target: v8::Local<'s, v8::Object>,
    natives: Natives,
) {
    for (name, callback) in natives {
        let function = v8::Function::new_raw(scope, callback).expect("creating a host function");
        let key = v8::String::new(scope, name).expect("short name");
        function.set_name(key);
        target.set(scope, key.into(), function.into());
    }
}

/// The origin of a classic script named `name`, as stack traces show it.
pub(crate) fn script_origin<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::ScriptOrigin<'s>> {
    let name = v8::String::new(scope, name)?;
    Some(v8::ScriptOrigin::new(
        scope,
        name.into(),
        0,
        0,
        false,
        0,
        None,
        false,
        false,
        false,
        None,
    ))
}

/// One family: its file, evaluated to a function `(natives, load) => exports`.
pub(crate) struct Family {
    pub name: &'static str,
    pub source: &'static str,
    /// The families its file loads (`load("name")`), as deno_core's
    /// `extension!(deps = …)` declares them; the layer's own `intrinsics`
    /// is not a family and not declared. A test checks that every `load`
    /// is declared and every name is a family of the table.
    pub deps: &'static [&'static str],
    /// The host functions the file is handed as its first argument.
    pub natives: fn() -> Natives,
    /// The globals it exports (under the same names), each a lazy property
    /// of every context until first read.
    pub globals: &'static [&'static str],
    /// The layer version at which its globals last changed: a heap made by
    /// an older layer gets the new names on its next restore. A family that
    /// gains a global takes the highest version of all, plus one.
    pub version: i32,
}

/// Globals of the first release, put on every fresh context as plain
/// functions (not lazily); their natives lead the table.
pub(crate) struct FirstGlobals {
    pub name: &'static str,
    pub natives: fn() -> Natives,
    pub install: for<'s, 'i> fn(&mut v8::PinScope<'s, 'i>, v8::Local<'s, v8::Object>),
}

/// All the layer installs, handed to it by the engine's registration
/// (`engine/contract/registration.rs`) when an isolate is made: the layer itself
/// names no family.
pub(crate) struct Table {
    /// The first release's globals, ahead of the layer's own entries.
    pub first: &'static [FirstGlobals],
    /// Every family, in the order stored heaps rely on (`None`: a
    /// registered capability without a family).
    pub families: &'static [Option<&'static Family>],
    /// The family whose methods `console` gets lazily, and their names.
    pub console: (&'static str, &'static [&'static str]),
    /// V8 built-ins a family wraps: on a context the layer is first
    /// installed in, each is kept for that family under the registry
    /// ("intrinsics") and replaced by a lazy property like the others.
    pub guarded: &'static [&'static str],
}

impl Table {
    /// Every family, in table order.
    pub(crate) fn families(&self) -> impl Iterator<Item = &'static Family> {
        self.families.iter().filter_map(|family| *family)
    }

    /// The layer's version: heaps that carry it have every global.
    pub(crate) fn version(&self) -> i32 {
        self.families()
            .map(|family| family.version)
            .max()
            .unwrap_or(0)
    }

    /// The family that exports global `name`.
    pub(crate) fn family_of(&self, name: &str) -> Option<&'static str> {
        if self.console.1.contains(&name) {
            return Some(self.console.0);
        }
        self.families()
            .find(|family| family.globals.contains(&name))
            .map(|family| family.name)
    }
}

/// Where loaded families live: a private property of the global object, so
/// code cannot reach or replace it, and it is in every snapshot.
const REGISTRY: &str = "mcp-v8-lambda.web";

/// The private key of the loaded families' registry.
pub(crate) fn registry_key<'s>(scope: &mut v8::PinScope<'s, '_>) -> v8::Local<'s, v8::Private> {
    let name = v8::String::new(scope, REGISTRY).expect("short name");
    v8::Private::for_api(scope, Some(name))
}

/// Loads a family by name in the current context (the layer's `load`), for
/// a capability's step before the code: `None` with an exception pending
/// when its file threw.
pub(crate) type Loader =
    for<'s, 'i> fn(&mut v8::PinScope<'s, 'i>, &str) -> Option<v8::Local<'s, v8::Object>>;

/// The layer's [`Loader`], in a slot of every armed isolate: how a native
/// called from code (`console.log`) loads a family it uses, without
/// importing the layer that runs it.
#[derive(Clone, Copy)]
pub(crate) struct LoaderSlot(pub(crate) Loader);
