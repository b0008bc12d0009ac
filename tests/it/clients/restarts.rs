//! Sessions and heaps across restarts and kills of `serve`, driven by the
//! real clients, on the embedded store and on S3 and DynamoDB.

use std::time::{Duration, Instant};

use super::*;
use crate::common;
use mcp_v8_lambda::tenant::Tenant;

#[test]
fn sigkill_under_load_leaves_every_logged_heap_stored_and_verifiable() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    // Every run continuing `latest` is answered before its save.
    let mut serve = Serve::at_with(
        dir.path(),
        common::net::free_port(),
        vec![("MCP_V8_ANSWER_BEFORE_SAVE_MB".into(), "0".into())],
    );
    let url = serve.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sessions: Vec<String> = (0..8).map(|i| format!("kill-{i}")).collect();
    // Odd sessions continue `latest`; even ones thread the keys they get.
    let continues_latest = |i: usize| i % 2 == 1;
    let clients: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, session)| {
            let (url, session, stop) = (url.clone(), session.clone(), stop.clone());
            let answered = answered.clone();
            let latest = continues_latest(i);
            runtime.spawn(async move {
                let http = reqwest::Client::new();
                let (mut heap, mut runs, mut last_n) = (None::<String>, 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let mut arguments = serde_json::json!({
                        "code": "globalThis.n = (globalThis.n ?? 0) + 1; globalThis.pad = 'x'.repeat(1000 * n); n",
                        "session": session});
                    if latest {
                        arguments["heap"] = "latest".into();
                    } else if let Some(heap) = &heap {
                        arguments["heap"] = heap.as_str().into();
                    }
                    match call_2026(&http, &url, "run_js", arguments).await {
                        Ok(outcome) => {
                            heap = outcome["heap"].as_str().map(str::to_owned);
                            last_n = outcome["result"].as_str().unwrap().parse().unwrap();
                            runs += 1;
                            // A run threading keys is logged before its
                            // answer; `latest` runs answer first, faster
                            // than their heaps are stored.
                            if !latest {
                                answered.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        // The kill cuts requests off mid-flight.
                        Err(_) => break,
                    }
                }
                (runs, last_n)
            })
        })
        .collect();
    // Once the clients threading keys have had runs logged, kill the
    // process outright.
    let started = Instant::now();
    while answered.load(Ordering::Relaxed) < 8 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the load never got going: {} runs answered",
            answered.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    serve.restart();
    stop.store(true, Ordering::Relaxed);
    let ended: Vec<(u64, u64)> = clients
        .into_iter()
        .map(|c| runtime.block_on(c).unwrap())
        .collect();
    let runs: u64 = ended.iter().map(|(runs, _)| runs).sum();
    assert!(runs >= 8, "the load ran before the kill: {runs} runs");
    // A session answered before its save continues from its newest answer
    // if that save ended before the kill, else is told its heap is lost:
    // never from an older heap in silence.
    let http = reqwest::Client::new();
    let mut lost = 0;
    for (i, session) in sessions
        .iter()
        .enumerate()
        .filter(|(i, _)| continues_latest(*i))
    {
        let last_n = ended[i].1;
        let next = runtime.block_on(call_2026(
            &http,
            &serve.url(),
            "run_js",
            serde_json::json!({"code": "globalThis.n ?? 0", "session": session, "heap": "latest"}),
        ));
        match next {
            Ok(outcome) => {
                let n: u64 = outcome["result"].as_str().unwrap().parse().unwrap();
                assert!(
                    n >= last_n,
                    "{session}: continued from n = {n}, older than the answered n = {last_n}"
                );
            }
            Err(said) => {
                assert!(
                    said.contains("is lost") && said.contains("heap: \\\""),
                    "{session}: {said}"
                );
                lost += 1;
            }
        }
    }

    let heaps = mcp_v8_lambda::heap::FileHeapStore::new(dir.path().join("heaps"));
    let mut logged = 0;
    let mut verified = 0;
    for session in &sessions {
        let log = runtime
            .block_on(call_2026(
                &http,
                &serve.url(),
                "list_session_snapshots",
                serde_json::json!({"session": session, "fields": "index,input_heap,output_heap"}),
            ))
            .unwrap();
        let entries = log["entries"].as_array().unwrap();
        for (i, entry) in entries.iter().enumerate() {
            assert_eq!(
                entry["index"], i as u64,
                "{session}: gapless after the kill"
            );
            for field in ["input_heap", "output_heap"] {
                let Some(key) = entry[field].as_str() else {
                    continue;
                };
                let key = mcp_v8_lambda::heap::HeapKey::parse(key).unwrap();
                let stored = runtime.block_on(mcp_v8_lambda::heap::HeapStore::get(
                    &heaps,
                    &Tenant::anonymous(),
                    &key,
                ));
                assert!(
                    matches!(stored, Ok(Some(_))),
                    "{session} entry {i}: {field} {key} is stored and verifies: {stored:?}"
                );
                verified += 1;
            }
        }
        logged += entries.len();
    }
    eprintln!(
        "SIGKILL under load: {runs} runs answered, {logged} log entries, {verified} heaps verified, \
         {lost} sessions told their answered heap was lost"
    );
    assert!(logged >= 8, "{logged} entries logged");
    // Every logged run of these stateful clients made a heap.
    assert!(
        verified >= logged,
        "{verified} heaps verified of {logged} entries"
    );
}

