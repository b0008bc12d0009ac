//! Packages (src/packages, src/engine/node/modules.*): `packages add` from tarballs
//! and from a registry on loopback (tests/it/common/npm.rs, real npm
//! tarballs), and `import`/`require` in runs on every engine mode, kept in
//! the heap across restores and removals.

use std::sync::Arc;
use std::time::Duration;

use mcp_v8_lambda::engine::{
    CapabilitySettings, Engine, EngineConfig, Language, ModuleSettings, RunOutcome, RunRequest,
    RunStatus,
};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::packages::{
    self, DirPackageStore, InstallOptions, PackageStore, PackageStoreError, Packages,
};
use serde_json::json;

use crate::common::conformance::packages as conformance;
use crate::common::npm::{self, fixture};

mod node_interop;
mod store;

/// A directory package store with lodash and nanoid added from their
/// tarballs and d3-array (with its dependency internmap) from the registry.
struct Installed {
    dir: tempfile::TempDir,
    store: Arc<DirPackageStore>,
    _registry: npm::Registry,
}

impl Installed {
    /// The engine's view of the store, read now.
    fn packages(&self) -> Arc<Packages> {
        Arc::new(Packages::new(
            self.store.clone(),
            self.store.bundle_dir(),
            false,
        ))
    }
}

/// What proves a package loads before `packages add` installs it: a fresh
/// in-process engine, as the CLI's.
pub fn checker() -> Engine {
    crate::common::engine::on_workers(EngineConfig::default(), None)
}

fn options(registry: &npm::Registry) -> InstallOptions {
    InstallOptions::new(Some(&registry.url), 32 * 1024 * 1024).unwrap()
}

