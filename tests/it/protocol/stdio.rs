//! `mcp-v8-lambda stdio`: MCP over stdin and stdout, driven by the
//! official stdio clients (TypeScript SDK, Python `mcp`) and by raw lines,
//! and the README's quickstart calls run as written.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::clients;

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-v8-lambda")
}

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `stdio` process and its pipes; killed when dropped.
pub(crate) struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Process {
    fn start(data_dir: &Path, extra: &[&str]) -> Self {
        Self::start_with(data_dir, extra, &[])
    }

    fn start_with(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_logging(data_dir, extra, env, Stdio::null())
    }

    /// [`Process::start_with`], its log on `stderr`.
    pub(crate) fn start_logging(
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Self {
        let mut child = Command::new(binary())
            .arg("stdio")
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("starting stdio");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line of stdout, which must be one JSON-RPC message.
    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(line.ends_with('\n'), "a whole line: {line:?}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    pub(crate) fn request(&mut self, message: Value) -> Value {
        self.send(&message.to_string());
        self.receive()
    }

    pub(crate) fn handshake(&mut self) {
        let init = self.request(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-stdio", "version": "1"}}}),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "mcp-v8-lambda",
            "{init}"
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn run_js(&mut self, id: u64, arguments: Value) -> Value {
        let answer = self.request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_js", "arguments": arguments}}));
        assert_eq!(answer["id"], id, "{answer}");
        answer["result"].clone()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each official stdio client: tools/list, two runs continued with
/// "latest", the session log and its resource, then a second process on the
/// same data directory continues the session.
#[test]
fn the_official_stdio_clients_keep_a_session_across_two_processes() {
    for mut command in [clients::node(), clients::python()] {
        let dir = tempfile::tempdir().unwrap();
        command.args([binary(), "stdio", dir.path().to_str().unwrap()]);
        let done = clients::finish(command);
        assert_eq!(done["event"], "done", "{done}");
        let heap = done["heap"].as_str().unwrap();
        assert!(
            dir.path().join("heaps").join(heap).exists(),
            "the last heap is in the data directory: {done}"
        );
    }
}

/// A line that is not JSON gets a JSON-RPC parse error and the process
/// goes on; every line on stdout is a JSON-RPC message (logs are on
/// stderr); a 2026-07-28 message is answered on the same pipe.
#[test]
fn a_malformed_line_gets_a_parse_error_and_the_process_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = Process::start(dir.path(), &["--session", "raw"]);
    process.handshake();
    process.send("this is not json");
    let error = process.receive();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null, "{error}");
    // Nor are bytes that are not UTF-8.
    let stdin = process.stdin.as_mut().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"\xff\xfe\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let error = process.receive();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let first = process.run_js(1, json!({"code": "globalThis.n = 41; n", "heap": "latest"}));
    assert_eq!(first["structuredContent"]["status"], "completed", "{first}");
    let second = process.run_js(2, json!({"code": "n + 1", "heap": "latest"}));
    assert_eq!(second["structuredContent"]["result"], "42", "{second}");
    let modern = process.request(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "run_js", "arguments": {"code": "6 * 7"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}}),
    );
    assert_eq!(
        modern["result"]["structuredContent"]["result"], "42",
        "{modern}"
    );
    // Closing stdin ends the process.
    process.stdin = None;
    let started = std::time::Instant::now();
    while process.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the process outlived its stdin"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(process.child.wait().unwrap().success());
}

/// Bad flags are refused before anything is served, saying why.
/// A request over the body limit (a 1.1 MB `files` CSV) is answered with
/// its own id, so the client matches the error to its request instead of
/// waiting for its timeout, and the error names the variable that raises
/// the limit; the process goes on serving.
#[test]
fn a_request_over_the_limit_is_answered_with_its_own_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = Process::start(dir.path(), &[]);
    process.handshake();
    let csv = "a,b\n".repeat(1_100_000 / 4);
    let answer = process.request(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "run_js", "arguments": {"code": "1",
            "files": [{"path": "big.csv", "text": csv}]}}}));
    assert_eq!(answer["id"], 7, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("1024 KiB") && message.contains("MCP_V8_MAX_BODY_BYTES"),
        "{answer}"
    );
    let next = process.run_js(8, json!({"code": "40 + 2"}));
    assert_eq!(next["structuredContent"]["result"], "42", "{next}");
}

