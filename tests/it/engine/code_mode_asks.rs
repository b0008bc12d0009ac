//! Code mode against upstreams that ask the person (src/upstream/asks.rs):
//! an upstream tool's confirmation reaches the client as the run's own ask
//! and the answer reaches the upstream, whichever era each side speaks.
//! The upstreams are tests/upstream/server.py's `delete_rows` under the
//! Python `mcp` 1.x (`elicitation/create` on the call's stream) and 2.x
//! (an `InputRequiredResult`); the client is the official Python SDK 2.x
//! with its `elicitation_callback`, in both of its modes.

use serde_json::json;

use crate::common::process::Serve;
use crate::engine::code_mode::{Upstream, servers_json};
use crate::protocol::elicitation::python;

/// Each pairing of client era and upstream era: the person is asked once,
/// the upstream hears the confirmation, and the run goes on to its next
/// upstream call and its result.
#[test]
fn an_upstream_that_asks_is_answered_by_the_person_in_every_pairing_of_eras() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let servers = servers_json(&[("legacy", &legacy), ("modern", &modern)]);
    let serve = Serve::start(&[], &[("MCP_V8_MCP_SERVERS", &servers)]);
    let url = format!("http://127.0.0.1:{}/mcp", serve.port);
    for mode in ["2026-07-28", "legacy"] {
        for server in ["legacy", "modern"] {
            let code = format!(
                "const said = await mcp.{server}.delete_rows({{ rows: 300 }}); \
                 const {{ sum }} = await mcp.callTool('{server}', 'add', {{ a: 1, b: 2 }}); \
                 [said, sum]"
            );
            let session = format!("asks-{mode}-{server}");
            let done = python(&url, &[&session, mode, "code", &code]);
            assert_eq!(
                done["asked"],
                json!(["Delete 300 rows?"]),
                "{mode}/{server}: {done}"
            );
            let outcome = &done["outcome"];
            assert_eq!(outcome["status"], "completed", "{mode}/{server}: {done}");
            assert_eq!(outcome["result"], r#"["deleted 300 rows",3]"#, "{done}");
        }
    }
    // The session-era upstream asked once per call; the 2.x one's resolver
    // may run again on the retry.
    assert_eq!(legacy.events("asked").len(), 2);
    assert!(modern.events("asked").len() >= 2);
}

/// A client that cannot be asked gets an error naming the upstream's tool
/// and why, and the session-era upstream's held call is let go.
#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_asks_a_client_that_cannot_be_asked_is_an_error_that_says_so() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let servers = servers_json(&[("legacy", &legacy), ("modern", &modern)]);
    let serve = Serve::start(&[], &[("MCP_V8_MCP_SERVERS", &servers)]);
    for server in ["legacy", "modern"] {
        let code = format!(
            "try {{ await mcp.{server}.delete_rows({{ rows: 3 }}); 'no error' }} \
             catch (e) {{ [e.code, e.message] }}"
        );
        let done = serve
            .run_js(json!({ "code": code, "session": format!("mute-{server}") }))
            .await;
        assert_eq!(done["status"], "completed", "{done}");
        let said: Vec<String> = serde_json::from_str(done["result"].as_str().unwrap()).unwrap();
        assert_eq!(said[0], "MCP_CANNOT_ASK", "{done}");
        assert!(
            said[1].starts_with(&format!("{server}.delete_rows asked the person, and ")),
            "{said:?}"
        );
        assert!(said[1].contains("elicitation"), "{said:?}");
    }
}

/// An upstream tool's `notifications/progress` shows in the run's own
/// progress messages, named by server and tool, in either upstream era.
#[tokio::test(flavor = "multi_thread")]
async fn an_upstreams_progress_reaches_the_client_in_the_runs_progress() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let servers = servers_json(&[("legacy", &legacy), ("modern", &modern)]);
    let serve = Serve::start(&[], &[("MCP_V8_MCP_SERVERS", &servers)]);
    for server in ["legacy", "modern"] {
        let params = json!({
            "name": "run_js",
            "arguments": { "code": format!("await mcp.{server}.slow({{ ms: 5000 }})") },
            "_meta": { "progressToken": "p1" },
        });
        let url = format!("http://127.0.0.1:{}/mcp", serve.port);
        let request = crate::common::request_2026(&url, "tools/call", "run_js", params, json!({}));
        let mut text = request.send().await.unwrap().text().await.unwrap();
        let messages: Vec<serde_json::Value> =
            std::iter::from_fn(|| crate::common::take_event(&mut text)).collect();
        let said: Vec<&str> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .filter_map(|m| m["params"]["message"].as_str())
            .collect();
        let prefix = format!("{server}.slow: ");
        assert!(
            said.iter()
                .any(|m| m.contains(&prefix) && m.contains("/5000 waited ")),
            "{server}: {said:?}"
        );
        let last = messages.last().unwrap();
        assert_eq!(
            last["result"]["structuredContent"]["result"], "\"done\"",
            "{last}"
        );
    }
}

/// `@modelcontextprotocol/server-everything` (the TypeScript SDK's
/// reference server, session era) on loopback; killed when dropped.
struct Everything {
    child: std::process::Child,
    port: u16,
}

impl Everything {
    fn start() -> Self {
        let project = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let entry = project
            .join("tests/e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        assert!(
            entry.exists(),
            "server-everything is missing: run scripts/install-test-deps.sh"
        );
        let port = crate::common::net::free_port();
        let child = std::process::Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting server-everything");
        crate::common::net::wait_listening(
            port,
            "server-everything",
            std::time::Duration::from_secs(30),
        );
        Self { child, port }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reference server's task-only tool (`simulate-research-query`,
/// `taskSupport: "required"`) completes from a run: code mode calls it as
/// a task, and the task's question (an ambiguous topic) reaches the person
/// through the run and its answer the task, with the client in either era.
#[test]
fn a_task_only_upstream_tool_completes_and_its_question_reaches_the_person() {
    let everything = Everything::start();
    let servers =
        json!({ "everything": { "url": format!("http://127.0.0.1:{}/mcp", everything.port) } });
    let serve = Serve::start(&[], &[("MCP_V8_MCP_SERVERS", &servers.to_string())]);
    let url = format!("http://127.0.0.1:{}/mcp", serve.port);
    for mode in ["2026-07-28", "legacy"] {
        let code = "const plain = await mcp.callTool('everything', 'simulate-research-query', \
                    { topic: 'rust' }); \
                    const asked = await mcp.callTool('everything', 'simulate-research-query', \
                    { topic: 'python', ambiguous: true }); \
                    [plain.split('\\n')[0], asked.split('\\n')[0]]";
        let session = format!("research-{mode}");
        let done = python(&url, &[&session, mode, "code", code]);
        let outcome = &done["outcome"];
        assert_eq!(outcome["status"], "completed", "{mode}: {done}");
        let heads: Vec<String> = serde_json::from_str(outcome["result"].as_str().unwrap()).unwrap();
        assert_eq!(heads[0], "# Research Report: rust", "{done}");
        // The person's choice reached the task and shows in its report.
        assert!(
            heads[1].starts_with("# Research Report: python (") && !heads[1].contains("default"),
            "{done}"
        );
        let asked = done["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{done}");
        assert!(asked[0].as_str().unwrap().contains("\"python\""), "{done}");
    }
}
