//! Session logs and execution records as resources, and the
//! `resume_session` prompt, in both protocol eras: listed, read, paged,
//! declared in the capabilities only where they exist, with 2026-07-28
//! caching hints. Tenant scoping is in tenancy.rs.

use crate::common;

use axum::body::Body;
use common::{Reply, Server, post, server, server_with};
use mcp_v8_lambda::meta::NewLogEntry;
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};

fn request_body(method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":3,"method":method,"params":params})
}

async fn sessionless(s: &Server, method: &str, mut params: Value) -> Reply {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "resources-test", "version": "1"}
    });
    let text = request_body(method, params).to_string();
    let request = post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(Body::from(text))
        .unwrap();
    s.send(request).await
}

/// Two sessions with runs, through the session era; returns a session id
/// and the execution id of the last run.
async fn with_two_sessions(s: &Server) -> (String, String) {
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let mut execution = String::new();
    for (session, code) in [
        ("alpha/one", "globalThis.a = 1; a"),
        ("beta", "2"),
        ("beta", "3"),
    ] {
        let result = s
            .call(&sid, json!({"code": code, "session": session}))
            .await;
        execution = result["structuredContent"]["execution_id"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    (sid, execution)
}

#[tokio::test]
async fn capabilities_name_resources_and_prompts_only_where_logs_are_kept() {
    let s = server();
    let init = s.initialize_reply("2025-11-25", &[]).await;
    let capabilities = &init.body["result"]["capabilities"];
    assert_eq!(
        capabilities["resources"],
        json!({"subscribe": false, "listChanged": false})
    );
    assert_eq!(capabilities["prompts"], json!({"listChanged": false}));
    assert_eq!(
        capabilities["logging"],
        json!({}),
        "console lines as log messages"
    );
    let discover = sessionless(&s, "server/discover", json!({})).await;
    assert_eq!(
        discover.body["result"]["capabilities"]["resources"],
        capabilities["resources"]
    );

    let stateless = server_with(3600, true, None);
    let sid = stateless.initialize_as("2025-11-25", &[]).await;
    let init = stateless.initialize_reply("2025-11-25", &[]).await;
    assert!(init.body["result"]["capabilities"]["resources"].is_null());
    assert!(init.body["result"]["capabilities"]["prompts"].is_null());
    for method in ["resources/list", "prompts/list"] {
        let reply = stateless
            .rpc(Some(&sid), request_body(method, json!({})))
            .await;
        assert_eq!(reply.body["error"]["code"], -32601, "{method}");
    }
}

#[tokio::test]
async fn session_logs_and_executions_are_listed_and_read() {
    let s = server();
    let (sid, execution) = with_two_sessions(&s).await;
    let list = s
        .rpc(Some(&sid), request_body("resources/list", json!({})))
        .await;
    // The skills' SKILL.md come first (protocol::skills); the caller's own
    // resources follow.
    let resources: Vec<Value> = list.body["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["uri"].as_str().unwrap().starts_with("skill://"))
        .cloned()
        .collect();
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "mcp-v8://sessions/alpha%2Fone/log",
            "mcp-v8://sessions/beta/log"
        ]
    );
    assert_eq!(resources[1]["name"], "beta");
    assert_eq!(resources[1]["mimeType"], "application/json");
    assert!(list.body["result"]["nextCursor"].is_null());

    let templates = s
        .rpc(
            Some(&sid),
            request_body("resources/templates/list", json!({})),
        )
        .await;
    let templates: Vec<&str> = templates.body["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        templates,
        [
            "mcp-v8://sessions/{name}/log",
            "mcp-v8://heaps/{heap}/files/{+path}",
            "mcp-v8://executions/{id}",
            "mcp-v8://executions/{id}/{part}{?page}"
        ]
    );

    let read = s
        .rpc(
            Some(&sid),
            request_body(
                "resources/read",
                json!({"uri": "mcp-v8://sessions/beta/log"}),
            ),
        )
        .await;
    let contents = &read.body["result"]["contents"][0];
    assert_eq!(contents["uri"], "mcp-v8://sessions/beta/log");
    let log: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(log["session"], "beta");
    let codes: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["2", "3"]);

    let uri = format!("mcp-v8://executions/{execution}");
    let read = s
        .rpc(
            Some(&sid),
            request_body("resources/read", json!({"uri": uri})),
        )
        .await;
    let record: Value =
        serde_json::from_str(read.body["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(record["execution_id"], execution.as_str());
    assert_eq!(record["result"], "3");

    for missing in [
        "mcp-v8://sessions/never/log".to_owned(),
        format!("mcp-v8://executions/{}", uuid::Uuid::new_v4()),
        "test://nonexistent".to_owned(),
    ] {
        let reply = s
            .rpc(
                Some(&sid),
                request_body("resources/read", json!({"uri": missing})),
            )
            .await;
        assert_eq!(reply.body["error"]["code"], -32602, "{missing}");
        assert_eq!(reply.body["error"]["data"]["uri"], missing.as_str());
    }
}

#[tokio::test]
async fn the_resource_list_pages_by_cursor() {
    let s = server();
    let tenant = Tenant::anonymous();
    for n in 0..101 {
        let entry = NewLogEntry {
            input_heap: None,
            output_heap: mcp_v8_lambda::heap::HeapKey::parse(&"c".repeat(64)).unwrap(),
            code: "1".into(),
            timestamp: "2026-11-24T00:00:00.000Z".into(),
            superseded_by: None,
        };
        s.meta
            .append_log(&tenant, &common::logical(&format!("s{n:03}")), entry)
            .await
            .unwrap();
    }
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let first = s
        .rpc(Some(&sid), request_body("resources/list", json!({})))
        .await;
    let first = &first.body["result"];
    let sessions = first["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["uri"].as_str().unwrap().starts_with("mcp-v8://sessions/"));
    assert_eq!(sessions.count(), 100);
    assert_eq!(first["nextCursor"], "s099");
    let second = s
        .rpc(
            Some(&sid),
            request_body("resources/list", json!({"cursor": first["nextCursor"]})),
        )
        .await;
    let second = &second.body["result"];
    assert_eq!(second["resources"][0]["name"], "s100");
    assert!(second["nextCursor"].is_null());
    let bad = s
        .rpc(
            Some(&sid),
            request_body("resources/list", json!({"cursor": ""})),
        )
        .await;
    assert_eq!(bad.body["error"]["code"], -32602);
}

#[tokio::test]
async fn resume_session_names_the_latest_heap_and_the_last_code() {
    let s = server();
    let (sid, _) = with_two_sessions(&s).await;
    let prompts = s
        .rpc(Some(&sid), request_body("prompts/list", json!({})))
        .await;
    assert_eq!(
        prompts.body["result"]["prompts"][0]["name"],
        "resume_session"
    );
    assert_eq!(
        prompts.body["result"]["prompts"][0]["arguments"][0]["required"],
        true
    );
    let log = s
        .tool(
            &sid,
            "list_session_snapshots",
            json!({"session": "beta", "order": "newest_first", "limit": 1}),
        )
        .await;
    let heap = log["structuredContent"]["entries"][0]["output_heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let prompt = s
        .rpc(
            Some(&sid),
            request_body(
                "prompts/get",
                json!({"name": "resume_session", "arguments": {"session": "beta"}}),
            ),
        )
        .await;
    let message = &prompt.body["result"]["messages"][0];
    assert_eq!(message["role"], "user");
    let text = message["content"]["text"].as_str().unwrap();
    assert!(text.contains(&heap), "{text}");
    assert!(text.contains("```js\n3\n```"), "{text}");
    assert!(text.contains("2 logged run"), "{text}");
    assert!(text.contains("heap: \"latest\""), "{text}");

    let empty = s
        .rpc(
            Some(&sid),
            request_body(
                "prompts/get",
                json!({"name": "resume_session", "arguments": {"session": "new"}}),
            ),
        )
        .await;
    assert!(
        empty.body["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("no runs yet")
    );
    for params in [
        json!({"name": "resume_session"}),
        json!({"name": "resume_session", "arguments": {"session": ""}}),
        json!({"name": "other", "arguments": {"session": "beta"}}),
    ] {
        let reply = s
            .rpc(Some(&sid), request_body("prompts/get", params.clone()))
            .await;
        assert_eq!(reply.body["error"]["code"], -32602, "{params}");
    }
}

/// 2026-07-28: every list and read result carries caching hints, private
/// where the data is the caller's.
#[tokio::test]
async fn list_and_read_results_carry_caching_hints() {
    let s = server();
    let (_, execution) = with_two_sessions(&s).await;
    let hints = |reply: &Reply| {
        let result = &reply.body["result"];
        (result["ttlMs"].clone(), result["cacheScope"].clone())
    };
    let cases = [
        ("tools/list", json!({}), json!(300_000), "public"),
        ("prompts/list", json!({}), json!(300_000), "public"),
        (
            "resources/templates/list",
            json!({}),
            json!(300_000),
            "public",
        ),
        ("resources/list", json!({}), json!(0), "private"),
        (
            "resources/read",
            json!({"uri": "mcp-v8://sessions/beta/log"}),
            json!(0),
            "private",
        ),
        (
            "resources/read",
            json!({"uri": format!("mcp-v8://executions/{execution}")}),
            json!(3_600_000),
            "private",
        ),
        (
            "prompts/get",
            json!({"name": "resume_session", "arguments": {"session": "beta"}}),
            json!(0),
            "private",
        ),
    ];
    for (method, params, ttl, scope) in cases {
        let reply = sessionless(&s, method, params).await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.body);
        assert_eq!(hints(&reply), (ttl, json!(scope)), "{method}");
    }
    let missing = sessionless(
        &s,
        "resources/read",
        json!({"uri": "mcp-v8://sessions/none/log"}),
    )
    .await;
    assert_eq!(missing.body["error"]["code"], -32602);
    assert_eq!(
        missing.body["error"]["data"]["uri"],
        "mcp-v8://sessions/none/log"
    );
}

/// `completion/complete` in both eras: `resume_session`'s `session` and the
/// log template's `{name}` complete to the caller's session names with the
/// typed start, other arguments to nothing, an unknown prompt or template
/// is -32602; a stateless server declares no completions and has none.
#[tokio::test]
async fn session_names_complete_in_both_eras_and_unknown_references_are_refused() {
    let s = server();
    let (sid, _) = with_two_sessions(&s).await;
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "resume_session"});
    let template = json!({"type": "ref/resource", "uri": "mcp-v8://sessions/{name}/log"});
    let session_era = s
        .rpc(
            Some(&sid),
            request_body(
                "completion/complete",
                complete(prompt.clone(), "session", "be"),
            ),
        )
        .await;
    assert_eq!(
        session_era.body["result"]["completion"],
        json!({"values": ["beta"], "total": 1, "hasMore": false}),
        "{}",
        session_era.body
    );
    let every = sessionless(
        &s,
        "completion/complete",
        complete(template.clone(), "name", ""),
    )
    .await;
    assert_eq!(
        every.body["result"]["completion"]["values"],
        json!(["alpha/one", "beta"]),
        "{}",
        every.body
    );
    assert_eq!(every.body["result"]["resultType"], "complete");
    let other = s
        .rpc(
            Some(&sid),
            request_body(
                "completion/complete",
                complete(
                    json!({"type": "ref/resource", "uri": "mcp-v8://executions/{id}"}),
                    "id",
                    "1",
                ),
            ),
        )
        .await;
    assert_eq!(other.body["result"]["completion"]["values"], json!([]));
    // A heap's files: the newest heap of each of the caller's sessions.
    let beta = s
        .tool(&sid, "list_session_snapshots", json!({"session": "beta"}))
        .await;
    let newest = beta["structuredContent"]["entries"][1]["output_heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let files = json!({"type": "ref/resource", "uri": "mcp-v8://heaps/{heap}/files/{+path}"});
    let heaps = sessionless(
        &s,
        "completion/complete",
        complete(files.clone(), "heap", ""),
    )
    .await;
    let values = heaps.body["result"]["completion"]["values"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        values.len(),
        2,
        "alpha/one's heap and beta's newest: {values:?}"
    );
    assert!(values.contains(&json!(newest)), "{values:?}");
    let typed = sessionless(
        &s,
        "completion/complete",
        complete(files, "heap", &newest[..12]),
    )
    .await;
    assert_eq!(
        typed.body["result"]["completion"]["values"],
        json!([newest])
    );
    let parts = json!({"type": "ref/resource", "uri": "mcp-v8://executions/{id}/{part}{?page}"});
    let part = sessionless(&s, "completion/complete", complete(parts, "part", "o")).await;
    assert_eq!(
        part.body["result"]["completion"]["values"],
        json!(["output"])
    );
    for unknown in [
        json!({"type": "ref/prompt", "name": "no_such_prompt"}),
        json!({"type": "ref/resource", "uri": "test://nothing/{id}"}),
    ] {
        let refused = s
            .rpc(
                Some(&sid),
                request_body("completion/complete", complete(unknown.clone(), "x", "")),
            )
            .await;
        assert_eq!(
            refused.body["error"]["code"], -32602,
            "{unknown}: {}",
            refused.body
        );
    }
    let init = s.initialize_reply("2025-11-25", &[]).await;
    assert_eq!(
        init.body["result"]["capabilities"]["completions"],
        json!({})
    );

    let stateless = server_with(3600, true, None);
    let sid = stateless.initialize_as("2025-11-25", &[]).await;
    let reply = stateless
        .rpc(
            Some(&sid),
            request_body("completion/complete", complete(prompt, "session", "")),
        )
        .await;
    assert_eq!(reply.body["error"]["code"], -32601);
}