#[test]
fn a_bad_session_flag_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(binary())
        .args(["stdio", "--session", "", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--session \"\""), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout");
}

/// Log lines written to a pipe carry no terminal colour codes.
#[test]
fn logs_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary())
        .arg("stdio")
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("serving MCP on stdin and stdout"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "colour codes in {stderr:?}");
}

/// The README's quickstart calls, as written there, with the results it
/// says come back.
#[test]
fn the_readme_quickstart_calls_give_what_the_readme_says() {
    let readme = std::fs::read_to_string(project().join("README.md")).unwrap();
    let start = readme
        .find("<!-- quickstart")
        .expect("the quickstart section");
    let end = readme[start..].find("<!-- /quickstart -->").unwrap() + start;
    let rows: Vec<(Value, String)> = readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains('{'))
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let unquote = |cell: &str| {
                cell.trim()
                    .trim_matches('|')
                    .trim()
                    .trim_matches('`')
                    .to_owned()
            };
            (
                serde_json::from_str(&unquote(cells[1])).unwrap(),
                unquote(cells[2]),
            )
        })
        .collect();
    assert_eq!(rows.len(), 3, "three calls");
    let dir = tempfile::tempdir().unwrap();
    let mut process = Process::start(dir.path(), &["--session", "my-agent"]);
    process.handshake();
    for (id, (arguments, expected)) in rows.into_iter().enumerate() {
        let result = process.run_js(id as u64 + 1, arguments.clone());
        assert_eq!(result["isError"], false, "{arguments}: {result}");
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["result"], expected, "{arguments}: {result}");
        assert_eq!(text["warnings"], json!([]), "{arguments}: {result}");
    }
}

/// A desktop client keeps its server for days; the transport session
/// expires meanwhile and the client cannot know: the process initializes a
/// new one and the call is answered, in the same logical session.
#[test]
fn an_expired_transport_session_is_renewed_without_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = Process::start_with(
        dir.path(),
        &["--session", "long-lived"],
        &[("MCP_V8_SESSION_TTL_SECS", "2")],
    );
    process.handshake();
    let first = process.run_js(1, json!({"code": "globalThis.n = 1; n"}));
    assert_eq!(first["structuredContent"]["result"], "1", "{first}");
    std::thread::sleep(std::time::Duration::from_secs(4));
    let second = process.run_js(2, json!({"code": "n + 1", "heap": "latest"}));
    assert_eq!(second["isError"], false, "{second}");
    assert_eq!(second["structuredContent"]["result"], "2", "{second}");
}

/// A second process on a data directory another one holds waits for it a
/// little (a restarting client's old process), then says what to do.
#[test]
fn a_data_directory_in_use_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut holder = Process::start(dir.path(), &[]);
    holder.handshake();
    let output = Command::new(binary())
        .arg("stdio")
        .arg("--data-dir")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is in use by another mcp-v8-lambda process"),
        "{stderr}"
    );
    assert!(stderr.contains("--data-dir"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout");
}

/// MCP Apps over stdio: a host that declares the extension sees run_js name
/// its View and the View's page tool, and reads the View; one that does
/// not sees neither.
#[test]
fn an_mcp_apps_host_sees_the_view_over_stdio() {
    use mcp_v8_lambda::protocol::apps::{MIME_TYPE, RUN_VIEW_URI};
    let dir = tempfile::tempdir().unwrap();
    for declared in [true, false] {
        let mut process = Process::start(dir.path(), &[]);
        let capabilities = crate::protocol::apps::capabilities(declared);
        let init = process.request(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "apps-stdio", "version": "1"}}}),
        );
        assert!(init["result"].is_object(), "{init}");
        process.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let listed = process.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        crate::protocol::apps::assert_listed_for(&listed, declared);
        let read = process.request(
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": {"uri": RUN_VIEW_URI}}),
        );
        assert_eq!(
            read["result"]["contents"][0]["mimeType"], MIME_TYPE,
            "{read}"
        );
    }
}
