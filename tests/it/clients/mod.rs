//! The real clients against `serve`: the official TypeScript SDK and the
//! Python `mcp` clients (installed by scripts/test.sh) in their flows
//! (`sdk`), across restarts and kills of the server (`restarts`), and the
//! MCP conformance suite (`conformance`). What they share is here: the
//! clients as commands, and the driver of a client that asks for a
//! restart.

mod conformance;
mod restarts;
mod sdk;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;

pub(crate) use crate::common::process::Serve;

pub(crate) fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn client_command(program: &str, args: &[&str]) -> Command {
    let mut command = Command::new(program);
    command.args(args).current_dir(project().join("tests/e2e"));
    command
}

pub(crate) fn node() -> Command {
    assert!(
        project()
            .join("tests/e2e/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "the TypeScript SDK is not installed: run scripts/test.sh (it runs npm ci in tests/e2e)"
    );
    client_command("node", &["ts_client.mjs"])
}

/// `node tests/e2e/{script}`, with the e2e packages installed.
pub(crate) fn node_script(script: &str) -> Command {
    assert!(
        project()
            .join("tests/e2e/node_modules/playwright-core")
            .exists(),
        "the e2e packages are not installed: run scripts/test.sh (it runs npm ci in tests/e2e)"
    );
    client_command("node", &[script])
}

pub(crate) fn python() -> Command {
    let venv = project().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "the Python mcp client is not installed: run scripts/test.sh (it creates .venv)"
    );
    client_command(venv.to_str().unwrap(), &["py_client.py"])
}

/// The Python `mcp` 2.x client, which negotiates 2026-07-28.
pub(crate) fn python_modern() -> Command {
    let venv = project().join(".venv-mcp2/bin/python");
    assert!(
        venv.exists(),
        "the Python mcp 2.x client is not installed: run scripts/test.sh (it creates .venv-mcp2)"
    );
    client_command(venv.to_str().unwrap(), &["py_modern_client.py"])
}

/// Runs a client to completion and returns its result, the last JSON
/// line of its flow. `ts_client.mjs` and `py_client.py` end with a line
/// naming the flow that ran, which must be the one asked for.
pub(crate) fn finish(mut command: Command) -> Value {
    let args: Vec<String> = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let output = command.output().expect("running the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines().rev();
    if matches!(
        args.first().map(String::as_str),
        Some("ts_client.mjs" | "py_client.py")
    ) {
        let exit: Value = serde_json::from_str(lines.next().expect("the exit line")).unwrap();
        assert_eq!(exit["event"], "exit", "{stdout}");
        assert_eq!(
            exit["mode"].as_str(),
            args.get(2).map(String::as_str),
            "{stdout}"
        );
    }
    let last = lines.next().expect("the client printed its result");
    serde_json::from_str(last).unwrap()
}

/// What the TypeScript client's `surface` mode says, in order.
pub(crate) const SURFACE_EVENTS: [&str; 6] = [
    "latest",
    "progress",
    "timed_out",
    "resource",
    "logging",
    "done",
];

/// One 2026-07-28 `tools/call` (no session to set up): the tool's
/// `structuredContent`, or why the call did not complete.
pub(crate) async fn call_2026(
    http: &reqwest::Client,
    url: &str,
    tool: &str,
    arguments: Value,
) -> Result<Value, String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let reply: Value = response.json().await.map_err(|e| e.to_string())?;
    match reply["result"]["isError"].as_bool() {
        Some(false) => Ok(reply["result"]["structuredContent"].clone()),
        _ => Err(reply.to_string()),
    }
}

/// Runs the TypeScript client in `mode`, restarting `serve` (SIGKILL, then a
/// new process on the same port and data) when the client asks; returns the
/// events it printed.
pub(crate) fn run_with_restart(mode: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    run_with_restart_on(Serve::at(dir.path(), common::net::free_port()), mode)
}

pub(crate) fn run_with_restart_on(mut serve: Serve, mode: &str) -> Vec<Value> {
    let url = serve.url();
    drive(&url, mode, || serve.restart())
}

/// Runs the TypeScript client in `mode` against `url`, calling `restart`
/// when the client asks for a new server instance; returns its events.
pub(crate) fn drive(url: &str, mode: &str, restart: impl FnMut()) -> Vec<Value> {
    drive_with(url, mode, &[], restart)
}

/// [`drive`] with the mode's further arguments.
pub(crate) fn drive_with(
    url: &str,
    mode: &str,
    extra: &[&str],
    mut restart: impl FnMut(),
) -> Vec<Value> {
    let mut client = node()
        .args([url, mode])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = client.stdin.take().unwrap();
    let mut events = Vec::new();
    for line in BufReader::new(client.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "restart" {
            restart();
            writeln!(stdin, "continue").unwrap();
        }
        events.push(event);
    }
    assert!(
        client.wait().unwrap().success(),
        "client failed after events {events:?}"
    );
    // The last line names the flow that ran: the one asked for.
    let exit = events.pop().expect("the exit line");
    assert_eq!(exit, serde_json::json!({ "event": "exit", "mode": mode }));
    events
}

pub(crate) fn names(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

/// Entries of a logical session's log in DynamoDB, read directly.
pub(crate) fn logged_runs(table_prefix: &str, session: &str) -> i32 {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (_, dynamodb) = common::moto::clients().await;
        dynamodb
            .query()
            .table_name(format!("{table_prefix}session-log"))
            .key_condition_expression("session_name = :s")
            .expression_attribute_values(
                ":s",
                aws_sdk_dynamodb::types::AttributeValue::S(session.into()),
            )
            .send()
            .await
            .unwrap()
            .count()
    })
}
