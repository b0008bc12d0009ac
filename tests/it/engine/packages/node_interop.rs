//! Packages as Node 22 loads them: subpaths, dual packages, ES modules
//! required, streams over /work files, and a package that loads empty or lacks
//! what a run calls, named.

use super::*;

/// Two subpaths of one CommonJS module (`"."` and the `"./index"` guessed
/// from its files, as readable-stream 3's `"."` and `"./readable"`) give
/// its `module.exports`, one instance, where the second used to be `{}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subpaths_that_name_one_module_give_its_exports() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = tarball(
        dir.path(),
        "two-names-1.0.0.tgz",
        &[
            (
                "package.json",
                r#"{"name": "two-names", "version": "1.0.0", "main": "index.js"}"#,
            ),
            (
                "index.js",
                "var helper = require('./lib/helper');\n\
                 module.exports = function Two() { return helper(); };\n\
                 module.exports.named = 1;\n",
            ),
            (
                "lib/helper.js",
                "module.exports = function () { return 2; };\n",
            ),
        ],
    );
    let engine = engine_with(dir.path(), &tarball).await;
    let code = "const a = require('two-names'), b = require('two-names/index'); \
                import T from 'two-names/index'; \
                [typeof a, a(), a.named, typeof b, b === a, T === a]";
    let outcome = run(&engine, code, Language::Auto, None).await;
    assert_eq!(
        completed(code, &outcome),
        r#"["function",2,1,"function",true,true]"#
    );
}

/// A dual package (`exports` with `import` and `require` conditions, as
/// decimal.js): `require` gives its CommonJS build's `module.exports` and
/// `import` its ES module, as Node gives them (checked against the `node`
/// on this machine), where `require` used to take the ES module too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dual_package_is_required_and_imported_as_node_does() {
    let files: &[(&str, &str)] = &[
        (
            "package.json",
            r#"{"name": "dual", "version": "1.0.0", "main": "index.cjs",
                "exports": {".": {"import": "./index.mjs", "require": "./index.cjs"},
                            "./extra": "./extra.cjs"}}"#,
        ),
        (
            "index.cjs",
            "function Decimal(v) { this.v = v; }\nDecimal.kind = 'cjs';\nmodule.exports = Decimal;\n",
        ),
        (
            "index.mjs",
            "export default function Decimal(v) { this.v = v; }\nexport const kind = 'esm';\n",
        ),
        (
            "extra.cjs",
            "module.exports = { extra: require('dual').kind };\n",
        ),
    ];
    let probe = "const D = require('dual'); const ns = await import('dual'); \
                 JSON.stringify([typeof D, D.kind, new D(2).v, typeof ns.default, ns.kind, \
                 ns.default === D, require('dual/extra').extra])";
    let from_node = node_gives("dual", files, probe);
    assert_eq!(
        from_node,
        r#"["function","cjs",2,"function","esm",false,"cjs"]"#
    );
    assert_eq!(run_gives("dual", files, probe).await, from_node);
}

/// `require` of an ES module gives what Node 22's does: with a default
/// export, an object of its own marked `__esModule` (names sorted); without,
/// its exports. A folder mapping in `exports` (`"./es/"`, ramda 0.30's) is
/// no entry, as Node has none, where it failed the install.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_es_module_is_required_as_node_22_does() {
    let files: &[(&str, &str)] = &[
        (
            "package.json",
            r#"{"name": "esm-only", "version": "1.0.0", "type": "module",
                "exports": {".": "./index.js", "./plain": "./plain.js", "./es/": "./es/"}}"#,
        ),
        (
            "index.js",
            "export default function chalk() { return 'c'; }\nexport const level = 1;\nexport class Chalk {}\n",
        ),
        (
            "plain.js",
            "export const nanoid = () => 'id';\nexport const size = 21;\n",
        ),
        ("es/index.js", "export const unused = 1;\n"),
    ];
    let probe = "const m = require('esm-only'), p = require('esm-only/plain'); \
                 const ns = await import('esm-only'); \
                 JSON.stringify([Object.keys(m), m.__esModule, Object.prototype.toString.call(m), m.default(), \
                 m === require('esm-only'), m === ns, Object.keys(p), '__esModule' in p, p.nanoid()])";
    let from_node = node_gives("esm-only", files, probe);
    assert_eq!(
        from_node,
        r#"[["Chalk","__esModule","default","level"],true,"[object Module]","c",true,false,["nanoid","size"],false,"id"]"#
    );
    assert_eq!(run_gives("esm-only", files, probe).await, from_node);
}

