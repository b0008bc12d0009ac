//! The configuration as operators meet it: every variable the code reads is
//! in docs/configuration.md, and `serve` honours the variables it shares
//! with its flags.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

/// Every `"MCP_V8_…"` and `"AWS_LAMBDA_…"` name that `src/` spells out in a
/// string: the variables the code reads (in `config.rs`, and as clap's
/// `env` in `main.rs`).
fn variables_read() -> BTreeSet<String> {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for prefix in ["\"MCP_V8_", "\"AWS_LAMBDA_"] {
                    for (at, _) in text.match_indices(prefix) {
                        let name: String = text[at + 1..]
                            .chars()
                            .take_while(|c| {
                                c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_'
                            })
                            .collect();
                        if text[at + 1 + name.len()..].starts_with('"') {
                            found.insert(name);
                        }
                    }
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    found
}

#[test]
fn every_variable_the_code_reads_is_documented() {
    let read = variables_read();
    assert!(
        read.contains("MCP_V8_HEAP_BUCKET") && read.contains("MCP_V8_INVOKE_MODE"),
        "the reader finds the variables: {read:?}"
    );
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let missing: Vec<&String> = read
        .iter()
        .filter(|name| !docs.contains(&format!("| `{name}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "read by src/ but without a row in docs/configuration.md: {missing:?}"
    );
}

/// `MCP_V8_STATELESS=true` makes `serve` stateless without the flag: only
/// `run_js` is offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_honours_mcp_v8_stateless() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::common::net::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path())
        .env("MCP_V8_STATELESS", "true")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
    let answer = crate::common::post_2026(port, "tools/list", None, json!({})).await;
    let _ = child.kill();
    let _ = child.wait();
    let names: Vec<&str> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_js"], "{answer}");
}

/// Heaps kept ready are settled (garbage collected once restored) where
/// Lambda freezes the environment between calls, and nowhere else.
#[test]
fn ready_heaps_are_settled_only_where_the_environment_freezes() {
    let config = |pairs: &[(&str, &str)]| {
        mcp_v8_lambda::config::Config::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap()
    };
    let settled = |pairs: &[(&str, &str)]| {
        mcp_v8_lambda::compose::engine_config(&config(pairs)).collect_ready_heaps
    };
    let api = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
    assert!(settled(&[api]));
    assert!(!settled(&[api, ("AWS_LAMBDA_MAX_CONCURRENCY", "8")]));
    assert!(!settled(&[]));
}
