//! Saves coalesce: in a burst of quick `latest` calls on a large heap, a
//! heap that a newer run replaced before its snapshot began is never
//! snapshotted, and every run still has its record and log entry saying
//! where its effects are stored (docs/protocol.md, "Coalesced saves").

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Server, Stores, test_config};
use serde_json::{Value, json};

/// 300k small objects: about 25 MB of V8 heap, whose snapshot takes V8
/// several hundred milliseconds, against a few for a trivial call.
const LARGE: &str = "globalThis.items = Array.from({length: 300000}, (_, i) => ({i, s: 'item' + i})); globalThis.n = 0; items.length";

/// Every run in a logical session answered before its save, in one
/// engine worker that keeps heaps live.
fn server() -> Server {
    let mut config = test_config(3600, false);
    config.engine.answer_before_save_mb = Some(0);
    common::server_with_workers(config, 1, |stores: Stores| stores)
}

fn outcome(result: &Value) -> &Value {
    &result["structuredContent"]
}

async fn run(s: &Server, sid: &str, arguments: Value) -> Value {
    tokio::time::timeout(Duration::from_secs(60), s.call(sid, arguments))
        .await
        .expect("the call was answered")
}

/// Twenty quick calls with no pause: each continues the right state and
/// none waits for a save; fewer heaps are stored than runs; each run
/// whose heap was superseded has a log entry naming the run whose stored
/// heap holds its effects, and a record saying so in words; `heap` given
/// as such a run's id answers with the stored heaps nearest it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_stores_fewer_heaps_than_runs_and_every_run_says_where_its_effects_are() {
    let s = server();
    let sid = s.initialize().await;
    let call = |code: &str| json!({"code": code, "session": "burst", "heap": "latest", "heap_memory_max_mb": 512});
    let made = run(&s, &sid, call(LARGE)).await;
    assert_eq!(outcome(&made)["result"], "300000", "{made}");
    let mut ids = Vec::new();
    for expected in 1..=20 {
        // Only the first carries tags: superseded, they go to the heap
        // holding its effects.
        let mut arguments = call("n += 1; n");
        if expected == 1 {
            arguments["tags"] = json!({"first": "yes"});
        }
        let next = run(&s, &sid, arguments).await;
        let answered = outcome(&next);
        assert_eq!(answered["result"], expected.to_string(), "{next}");
        assert!(answered["save_wait_ms"].is_null(), "no call waits: {next}");
        ids.push(answered["execution_id"].as_str().unwrap().to_owned());
    }
    // The last run's record is written once its heap is stored, after
    // those of the runs it superseded.
    let last = s
        .tool(&sid, "get_execution", json!({"execution_id": ids[19]}))
        .await;
    let last_heap = outcome(&last)["heap"].as_str().expect("stored").to_owned();
    let (tenant, session) = (Default::default(), common::logical("burst"));
    let entries = s.meta.read_log(&tenant, &session, 0, 100).await.unwrap();
    assert_eq!(entries.len(), 21, "every run has its entry: {entries:?}");
    assert_eq!(entries[20].output_heap.as_str(), last_heap);
    let stored: Vec<_> = entries
        .iter()
        .filter(|e| e.superseded_by.is_none())
        .collect();
    let superseded: Vec<_> = entries
        .iter()
        .filter(|e| e.superseded_by.is_some())
        .collect();
    assert!(
        !superseded.is_empty() && stored.len() < entries.len(),
        "a burst on a large heap coalesces: {entries:?}"
    );
    let distinct: BTreeSet<_> = entries.iter().map(|e| e.output_heap.clone()).collect();
    assert_eq!(distinct.len(), stored.len(), "{entries:?}");
    // The log ends in a stored heap, and a superseded entry's heaps are
    // the stored ones nearest it.
    assert!(entries.last().unwrap().superseded_by.is_none());
    for (at, entry) in entries.iter().enumerate() {
        if entry.superseded_by.is_none() {
            continue;
        }
        let after = entries[at..]
            .iter()
            .find(|e| e.superseded_by.is_none())
            .unwrap();
        assert_eq!(entry.output_heap, after.output_heap, "{entries:?}");
        let before = entries[..at]
            .iter()
            .rev()
            .find(|e| e.superseded_by.is_none())
            .map(|e| e.output_heap.clone());
        assert_eq!(entry.input_heap, before, "{entries:?}");
    }
    // The tool's listing and a superseded run's record say so in words.
    let listed = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "burst", "fields": "index"}),
        )
        .await;
    let listed = outcome(&listed)["entries"].as_array().unwrap().clone();
    let noted = listed.iter().filter(|e| e["note"].is_string()).count();
    assert_eq!(noted, superseded.len(), "{listed:?}");
    let mut superseded_run = None;
    for id in &ids {
        let record = s
            .tool(&sid, "get_execution", json!({"execution_id": id}))
            .await;
        if outcome(&record)["superseded"].is_object() {
            superseded_run = Some(id.clone());
            break;
        }
    }
    let superseded_run = superseded_run.expect("a superseded run's record");
    let record = s
        .tool(
            &sid,
            "get_execution",
            json!({"execution_id": superseded_run}),
        )
        .await;
    let said = &outcome(&record)["superseded"];
    assert!(outcome(&record)["heap"].is_null(), "{record}");
    let after = said["heap_after"].as_str().unwrap().to_owned();
    assert!(
        said["note"].as_str().unwrap().contains("never stored")
            && distinct.iter().any(|h| h.as_str() == after),
        "{record}"
    );
    // The first run's tags are not lost with its heap.
    let first = s
        .tool(&sid, "get_execution", json!({"execution_id": ids[0]}))
        .await;
    let first_heap = outcome(&first)["superseded"]["heap_after"]
        .as_str()
        .or(outcome(&first)["heap"].as_str())
        .unwrap()
        .to_owned();
    let tags = s
        .meta
        .get_tags(
            &tenant,
            &mcp_v8_lambda::heap::HeapKey::parse(&first_heap).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        tags.get("first").map(String::as_str),
        Some("yes"),
        "{first}"
    );
    // Passed as heap, its id answers with the stored heaps nearest it.
    let wrong = s
        .call(&sid, json!({"code": "n", "heap": superseded_run}))
        .await;
    let text = wrong["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(wrong["isError"], true, "{wrong}");
    assert!(
        text.contains("never stored") && text.contains(&after),
        "names the heap holding its effects: {text}"
    );
    if let Some(before) = said["heap_before"].as_str() {
        assert!(text.contains(before), "names the heap before it: {text}");
    }
    // And the heap after holds its effects.
    let continued = run(&s, &sid, json!({"code": "n", "heap": after})).await;
    assert!(
        outcome(&continued)["result"].as_str().is_some(),
        "{continued}"
    );
}
