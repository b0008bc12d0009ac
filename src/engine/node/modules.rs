//! Packages and ES-module syntax in runs. The loader (`modules.js`) is a
//! Web family: `require`, the namespaces static `import` and `import()` give,
//! and the `node:` modules the engine provides. Its natives resolve a
//! specifier against the installed packages and compile a bundle's file as
//! a CommonJS function. What a run loaded is in its heap from then on.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use crate::egress::FetchConfig;
use crate::engine::capability::{Call, Capability, RunScope};
use crate::engine::layer::registry::Family;
use crate::engine::layer::registry::{Natives, throw_error_with_code, throw_type_error};
use crate::engine::services::HostServices;
use crate::engine::services::work::{HostWork, Interrupted};
use crate::packages::{Bundle, Fetching, PackageView, Stopped, UrlFetch, is_url};
use crate::units::MIB;

/// The family's natives, in the order stored heaps rely on.
pub(crate) fn natives() -> Natives {
    vec![
        ("resolve", resolve.map_fn_to()),
        ("compile", compile.map_fn_to()),
        ("nodeModules", node_modules.map_fn_to()),
    ]
}

/// The operator's settings of modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleSettings {
    /// Most module source one run may load (its module graph), in bytes
    /// (`MCP_V8_MAX_RUN_MODULES_MB`).
    pub max_module_bytes: usize,
}

impl Default for ModuleSettings {
    fn default() -> Self {
        Self {
            max_module_bytes: ModulesAsk::default().max_module_bytes,
        }
    }
}

/// What a run may load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ModulesAsk {
    /// The installed packages `import` and `require` may load.
    pub packages: Option<Arc<PackageView>>,
    /// Most module source one run may load (its module graph), in bytes.
    pub max_module_bytes: usize,
}

impl Default for ModulesAsk {
    fn default() -> Self {
        Self {
            packages: None,
            max_module_bytes: 64 * MIB,
        }
    }
}

/// The packages a run may load and what it loaded (an isolate slot).
pub(crate) struct ModuleRun {
    view: Option<Arc<PackageView>>,
    /// The run's `fetch` policy, which modules by URL are fetched under
    /// (`None`: fetch is off), and the host whose client carries it out:
    /// asked for only when a run imports by URL.
    fetch: Option<(Arc<FetchConfig>, HostServices)>,
    /// Bundles resolved in this run, by `name@version`.
    bundles: HashMap<String, Arc<Bundle>>,
    /// Source compiled in this run, in bytes, against `max_bytes`.
    compiled: usize,
    max_bytes: usize,
}

impl Capability for ModuleRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "modules",
        source: include_str!("modules.js"),
        deps: &[
            "crypto",
            "digest",
            "fs",
            "node",
            "node_core",
            "node_inspect",
            "node_timers",
        ],
        natives,
        // `$__mcpv8_import` is what a run's static `import` declarations
        // become (engine/run/repl.rs).
        globals: &["require", "$__mcpv8_import"],
        version: 3,
    });
    type Settings = ModuleSettings;
    type Ask = ModulesAsk;
    type Report = ();

    fn ask(settings: &ModuleSettings, call: &mut Call<'_>) -> Result<ModulesAsk, String> {
        Ok(ModulesAsk {
            packages: call.packages.cloned(),
            max_module_bytes: settings.max_module_bytes,
        })
    }

    fn begin(isolate: &mut v8::Isolate, ask: &ModulesAsk, run: &RunScope<'_>) {
        let fetch = run
            .egress
            .filter(|config| config.enabled())
            .map(|config| (config.clone(), run.host.clone()));
        isolate.set_slot(Self {
            view: ask.packages.clone(),
            fetch,
            bundles: HashMap::new(),
            compiled: 0,
            max_bytes: ask.max_module_bytes,
        });
    }

    fn end(isolate: &mut v8::Isolate) {
        drop(isolate.remove_slot::<Self>());
    }
}

/// The bare names Node resolves to built-in modules, so `require("url")`
/// means `node:url` as in Node.
fn node_modules<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let names: Vec<v8::Local<v8::Value>> = crate::packages::NODE_BUILTINS
        .iter()
        .filter_map(|n| v8::String::new(scope, n).map(Into::into))
        .collect();
    rv.set(v8::Array::new_with_elements(scope, &names).into());
}