/// The official conformance suite against `serve` with the suite's
/// fixture tools (the fixtures' server, [`fixture_server`]), once per protocol
/// version: 2025-11-25 and 2026-07-28 run exactly what their revisions
/// require, the older versions the active suite at their wire version. A
/// check may fail only when tests/conformance/expected-failures-*.yaml lists
/// it with its reason, and a listed check that passes fails the run too.

#[test]
fn a_session_survives_a_server_restart_and_a_deleted_one_reinitializes() {
    let events = run_with_restart("replay");
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );
    assert_eq!(
        events[0]["session"], events[1]["session"],
        "the same transport session continued"
    );
    assert_ne!(
        events[0]["session"], events[3]["session"],
        "re-initialize made a new session"
    );
}

#[test]
fn tags_queries_the_session_log_and_executions_work_through_serve_and_survive_a_restart() {
    let events = run_with_restart("tools");
    assert_eq!(names(&events), ["restart", "done"]);
}

fn heap_in_s3(bucket: &str, heap: &str) -> bool {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (s3, _) = common::moto::clients().await;
        s3.head_object()
            .bucket(bucket)
            .key(heap)
            .send()
            .await
            .is_ok()
    })
}

/// The environment a deployment on AWS has, pointed at moto.

#[test]
fn on_s3_and_dynamodb_a_session_survives_a_restart_and_nothing_is_kept_locally_but_the_cache() {
    let bucket = common::moto::unique("e2e");
    let prefix = format!("{}-", common::moto::unique("e2e"));
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let cache = dir.path().join("cache");
    let env = common::moto::serve_env(&bucket, &prefix, &cache);

    let setup = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .arg("setup")
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&setup.stdout);
    assert!(
        setup.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    assert!(
        printed.contains(&format!("created table {prefix}sessions")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("bucket {bucket} created")),
        "{printed}"
    );

    let serve = Serve::at_with(&data_dir, common::net::free_port(), env);
    let events = run_with_restart_on(serve, "replay");
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );

    assert!(
        !data_dir.join("meta.redb").exists(),
        "sessions and metadata live in DynamoDB"
    );
    assert!(!data_dir.join("heaps").exists(), "heaps live in S3");
    let last_heap = events[3]["heap"].as_str().unwrap().to_owned();
    assert!(
        cache.join(&last_heap).exists(),
        "the cache holds the last heap"
    );
    let stored = (
        heap_in_s3(&bucket, &last_heap),
        logged_runs(&prefix, "ts-replay"),
    );
    assert_eq!(
        stored,
        (true, 3),
        "the heap is in S3 and three runs are logged in DynamoDB"
    );
}
