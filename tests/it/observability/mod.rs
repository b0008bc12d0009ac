//! What an operator reads of the service: `serve`'s `/metrics`, parsed by
//! Prometheus' own parser (the `prometheus_client` package's), counting
//! what the calls before it did, behind the same authentication as `/mcp`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::Digest;

use crate::common::process::Serve;

mod lambda;

/// One sample of a scrape: its name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// `text` read by `prometheus_client.parser`, which refuses what is not
/// the text format.
fn parsed(text: &str) -> Vec<Sample> {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let script = "import json, sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        out = [[s.name, s.labels, s.value] for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]\n\
        print(json.dumps(out))";
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/install-test-deps.sh)", python.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, BTreeMap<String, String>, f64)> =
        serde_json::from_slice(&out.stdout).unwrap();
    samples
        .into_iter()
        .map(|(name, labels, value)| Sample {
            name,
            labels,
            value,
        })
        .collect()
}

/// The value of the sample `name` whose labels include `labels`; 0 when
/// there is none (a counter not yet incremented is not printed).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

async fn scrape(serve: &Serve, token: Option<&str>) -> reqwest::Response {
    let mut request =
        reqwest::Client::new().get(format!("http://127.0.0.1:{}/metrics", serve.port));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Runs of four outcomes, a run the engine refuses and a malformed request,
/// then `/metrics`: each counted under its label, every run's duration in
/// the histogram, one cold start.
#[tokio::test]
async fn serve_counts_each_outcome_and_refusal_at_metrics() {
    let serve = Serve::start(&[], &[]);
    let fresh = |code: &str| json!({"code": code, "heap": ""});
    let completed = serve.run_js(fresh("1 + 1")).await;
    assert_eq!(completed["status"], "completed", "{completed}");
    let failed = serve.run_js(fresh("throw new Error('no')")).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let timed_out = serve
        .run_js(json!({"code": "while (true) {}", "heap": "", "execution_timeout_secs": 1}))
        .await;
    assert_eq!(timed_out["status"], "timed_out", "{timed_out}");
    let oom = serve
        .run_js(json!({
            "code": "const hoard = []; while (true) hoard.push(new Array(100000).fill(Math.random()))",
            "heap": "",
            "heap_memory_max_mb": 32
        }))
        .await;
    assert_eq!(oom["status"], "out_of_memory", "{oom}");
    let refused = serve
        .run_js(json!({"code": "1", "heap": "", "execution_timeout_secs": 1_000_000}))
        .await;
    assert!(refused["error_text"].is_string(), "{refused}");
    let malformed = reqwest::Client::new()
        .post(serve.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);

    let response = scrape(&serve, None).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = response.text().await.unwrap();
    let samples = parsed(&text);
    for outcome in ["completed", "failed", "timed_out", "out_of_memory"] {
        assert_eq!(
            value(
                &samples,
                "mcp_v8_runs_total",
                &[("tool", "run_js"), ("outcome", outcome)]
            ),
            1.0,
            "{outcome}:\n{text}"
        );
    }
    assert_eq!(
        value(
            &samples,
            "mcp_v8_run_duration_seconds_count",
            &[("tool", "run_js")]
        ),
        4.0,
        "{text}"
    );
    assert!(
        value(&samples, "mcp_v8_run_duration_seconds_sum", &[]) >= 1.0,
        "the timed-out run alone took a second:\n{text}"
    );
    for reason in ["bounds", "invalid"] {
        assert_eq!(
            value(
                &samples,
                "mcp_v8_refused_requests_total",
                &[("reason", reason)]
            ),
            1.0,
            "{reason}:\n{text}"
        );
    }
    assert_eq!(
        value(&samples, "mcp_v8_cold_starts_total", &[]),
        1.0,
        "{text}"
    );
    // No label names whose values grow with use.
    for sample in &samples {
        for key in sample.labels.keys() {
            assert!(
                ["tool", "outcome", "reason", "le"].contains(&key.as_str()),
                "label {key} on {}",
                sample.name
            );
        }
    }
}

/// With a token configured, `/metrics` answers only a caller that has it,
/// as `/mcp` does, and counts the refusal.
#[tokio::test]
async fn metrics_need_the_token_mcp_needs() {
    let token = "a-token-for-the-metrics-test";
    let digest = hex::encode(sha2::Sha256::digest(token.as_bytes()));
    let serve = Serve::start(&[], &[("MCP_V8_AUTH_TOKEN_SHA256", &digest)]);
    let refused = scrape(&serve, None).await;
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    assert_eq!(scrape(&serve, Some("wrong")).await.status(), 401);
    let response = scrape(&serve, Some(token)).await;
    assert_eq!(response.status(), 200);
    let samples = parsed(&response.text().await.unwrap());
    assert_eq!(
        value(
            &samples,
            "mcp_v8_refused_requests_total",
            &[("reason", "auth")]
        ),
        2.0
    );
}
