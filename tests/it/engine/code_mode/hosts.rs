//! Code mode as hosts serve it: serve describes, declares, counts and logs
//! upstream calls; the Lambda entry; an oversized upstream answer.

use super::*;

/// `serve`: run_js's description names each server and its tools, a
/// resource per server declares them in TypeScript, a call's outcome counts
/// it (in the serving process and in an engine worker), and the log has a
/// line per call without the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_describes_declares_counts_and_logs_upstream_calls() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let data = tempfile::tempdir().unwrap();
    let port = crate::common::net::free_port();
    let log_path = data.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data.path().join("data"))
        .env(
            "MCP_V8_MCP_SERVERS",
            servers_json(&[("legacy", &legacy), ("modern", &modern)]),
        )
        // Debug: no crate's events may carry the token or the URL either.
        .env("RUST_LOG", "debug")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
    let post = |method: &'static str, name: Option<&'static str>, params: Value| {
        crate::common::post_2026(port, method, name, params)
    };
    let tools = post("tools/list", None, json!({})).await;
    let description = tools["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{tools}"))
        .to_owned();
    for expected in [
        "Code mode",
        "[legacy]",
        "[modern]",
        " add(a, b): Adds two integers;",
        " slow(ms): Answers after ms milliseconds;",
        "mcp-v8://mcp-servers/<server>/tools.d.ts",
        "At most 50 calls per run",
    ] {
        assert!(
            description.contains(expected),
            "{expected:?} missing from: {description}"
        );
    }
    assert_eq!(
        tools["result"]["tools"][0]["annotations"]["openWorldHint"],
        true
    );
    let resources = post("resources/list", None, json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{resources}"))
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(
        uris.contains(&"mcp-v8://mcp-servers/legacy/tools.d.ts")
            && uris.contains(&"mcp-v8://mcp-servers/modern/tools.d.ts"),
        "{resources}"
    );
    let read = post(
        "resources/read",
        None,
        json!({"uri": "mcp-v8://mcp-servers/modern/tools.d.ts"}),
    )
    .await;
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{read}"));
    for expected in [
        "interface McpServer_modern {",
        "add(args: {",
        "a: number;",
        "sum: number;",
        "echo(args: {",
        "readonly modern: McpServer_modern;",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    let unknown = post(
        "resources/read",
        None,
        json!({"uri": "mcp-v8://mcp-servers/nope/tools.d.ts"}),
    )
    .await;
    assert_eq!(
        unknown["error"]["message"], "Resource not found",
        "{unknown}"
    );
    let code = "(await mcp.modern.add({ a: 20, b: 22 })).sum";
    let stateless = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": code}}),
    )
    .await;
    let outcome = &stateless["result"]["structuredContent"];
    assert_eq!(outcome["result"], "42", "{stateless}");
    assert_eq!(outcome["mcp_calls"]["count"], 1, "{stateless}");

    let stateful = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "globalThis.got = await mcp.legacy.echo({ text: 'kept' }); got", "heap": ""}}),
    )
    .await;
    let outcome = &stateful["result"]["structuredContent"];
    assert_eq!(outcome["result"], "\"kept\"", "{stateful}");
    assert_eq!(outcome["mcp_calls"]["count"], 1, "{stateful}");
    assert!(outcome["heap"].is_string(), "{stateful}");
    // A run that times out while a call is pending takes the call with
    // it, and the audit says so.
    let abandoned = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "await mcp.modern.slow({ ms: 30000 })", "execution_timeout_secs": 1}}),
    )
    .await;
    assert_eq!(
        abandoned["result"]["structuredContent"]["status"], "timed_out",
        "{abandoned}"
    );
    modern.wait_for("start", 1);
    // The session-era upstream goes away: its session's event stream
    // breaks, and the next call fails; neither may log its URL.
    let urls = [legacy.url(), modern.url()];
    // The next call fails whether or not the server has seen the stream
    // break yet (refused, or failed on the broken session): no wait.
    drop(legacy);
    let gone = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "try { await mcp.legacy.echo({ text: 'x' }) } catch (e) { e.code }"}}),
    )
    .await;
    let code = gone["result"]["structuredContent"]["result"].clone();
    assert!(
        code == "\"MCP_FAILED\"" || code == "\"MCP_UNREACHABLE\"",
        "{gone}"
    );
    let _ = child.kill();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let calls: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("upstream tool call"))
        .collect();
    assert!(
        calls
            .iter()
            .any(|l| l.contains("modern") && l.contains("add") && l.contains("ok"))
            && calls
                .iter()
                .any(|l| l.contains("legacy") && l.contains("echo") && l.contains("ok"))
            && calls
                .iter()
                .any(|l| l.contains("slow") && l.contains("cancelled")),
        "no line per call in:\n{calls:#?}"
    );
    assert_no_token("the log", &logged);
    for url in urls {
        let lines: Vec<&str> = logged.lines().filter(|l| l.contains(&url)).collect();
        assert!(lines.is_empty(), "the log holds {url}:\n{lines:#?}");
    }
}

/// The Lambda entry: a function URL event's run calls an upstream, and the
/// description lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_works_under_the_lambda_entry() {
    let modern = Upstream::modern();
    let dir = tempfile::tempdir().unwrap();
    let servers = servers_json(&[("modern", &modern)]);
    let config = mcp_v8_lambda::config::Config::from_lookup(|name| {
        (name == "MCP_V8_MCP_SERVERS").then(|| servers.clone())
    })
    .unwrap();
    let app = crate::common::app_on_workers(&config, dir.path(), None);
    let (_, _, tools) = crate::lambda::invoke(
        &app,
        &crate::lambda::event_2026("tools/list", None, json!({})),
    )
    .await;
    let description = tools["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{tools}"));
    assert!(description.contains("[modern] add(a, b)"), "{description}");
    let outcome = crate::lambda::run_js_2026(
        &app,
        "const r = []; for (let i = 0; i < 3; i++) r.push((await mcp.modern.add({ a: i, b: i })).sum); r",
        None,
    )
    .await;
    assert_eq!(outcome["result"], "[0,2,4]", "{outcome}");
    assert_eq!(outcome["mcp_calls"]["count"], 3, "{outcome}");
    assert_no_token("the outcome", &outcome.to_string());
}

/// An upstream answer past the size code mode reads is an error naming the
/// bound and its variable, with its own code, never a Rust type; both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_upstream_answer_names_the_limit() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let mut mcp = upstream_config(&[("legacy", &legacy), ("modern", &modern)]);
    mcp.max_response_mb = 1;
    let engine = engine(mcp, None);
    for server in ["legacy", "modern"] {
        let code = format!(
            "mcp.{server}.echo({{ text: 'x'.repeat(2e6) }}).then(() => 'answered', (e) => ({{ code: e.code, message: e.message }}))"
        );
        let value = json_result(&stateless(&engine, &code).await);
        assert_eq!(value["code"], "MCP_TOO_LARGE", "{server}: {value}");
        let message = value["message"].as_str().unwrap();
        assert!(
            message.contains("more than 1 MiB") && message.contains("MCP_V8_MCP_MAX_RESPONSE_MB"),
            "{server}: {message}"
        );
        assert!(!message.contains("rmcp::"), "{server}: {message}");
        // A smaller answer from the same connection still comes back.
        let small = stateless(&engine, &format!("mcp.{server}.echo({{ text: 'ok' }})")).await;
        assert_eq!(completed(&small), "\"ok\"", "{server}");
    }
}
