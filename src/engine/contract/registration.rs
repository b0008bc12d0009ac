//! The registered capabilities (the trait: [`crate::engine::capability`]): one line
//! each below, which gives the engine's [`CapabilitySettings`] and a run's
//! [`Asks`] and [`Reports`] a field, `run_js` the capability's argument,
//! the layer its family, and the run core a call of each step.

use serde::{Deserialize, Serialize};

use crate::engine::capability::outcome::RunError;
use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::positions::Positions;
use crate::engine::capability::{Argument, Call, Capability, RunScope};
use crate::engine::layer::registry::{Family, Loader};
use crate::engine::layer::registry::{FirstGlobals, Table};
use crate::engine::web::{console, guard, timers};

/// Registers the capabilities: the run's [`Asks`] and [`Reports`] get a
/// field of each, the layer gets the family of each that has one, and the
/// run core calls each in turn.
macro_rules! capabilities {
    ($($(#[$attr:meta])* $field:ident: $cap:ty,)*) => {
        /// The operator's settings of each capability, part of the
        /// engine's configuration.
        // Each field's type is the capability's public settings type,
        // named through the crate's own trait.
        #[allow(private_interfaces)]
        #[derive(Debug, Clone, Default)]
        pub struct CapabilitySettings {
            $(
                $(#[$attr])*
                #[doc = concat!("The settings of `", stringify!($field), "`.")]
                pub $field: <$cap as Capability>::Settings,
            )*
        }

        /// The run's asks, each from its capability's settings and the call;
        /// `Err` says what is wrong with an argument, or names the ones no
        /// capability takes.
        pub(crate) fn asks(settings: &CapabilitySettings, mut call: Call<'_>) -> Result<Asks, String> {
            let asks = Asks {
                $($(#[$attr])* $field: <$cap as Capability>::ask(&settings.$field, &mut call)?,)*
            };
            match call.arguments.keys().next() {
                None => Ok(asks),
                Some(name) => Err(format!(
                    "run_js has no argument {name:?}; it takes {}",
                    arguments().map(|a| a.name).collect::<Vec<_>>().join(", ")
                )),
            }
        }

        const ARGUMENTS: &[Option<Argument>] = &[
            $($(#[$attr])* <$cap as Capability>::ARGUMENT,)*
        ];

        /// Each capability's part of a run's request.
        #[derive(Default, Serialize, Deserialize)]
        pub(crate) struct Asks {
            $($(#[$attr])* pub $field: <$cap as Capability>::Ask,)*
        }

        /// Each capability's part of a run's report.
        #[derive(Debug, Default, Serialize, Deserialize)]
        pub(crate) struct Reports {
            $($(#[$attr])* pub $field: <$cap as Capability>::Report,)*
        }

        const FAMILIES: &[Option<&'static Family>] = &[
            $($(#[$attr])* <$cap as Capability>::FAMILY,)*
        ];

        /// Sets every capability up for one run.
        pub(crate) fn begin(isolate: &mut v8::Isolate, asks: &Asks, run: &RunScope<'_>) {
            $($(#[$attr])* <$cap as Capability>::begin(isolate, &asks.$field, run);)*
        }

        /// Every capability's step before the code.
        pub(crate) fn before_code(
            scope: &mut v8::PinScope<'_, '_>,
            asks: &Asks,
            load: Loader,
        ) -> Result<(), RunError> {
            $($(#[$attr])* <$cap as Capability>::before_code(scope, &asks.$field, load)?;)*
            Ok(())
        }

        /// Whether any capability waits for host work.
        pub(crate) fn pending(isolate: &v8::Isolate) -> bool {
            $(
                $(#[$attr])*
                if <$cap as Capability>::pending(isolate) {
                    return true;
                }
            )*
            false
        }

        /// Takes every capability down, in registration order.
        pub(crate) fn end(isolate: &mut v8::Isolate) -> Reports {
            Reports {
                $($(#[$attr])* $field: <$cap as Capability>::end(isolate),)*
            }
        }

        impl Reports {
            pub(crate) fn cancelled(&mut self) {
                $($(#[$attr])* <$cap as Capability>::cancelled(&mut self.$field);)*
            }

            pub(crate) fn remap(&mut self, positions: &Positions) {
                $($(#[$attr])* <$cap as Capability>::remap(&mut self.$field, positions);)*
            }

            /// Shows every capability's report in `shown`.
            pub(crate) fn show(&mut self, shown: &mut RunReport) {
                $($(#[$attr])* <$cap as Capability>::show(&mut self.$field, shown);)*
            }
        }
    };
}

/// The `run_js` arguments capabilities take, in registration order.
pub(crate) fn arguments() -> impl Iterator<Item = Argument> {
    ARGUMENTS.iter().filter_map(|argument| *argument)
}

/// The layer's table: the first release's globals, every family in
/// registration order, `console`'s lazy methods and the built-ins the guard
/// wraps. Handed to the layer with each isolate (`layer::arm`).
pub(crate) static LAYER: Table = Table {
    first: &[
        FirstGlobals {
            name: "console",
            natives: console::globals,
            install: console::install,
        },
        FirstGlobals {
            name: "timers",
            natives: timers::globals,
            install: timers::install,
        },
    ],
    families: FAMILIES,
    console: ("console", console::METHODS),
    guarded: guard::GUARDED,
};

// One line per capability and per family of the JavaScript layer, which
// registers both the same way. A line's family takes the next entries of
// the table of natives, which stored heaps index: a new line goes at the
// end (the pinned order is `tests::the_reference_table_only_grows_at_the_end`).
// Capabilities run their steps in this order too; `files` ends before
// `display`, which links to the files it kept.
capabilities! {
    timers: crate::engine::web::Timers,
    events: crate::engine::web::timers::Events,
    encoding: crate::engine::web::encoding::Encoding,
    url: crate::engine::web::url::WebUrl,
    clone: crate::engine::web::clone::StructuredClone,
    crypto: crate::engine::web::crypto::WebCrypto,
    clock: crate::engine::web::performance::RunStart,
    blob: crate::engine::web::Blob,
    http: crate::engine::web::Http,
    console: crate::engine::web::console::Console,
    fetch: crate::engine::web::FetchRun,
    guard: crate::engine::web::guard::Unsnapshottable,
    intl: crate::engine::web::guard::Intl,
    modules: crate::engine::node::modules::ModuleRun,
    files: crate::engine::host::fs::FilesRun,
    display: crate::engine::host::display::Displays,
    mcp: crate::engine::host::mcp::McpRun,
    process: crate::engine::node::process::ProcessRun,
    node: crate::engine::node::builtins::NodeLib,
    node_inspect: crate::engine::node::builtins::NodeInspect,
    elicit: crate::engine::host::elicit::ElicitRun,
    progress: crate::engine::host::progress::ProgressRun,
    disk: crate::engine::host::disk::DiskRun,
    digest: crate::engine::node::digest::Digests,
    microtasks: crate::engine::web::microtasks::Uncaught,
    node_timers: crate::engine::node::timers::NodeTimers,
    node_core: crate::engine::node::builtins::NodeCore,
    #[cfg(test)]
    toy: crate::engine::host::toy::Toy,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored heaps find their natives by index: a native added anywhere
    /// but at the end, or one removed, would point old heaps' functions at
    /// the wrong code. Extend this list at its end only.
    #[test]
    fn the_reference_table_only_grows_at_the_end() {
        let registry = crate::engine::layer::registry(&LAYER);
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
            "process.env",
            "process.envKeys",
            "process.v8Version",
            "process.memoryUsage",
            "elicit.check",
            "progress.report",
            "disk.create",
            "disk.derive",
            "disk.copy",
            "disk.remove",
            "disk.size",
            "disk.write",
            "disk.read",
            "disk.readStored",
            "disk.truncate",
            "disk.seal",
            "digest.start",
            "digest.update",
            "digest.finish",
            "microtasks.call",
            "node_timers.schedule",
            "node_timers.ref",
            "node_timers.clear",
        ];
        // The test-only capability's family comes after every real one.
        let pinned: Vec<&str> = pinned.into_iter().chain(["toy.double"]).collect();
        assert_eq!(registry.names(), pinned);
        assert_eq!(
            crate::engine::layer::external_references(&LAYER).len(),
            pinned.len()
        );
    }

    /// Every family's file loads only the families it declares (`deps`),
    /// each one of the table, and the declarations hold no circle: what a
    /// family needs is read from its declaration, not from its source.
    #[test]
    fn every_family_declares_the_families_it_loads() {
        let families: Vec<_> = LAYER.families().collect();
        let names: std::collections::BTreeSet<&str> = families.iter().map(|f| f.name).collect();
        for family in &families {
            let mut loaded: Vec<&str> = family
                .source
                .split("load(\"")
                .skip(1)
                .filter_map(|rest| rest.split_once('"').map(|(name, _)| name))
                .filter(|name| *name != "intrinsics")
                .collect();
            loaded.sort_unstable();
            loaded.dedup();
            assert_eq!(
                loaded, family.deps,
                "family {} loads {loaded:?}; its deps say {:?}",
                family.name, family.deps
            );
            for dep in family.deps {
                assert!(
                    names.contains(dep),
                    "family {} depends on {dep}, which is no family of the table",
                    family.name
                );
            }
        }
        // No circle: a family's deps, followed, never come back to it.
        fn reaches(from: &str, to: &str, families: &[&Family], seen: &mut Vec<String>) -> bool {
            let Some(family) = families.iter().find(|f| f.name == from) else {
                return false;
            };
            family.deps.iter().any(|dep| {
                if *dep == to {
                    return true;
                }
                if seen.iter().any(|s| s == dep) {
                    return false;
                }
                seen.push((*dep).to_owned());
                reaches(dep, to, families, seen)
            })
        }
        for family in &families {
            assert!(
                !reaches(family.name, family.name, &families, &mut Vec::new()),
                "family {} depends on itself through its deps",
                family.name
            );
        }
    }

    /// Each family's globals and version, as heaps made by this layer hold
    /// them. A family that gains a global must take a version above every
    /// other (so heaps of the layer before get the name on restore): change
    /// this table, and the version, together.
    #[test]
    fn every_family_declares_its_globals_and_the_version_they_came_with() {
        let declared: Vec<(&str, i32, Vec<&str>)> = LAYER
            .families()
            .map(|f| (f.name, f.version, f.globals.to_vec()))
            .collect();
        let pinned: Vec<(&str, i32, Vec<&str>)> = vec![
            (
                "events",
                1,
                vec![
                    "DOMException",
                    "Event",
                    "EventTarget",
                    "CustomEvent",
                    "AbortController",
                    "AbortSignal",
                ],
            ),
            (
                "encoding",
                1,
                vec!["TextEncoder", "TextDecoder", "atob", "btoa"],
            ),
            ("url", 1, vec!["URL", "URLSearchParams"]),
            ("clone", 1, vec!["structuredClone"]),
            (
                "crypto",
                1,
                vec!["crypto", "Crypto", "CryptoKey", "SubtleCrypto"],
            ),
            (
                "host",
                1,
                vec![
                    "performance",
                    "Performance",
                    "navigator",
                    "Navigator",
                    "reportError",
                ],
            ),
            ("blob", 1, vec!["Blob", "File", "FormData"]),
            ("http", 1, vec!["Headers", "Request", "Response"]),
            ("console", 1, vec![]),
            ("fetch", 1, vec!["fetch"]),
            ("guard", 2, vec!["ArrayBuffer", "FinalizationRegistry"]),
            ("intl", 2, vec!["Intl"]),
            ("modules", 3, vec!["require", "$__mcpv8_import"]),
            ("fs", 3, vec![]),
            ("display", 4, vec!["display"]),
            ("mcp", 5, vec!["mcp"]),
            ("process", 6, vec!["process", "global"]),
            ("node", 7, vec!["Buffer"]),
            ("node_inspect", 1, vec![]),
            ("elicit", 8, vec!["elicit"]),
            ("progress", 9, vec!["reportProgress"]),
            ("disk", 1, vec![]),
            ("digest", 1, vec![]),
            ("microtasks", 1, vec![]),
            (
                "node_timers",
                10,
                vec![
                    "setTimeout",
                    "setInterval",
                    "clearTimeout",
                    "clearInterval",
                    "setImmediate",
                    "clearImmediate",
                ],
            ),
            ("node_core", 1, vec![]),
            ("toy", 11, vec!["toy"]),
        ];
        assert_eq!(declared, pinned);
        // The version heaps of the release before this table carry (1 +
        // the host families then, 7), so they are not reinstalled needlessly.
        assert_eq!(LAYER.version(), 11, "10 without the test-only family");
        for name in LAYER.guarded {
            assert!(LAYER.family_of(name).is_some(), "{name} has no family");
        }
        let mut seen = std::collections::BTreeSet::new();
        for name in LAYER.families().flat_map(|f| f.globals) {
            assert!(seen.insert(name), "two families export {name}");
        }
    }
}
