//! The official MCP conformance suite against `serve` of the fixtures'
//! server, but for the listed expected failures.

use std::path::Path;

use super::*;
use crate::common;

#[test]
fn the_mcp_conformance_suite_passes_but_for_the_listed_expected_failures() {
    let ConformanceSuite {
        dir: suite,
        node,
        cli,
    } = ConformanceSuite::installed();
    let dir = tempfile::tempdir().unwrap();
    // The suite's fixture tools, so its scenarios check how our layer
    // carries what they ask.
    let serve = Serve::fixtures_at(dir.path(), common::net::free_port());
    // With the checks each selection passed on 2026-11-30 (the suite
    // 0.2.0-alpha.12, pinned in tests/conformance), with every fixture of
    // its reference server but those of input requests other than
    // elicitation: fewer means it selected less, which would pass
    // unnoticed. 2025-03-26 selects one scenario.
    let runs = [
        (["--spec-version", "2025-03-26"], "2025-11-25", 3),
        (["--spec-version", "2025-06-18"], "2025-11-25", 53),
        (["--requirements", "2025-11-25"], "2025-11-25", 77),
        (["--requirements", "2026-07-28"], "2026-07-28", 181),
    ];
    for (selection, baseline, least) in runs {
        let results = tempfile::tempdir().unwrap();
        let output = Command::new(&node)
            .arg(&cli)
            .args(["server", "--url", &serve.url()])
            .args(selection)
            .arg("--expected-failures")
            .arg(suite.join(format!("expected-failures-{baseline}.yaml")))
            .arg("-o")
            .arg(results.path())
            .current_dir(&suite)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let total = stdout
            .lines()
            .find(|line| line.starts_with("Total:"))
            .unwrap_or("no total printed");
        eprintln!("conformance {}: {total}", selection.join(" "));
        assert!(
            output.status.success(),
            "conformance {} failed:\n{stdout}\n{}",
            selection.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        // A selection that ran nothing would pass too: count the checks.
        let passed: usize = total
            .strip_prefix("Total: ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count of checks: {total}\n{stdout}"));
        assert!(
            passed >= least,
            "conformance {} passed {passed} checks, fewer than the {least} it passed: {total}",
            selection.join(" ")
        );
    }
}

/// The conformance suite's tasks-extension scenarios against `serve` with
/// the fixture tools they call (`greet`, `slow_compute`, `failing_job`,
/// `protocol_error_job`: the fixtures' server, [`fixture_server`]), each a
/// run through the engine and the task store. A check may fail only when
/// tests/conformance/expected-failures-tasks.yaml lists it with its reason.
#[test]
fn the_conformance_suite_tasks_scenarios_pass_but_for_the_listed_expected_failures() {
    let suite = ConformanceSuite::installed();
    let listed = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(["list", "--server"])
        .output()
        .unwrap();
    let scenarios: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("tasks-"))
        .map(str::to_owned)
        .collect();
    // The suite's own count: a renamed or dropped scenario shows here.
    assert!(
        scenarios.len() >= 10,
        "expected the tasks-* scenarios, found {scenarios:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::fixtures_at(dir.path(), common::net::free_port());
    let expected = suite.dir.join("expected-failures-tasks.yaml");
    for scenario in &scenarios {
        suite.scenario(&serve.url(), scenario, Some(&expected));
    }
}

/// The conformance suite's Skills-extension scenarios (SEP-2640:
/// enumeration and retrieval, the SKILL.md manifest, directory reads)
/// against `serve` with its built-in skills. None is listed as an expected
/// failure, none warns (a SHOULD not met), and the checks they pass are
/// counted, so a scenario that selects nothing fails.
#[test]
fn the_conformance_suite_skills_scenarios_pass() {
    let suite = ConformanceSuite::installed();
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut passed = 0;
    for scenario in [
        "sep-2640-skills-enumeration",
        "sep-2640-skills-manifest",
        "sep-2640-skills-directory",
    ] {
        let line = suite.scenario(&serve.url(), scenario, None);
        assert!(line.ends_with(", 0 warnings"), "{scenario}: {line}");
        passed += line
            .strip_prefix("Passed: ")
            .and_then(|rest| rest.split(['/', ' ']).next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no count of checks: {line}"));
    }
    // Every check of the three scenarios, as counted on 2026-12-01 (the
    // suite 0.2.0-alpha.12).
    assert!(passed >= SKILLS_CHECKS, "{passed} skills checks passed");
}

/// How many checks the skills scenarios pass.
const SKILLS_CHECKS: usize = 45;

/// The official conformance suite as scripts/test.sh installs it.
struct ConformanceSuite {
    dir: PathBuf,
    node: PathBuf,
    cli: PathBuf,
}

impl ConformanceSuite {
    fn installed() -> Self {
        let dir = project().join("tests/conformance");
        let node = dir.join("node_modules/.bin/node");
        assert!(
            node.exists(),
            "the conformance suite is not installed: run scripts/test.sh (it runs npm ci in tests/conformance)"
        );
        let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
        Self { dir, node, cli }
    }

    /// Runs `scenario` against `url`, where only what `expected` lists may
    /// fail; returns its `Passed:` line.
    fn scenario(&self, url: &str, scenario: &str, expected: Option<&Path>) -> String {
        let mut command = Command::new(&self.node);
        command
            .arg(&self.cli)
            .args(["server", "--url", url, "--scenario", scenario])
            .current_dir(&self.dir);
        if let Some(expected) = expected {
            command.arg("--expected-failures").arg(expected);
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let passed = stdout
            .lines()
            .find(|line| line.starts_with("Passed:"))
            .unwrap_or("no total printed")
            .to_owned();
        eprintln!("conformance {scenario}: {passed}");
        assert!(
            output.status.success(),
            "conformance {scenario} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        passed
    }
}
