//! Lambda Managed Instances (`AWS_LAMBDA_MAX_CONCURRENCY` above 1): the
//! environment is never frozen, so an instance answers the next call of a
//! heap line from its live heap while the previous save goes on, as
//! `serve` does, and a burst's saves coalesce (docs/protocol.md,
//! "Coalesced saves").

use crate::common;

use std::time::Duration;

use super::{rpc_body, run_js_event, start_function};
use serde_json::json;

/// A burst of quick `latest` calls on a ~25 MB heap under the Lambda entry
/// with `AWS_LAMBDA_MAX_CONCURRENCY=4`, on moto: each continues the right
/// state, none waits for a save, and the session's log, once the last
/// heap is stored, has every run with fewer heaps stored than runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_on_a_managed_instance_continues_the_live_heap_and_coalesces() {
    let cache = tempfile::tempdir().unwrap();
    let stem = common::moto::unique("managed");
    let mut env = common::moto::serve_env(&stem, &format!("{stem}-"), cache.path());
    common::moto::setup(&env);
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    // A managed instance's memory is several GiB, shared by its invocations.
    env.retain(|(name, _)| name != "AWS_LAMBDA_FUNCTION_MEMORY_SIZE");
    env.push(("AWS_LAMBDA_FUNCTION_MEMORY_SIZE".into(), "4096".into()));
    env.push(("AWS_LAMBDA_MAX_CONCURRENCY".into(), "4".into()));
    let _function = start_function(env);
    let limit = Duration::from_secs(120);
    let mut call = |code: &str| {
        api.give(run_js_event(json!({
            "code": code, "session": "managed", "heap": "latest", "heap_memory_max_mb": 128})))
    };
    call(
        "globalThis.items = Array.from({length: 300000}, (_, i) => ({i, s: 'item' + i})); globalThis.n = 0; items.length",
    );
    let body = rpc_body(&api.answer(limit).await);
    let made = &body["result"]["structuredContent"];
    assert_eq!(made["result"], "300000", "{body}");
    assert!(made["heap_saving"].is_string(), "answered first: {made}");
    let mut last = String::new();
    for expected in 1..=12 {
        api.give(run_js_event(json!({
            "code": "n += 1; n", "session": "managed", "heap": "latest", "heap_memory_max_mb": 128})));
        let body = rpc_body(&api.answer(limit).await);
        let answered = &body["result"]["structuredContent"];
        assert_eq!(answered["result"], expected.to_string(), "{body}");
        assert!(answered["save_wait_ms"].is_null(), "no call waits: {body}");
        last = answered["execution_id"].as_str().unwrap().to_owned();
    }
    // The last run's record waits for its save, and those it superseded
    // are written before it.
    api.give(super::event_2026(
        "tools/call",
        Some("get_execution"),
        json!({"name": "get_execution", "arguments": {"execution_id": last}}),
    ));
    let record = rpc_body(&api.answer(limit).await);
    assert!(
        record["result"]["structuredContent"]["heap"].is_string(),
        "{record}"
    );
    api.give(super::event_2026(
        "tools/call",
        Some("list_session_snapshots"),
        json!({"name": "list_session_snapshots", "arguments": {"session": "managed", "fields": "index,output_heap"}}),
    ));
    let listed = rpc_body(&api.answer(limit).await);
    let entries = listed["result"]["structuredContent"]["entries"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(entries.len(), 13, "every run has its entry: {listed}");
    let superseded = entries
        .iter()
        .filter(|e| e["superseded_by"].is_string())
        .count();
    assert!(superseded > 0, "the burst coalesced: {listed}");
}
