//! The session log and tags through the tools: list_sessions,
//! list_session_snapshots and its pages, heap tags set, read, queried and
//! validated, get_execution, and latest continuing a logical session.

use super::*;

#[tokio::test]
async fn list_sessions_names_sessions_with_entries() {
    let s = server();
    let a = logical(&s, "alpha").await;
    let b = logical(&s, "beta").await;
    logical(&s, "gamma-has-no-runs").await;
    run(&s, &a, "1", None).await;
    run(&s, &b, "2", None).await;
    let listed = s.tool(&a, "list_sessions", json!({})).await;
    assert_eq!(structured(&listed)["sessions"], json!(["alpha", "beta"]));
}

#[tokio::test]
async fn list_session_snapshots_returns_the_log_with_field_filters_and_pages() {
    let s = server();
    let sid = logical(&s, "logbook").await;
    let first = run(&s, &sid, "globalThis.n = 0; n", None).await;
    let mut heap = first["heap"].as_str().unwrap().to_owned();
    for _ in 0..4 {
        heap = run(&s, &sid, "n += 1; n", Some(&heap)).await["heap"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    let all = s.tool(&sid, "list_session_snapshots", json!({})).await;
    let entries = structured(&all)["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 5);
    assert_eq!(entries[0]["index"], 0);
    assert_eq!(entries[0]["input_heap"], Value::Null);
    assert_eq!(entries[0]["code"], "globalThis.n = 0; n");
    assert_eq!(entries[4]["output_heap"], heap);
    assert!(entries[4]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(entries[1]["input_heap"], entries[0]["output_heap"]);

    let filtered = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"fields": "index, output_heap"}),
        )
        .await;
    for entry in structured(&filtered)["entries"].as_array().unwrap() {
        let keys: BTreeSet<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, BTreeSet::from(["index", "output_heap"]));
    }

    let page = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"offset": 1, "limit": 2, "fields": "index"}),
        )
        .await;
    assert_eq!(
        structured(&page)["entries"],
        json!([{"index": 1}, {"index": 2}])
    );
    assert_eq!(structured(&page)["next_offset"], 3);
    let last = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"offset": 3, "fields": "index"}),
        )
        .await;
    assert!(structured(&last).get("next_offset").is_none());

    let bad = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"fields": "index,colour"}),
        )
        .await;
    assert_eq!(bad["isError"], true);
    let text = bad["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("colour") && text.contains("index, input_heap, output_heap, code, timestamp"),
        "{text}"
    );
    for limit in [0, 1001] {
        assert_eq!(
            s.tool(&sid, "list_session_snapshots", json!({"limit": limit}))
                .await["isError"],
            true
        );
    }
}

#[tokio::test]
async fn without_a_logical_session_the_log_answers_with_the_documented_error_entry() {
    let s = server();
    let sid = s.initialize().await;
    let reply = s.tool(&sid, "list_session_snapshots", json!({})).await;
    assert_eq!(
        structured(&reply)["entries"],
        json!([{ "error": "no session ID available (send X-MCP-Session-Id header)" }])
    );
}

async fn tags_of(s: &Server, sid: &str, heap: &str) -> Value {
    structured(&s.tool(sid, "get_heap_tags", json!({ "heap": heap })).await)["tags"].clone()
}

