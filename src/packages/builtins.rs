//! Node's built-in modules as a package's bundle sees them: left to the
//! engine as `require` calls (only those it provides work).

use std::path::Path;

/// Node's built-in modules by their bare names: a bundle leaves them as
/// `require` calls for the engine to answer (only those it provides work).
pub const NODE_BUILTINS: &[&str] = &[
    "_stream_duplex",
    "_stream_passthrough",
    "_stream_readable",
    "_stream_transform",
    "_stream_writable",
    "assert",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "domain",
    "events",
    "fs",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "repl",
    "stream",
    "string_decoder",
    "sys",
    "timers",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
];

pub(super) fn is_builtin(specifier: &str) -> bool {
    if specifier.starts_with("node:") {
        return true;
    }
    let base = specifier.split('/').next().unwrap_or(specifier);
    NODE_BUILTINS.contains(&base)
}

/// Whether a package's bundle leaves `specifier`, imported by the file
/// `importer`, to the run rather than resolving it among the unpacked
/// packages. As Node reads specifiers: `node:x` and a built-in's exact
/// name (`buffer`, `fs/promises`) are built-ins, while `buffer/` or
/// `string_decoder/lib/x.js` name the npm package, bundled when the
/// importer can see one (its own dependency) and else left to the run,
/// which answers with its port of that module.
pub(super) fn left_to_the_run(specifier: &str, importer: Option<&str>) -> bool {
    if specifier.starts_with("node:") {
        return true;
    }
    let Some((base, _)) = specifier.split_once('/') else {
        if !NODE_BUILTINS.contains(&specifier) {
            return false;
        }
        // A core module runs do not have (`punycode`, `querystring`) is
        // the npm package of that name when the importer has one, as
        // bundlers for the browser take it; else the run says it is missing.
        return ENGINE_BUILTINS.contains(&specifier)
            || !importer.is_some_and(|importer| sees_package(Path::new(importer), specifier));
    };
    if !NODE_BUILTINS.contains(&base) {
        return false;
    }
    if NODE_BUILTIN_SUBPATHS.contains(&specifier) {
        return true;
    }
    !importer.is_some_and(|importer| sees_package(Path::new(importer), base))
}

/// The `node:` modules runs have (`engine/node/modules.js`, `builtins`).
pub const ENGINE_BUILTINS: &[&str] = &[
    "console",
    "crypto",
    "perf_hooks",
    "timers",
    "timers/promises",
    "url",
    "util",
    "buffer",
    "events",
    "stream",
    "stream/promises",
    "_stream_duplex",
    "_stream_passthrough",
    "_stream_readable",
    "_stream_transform",
    "_stream_writable",
    "punycode",
    "string_decoder",
    "readline",
    "assert",
    "assert/strict",
    "process",
    "fs",
    "fs/promises",
    "path",
    "path/posix",
    "path/win32",
    "querystring",
];

/// Node's built-in modules that are a subpath of another.
const NODE_BUILTIN_SUBPATHS: &[&str] = &[
    "assert/strict",
    "dns/promises",
    "fs/promises",
    "inspector/promises",
    "path/posix",
    "path/win32",
    "readline/promises",
    "stream/consumers",
    "stream/promises",
    "stream/web",
    "timers/promises",
    "util/types",
];

/// Whether Node's lookup from the file `importer` finds a package `name` in
/// a `node_modules` directory of an ancestor.
fn sees_package(importer: &Path, name: &str) -> bool {
    importer.ancestors().skip(1).any(|dir| {
        dir.join("node_modules")
            .join(name)
            .join("package.json")
            .is_file()
    })
}
