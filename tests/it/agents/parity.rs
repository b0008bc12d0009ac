//! Packages and Node's core modules in a run against Node 22 itself (the
//! Node that tests/conformance installs): the same code, from
//! tests/parity/, runs in both and the results are compared. The corpus's
//! packages come from `npm ci` in tests/parity (scripts/install-test-deps.sh)
//! for Node, and from those very files through `packages add` for the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};
use mcp_v8_lambda::packages::{self, DirPackageStore, InstallOptions, Packages};
use serde_json::Value;

use crate::common::npm;

fn parity_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

/// What Node 22 prints running `code` in tests/parity, in UTC.
fn node_prints(code: &str, cwd: &Path) -> String {
    let node = npm::node22();
    assert!(
        parity_dir().join("node_modules").exists(),
        "the corpus is not installed: run scripts/install-test-deps.sh"
    );
    let output = std::process::Command::new(node)
        .args(["-e", code])
        .current_dir(cwd)
        .env("TZ", "UTC")
        .output()
        .expect("node runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The completion value of `code` in a run of `engine`: a JSON text the
/// code made. Runs get room for a corpus of packages in one heap.
async fn run_gives(engine: &Engine, code: &str) -> String {
    let report = engine
        .run(RunRequest {
            code: code.into(),
            stateful: engine.heaps().is_some(),
            timeout: Some(std::time::Duration::from_secs(120)),
            heap_limit_mb: Some(512),
            ..Default::default()
        })
        .await
        .expect("request accepted");
    let outcome = report.outcome;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    serde_json::from_str(outcome.result.as_deref().unwrap()).unwrap()
}

fn engine_config() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.max_heap_limit_mb = config.max_heap_limit_mb.max(512);
    config
}

/// The corpus's `name@version`s, as tests/parity/package.json pins them.
fn corpus_specs() -> Vec<String> {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(parity_dir().join("package.json")).unwrap()).unwrap();
    manifest["dependencies"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, version)| format!("{name}@{}", version.as_str().unwrap()))
        .collect()
}

/// Every package of the corpus (tests/parity/corpus.js: at least 20, of
/// each module shape) gives a run what it gives Node 22, loaded each way
/// agents load it: `require`, the namespace, the default and a named
/// import (type and own keys), and one call that uses it. The one rule
/// that is not Node's: a CommonJS package's namespace may have more names
/// (every key of `module.exports`, docs/engine.md "Packages"), never fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packages_load_in_a_run_as_in_node_22() {
    let corpus = std::fs::read_to_string(parity_dir().join("corpus.js")).unwrap();
    let node: Value = serde_json::from_str(&node_prints(
        &format!("{corpus}\nprobe().then((report) => console.log(report));"),
        &parity_dir(),
    ))
    .unwrap();

    let registry = npm::serve_installed(&parity_dir().join("node_modules")).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirPackageStore::new(dir.path().join("packages")));
    let specs = corpus_specs();
    assert!(specs.len() >= 20, "{specs:?}");
    let options = InstallOptions::new(Some(&registry.url), 32 * 1024 * 1024).unwrap();
    let checker = crate::common::engine::on_workers(engine_config(), None);
    let added = packages::add(store.as_ref(), &specs, &options, &checker)
        .await
        .unwrap();
    assert_eq!(added, specs);
    let engine = crate::common::engine::on_workers(engine_config(), None).with_packages(Arc::new(
        Packages::new(store.clone(), store.bundle_dir(), false),
    ));
    let run: Value =
        serde_json::from_str(&run_gives(&engine, &format!("{corpus}\nawait probe()")).await)
            .unwrap();

    let node = node.as_object().unwrap();
    assert!(node.len() >= 20, "{node:?}");
    let mut differences = Vec::new();
    for (name, in_node) in node {
        let in_run = &run[name];
        for field in ["require", "namespace", "default", "named", "call"] {
            let (a, b) = (&in_node[field], &in_run[field]);
            if a == b || (field == "namespace" && in_node["cjs"] == true && superset(a, b)) {
                continue;
            }
            differences.push(format!("{name} {field}:\n  Node 22: {a}\n  run:     {b}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// Whether the list `b` holds every item of the list `a`.
fn superset(a: &Value, b: &Value) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(a), Some(b)) => a.iter().all(|item| b.contains(item)),
        _ => false,
    }
}

/// What a run does not offer of the core modules the table covers, by
/// expression, with the reason; everything else must match Node 22.
const NOT_OFFERED: &[(&str, &str)] = &[
    (
        "util.inspect(Promise.resolve(4))",
        "a promise's state is V8's own, which node-inspect-extracted cannot read: \
         util.inspect shows every promise as pending (console.log and a run's \
         result show the state)",
    ),
    (
        "util.inspect({ [Symbol(\"k\")]: 1, v: 2 })",
        "node-inspect-extracted 3.3.3 writes a symbol key bare, as Node 18 did",
    ),
    (
        "util.inspect(new URL(\"https://example.com/a?b=c\")).split(\"\\n\")[0]",
        "a run's URL inspects as its href (the engine's URL, not Node's class)",
    ),
    (
        "process.version.startsWith(\"v\")",
        "a run is not Node: process.version and process.release name the engine, so \
         packages do not take paths that need node:os, node:http or child processes",
    ),
    (
        "typeof process.versions.node",
        "a run is not Node: process.versions has no `node` for the same reason",
    ),
    (
        "process.release.name",
        "a run is not Node: process.release names the engine",
    ),
];

/// The core-module table (tests/parity/core.js: node:buffer, node:util,
/// node:events, node:stream, node:string_decoder, node:assert, node:crypto, node:fs
/// under /work, process; a few hundred expressions) gives in a run what it
/// gives in Node 22, but for [`NOT_OFFERED`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn core_modules_behave_as_in_node_22() {
    let table = std::fs::read_to_string(parity_dir().join("core.js")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let node: Vec<(String, String)> = serde_json::from_str(&node_prints(
        &format!(
            "{table}\ntable({:?}).then((rows) => console.log(rows));",
            scratch.path().display().to_string()
        ),
        scratch.path(),
    ))
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let files = Arc::new(mcp_v8_lambda::files::DirFileStore::new(
        dir.path().join("work"),
    ));
    let heaps: Arc<dyn mcp_v8_lambda::heap::HeapStore> = Arc::new(
        mcp_v8_lambda::heap::FileHeapStore::new(dir.path().join("heaps")),
    );
    let engine = crate::common::engine::on_workers(engine_config(), Some(heaps)).with_files(files);
    let run: Vec<(String, String)> = serde_json::from_str(
        &run_gives(&engine, &format!("{table}\nawait table(\"/work\")")).await,
    )
    .unwrap();
    let run: BTreeMap<String, String> = run.into_iter().collect();

    assert!(node.len() >= 300, "{} expressions", node.len());
    let mut differences = Vec::new();
    for (expression, in_node) in &node {
        if NOT_OFFERED.iter().any(|(e, _)| e == expression) {
            continue;
        }
        let in_run = &run[expression];
        if in_node != in_run {
            differences.push(format!(
                "{expression}\n  Node 22: {in_node}\n  run:     {in_run}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        node.len(),
        differences.join("\n")
    );
}