/// Node 22 (the conformance suite's `node` package, installed by
/// scripts/test.sh), from `files` as `node_modules/{name}`: what the
/// JSON-returning `expression` (an async function body's last line) gives.
fn node_gives(name: &str, files: &[(&str, &str)], expression: &str) -> String {
    let node = crate::common::npm::node22();
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("node_modules").join(name);
    for (file, text) in files {
        let path = package.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let script = format!(
        "(async () => {{ {} }})().then((r) => console.log(r), (e) => {{ console.log('threw ' + e); }});",
        last_line_returned(expression)
    );
    let output = std::process::Command::new(node)
        .args(["-e", &script])
        .current_dir(dir.path())
        .output()
        .expect("node runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// `code` with `return` before its last statement.
fn last_line_returned(code: &str) -> String {
    let at = code.rfind("; ").map_or(0, |i| i + 2);
    format!("{}return {}", &code[..at], &code[at..])
}

/// What a run gives for `code` with `files` installed as a package by
/// `packages add` (a tarball), its result unquoted.
async fn run_gives(name: &str, files: &[(&str, &str)], code: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let tarball = tarball(dir.path(), &format!("{name}-1.0.0.tgz"), files);
    let engine = engine_with(dir.path(), &tarball).await;
    let outcome = run(&engine, code, Language::Auto, None).await;
    serde_json::from_str::<String>(&completed(code, &outcome)).unwrap()
}

/// readable-stream 3 as under Node: `require` gives the `Readable` class
/// with the rest on it (it was `{}`), and its `pipeline` streams a `/work`
/// file through a `Transform` into another (the issue's own check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readable_stream_3_pipes_a_work_file() {
    let registry = npm::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirPackageStore::new(dir.path().join("packages")));
    let tarball = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/npm-by-path/readable-stream-3.6.2.tgz");
    let added = packages::add(
        store.as_ref(),
        &[tarball.display().to_string()],
        &options(&registry),
        &checker(),
    )
    .await
    .unwrap();
    assert_eq!(added, ["readable-stream@3.6.2"]);
    let packages = Arc::new(Packages::new(store.clone(), store.bundle_dir(), false));
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let files = Arc::new(mcp_v8_lambda::files::DirFileStore::new(
        dir.path().join("work"),
    ));
    let engine = crate::common::engine::on_workers(EngineConfig::default(), Some(heaps))
        .with_files(files)
        .with_packages(packages);
    let code = "const fs = require('fs'); fs.writeFileSync('in.txt', 'hello\\nworld\\n'); \
                const R = require('readable-stream'); \
                const up = new R.Transform({ transform(chunk, _, done) { done(null, chunk.toString().toUpperCase()); } }); \
                await new Promise((ok, fail) => R.pipeline(fs.createReadStream('in.txt'), up, \
                  fs.createWriteStream('out.txt'), (e) => (e ? fail(e) : ok()))); \
                JSON.stringify([typeof R, R === R.Readable, new R.Readable({ read() {} }) instanceof R.Stream, \
                  typeof R.Writable, fs.readFileSync('out.txt', 'utf8')])";
    let outcome = run(&engine, code, Language::Auto, None).await;
    assert_eq!(
        completed(code, &outcome),
        "\"[\\\"function\\\",true,true,\\\"function\\\",\\\"HELLO\\\\nWORLD\\\\n\\\"]\""
    );
}

/// A stateless engine over a package store in `dir` where `packages add`
/// added `tarball` (a package without dependencies).
async fn engine_with(dir: &std::path::Path, tarball: &std::path::Path) -> Engine {
    let store = Arc::new(DirPackageStore::new(dir.join("packages")));
    let options = InstallOptions::new(None, 32 * 1024 * 1024).unwrap();
    packages::add(
        store.as_ref(),
        &[tarball.display().to_string()],
        &options,
        &checker(),
    )
    .await
    .unwrap();
    let packages = Arc::new(Packages::new(store.clone(), store.bundle_dir(), false));
    crate::common::engine::on_workers(EngineConfig::default(), None).with_packages(packages)
}

/// A package whose main entry declares exports a run does not get (here:
/// only under a Node internal runs lack) is refused, naming what it
/// declares and what is missing: it would load as `{}` and fail later in
/// an agent's code. One that declares nothing checkable installs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_that_loads_empty_is_refused_naming_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tarball(
        dir.path(),
        "loads-empty-1.0.0.tgz",
        &[
            (
                "package.json",
                r#"{"name":"loads-empty","version":"1.0.0","main":"index.js"}"#,
            ),
            (
                "index.js",
                "if (typeof process.binding === 'function') {\n\
                 \x20 exports.parse = function parse() {};\n\
                 \x20 exports.stringify = function stringify() {};\n\
                 }\n",
            ),
        ],
    );
    let store = DirPackageStore::new(dir.path().join("packages"));
    let options = InstallOptions::new(None, 32 * 1024 * 1024).unwrap();
    let error = packages::add(&store, &[empty.display().to_string()], &options, &checker())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("loads-empty@1.0.0")
            && error.contains("a run gets no exports from it")
            && error.contains("its entry index.js declares parse, stringify")
            && error.contains("missing: parse, stringify"),
        "{error}"
    );
    assert!(store.index().await.unwrap().is_none(), "nothing installed");

    let plain = tarball(
        dir.path(),
        "plain-1.0.0.tgz",
        &[
            (
                "package.json",
                r#"{"name":"plain","version":"1.0.0","main":"index.js"}"#,
            ),
            ("index.js", "exports.parse = () => 1;\nexports.more = 2;\n"),
        ],
    );
    let added = packages::add(&store, &[plain.display().to_string()], &options, &checker())
        .await
        .unwrap();
    assert_eq!(added, ["plain@1.0.0"]);
    let (index, _) = store.index().await.unwrap().unwrap();
    assert_eq!(
        index.packages["plain"].shape.as_ref().unwrap().to_string(),
        "CommonJS, 2 exports, Node build"
    );
}

