//! `URL` against the web-platform-tests' URL data, in a run and in Node 22
//! (the Node tests/conformance installs): every subtest Node 22 passes
//! passes here. The data is WPT's urltestdata.json and setters_tests.json
//! as the `url` crate 2.5.7 ships them on crates.io (pulled from WPT at
//! befe663), which scripts/install-test-deps.sh fetches and checks by its
//! registry checksum into tests/wpt/url; tests/web/wpt_url.js runs them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_v8_lambda::engine::EngineConfig;
use serde_json::Value;

use crate::common::engine::{completed, stateless};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The code that runs the data and hands `{ ran, failed }` as JSON to
/// `out`: a function's name, or empty for the completion value.
fn wpt_code(out: &str) -> String {
    let data = root().join("tests/wpt/url");
    let read = |name: &str| {
        std::fs::read_to_string(data.join(name)).unwrap_or_else(|e| {
            panic!("{name}: {e}: run scripts/install-test-deps.sh, which fetches the WPT URL data")
        })
    };
    let harness = std::fs::read_to_string(root().join("tests/web/wpt_url.js")).unwrap();
    format!(
        "{harness}\n{out}(JSON.stringify(wptUrl({}, {})))",
        read("urltestdata.json"),
        read("setters_tests.json")
    )
}

/// `(ran, failed subtests by name, with why)` from the harness's JSON.
fn tally(json: &str) -> (u64, BTreeMap<String, String>) {
    let report: Value = serde_json::from_str(json).unwrap();
    let failed = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (report["ran"].as_u64().unwrap(), failed)
}

fn node_runs() -> String {
    let node = crate::common::npm::node22();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("wpt_url.js");
    std::fs::write(&script, wpt_code("process.stdout.write")).unwrap();
    let output = std::process::Command::new(node)
        .arg(Path::new(&script))
        .output()
        .expect("node runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn urls_parse_and_set_as_in_node_22_on_the_wpt_data() {
    let (node_ran, node_failed) = tally(&node_runs());
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let outcome = stateless(&engine, &wpt_code("")).await;
    let result: String = serde_json::from_str(completed(&outcome)).unwrap();
    let (ran, failed) = tally(&result);
    assert_eq!(ran, node_ran, "the run and Node ran other subtests");
    assert!(ran > 2500, "only {ran} subtests ran");
    let worse: Vec<(&String, &String)> = failed
        .iter()
        .filter(|(name, _)| !node_failed.contains_key(*name))
        .collect();
    assert!(
        worse.is_empty(),
        "{} subtests Node 22 passes fail here (of {ran}; Node fails {}):\n{worse:#?}",
        worse.len(),
        node_failed.len()
    );
}
