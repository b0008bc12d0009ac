//! How many AWS calls each request makes, counted by an SDK interceptor
//! against moto. Counts are deterministic, so they are asserted: a change
//! that adds a call per request fails here. docs/performance.md records them.

use crate::common;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::StatusCode;
use common::moto::{sdk_config, unique};
use mcp_v8_lambda::backends::aws::{CallCounter, Clients, setup};
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::transport::{App, router};
use serde_json::{Value, json};
use tower::ServiceExt;

async fn send(
    app: &App,
    session: Option<&str>,
    body: Value,
) -> (StatusCode, Option<String>, Value) {
    let text = body.to_string();
    let mut builder = common::post().header("x-mcp-session-id", "counted-agent");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    let response = router(app.clone())
        .oneshot(builder.body(Body::from(text)).unwrap())
        .await
        .unwrap();
    let reply = common::reply(response).await;
    (reply.status, reply.session_id(), reply.body)
}

fn calls(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test]
async fn a_stateful_tools_call_makes_the_documented_aws_calls() {
    let counter = CallCounter::default();
    let clients = Clients::new(&sdk_config().await, true, Some(&counter));
    let bucket = unique("calls");
    let prefix = format!("{}-", unique("c"));
    setup(&clients.dynamodb, &clients.s3, &prefix, &bucket)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let env = BTreeMap::from([
        ("MCP_V8_HEAP_BUCKET", bucket.clone()),
        ("MCP_V8_TABLE_PREFIX", prefix.clone()),
        ("MCP_V8_HEAP_CACHE_DIR", cache.to_str().unwrap().to_owned()),
    ]);
    let config = Config::from_lookup(|name| env.get(name).cloned()).unwrap();
    let app = crate::common::app_on_workers(&config, dir.path(), Some(&clients));
    counter.take();

    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
    let (_, sid, _) = send(&app, None, init).await;
    let sid = sid.unwrap();
    let initialize = counter.take();
    println!("initialize: {initialize:?}");
    assert_eq!(
        initialize,
        calls(&[("DynamoDB.PutItem", 1), ("DynamoDB.Query", 1)]),
        "state write + continuity read"
    );

    send(
        &app,
        Some(&sid),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    let initialized = counter.take();
    println!("notifications/initialized: {initialized:?}");
    assert_eq!(
        initialized,
        calls(&[("DynamoDB.GetItem", 1), ("DynamoDB.PutItem", 1)])
    );

    send(
        &app,
        Some(&sid),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    )
    .await;
    let list = counter.take();
    println!("tools/list (replay, and the package index once): {list:?}");
    // The package index, for run_js's description: read by an instance's
    // first request that needs it, then at most every 30 s.
    assert_eq!(list, calls(&[("DynamoDB.GetItem", 1), ("S3.GetObject", 1)]));

    let run = |heap: Option<&str>| {
        let mut arguments = json!({"code": "globalThis.n = (globalThis.n ?? 0) + 1; n"});
        if let Some(heap) = heap {
            arguments["heap"] = json!(heap);
        }
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_js","arguments":arguments}})
    };
    let (_, _, fresh) = send(&app, Some(&sid), run(None)).await;
    let fresh_calls = counter.take();
    println!("run_js, fresh isolate: {fresh_calls:?}");
    let heap = fresh["result"]["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    // Replay and log head are reads; heap PUT; log entry, head and execution in one transaction.
    let writes_and_reads = [
        ("DynamoDB.GetItem", 2),
        ("DynamoDB.TransactWriteItems", 1),
        ("S3.PutObject", 1),
    ];
    assert_eq!(fresh_calls, calls(&writes_and_reads));

    send(&app, Some(&sid), run(Some(&heap))).await;
    let warm = counter.take();
    println!("run_js from a heap, warm cache: {warm:?}");
    assert_eq!(
        warm,
        calls(&writes_and_reads),
        "a cache hit reads nothing from S3"
    );

    // Without the directory, the instance still holds the heap in memory.
    std::fs::remove_dir_all(&cache).unwrap();
    send(&app, Some(&sid), run(Some(&heap))).await;
    let in_memory = counter.take();
    println!("run_js from a heap, in memory, no cache directory: {in_memory:?}");
    assert_eq!(
        in_memory,
        calls(&writes_and_reads),
        "a memory hit reads nothing from S3"
    );

    // A new instance (empty memory) with an empty /tmp fetches it from S3,
    // and reads the package index once.
    let cold_app = crate::common::app_on_workers(&config, dir.path(), Some(&clients));
    std::fs::remove_dir_all(&cache).unwrap();
    counter.take();
    let (_, _, cold_reply) = send(&cold_app, Some(&sid), run(Some(&heap))).await;
    assert_eq!(cold_reply["result"]["structuredContent"]["result"], "2");
    let cold = counter.take();
    println!("run_js from a heap, cold cache: {cold:?}");
    assert_eq!(
        cold,
        calls(&[
            ("DynamoDB.GetItem", 2),
            ("DynamoDB.TransactWriteItems", 1),
            ("S3.GetObject", 2),
            ("S3.PutObject", 1),
        ])
    );
}

/// `list_sessions` reads the caller's own partition of the session index:
/// one Query for a page, never a Scan, however many sessions other tenants
/// hold.
#[tokio::test]
async fn list_sessions_is_one_query_of_the_callers_partition_and_no_scan() {
    use mcp_v8_lambda::meta::{DynamoMetaStore, MetaStore, MetaTables, NewLogEntry};
    use mcp_v8_lambda::tenant::Tenant;

    let counter = CallCounter::default();
    let clients = Clients::new(&sdk_config().await, true, Some(&counter));
    let bucket = unique("list");
    let prefix = format!("{}-", unique("l"));
    setup(&clients.dynamodb, &clients.s3, &prefix, &bucket)
        .await
        .unwrap();
    let store = DynamoMetaStore::new(
        clients.dynamodb.clone(),
        clients.s3.clone(),
        &bucket,
        "overflow/",
        MetaTables::with_prefix(&prefix),
    );
    let entry = || NewLogEntry {
        input_heap: None,
        output_heap: mcp_v8_lambda::heap::HeapKey::parse(&"a".repeat(64)).unwrap(),
        code: "1".into(),
        timestamp: "2026-11-24T00:00:00Z".into(),
        superseded_by: None,
    };
    // Other tenants' sessions, which no listing of this caller may read.
    for n in 0..30 {
        let other = Tenant::of_principal(&format!("jwt:https://issuer#{n}"));
        store
            .append_log(&other, &common::logical("theirs"), entry())
            .await
            .unwrap();
    }
    for name in ["mine-1", "mine-2"] {
        store
            .append_log(&Tenant::anonymous(), &common::logical(name), entry())
            .await
            .unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::from([
        ("MCP_V8_HEAP_BUCKET", bucket.clone()),
        ("MCP_V8_TABLE_PREFIX", prefix.clone()),
    ]);
    let config = Config::from_lookup(|name| env.get(name).cloned()).unwrap();
    let app = crate::common::app_on_workers(&config, dir.path(), Some(&clients));
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}});
    let (_, sid, _) = send(&app, None, init).await;
    counter.take();
    let (_, _, listed) = send(
        &app,
        sid.as_deref(),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}),
    )
    .await;
    assert_eq!(
        listed["result"]["structuredContent"],
        json!({"sessions": ["mine-1", "mine-2"]})
    );
    let calls_made = counter.take();
    println!("list_sessions: {calls_made:?}");
    assert_eq!(
        calls_made,
        calls(&[("DynamoDB.GetItem", 1), ("DynamoDB.Query", 1)]),
        "session replay, then one Query of the index"
    );
}
