//! Node's own tests of its pure-JS core modules, in Node 22 and in runs.
//! The files are nodejs/node v22.22.1's test/parallel, as the Node source
//! scripts/install-test-deps.sh fetches (tests/node/source, pinned by its
//! SHA-256); tests/node/slice.txt lists the ones that run, and why each
//! left-out file of those modules is left out. Both sides require the same
//! stand-in for test/common (tests/node/common/index.js), unchanged: Node
//! finds it as `../common` beside a copy of the file, a run gets it from the
//! `require` the file is wrapped with, as Node wraps a CommonJS module.
//! Every file Node 22 passes must pass in a run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_v8_lambda::engine::{EngineConfig, RunRequest, RunStatus};

use crate::common::engine::run;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node")
}

/// The modules the slice covers, by the prefixes of their test files.
const MODULES: &[&str] = &[
    "test-assert",
    "test-buffer",
    "test-event-emitter",
    "test-events",
    "test-path",
    "test-punycode",
    "test-querystring",
    "test-stream",
    "test-string-decoder",
    "test-timers",
    "test-url",
    "test-util",
];

/// The slice: the file names of slice.txt's lines that are neither blank,
/// nor comments, nor left out ("- name: why"); and the left-out names.
fn slice() -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(root().join("slice.txt")).unwrap();
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let (out, slice): (Vec<&str>, Vec<&str>) = lines.partition(|l| l.starts_with('-'));
    let out = out
        .iter()
        .map(|l| {
            let (name, why) = l[1..].split_once(':').expect("- name: why");
            assert!(!why.trim().is_empty(), "{name} is left out without a why");
            name.trim().to_owned()
        })
        .collect();
    (slice.into_iter().map(str::to_owned).collect(), out)
}

fn source(name: &str) -> String {
    let path = root().join("source/test/parallel").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: run scripts/install-test-deps.sh, which fetches Node's source",
            path.display()
        )
    })
}

fn common() -> String {
    std::fs::read_to_string(root().join("common/index.js")).unwrap()
}

/// A test file as a run's code: the stand-in and the file each wrapped as
/// a CommonJS module, `../common` resolving to the stand-in.
fn as_run(name: &str, file: &str) -> String {
    format!(
        "(() => {{\n\
         const load = (body) => {{ const module = {{ exports: {{}} }}; body(module, module.exports); return module.exports; }};\n\
         const common = load((module, exports) => {{\n{}\n}});\n\
         const required = (name) => (name === '../common' || name === '../common/index.js') ? common : require(name);\n\
         load((module, exports) => (function (require, module, exports, __filename, __dirname) {{\n{}\n}})(required, module, exports, '/work/test/parallel/{}', '/work/test/parallel'));\n\
         }})();\n\"the file ran\"",
        common(),
        file,
        name
    )
}

/// Node 22 runs each file in `names`, beside the stand-in; the names it
/// passes, and how it failed the others.
fn in_node(names: &[String]) -> Vec<(String, Result<(), String>)> {
    let node = crate::common::npm::node22();
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("test");
    std::fs::create_dir_all(tests.join("parallel")).unwrap();
    std::fs::create_dir_all(tests.join("common")).unwrap();
    std::fs::write(tests.join("common/index.js"), common()).unwrap();
    names
        .iter()
        .map(|name| {
            let file = tests.join("parallel").join(name);
            std::fs::write(&file, source(name)).unwrap();
            let output = std::process::Command::new(&node)
                .arg(Path::new(name))
                .current_dir(tests.join("parallel"))
                .output()
                .expect("node runs");
            let verdict = if output.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&output.stderr).into_owned())
            };
            (name.clone(), verdict)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn node_22s_own_tests_of_its_core_modules_pass_in_runs() {
    let (names, left_out) = slice();
    assert!(
        names.len() >= 50,
        "the slice has only {} files",
        names.len()
    );
    // Each test file of the modules is in the slice or left out with why.
    let listed: std::collections::BTreeSet<&String> = names.iter().chain(&left_out).collect();
    let unlisted: Vec<String> = std::fs::read_dir(root().join("source/test/parallel"))
        .expect("run scripts/install-test-deps.sh, which fetches Node's source")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| MODULES.iter().any(|m| name.starts_with(m)) && !listed.contains(name))
        .collect();
    assert!(unlisted.is_empty(), "slice.txt does not list {unlisted:?}");
    let in_node = in_node(&names);
    let node_fails: Vec<_> = in_node
        .iter()
        .filter_map(|(name, verdict)| verdict.as_ref().err().map(|why| (name, why)))
        .collect();
    assert!(
        node_fails.is_empty(),
        "Node 22 fails files of the slice (the stand-in for test/common is wrong, or the file belongs on the left-out list): {node_fails:#?}"
    );
    let config = EngineConfig {
        engine_workers: 4,
        ..EngineConfig::default()
    };
    let engine = crate::common::engine::on_workers(config, None);
    let mut outcomes = Vec::new();
    // Four at a time, the runs the engine admits at once.
    for names in names.chunks(4) {
        let runs = names.iter().map(|name| {
            let request = RunRequest {
                code: as_run(name, &source(name)),
                timeout: Some(Duration::from_secs(60)),
                ..Default::default()
            };
            let engine = &engine;
            async move { (name, run(engine, request).await) }
        });
        outcomes.extend(futures_util::future::join_all(runs).await);
    }
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|(_, outcome)| {
            outcome.status != RunStatus::Completed
                || outcome.result.as_deref() != Some("\"the file ran\"")
        })
        .map(|(name, outcome)| {
            let why = outcome
                .error
                .as_ref()
                .map(|e| format!("{}: {}", e.name, e.message))
                .unwrap_or_else(|| format!("{:?}", outcome.status));
            let output: String = outcome.output.chars().take(400).collect();
            format!(
                "{name}: {}\n    output: {output}",
                why.chars().take(600).collect::<String>()
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of the slice's {} files Node 22 passes fail in a run:\n{}",
        failed.len(),
        names.len(),
        failed.join("\n")
    );
}