async fn run_tagged(s: &Server, sid: &str, code: &str, tags: Value) -> String {
    structured(&s.call(sid, json!({ "code": code, "tags": tags })).await)["heap"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn query(s: &Server, sid: &str, tags: Value) -> BTreeSet<String> {
    let reply = s
        .tool(sid, "query_heaps_by_tags", json!({ "tags": tags }))
        .await;
    structured(&reply)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["heap"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn heap_tags_are_set_read_deleted_and_validated() {
    let s = server();
    let sid = s.initialize().await;
    let heap = run(&s, &sid, "1", None).await["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(tags_of(&s, &sid, &heap).await, json!({}));
    let set = s
        .tool(
            &sid,
            "set_heap_tags",
            json!({"heap": heap, "tags": {"env": "prod", "model": "v2", "team": "x"}}),
        )
        .await;
    assert_eq!(structured(&set), &json!({"ok": true}));
    assert_eq!(
        tags_of(&s, &sid, &heap).await,
        json!({"env": "prod", "model": "v2", "team": "x"})
    );
    let some = s
        .tool(
            &sid,
            "delete_heap_tags",
            json!({"heap": heap, "keys": "model, team"}),
        )
        .await;
    assert_eq!(structured(&some), &json!({"ok": true}));
    assert_eq!(tags_of(&s, &sid, &heap).await, json!({"env": "prod"}));
    let all = s
        .tool(&sid, "delete_heap_tags", json!({"heap": heap}))
        .await;
    assert_eq!(structured(&all), &json!({"ok": true}));
    assert_eq!(tags_of(&s, &sid, &heap).await, json!({}));

    let bad_tags = s
        .tool(
            &sid,
            "set_heap_tags",
            json!({"heap": heap, "tags": {"": "x"}}),
        )
        .await;
    assert_eq!(bad_tags["isError"], true);
    assert_eq!(bad_tags["structuredContent"]["ok"], false);
    assert!(
        bad_tags["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
    let not_strings = s
        .tool(
            &sid,
            "set_heap_tags",
            json!({"heap": heap, "tags": {"n": 1}}),
        )
        .await;
    assert_eq!(not_strings["isError"], true);
    for (tool, arguments) in [
        ("get_heap_tags", json!({"heap": "ABC"})),
        ("set_heap_tags", json!({"heap": "ABC", "tags": {}})),
        ("delete_heap_tags", json!({"heap": "ABC"})),
    ] {
        let reply = s.tool(&sid, tool, arguments).await;
        assert_eq!(reply["isError"], true, "{tool}");
        assert!(
            reply.to_string().contains("64 lowercase hex"),
            "{tool}: {reply}"
        );
    }
}

#[tokio::test]
async fn run_js_tags_replace_the_output_heaps_tags_and_queries_need_every_pair() {
    let s = server();
    let sid = s.initialize().await;
    let a = run_tagged(&s, &sid, "'a'", json!({"env": "prod", "model": "v2"})).await;
    let b = run_tagged(&s, &sid, "'b'", json!({"env": "prod", "model": "v3"})).await;
    let untagged = run(&s, &sid, "'c'", None).await["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        query(&s, &sid, json!({"env": "prod"})).await,
        BTreeSet::from([a.clone(), b.clone()])
    );
    assert_eq!(
        query(&s, &sid, json!({"env": "prod", "model": "v3"})).await,
        BTreeSet::from([b.clone()])
    );
    assert!(query(&s, &sid, json!({"env": "dev"})).await.is_empty());
    assert!(
        !query(&s, &sid, json!({"env": "prod"}))
            .await
            .contains(&untagged)
    );
    // run_js tags replace: re-running b's code from b with other tags retags the output heap.
    let retagged = s
        .call(
            &sid,
            json!({"code": "'b'", "heap": b, "tags": {"env": "dev"}}),
        )
        .await;
    let retagged_heap = structured(&retagged)["heap"].as_str().unwrap().to_owned();
    assert_eq!(
        tags_of(&s, &sid, &retagged_heap).await,
        json!({"env": "dev"})
    );
    let empty = s
        .tool(&sid, "query_heaps_by_tags", json!({"tags": {}}))
        .await;
    assert_eq!(empty["isError"], true);
}

#[tokio::test]
async fn get_execution_returns_recorded_runs_and_refuses_unknown_ids() {
    let s = server();
    let sid = s.initialize().await;
    let out = run(&s, &sid, "console.log('hi'); 6 * 7", None).await;
    let id = out["execution_id"].as_str().unwrap();
    let fetched = s
        .tool(&sid, "get_execution", json!({"execution_id": id}))
        .await;
    let record = structured(&fetched);
    assert_eq!(record["result"], "42");
    assert_eq!(record["output"], "hi\n");
    assert_eq!(record["heap"], out["heap"]);
    assert!(record["started_at"].as_str().unwrap() <= record["completed_at"].as_str().unwrap());
    let failed = s.call(&sid, json!({"code": "throw new Error('x')"})).await;
    let failed_id = failed["structuredContent"]["execution_id"]
        .as_str()
        .unwrap();
    let failed_record = s
        .tool(&sid, "get_execution", json!({"execution_id": failed_id}))
        .await;
    assert_eq!(structured(&failed_record)["status"], "failed");
    let unknown = s
        .tool(
            &sid,
            "get_execution",
            json!({"execution_id": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_eq!(unknown["isError"], true);
    let garbage = s
        .tool(&sid, "get_execution", json!({"execution_id": "not-a-uuid"}))
        .await;
    assert!(
        garbage["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not a UUID")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_clients_append_two_hundred_gapless_entries() {
    let s = Arc::new(server());
    let mut clients = Vec::new();
    for _ in 0..8 {
        let s = s.clone();
        clients.push(tokio::spawn(async move {
            let sid = logical(&s, "shared-log").await;
            for i in 0..25 {
                run(&s, &sid, &format!("{i}"), None).await;
            }
        }));
    }
    for client in clients {
        client.await.unwrap();
    }
    let log = s
        .meta
        .read_log(
            &Tenant::anonymous(),
            &common::logical("shared-log"),
            0,
            1000,
        )
        .await
        .unwrap();
    assert_eq!(
        log.iter().map(|e| e.index).collect::<Vec<_>>(),
        (0..200).collect::<Vec<u64>>()
    );
}

#[tokio::test]
async fn run_js_refuses_invalid_tags_before_running() {
    let s = server();
    let sid = logical(&s, "tag-check").await;
    let reply = s
        .call(
            &sid,
            json!({"code": "globalThis.ran = true", "tags": {"": "empty key"}}),
        )
        .await;
    assert_eq!(reply["isError"], true);
    assert!(
        reply["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
    assert!(
        s.meta
            .read_log(&Tenant::anonymous(), &common::logical("tag-check"), 0, 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing ran, nothing was logged"
    );
}

/// `order: newest_first` reads the log from its newest end, in pages.
#[tokio::test]
async fn list_session_snapshots_reads_newest_first_in_pages() {
    let s = server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    for n in 0..5 {
        s.call(
            &sid,
            json!({"code": format!("{n}"), "session": "backwards"}),
        )
        .await;
    }
    let page = |arguments: serde_json::Value| {
        let s = &s;
        let sid = sid.clone();
        async move { structured(&s.tool(&sid, "list_session_snapshots", arguments).await).clone() }
    };
    let last = page(json!({"session": "backwards", "order": "newest_first", "limit": 1, "fields": "index,code"})).await;
    assert_eq!(
        last,
        json!({"entries": [{"index": 4, "code": "4"}], "next_offset": 3})
    );
    let rest = page(
        json!({"session": "backwards", "order": "newest_first", "offset": 3, "fields": "index"}),
    )
    .await;
    assert_eq!(
        rest,
        json!({"entries": [{"index": 3}, {"index": 2}, {"index": 1}, {"index": 0}]})
    );
    let beyond = page(json!({"session": "backwards", "order": "newest_first", "offset": 99, "limit": 2, "fields": "index"})).await;
    assert_eq!(
        beyond,
        json!({"entries": [{"index": 4}, {"index": 3}], "next_offset": 2})
    );
    let empty = page(json!({"session": "never-ran", "order": "newest_first"})).await;
    assert_eq!(empty, json!({"entries": []}));
    let bad = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "backwards", "order": "sideways"}),
        )
        .await;
    assert_eq!(bad["isError"], true);
}