async fn install() -> Installed {
    let registry = npm::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirPackageStore::new(dir.path().join("packages")));
    let specs = vec![
        fixture("lodash").display().to_string(),
        fixture("nanoid").display().to_string(),
        "d3-array@^3".to_owned(),
    ];
    let added = packages::add(store.as_ref(), &specs, &options(&registry), &checker())
        .await
        .unwrap();
    assert_eq!(
        added,
        ["lodash@4.17.21", "nanoid@3.3.7", "d3-array@3.2.4"],
        "{added:?}"
    );
    Installed {
        dir,
        store,
        _registry: registry,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packages_are_resolved_verified_and_bundled_with_their_dependencies() {
    let installed = install().await;
    let (index, _) = installed.store.index().await.unwrap().unwrap();
    assert_eq!(
        index.listing(),
        ["d3-array@3.2.4", "lodash@4.17.21", "nanoid@3.3.7"]
    );
    // The dependency is inside d3-array's bundle, not a package of its own.
    assert!(!index.packages.contains_key("internmap"));
    // Subpaths: every exports key of nanoid, lodash's files (no exports).
    let nanoid = &index.packages["nanoid"];
    assert!(
        nanoid.entries.contains(&"./non-secure".to_owned()),
        "{nanoid:?}"
    );
    assert!(!nanoid.entries.contains(&"./package.json".to_owned()));
    assert!(
        index.packages["lodash"]
            .entries
            .contains(&"./fp".to_owned())
    );
    // Every bundle is stored under its hash.
    for p in index.packages.values() {
        let bytes = installed
            .store
            .get_bundle(&p.bundle)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(bytes.len() as u64, p.bytes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_installs_say_why_and_install_nothing() {
    let registry = npm::start(&["internmap"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = DirPackageStore::new(dir.path());
    let add = |specs: &[&str]| {
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        let store = &store;
        let options = options(&registry);
        async move {
            packages::add(store, &specs, &options, &checker())
                .await
                .unwrap_err()
                .to_string()
        }
    };
    // A dependency whose tarball does not match its published integrity.
    let err = add(&["d3-array"]).await;
    assert!(
        err.contains("internmap@2.0.3") && err.contains("integrity"),
        "{err}"
    );
    let err = add(&["left-pad"]).await;
    assert!(err.contains("no package named \"left-pad\""), "{err}");
    let err = add(&["lodash@^5"]).await;
    assert!(
        err.contains("no version of lodash matches \"^5\"") && err.contains("4.17.21"),
        "{err}"
    );
    let err = add(&["../etc"]).await;
    assert!(err.contains("not a package"), "{err}");
    // One bad spec among good ones installs none of them.
    let lodash = fixture("lodash").display().to_string();
    let err = add(&[&lodash, "left-pad"]).await;
    assert!(err.contains("left-pad"), "{err}");
    // Over the bundle size limit.
    let small = InstallOptions::new(Some(&registry.url), 1000).unwrap();
    let err = packages::add(&store, &[lodash], &small, &checker())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("MCP_V8_MAX_PACKAGE_MB"), "{err}");
    assert!(store.index().await.unwrap().is_none());
    // Removing what is not installed names what is.
    let err = packages::remove(&store, &["zod".into()])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not installed: zod; installed: none"), "{err}");
}

/// `packages add` installs only what loads. readable-stream 2 requires
/// `string_decoder/` (the npm package, as Node reads the slash): it is
/// bundled from the package's own dependency, not taken for the built-in,
/// and the package works in a run. get-port needs `node:net`, which runs
/// do not have: it is refused with the module named, and nothing stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_is_installed_only_when_it_loads() {
    let registry = npm::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirPackageStore::new(dir.path().join("packages")));
    let added = packages::add(
        store.as_ref(),
        &["readable-stream@^2".to_owned()],
        &options(&registry),
        &checker(),
    )
    .await
    .unwrap();
    assert_eq!(added, ["readable-stream@2.3.8"]);
    let (index, _) = store.index().await.unwrap().unwrap();
    let bytes = store
        .get_bundle(&index.packages["readable-stream"].bundle)
        .await
        .unwrap()
        .unwrap();
    let bundle = packages::Bundle::from_bytes(&bytes).unwrap();
    for (file, code) in &bundle.files {
        assert!(
            !code.contains("\"string_decoder/\""),
            "{file} left it to the run"
        );
    }
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None).with_packages(
        Arc::new(Packages::new(store.clone(), store.bundle_dir(), false)),
    );
    let code = "const { Readable } = require('readable-stream');\n\
        const r = new Readable({ read() {} });\n\
        r.setEncoding('utf8');\n\
        r.push(Buffer.from('h\\u00e9llo'));\n\
        r.read()";
    let outcome = run(&engine, code, Language::Javascript, None).await;
    assert_eq!(completed(code, &outcome), "\"h\u{e9}llo\"");

    let err = packages::add(
        store.as_ref(),
        &[fixture("get-port").display().to_string()],
        &options(&registry),
        &checker(),
    )
    .await
    .unwrap_err()
    .to_string();
    for part in [
        "get-port@5.1.1 was bundled but does not load",
        "not installed",
        "Cannot find module 'node:net'",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    let (index, _) = store.index().await.unwrap().unwrap();
    assert_eq!(index.listing(), ["readable-stream@2.3.8"]);
}

/// Engines of both modes over `packages`, their heaps under `dir`.
struct Modes {
    stateless: Vec<Engine>,
    stateful: Vec<Engine>,
}

fn modes(packages: &Arc<Packages>, dir: &std::path::Path) -> Modes {
    let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.join("heaps")));
    let engine = |heaps| {
        crate::common::engine::on_workers(EngineConfig::default(), heaps)
            .with_packages(packages.clone())
    };
    Modes {
        stateless: vec![engine(None)],
        stateful: vec![engine(Some(store))],
    }
}

async fn run(
    engine: &Engine,
    code: &str,
    language: Language,
    heap: Option<&HeapKey>,
) -> RunOutcome {
    engine
        .run(RunRequest {
            code: code.into(),
            stateful: engine.heaps().is_some(),
            heap: heap.cloned(),
            language,
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        })
        .await
        .expect("request accepted")
        .outcome
}

fn completed(code: &str, outcome: &RunOutcome) -> String {
    assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
    assert!(outcome.warnings.is_empty(), "{code}: {outcome:#?}");
    outcome.result.clone().unwrap_or_default()
}

/// What agents write, and what it gives.
const IMPORTS: &[(&str, &str)] = &[
    // CommonJS, default and named (Node's interop).
    (
        "import _ from 'lodash'; _.chunk([1, 2, 3], 2)",
        "[[1,2],[3]]",
    ),
    (
        "import { chunk } from 'lodash'; chunk([1, 2], 1).length",
        "2",
    ),
    (
        "import * as ns from 'lodash'; [typeof ns.default, typeof ns.chunk]",
        "[\"function\",\"function\"]",
    ),
    // A subpath of a package without `exports`.
    (
        "import fp from 'lodash/fp'; fp.map((x) => x + 1)([1])",
        "[2]",
    ),
    ("require('lodash/chunk')([1, 2], 1).length", "2"),
    // A dual package: its ES-module browser build, by import and require.
    ("import { nanoid } from 'nanoid'; nanoid().length", "21"),
    (
        "const { nanoid: id } = require('nanoid'); id(8).length",
        "8",
    ),
    (
        "import { nanoid as weak } from 'nanoid/non-secure'; weak(5).length",
        "5",
    ),
    // An ES-module package of many files, its dependency inside.
    (
        "const d3 = await import('d3-array'); d3.sum([1, 2, 3])",
        "6",
    ),
    (
        "import { InternMap, extent } from 'd3-array'; [new InternMap([[1, 'a']]).get(1), extent([3, 1, 2])]",
        "[\"a\",[1,3]]",
    ),
    // node: modules the engine provides.
    ("import { URL as U } from 'node:url'; U === URL", "true"),
    ("require('url').URLSearchParams === URLSearchParams", "true"),
];

/// TypeScript: type-only imports go, value imports stay even when this run
/// does not use them (a later one does).
const TYPESCRIPT: &str = "import type { LoDashStatic } from 'lodash';\n\
import { chunk, sum } from 'lodash';\n\
const size: number = 2;\n\
const lo: LoDashStatic | null = null;\n\
chunk([1, 2, 3, 4], size).length";

/// Code that fails, and what its error must say.
const REFUSED: &[(&str, &[&str])] = &[
    (
        "import { z } from 'zod'",
        &[
            "Cannot find package 'zod'",
            "d3-array@3.2.4, lodash@4.17.21, nanoid@3.3.7",
            "mcp-v8-lambda packages add zod",
        ],
    ),
    (
        "import { nope } from 'lodash'",
        &["does not provide an export named 'nope'"],
    ),
    (
        "import x from 'lodash/nope'",
        &[
            "'./nope' is not exported by lodash@4.17.21",
            "./add, ./after",
            "614 more",
        ],
    ),
    (
        "export const a = 1",
        &["export is not allowed", "not a module", "line 1, column 1"],
    ),
    (
        "require('node:child_process')",
        &["node:child_process", "provides only", "node:url", "node:fs"],
    ),
    ("import x from './local.js'", &["has no files to import"]),
    (
        "await import('https://esm.sh/zod')",
        &["MCP_V8_FETCH_ALLOW", "installed packages by name"],
    ),
    (
        "import { z } from 'npm:zod'",
        &["installed packages by name", "packages add"],
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_and_require_work_on_every_engine_mode() {
    let installed = install().await;
    let packages = installed.packages();
    let Modes {
        stateless,
        stateful,
    } = modes(&packages, installed.dir.path());
    for engines in [stateless, stateful] {
        for engine in &engines {
            check_imports(engine).await;
        }
    }
}

async fn check_imports(engine: &Engine) {
    {
        for (code, expected) in IMPORTS {
            let outcome = run(engine, code, Language::Auto, None).await;
            assert_eq!(completed(code, &outcome), *expected, "{code}");
        }
        let outcome = run(engine, TYPESCRIPT, Language::Typescript, None).await;
        assert_eq!(completed(TYPESCRIPT, &outcome), "2");
        for (code, needles) in REFUSED {
            let outcome = run(engine, code, Language::Auto, None).await;
            assert_eq!(outcome.status, RunStatus::Failed, "{code}: {outcome:#?}");
            let error = outcome.error.unwrap();
            for needle in *needles {
                assert!(
                    error.message.contains(needle),
                    "{code}: {needle}: {error:#?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_packages_and_their_state_live_in_the_heap() {
    let installed = install().await;
    let first = modes(&installed.packages(), installed.dir.path()).stateful;
    let setup = "import _ from 'lodash';\n\
        import { customAlphabet } from 'nanoid';\n\
        const gen = customAlphabet('x', 3);\n\
        _.mixin({ triple: (n) => 3 * n });\n\
        _.VERSION";
    let mut heaps = Vec::new();
    for engine in &first {
        let outcome = run(engine, setup, Language::Auto, None).await;
        assert_eq!(completed(setup, &outcome), "\"4.17.21\"");
        heaps.push(outcome.heap.unwrap());
    }
    // The operator removes both; engines that read the store now have none.
    packages::remove(
        installed.store.as_ref(),
        &["lodash".into(), "nanoid".into()],
    )
    .await
    .unwrap();
    // New engines over the same heap stores, whose package view is read
    // now: a new instance after the removal.
    let later = modes(&installed.packages(), installed.dir.path()).stateful;
    let again = "import _ from 'lodash';\n[_.triple(2), gen(), require('lodash').VERSION, _.chunk([1], 1).length]";
    for (engine, heap) in later.iter().zip(&heaps) {
        let outcome = run(engine, again, Language::Auto, Some(heap)).await;
        assert_eq!(completed(again, &outcome), "[6,\"xxx\",\"4.17.21\",1]");
        // Without the heap the package is gone: the run above used its heap.
        let fresh = run(engine, "import _ from 'lodash'", Language::Auto, None).await;
        let error = fresh.error.expect("lodash is not installed any more");
        assert!(
            error.message.contains("Cannot find package 'lodash'"),
            "{error:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_module_graph_is_capped() {
    let installed = install().await;
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                modules: ModuleSettings {
                    max_module_bytes: 100 * 1024,
                },
                ..Default::default()
            },
            ..EngineConfig::default()
        },
        None,
    )
    .with_packages(installed.packages());
    let outcome = run(&engine, "import _ from 'lodash'", Language::Auto, None).await;
    let error = outcome.error.expect("lodash is over 100 KiB");
    assert_eq!(error.name, "RangeError", "{error:#?}");
    assert!(
        error.message.contains("MCP_V8_MAX_RUN_MODULES_MB"),
        "{error:#?}"
    );
    // Small packages still load.
    let outcome = run(
        &engine,
        "import { nanoid } from 'nanoid'; nanoid(3)",
        Language::Auto,
        None,
    )
    .await;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_js_names_the_installed_packages_and_imports_them_over_http() {
    let installed = install().await;
    let packages = installed.packages();
    let server = crate::common::server_wrapped(3600, false, |mut stores| {
        stores.packages = packages;
        stores
    });
    let session = server.initialize().await;
    let tools = server.tools_list(&session).await;
    let description = tools["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("d3-array@3.2.4, lodash@4.17.21, nanoid@3.3.7"),
        "{description}"
    );
    let result = server
        .call(
            &session,
            json!({"code": "import _ from 'lodash'; _.sum([1, 2])"}),
        )
        .await;
    assert_eq!(result["structuredContent"]["result"], "3", "{result:#}");
    // A later call in the session uses the binding.
    let heap = result["structuredContent"]["heap"].clone();
    let result = server
        .call(&session, json!({"code": "_.max([4, 9])", "heap": heap}))
        .await;
    assert_eq!(result["structuredContent"]["result"], "9", "{result:#}");
}

#[tokio::test]
async fn a_server_without_packages_says_so() {
    let server = crate::common::server();
    let session = server.initialize().await;
    let tools = server.tools_list(&session).await;
    let description = tools["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("No npm packages are installed here"),
        "{description}"
    );
    let result = server
        .call(&session, json!({"code": "import _ from 'lodash'"}))
        .await;
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Installed packages: none"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fresh_run_starts_from_the_prelude() {
    let installed = install().await;
    let prelude = installed.dir.path().join("prelude.ts");
    std::fs::write(
        &prelude,
        "import _ from 'lodash';\nconst greeting: string = 'hi';\nfunction pairs(xs: number[]) { return _.chunk(xs, 2).length }\nError.stackTraceLimit = 42;",
    )
    .unwrap();
    let broken = installed.dir.path().join("broken.js");
    std::fs::write(&broken, "throw new Error('no prelude today')").unwrap();
    let packages = installed.packages();
    let with = |engine: Engine, file: &std::path::Path| {
        engine.with_prelude(Arc::new(mcp_v8_lambda::engine::FilePrelude(
            file.to_owned(),
        )))
    };
    // What the isolate gives (`Error.stackTraceLimit`, set by the prelude;
    // no `WebAssembly`) is the same whichever isolate restored the
    // prelude's heap.
    let code = "[greeting, pairs([1, 2, 3]), _.VERSION, Error.stackTraceLimit, typeof WebAssembly, new Error('x').stack.includes('run_js')]";
    for mode in 0..2 {
        let Modes {
            stateless,
            stateful,
        } = modes(&packages, installed.dir.path());
        let engine = stateless.into_iter().chain(stateful).nth(mode).unwrap();
        let stateful = engine.heaps().is_some();
        let engine = with(engine, &prelude);
        let outcome = run(&engine, code, Language::Auto, None).await;
        assert_eq!(
            completed(code, &outcome),
            "[\"hi\",2,\"4.17.21\",42,\"undefined\",true]"
        );
        // A fresh run is fresh all the same: no input heap.
        assert!(outcome.input_heap.is_none());
        if stateful {
            let again = "[pairs([1]), Error.stackTraceLimit]";
            let next = run(&engine, again, Language::Auto, outcome.heap.as_ref()).await;
            assert_eq!(completed(again, &next), "[1,42]");
        }
    }
    // A prelude that throws: runs go on without it, and say so.
    let engine = with(
        crate::common::engine::on_workers(EngineConfig::default(), None),
        &broken,
    );
    let outcome = run(&engine, "typeof greeting", Language::Auto, None).await;
    assert_eq!(outcome.result.as_deref(), Some("\"undefined\""));
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("prelude failed") && w.contains("no prelude today")),
        "{outcome:#?}"
    );
}

/// `packages add` imports a package in an engine worker, as every run
/// executes (docs/reliability.md): a package whose top level ends V8's
/// process (an array past what any heap limit holds) is refused with the
/// reason, by a CLI that lives to say it, and nothing is stored.
#[test]
fn the_load_check_imports_a_package_in_an_engine_worker() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = tarball(
        dir.path(),
        "ends-v8-1.0.0.tgz",
        &[
            (
                "package.json",
                r#"{"name": "ends-v8", "version": "1.0.0", "main": "index.js"}"#,
            ),
            (
                "index.js",
                "module.exports = new Array(2 ** 25).fill(1.5).length;\n",
            ),
        ],
    );
    let data = dir.path().join("data");
    let added = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "add"])
        .arg(&tarball)
        .arg("--data-dir")
        .arg(&data)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&added.stderr);
    assert_eq!(
        added.status.code(),
        Some(1),
        "the CLI said why rather than dying with V8: {said}"
    );
    for part in [
        "ends-v8@1.0.0",
        "does not load",
        "heap_memory_max_mb",
        "nothing was installed",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "list", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("no packages installed"),
        "{listed:?}"
    );
}

/// An npm tarball `file_name` in `dir` holding `files` under `package/`.
fn tarball(dir: &std::path::Path, file_name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let path = dir.join(file_name);
    let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::default(),
    ));
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, format!("package/{name}"), text.as_bytes())
            .unwrap();
    }
    archive.into_inner().unwrap().finish().unwrap();
    path
}
