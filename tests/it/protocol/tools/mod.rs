//! The stateful tools (session log, heap tags, execution registry) and
//! initialize continuity, through the same router `serve` uses.

use crate::common;
use mcp_v8_lambda::tenant::Tenant;
use mcp_v8_lambda::tools::ToolRouter;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{Server, server, server_with};
use serde_json::{Value, json};

mod session_log;

async fn logical(s: &Server, name: &str) -> String {
    s.initialize_as("2025-11-25", &[("x-mcp-session-id", name)])
        .await
}

fn structured(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

async fn run(s: &Server, sid: &str, code: &str, heap: Option<&str>) -> Value {
    let mut arguments = json!({ "code": code });
    if let Some(heap) = heap {
        arguments["heap"] = json!(heap);
    }
    structured(&s.call(sid, arguments).await).clone()
}

/// What the `heap` description offers (a key, "latest", "" for a fresh
/// isolate) passes the schema's pattern, so a client that validates its
/// arguments can send it; other text does not.
#[tokio::test]
async fn the_heap_pattern_accepts_what_the_description_offers() {
    let s = server();
    let sid = s.initialize().await;
    let tools = s.tools_list(&sid).await;
    let run_js = common::listed_tool(&tools, "run_js");
    let heap = &run_js["inputSchema"]["properties"]["heap"];
    let description = heap["description"].as_str().unwrap();
    assert!(
        description.contains(r#""" for a fresh isolate"#),
        "{description}"
    );
    let pattern = regex::Regex::new(heap["pattern"].as_str().unwrap()).unwrap();
    for offered in ["", "latest", &"0a".repeat(32)] {
        assert!(pattern.is_match(offered), "{offered:?} against {pattern}");
    }
    for refused in ["abc", "LATEST", &"0A".repeat(32)] {
        assert!(!pattern.is_match(refused), "{refused:?} against {pattern}");
    }
}

/// No schema in `tools/list` has a `type` that is an array (`["string",
/// "null"]`), which some clients cannot read and the Inspector's `--strict`
/// warns about: nullable values are `anyOf` (both eras, with the MCP Apps
/// tool too).
#[tokio::test]
async fn no_listed_schema_has_a_union_type_array() {
    fn unions(value: &Value, at: String, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.get("type").is_some_and(Value::is_array) {
                    found.push(at.clone());
                }
                for (key, inner) in map {
                    unions(inner, format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    unions(inner, format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let s = server();
    let mut found = Vec::new();
    for (version, apps) in [
        ("2025-11-25", false),
        ("2025-06-18", false),
        ("2025-11-25", true),
    ] {
        let sid = if apps {
            crate::protocol::apps::session(&s, crate::protocol::apps::capabilities(true)).await
        } else {
            s.initialize_as(version, &[]).await
        };
        let tools = s.tools_list(&sid).await["tools"].clone();
        assert!(tools.as_array().unwrap().len() >= 8);
        for tool in tools.as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            if version == "2025-11-25" {
                assert!(tool["outputSchema"].is_object(), "{name}");
            }
            unions(tool, format!("{version} {name}"), &mut found);
        }
    }
    assert!(found.is_empty(), "union type arrays at {found:#?}");
}

#[tokio::test]
async fn every_tool_is_listed_when_stateful_and_only_run_js_when_stateless() {
    let s = server();
    let sid = s.initialize().await;
    let tools = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        )
        .await
        .body;
    let names: BTreeSet<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // What the router declares for a stateful server and a host without
    // the View.
    let expected = ToolRouter::builtin().listed(false, false);
    assert!(expected.len() > 1, "{expected:?}");
    assert_eq!(names, expected.into_iter().collect());

    let stateless = server_with(3600, true, None);
    let sid = stateless.initialize().await;
    let tools = stateless.tools_list(&sid).await;
    assert_eq!(tools["tools"].as_array().unwrap().len(), 1);
    assert_eq!(tools["tools"][0]["name"], "run_js");
    let reply = stateless
        .rpc(Some(&sid), json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}))
        .await;
    assert_eq!(reply.body["error"]["code"], -32601);
}

/// Every tool has a title and true annotations, in a fixed order: the
/// readers read-only, the tag setters idempotent and destructive, run_js
/// neither read-only nor idempotent; run_js states its limits.
#[tokio::test]
async fn tools_are_listed_in_a_fixed_order_with_titles_and_true_annotations() {
    let s = server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let tools = s.tools_list(&sid).await["tools"].clone();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ToolRouter::builtin().listed(false, false));
    assert_eq!(names[0], "run_js", "run_js first");
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        let hints = &tool["annotations"];
        let read_only = !matches!(name, "run_js" | "set_heap_tags" | "delete_heap_tags");
        assert_eq!(hints["readOnlyHint"], read_only, "{name}");
        assert_eq!(hints["openWorldHint"], false, "{name}");
        if name.ends_with("_heap_tags") && !read_only {
            assert_eq!(hints["idempotentHint"], true, "{name}");
            assert_eq!(hints["destructiveHint"], true, "{name}");
        }
    }
    let run_js = &tools[0];
    assert_eq!(run_js["annotations"]["idempotentHint"], false);
    assert_eq!(run_js["annotations"]["destructiveHint"], false);
    let description = run_js["description"].as_str().unwrap();
    for limit in [
        "at most 300 s",
        "64 MiB by default",
        "output kept up to 32 MiB",
        "result up to 32 MiB",
        "`session` argument",
        // What code can use (docs/engine.md, "The Web platform").
        "URLSearchParams",
        "TextDecoder",
        "structuredClone",
        "subtle.digest",
        "AbortController",
        "Headers, Request, Response",
        "fetch is off here",
        // What elicit's wait holds to, not more (issue 95, item 3).
        "only while the client keeps the call open",
    ] {
        assert!(description.contains(limit), "{limit:?} in {description}");
    }
}