/// `resolve(specifier)`: `[id, file, esm, wrapped]` of the entry it names, or a
/// thrown error that says what exists.
fn resolve<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let specifier = args.get(0).to_rust_string_lossy(scope);
    let Some(run) = scope.get_slot::<ModuleRun>() else {
        throw_type_error(scope, "modules are not available outside a run");
        return;
    };
    // Only a refusal names what is installed.
    let listing = || {
        run.view
            .as_ref()
            .map_or_else(|| "none".to_owned(), |v| v.listing())
    };
    if specifier.starts_with("./") || specifier.starts_with("../") || specifier.starts_with('/') {
        let message = format!(
            "Cannot find module '{specifier}': a run is not a file and has no files to import; \
             import installed packages by name (installed: {})",
            listing()
        );
        throw_error_with_code(scope, &message, "ERR_MODULE_NOT_FOUND");
        return;
    }
    if specifier.starts_with("npm:") || specifier.starts_with("jsr:") {
        let message = format!(
            "Cannot import '{specifier}': runs import installed packages by name (installed: {}) \
             and modules by http(s) URL; an operator adds packages with `mcp-v8-lambda packages add`",
            listing()
        );
        throw_error_with_code(scope, &message, "ERR_UNSUPPORTED_ESM_URL_SCHEME");
        return;
    }
    let view = run.view.clone().unwrap_or_default();
    let resolved = if is_url(&specifier) {
        let client = run
            .fetch
            .as_ref()
            .map(|(config, host)| host.clients.fetch(config, &host.runtime));
        let Some(work) = scope.get_slot_mut::<HostWork>() else {
            throw_type_error(scope, "modules are not available outside a run");
            return;
        };
        let deadline = work.deadline();
        let mut wait = |fetching: Fetching| {
            work.block_on(fetching).map_err(|why| match why {
                Interrupted::Deadline => Stopped::Deadline,
                Interrupted::Cancelled => Stopped::Cancelled,
            })
        };
        let fetch = UrlFetch {
            client,
            deadline,
            wait: &mut wait,
        };
        view.resolve_url(&specifier, fetch)
            .map_err(|e| e.to_string())
    } else {
        // `resolve(specifier, true)` is `require`'s.
        let required = args.get(1).is_true();
        view.resolve_for(&specifier, required)
            .map_err(|e| e.to_string())
    };
    let resolved = match resolved {
        Ok(resolved) => resolved,
        Err(error) => {
            throw_error_with_code(scope, &error, "ERR_MODULE_NOT_FOUND");
            return;
        }
    };
    let (Some(id), Some(file)) = (
        v8::String::new(scope, &resolved.id),
        v8::String::new(scope, &resolved.file),
    ) else {
        return;
    };
    let esm = v8::Boolean::new(scope, resolved.esm);
    let wrapped = v8::Boolean::new(scope, resolved.wrapped);
    if let Some(run) = scope.get_slot_mut::<ModuleRun>() {
        run.bundles.insert(resolved.id.clone(), resolved.bundle);
    }
    let entry = [id.into(), file.into(), esm.into(), wrapped.into()];
    rv.set(v8::Array::new_with_elements(scope, &entry).into());
}

/// `compile(id, file)`: the file as a function of `(exports, require,
/// module, __filename, __dirname)`, named in stacks as
/// `node_modules/<id>/<file>`.
fn compile<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = args.get(0).to_rust_string_lossy(scope);
    let file = args.get(1).to_rust_string_lossy(scope);
    let Some(run) = scope.get_slot_mut::<ModuleRun>() else {
        throw_type_error(scope, "modules are not available outside a run");
        return;
    };
    // A module of a package this run did not resolve: one resolved in an
    // earlier run that loads a file only now.
    if !run.bundles.contains_key(&id)
        && let Some(bundle) = match &run.view {
            Some(view) => view.bundle_of(&id),
            None => PackageView::default().bundle_of(&id),
        }
    {
        run.bundles.insert(id.clone(), bundle);
    }
    let Some(source) = run
        .bundles
        .get(&id)
        .and_then(|bundle| bundle.files.get(&file))
        .cloned()
    else {
        let message = format!("Cannot find module '{file}' in package {id}");
        throw_error_with_code(scope, &message, "MODULE_NOT_FOUND");
        return;
    };
    run.compiled += source.len();
    if run.compiled > run.max_bytes {
        let message = format!(
            "the modules this run loaded are over {} MiB of source, the limit of a run's module graph (MCP_V8_MAX_RUN_MODULES_MB)",
            run.max_bytes / MIB
        );
        let Some(text) = v8::String::new(scope, &message) else {
            return;
        };
        let error = v8::Exception::range_error(scope, text);
        scope.throw_exception(error);
        return;
    }
    let Some(text) = v8::String::new(scope, &source) else {
        throw_type_error(scope, "module source too large for V8");
        return;
    };
    let name = if is_url(&id) {
        id.clone()
    } else {
        format!("node_modules/{id}/{file}")
    };
    let Some(origin) = crate::engine::layer::registry::script_origin(scope, &name) else {
        return;
    };
    let mut source = v8::script_compiler::Source::new(text, Some(&origin));
    let parameters: Vec<v8::Local<v8::String>> =
        ["exports", "require", "module", "__filename", "__dirname"]
            .iter()
            .filter_map(|p| v8::String::new(scope, p))
            .collect();
    if let Some(function) = v8::script_compiler::compile_function(
        scope,
        &mut source,
        &parameters,
        &[],
        v8::script_compiler::CompileOptions::NoCompileOptions,
        v8::script_compiler::NoCacheReason::NoReason,
    ) {
        rv.set(function.into());
    }
}

#[cfg(test)]
mod tests {
    /// The bundler leaves to the run exactly the `node:` modules runs have:
    /// `packages::ENGINE_BUILTINS` is the key list of modules.js's
    /// `builtins`.
    #[test]
    fn the_bundler_knows_which_node_modules_runs_have() {
        let source = include_str!("modules.js");
        let start = source
            .find("const builtins = {")
            .expect("the builtins table");
        let end = start + source[start..].find("\n  };").expect("its end");
        let keys: Vec<String> = source[start..end]
            .lines()
            .filter_map(|line| {
                let (key, _) = line.strip_prefix("    ")?.split_once(": ")?;
                (!key.starts_with([' ', '/'])).then(|| key.trim_matches('"').to_owned())
            })
            .collect();
        assert_eq!(keys, crate::packages::ENGINE_BUILTINS);
    }
}