/// Calling a member a package's export lacks names the package, what it
/// has, and where the member is when its default export has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calling_what_a_package_lacks_names_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = tarball(
        dir.path(),
        "streamy-1.0.0.tgz",
        &[
            (
                "package.json",
                r#"{"name":"streamy","version":"1.0.0","main":"index.js"}"#,
            ),
            (
                "index.js",
                "exports.default = { Readable: class Readable {} };\nexports.other = 1;\n",
            ),
        ],
    );
    let engine = engine_with(dir.path(), &tarball).await;
    let code = "const R = require('streamy');\nnew R.Readable();";
    let outcome = run(&engine, code, Language::Auto, None).await;
    let error = outcome.error.expect("it throws");
    assert_eq!(error.name, "TypeError");
    assert_eq!(
        error.message,
        "R.Readable is not a constructor (the package streamy has no 'Readable' here; what \
         it gave has default, other; its default export has it: use .default.Readable, or \
         import { Readable } from \"streamy\")"
    );
    // A value no package gave keeps V8's message, packages loaded or not.
    let code = "const R = require('streamy');\nconst plain = {};\nplain.f();";
    let outcome = run(&engine, code, Language::Auto, None).await;
    assert_eq!(outcome.error.unwrap().message, "plain.f is not a function");
}