#[tokio::test]
async fn initialize_reports_continuity_of_the_logical_session() {
    let s = server();
    let first = s
        .initialize_reply("2025-11-25", &[("x-mcp-session-id", "returning-agent")])
        .await;
    assert_eq!(
        first.body["result"]["_meta"]["mcp-v8/continuity"],
        json!({"logical_session": "returning-agent", "resumed": false, "entries": 0, "last_output_heap": null})
    );
    let sid = first.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let one = run(&s, &sid, "globalThis.x = 1", None).await;
    let two = run(&s, &sid, "x += 1", one["heap"].as_str()).await;
    let again = s
        .initialize_reply("2025-11-25", &[("x-mcp-session-id", "returning-agent")])
        .await;
    assert_eq!(
        again.body["result"]["_meta"]["mcp-v8/continuity"],
        json!({"logical_session": "returning-agent", "resumed": true, "entries": 2, "last_output_heap": two["heap"]})
    );
    let anonymous = s.initialize_reply("2025-11-25", &[]).await;
    assert!(anonymous.body["result"].get("_meta").is_none());
}

/// `heap: "latest"` continues from the session's last heap: an error
/// without a session, a fresh start with a warning on an empty log.
#[tokio::test]
async fn heap_latest_continues_the_logical_session() {
    let s = server();
    let sid = s.initialize_as("2025-11-25", &[]).await;
    let no_session = s.call(&sid, json!({"code": "1", "heap": "latest"})).await;
    assert_eq!(no_session["isError"], true);
    assert!(
        no_session["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("X-MCP-Session-Id"),
        "{no_session}"
    );
    let fresh = structured(
        &s.call(
            &sid,
            json!({"code": "globalThis.n = 1; n", "heap": "latest", "session": "latest-agent"}),
        )
        .await,
    )
    .clone();
    assert_eq!(fresh["result"], "1");
    assert!(fresh["input_heap"].is_null());
    assert!(
        fresh["warnings"][0]
            .as_str()
            .unwrap()
            .contains("no runs yet"),
        "{fresh}"
    );
    let next = structured(
        &s.call(
            &sid,
            json!({"code": "n += 1; n", "heap": "latest", "session": "latest-agent"}),
        )
        .await,
    )
    .clone();
    assert_eq!(next["result"], "2", "{next}");
    assert_eq!(next["input_heap"], fresh["heap"]);
    assert_eq!(next["warnings"], json!([]));
    // Through the header too.
    let sid = s
        .initialize_as("2025-11-25", &[("x-mcp-session-id", "latest-agent")])
        .await;
    let third = structured(&s.call(&sid, json!({"code": "n", "heap": "latest"})).await).clone();
    assert_eq!(third["result"], "2");
    assert_eq!(third["input_heap"], next["heap"]);
}

/// A call in a logical session with runs that leaves out `heap` starts
/// fresh, as the original server does, and says so in plain words; `heap:
/// ""` starts fresh on purpose and "latest" continues, both without it.
#[tokio::test]
async fn an_omitted_heap_in_a_session_with_runs_warns_of_the_fresh_start() {
    let s = server();
    let sid = logical(&s, "fresh-start").await;
    let first = run(&s, &sid, "globalThis.kept = 1; kept", None).await;
    assert_eq!(
        first["warnings"],
        json!([]),
        "a session's first run: {first}"
    );
    let fresh = run(&s, &sid, "typeof kept", None).await;
    assert_eq!(fresh["result"], "\"undefined\"");
    let warning = fresh["warnings"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{fresh}"));
    for says in [
        "fresh isolate",
        "\"fresh-start\"",
        "1 earlier run",
        "heap: \"latest\"",
    ] {
        assert!(warning.contains(says), "{says}: {warning}");
    }
    assert!(
        !warning.contains("LogicalSession("),
        "no debug text: {warning}"
    );
    // A run that fails for the missing state (it logs nothing) says so too.
    let failed = s.call(&sid, json!({"code": "kept + 1"})).await;
    assert_eq!(failed["isError"], true, "{failed}");
    let warnings = failed["structuredContent"]["warnings"].to_string();
    assert!(warnings.contains("2 earlier run"), "{failed}");
    let on_purpose = run(&s, &sid, "typeof kept", Some("")).await;
    assert_eq!(on_purpose["warnings"], json!([]), "{on_purpose}");
    // The newest entry is now a fresh heap: "latest" continues from it.
    let latest = run(&s, &sid, "typeof kept", Some("latest")).await;
    assert_eq!(latest["warnings"], json!([]), "{latest}");
    // Without a logical session there is nothing to continue.
    let plain = s.initialize().await;
    let alone = run(&s, &plain, "1", None).await;
    assert_eq!(alone["warnings"], json!([]), "{alone}");
}

/// Warnings name sessions as the caller wrote them, not in Rust's debug
/// form.
#[tokio::test]
async fn latest_of_an_empty_session_warns_in_plain_words() {
    let s = server();
    let sid = logical(&s, "empty-one").await;
    let out = run(&s, &sid, "1", Some("latest")).await;
    assert_eq!(
        out["warnings"],
        json!([
            "session \"empty-one\" has no runs yet, so heap \"latest\" started a fresh isolate"
        ])
    );
}

/// With `MCP_V8_CONTINUE_SESSIONS`, a call in a logical session that
/// leaves out `heap` continues the session, and says so in its
/// description; `heap: ""` still starts fresh. Without it, the description
/// says first that state needs `heap`.
#[tokio::test]
async fn a_deployment_that_continues_sessions_continues_an_omitted_heap() {
    let mut config = common::test_config(3600, false);
    config.transport.continue_sessions = true;
    let s = common::server_configured(config, |stores| stores);
    let sid = logical(&s, "carried").await;
    let description = |tools: &Value| {
        tools["tools"][0]["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let says = description(&s.tools_list(&sid).await);
    assert!(
        says.starts_with("State carries over within a logical session"),
        "{says}"
    );
    let first = run(&s, &sid, "globalThis.kept = 1; kept", None).await;
    assert_eq!(
        first["warnings"],
        json!([]),
        "a session's first run: {first}"
    );
    assert!(first["input_heap"].is_null(), "{first}");
    let second = run(&s, &sid, "kept + 1", None).await;
    assert_eq!(second["result"], "2", "{second}");
    assert_eq!(second["input_heap"], first["heap"], "{second}");
    assert_eq!(second["warnings"], json!([]), "{second}");
    let fresh = run(&s, &sid, "typeof kept", Some("")).await;
    assert_eq!(fresh["result"], "\"undefined\"", "{fresh}");
    assert_eq!(fresh["warnings"], json!([]), "{fresh}");
    // Without a logical session an omitted heap is a fresh isolate.
    let plain = s.initialize().await;
    let alone = run(&s, &plain, "typeof kept", None).await;
    assert_eq!(alone["result"], "\"undefined\"", "{alone}");

    let default = server();
    let sid = default.initialize().await;
    let says = description(&default.tools_list(&sid).await);
    assert!(
        says.starts_with("To keep state between calls, pass heap: \"latest\""),
        "{says}"
    );
}

/// The text the model reads shows the value as a REPL does; the
/// structured `result` keeps the original server's form.
#[tokio::test]
async fn the_text_the_model_reads_shows_values_as_a_repl_does() {
    let s = server();
    for version in ["2025-11-25", "2025-03-26"] {
        let sid = s.initialize_as(version, &[]).await;
        for (code, shown, result) in crate::engine::repl::DISPLAYED {
            let reply = s.call(&sid, json!({ "code": code })).await;
            let text: Value =
                serde_json::from_str(reply["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text["result"], *shown, "{version} {code}: {reply}");
            if version == "2025-11-25" {
                assert_eq!(
                    reply["structuredContent"]["result"],
                    json!(result),
                    "{code}: {reply}"
                );
            }
        }
    }
}

/// A wrong argument is named, in JSON's words: no serde position (`at line
/// 1 column 18`, of a line the model never wrote) and no Rust type
/// (`expected usize`).
#[tokio::test]
async fn argument_errors_name_the_argument_in_plain_words() {
    let s = server();
    let sid = s.initialize().await;
    for (tool, arguments, expected) in [
        (
            "run_js",
            json!({"code": 5}),
            ["`code`", "expected a string"],
        ),
        (
            "get_execution",
            json!({"execution_id": 3}),
            ["`execution_id`", "expected a string"],
        ),
        (
            "list_session_snapshots",
            json!({"session": "s", "limit": "x"}),
            ["`limit`", "expected a non-negative integer"],
        ),
        (
            "run_js",
            json!({"code": "1", "timeout_secs": 5}),
            ["unknown field `timeout_secs`", "execution_timeout_secs"],
        ),
    ] {
        let result = s.tool(&sid, tool, arguments.clone()).await;
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(result["isError"], true, "{tool} {arguments}: {result}");
        for part in expected {
            assert!(text.contains(part), "{part:?} in {text:?}");
        }
        for rust in ["Some(", "None", "at line 1 column", "usize", "u64", "i64"] {
            assert!(!text.contains(rust), "{rust:?} in {text:?}");
        }
    }
}

/// Every tool the router declares has its row in docs/tools.md's table,
/// so a tool added without its docs fails here.
#[test]
fn every_declared_tool_has_its_docs_row() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/tools.md"),
    )
    .unwrap();
    let missing: Vec<&str> = ToolRouter::builtin()
        .listed(false, false)
        .into_iter()
        .filter(|name| !docs.contains(&format!("\n| `{name}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/tools.md has no row for {missing:?}"
    );
}
