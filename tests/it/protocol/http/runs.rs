//! run_js over HTTP: heaps threaded through calls, tool errors, stateless mode,
//! output schemas by protocol version, and the binary's local app.

use super::*;

#[tokio::test]
async fn output_schemas_appear_from_2025_06_18_on() {
    let s = server();
    for (version, structured) in [
        ("2025-03-26", false),
        ("2025-06-18", true),
        ("2025-11-25", true),
    ] {
        let sid = s.initialize_as(version, &[]).await;
        let tools = s
            .rpc(
                Some(&sid),
                json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            )
            .await
            .body;
        let run_js = &tools["result"]["tools"][0];
        assert_eq!(run_js["name"], "run_js");
        assert!(run_js["inputSchema"]["properties"]["heap"].is_object());
        assert_eq!(
            run_js.get("outputSchema").is_some(),
            structured,
            "{version}"
        );
        let result = s.call(&sid, json!({"code": "1 + 1"})).await;
        assert_eq!(
            result.get("structuredContent").is_some(),
            structured,
            "{version}"
        );
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["result"], "2");
    }
}

#[tokio::test]
async fn run_js_threads_state_through_heaps_and_logs_each_run() {
    let s = server();
    let sid = s
        .initialize_as("2025-11-25", &[("x-mcp-session-id", "logged-agent")])
        .await;
    let first = s
        .call(
            &sid,
            json!({"code": "globalThis.counter = 1; counter", "tags": {"step": "one"}}),
        )
        .await;
    assert_eq!(first["isError"], false);
    let heap1 = first["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = s.call(&sid, json!({"code": "const n: number = counter + 1; globalThis.counter = n; n", "heap": heap1})).await;
    assert_eq!(second["structuredContent"]["result"], "2");
    let heap2 = second["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = s
        .meta
        .read_log(
            &Tenant::anonymous(),
            &common::logical("logged-agent"),
            0,
            100,
        )
        .await
        .unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].input_heap, None);
    assert_eq!(
        log[1].input_heap.as_ref().map(|h| h.as_str()),
        Some(heap1.as_str())
    );
    assert_eq!(log[1].output_heap.as_str(), heap2);
    assert!(
        !log[1].code.contains(": number"),
        "the log holds the stripped code"
    );
    let tags = s
        .meta
        .get_tags(
            &Tenant::anonymous(),
            &mcp_v8_lambda::heap::HeapKey::parse(&heap1).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(tags.get("step").map(String::as_str), Some("one"));
    let id: uuid::Uuid = second["structuredContent"]["execution_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        s.meta
            .get_execution(&Tenant::anonymous(), id, unix_now())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn javascript_failures_are_tool_errors_not_protocol_errors() {
    let s = server();
    let sid = s.initialize().await;
    let thrown = s
        .call(&sid, json!({"code": "throw new Error('nope')"}))
        .await;
    assert_eq!(thrown["isError"], true);
    assert_eq!(thrown["structuredContent"]["status"], "failed");
    assert_eq!(thrown["structuredContent"]["error"]["message"], "nope");
    let looped = s
        .call(
            &sid,
            json!({"code": "for(;;){}", "execution_timeout_secs": 0.3}),
        )
        .await;
    assert_eq!(looped["isError"], true);
    assert_eq!(looped["structuredContent"]["status"], "timed_out");
    for bad in [
        json!({"code": "1", "heap": "XYZ"}),
        json!({"code": 5}),
        json!({"code": "1", "hepa": "x"}),
        json!({}),
    ] {
        let result = s.call(&sid, bad.clone()).await;
        assert_eq!(result["isError"], true, "{bad}");
        assert!(result.get("structuredContent").is_none(), "{bad}");
    }
    let unknown = s
        .rpc(Some(&sid), json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}))
        .await;
    assert_eq!(unknown.body["error"]["code"], -32602);
}

#[tokio::test]
async fn stateless_mode_refuses_heaps_and_returns_none() {
    let s = server_with(3600, true, None);
    let sid = s.initialize().await;
    let tools = s.tools_list(&sid).await;
    assert!(
        tools["tools"][0]["inputSchema"]["properties"]
            .get("heap")
            .is_none()
    );
    let ok = s.call(&sid, json!({"code": "6 * 7"})).await;
    assert_eq!(ok["structuredContent"]["result"], "42");
    assert_eq!(ok["structuredContent"]["heap"], Value::Null);
    let refused = s
        .call(&sid, json!({"code": "1", "heap": "0".repeat(64)}))
        .await;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("stateless")
    );
}

#[tokio::test]
async fn the_local_app_of_the_binary_serves_from_a_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        crate::common::app_on_workers(&Config::from_lookup(|_| None).unwrap(), dir.path(), None);
    let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})
    .to_string();
    let response = router(app)
        .oneshot(post().body(Body::from(text)).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(dir.path().join("meta.redb").exists());
}
