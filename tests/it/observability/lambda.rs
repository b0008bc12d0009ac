//! The Lambda entry's metrics: CloudWatch's Embedded Metric Format in the
//! function's standard output (what Lambda sends to its log group), one
//! flush per invocation, the same counts `/metrics` gives under `serve`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use crate::lambda::{rpc_body, run_js_event, start_function_writing};

const LIMIT: Duration = Duration::from_secs(120);

/// The EMF documents in `output`: each line that is a JSON object with
/// an `_aws` member, checked against the format's required shape.
fn documents(output: &str) -> Vec<Value> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|doc| doc.get("_aws").is_some())
        .inspect(|doc| {
            let aws = &doc["_aws"];
            assert!(aws["Timestamp"].is_u64(), "{doc}");
            let directive = &aws["CloudWatchMetrics"][0];
            for metric in directive["Metrics"].as_array().unwrap() {
                let name = metric["Name"].as_str().unwrap();
                assert!(doc.get(name).is_some(), "{name} has no value: {doc}");
            }
            for dimension in directive["Dimensions"][0].as_array().unwrap() {
                let name = dimension.as_str().unwrap();
                assert!(
                    doc[name].is_string(),
                    "dimension {name} has no value: {doc}"
                );
            }
        })
        .collect()
}

/// Each metric's values summed by its dimension values, over `docs`: a
/// histogram's values are counted.
fn totals(docs: &[Value], metric: &str) -> BTreeMap<String, f64> {
    let mut totals = BTreeMap::new();
    for doc in docs {
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        if !directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["Name"] == metric)
        {
            continue;
        }
        let mut key: Vec<String> = directive["Dimensions"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                format!(
                    "{}={}",
                    d.as_str().unwrap(),
                    doc[d.as_str().unwrap()].as_str().unwrap()
                )
            })
            .collect();
        key.sort();
        let value = match &doc[metric] {
            Value::Array(values) => values.len() as f64,
            value => value.as_f64().unwrap(),
        };
        *totals.entry(key.join(",")).or_default() += value;
    }
    totals
}

/// Three runs of three outcomes through the Lambda entry: their counts,
/// their durations and one cold start, under the configured namespace.
#[tokio::test]
async fn the_lambda_entry_writes_each_runs_metrics_into_its_log() {
    let cache = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(
        &common::moto::unique("emf"),
        &format!("{}-", common::moto::unique("emf")),
        cache.path(),
    );
    common::moto::setup(&env);
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    env.push(("MCP_V8_METRICS_NAMESPACE".into(), "emf-test".into()));
    let output = cache.path().join("stdout");
    let _function = start_function_writing(env, std::fs::File::create(&output).unwrap().into());
    for (arguments, status) in [
        (json!({"code": "1 + 1", "heap": ""}), "completed"),
        (
            json!({"code": "throw new Error('no')", "heap": ""}),
            "failed",
        ),
        (
            json!({"code": "while (true) {}", "heap": "", "execution_timeout_secs": 1}),
            "timed_out",
        ),
    ] {
        api.give(run_js_event(arguments));
        let body = rpc_body(&api.answer(LIMIT).await);
        assert_eq!(
            body["result"]["structuredContent"]["status"], status,
            "{body}"
        );
    }
    let docs = documents(&std::fs::read_to_string(&output).unwrap());
    assert!(!docs.is_empty(), "no metrics in the function's output");
    for doc in &docs {
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Namespace"], "emf-test",
            "{doc}"
        );
    }
    let runs = totals(&docs, "mcp_v8_runs_total");
    for outcome in ["completed", "failed", "timed_out"] {
        assert_eq!(
            runs.get(&format!("outcome={outcome},tool=run_js")),
            Some(&1.0),
            "{runs:?}"
        );
    }
    assert_eq!(
        totals(&docs, "mcp_v8_run_duration_seconds").get("tool=run_js"),
        Some(&3.0)
    );
    assert_eq!(
        totals(&docs, "mcp_v8_cold_starts_total").get(""),
        Some(&1.0)
    );
}
