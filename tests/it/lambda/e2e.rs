//! End to end: `mcp-v8-lambda serve` on a free loopback port, driven by the
//! official TypeScript SDK client and the Python `mcp` client (installed by
//! scripts/test.sh), including the replay proof across a server restart.

use mcp_v8_lambda::tenant::Tenant;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A running `serve`, killed when dropped.
pub(crate) struct Serve {
    child: Child,
    port: u16,
    data_dir: PathBuf,
    env: Vec<(String, String)>,
    program: PathBuf,
}

/// The conformance suite's fixture server (examples/conformance_fixtures:
/// the binary with the suite's fixture tools), built beside this test
/// binary by scripts/test.sh.
fn fixture_server() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let program = deps
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/conformance_fixtures");
    assert!(
        program.exists(),
        "the conformance fixtures' server is not built at {}: run scripts/test.sh, or cargo build \
         --release --examples",
        program.display()
    );
    program
}

impl Serve {
    pub(crate) fn start(data_dir: &Path, port: u16) -> Self {
        Self::start_with(data_dir, port, Vec::new())
    }

    pub(crate) fn start_with(data_dir: &Path, port: u16, env: Vec<(String, String)>) -> Self {
        Self::start_program(
            env!("CARGO_BIN_EXE_mcp-v8-lambda").into(),
            data_dir,
            port,
            env,
        )
    }

    /// `serve` of the conformance fixtures' server.
    fn start_fixtures(data_dir: &Path, port: u16) -> Self {
        Self::start_program(fixture_server(), data_dir, port, Vec::new())
    }

    fn start_program(
        program: PathBuf,
        data_dir: &Path,
        port: u16,
        env: Vec<(String, String)>,
    ) -> Self {
        let child = Command::new(&program)
            .args(["serve", "--port", &port.to_string(), "--data-dir"])
            .arg(data_dir)
            .envs(env.iter().cloned())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting serve");
        common::net::wait_listening(port, "serve", Duration::from_secs(20));
        Self {
            child,
            port,
            data_dir: data_dir.to_owned(),
            env,
            program,
        }
    }

    /// A new process of the same program on the same port, data and
    /// environment.
    fn again(&self) -> Self {
        Self::start_program(
            self.program.clone(),
            &self.data_dir,
            self.port,
            self.env.clone(),
        )
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process outright (no graceful shutdown) and starts a new one
    /// on the same port and data directory: a new instance, same store.
    fn restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "old serve still listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        *self = self.again();
    }

    /// Stops the process as a service manager does (SIGTERM), asserts it
    /// exits cleanly within `within`, and starts a new one on the same port
    /// and data directory.
    pub(crate) fn stop_and_restart(&mut self, within: Duration) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < within,
                "serve still running {within:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "serve ended {status} on SIGTERM");
        *self = self.again();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
fn python_modern() -> Command {
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

#[test]
fn a_client_asked_for_a_flow_it_does_not_have_fails() {
    for mut command in [node(), python()] {
        command.args(["http://127.0.0.1:9/mcp", "no-such-flow"]);
        let output = command.output().expect("running the client");
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("unknown mode"), "{stderr}");
    }
}

#[test]
fn typescript_sdk_client_threads_a_counter_through_three_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "counter"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    assert_eq!(done["protocol"], "2025-11-25");
    let heap = done["heap"].as_str().unwrap();
    assert!(
        dir.path().join("heaps").join(heap).exists(),
        "the last heap is stored"
    );
}

/// An operator adds a package with the CLI; the official TypeScript client
/// finds it in run_js's description, imports it, and uses it again from
/// the heap, through `serve`.
#[test]
fn typescript_sdk_client_imports_a_package_the_operator_added() {
    let dir = tempfile::tempdir().unwrap();
    let added = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "add", "--data-dir"])
        .arg(dir.path())
        .arg(common::npm::fixture("lodash"))
        .env_remove("MCP_V8_HEAP_BUCKET")
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "packages"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
}

/// Code mode through the official TypeScript client and `serve`: the model
/// reads the upstream's tools in run_js's description and declarations,
/// and one run loops over ten upstream calls, keeping the result.
#[test]
fn typescript_sdk_client_runs_a_code_mode_loop_of_ten_upstream_calls() {
    let upstream = crate::engine::code_mode::Upstream::modern();
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start_with(
        dir.path(),
        common::net::free_port(),
        vec![(
            "MCP_V8_MCP_SERVERS".into(),
            crate::engine::code_mode::servers_json(&[("upstream", &upstream)]),
        )],
    );
    let mut command = node();
    command.args([&serve.url(), "codemode"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    assert_eq!(done["calls"], 10, "{done}");
}

/// What the TypeScript client's `surface` mode says, in order.
const SURFACE_EVENTS: [&str; 6] = [
    "latest",
    "progress",
    "timed_out",
    "resource",
    "logging",
    "done",
];

/// The MCP surface through the official TypeScript client and `serve`:
/// annotations, `heap: "latest"`, a 14 s run completing under a 10 s
/// request timeout that progress resets (and timing out without a progress
/// token), a resource read, completions, console lines as log messages
/// after `logging/setLevel`, and an aborted call whose run stops.
#[test]
fn typescript_sdk_client_uses_progress_cancellation_latest_and_resources() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let events = drive_with(&serve.url(), "surface", &["cancel"], || {
        unreachable!("no restart")
    });
    let mut expected = SURFACE_EVENTS.to_vec();
    expected.insert(expected.len() - 1, "cancelled");
    assert_eq!(names(&events), expected);
}

/// The answer budget through the official TypeScript SDK: 3 MB of output,
/// a 2 MB string and 200k rows each answer within 32 KiB, with
/// structuredContent the SDK validates against run_js's output schema, and
/// a link it reads back whole and by page.
#[test]
fn typescript_sdk_reads_large_answers_within_the_budget_and_follows_their_links() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "budget"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    for case in ["output", "string", "rows"] {
        assert!(done[case]["whole"].as_u64().unwrap() > 32 * 1024, "{done}");
    }
}

/// Files in and out through both official clients: a CSV uploaded with
/// `files`, a PNG chart made in the run and shown with `display()` as image
/// content, the run's /work files read back through the resource template.
#[test]
fn both_clients_upload_a_csv_see_a_chart_and_read_files_back() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "files"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    assert!(done["png"].as_u64().unwrap() > 1000, "{done}");
    let mut command = python();
    command.args([serve.url().as_str(), "files"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
}

/// The same surface through the Python `mcp` client: progress arrives,
/// notifications/cancelled stops a run, a resource reads, completions
/// complete, and after `logging/setLevel` console lines arrive as log
/// messages.
#[test]
fn python_mcp_client_uses_progress_cancellation_latest_and_resources() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = python();
    command.args([serve.url().as_str(), "surface"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    assert!(done["progress"].as_u64().unwrap() >= 2, "{done}");
    assert_eq!(done["logs"], 2, "{done}");
}

/// A deployment with `MCP_V8_CONTINUE_SESSIONS=true`, through both
/// official clients: calls that leave out `heap` in a logical session carry
/// its state (top-level `await` declarations included), `heap: ""` starts
/// fresh, and the text content shows values as a REPL does.
#[test]
fn both_clients_continue_a_session_without_heap_where_the_deployment_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start_with(
        dir.path(),
        common::net::free_port(),
        vec![("MCP_V8_CONTINUE_SESSIONS".into(), "true".into())],
    );
    for mut command in [node(), python()] {
        command.args([serve.url().as_str(), "continue"]);
        let done = finish(command);
        assert_eq!(done["event"], "done", "{done}");
        let heap = done["heap"].as_str().unwrap();
        assert!(dir.path().join("heaps").join(heap).exists(), "{done}");
    }
}

/// 2025-11-25's experimental tasks through both official clients: `run_js`
/// listed with `taskSupport`, a run made a task (the TypeScript SDK's
/// `callToolStream`, Python's `call_tool_as_task`), polled to its end, its
/// result (heap key included) read back, and a long run cancelled as a task.
#[test]
fn both_clients_run_run_js_as_an_experimental_task_and_cancel_one() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let events = drive(&serve.url(), "tasks", || panic!("no restart in this flow"));
    assert_eq!(names(&events), ["task_completed", "task_cancelled"]);
    assert_eq!(events[0]["messages"][0], "taskCreated", "{events:?}");
    let heap = events[0]["heap"].as_str().unwrap();
    assert!(dir.path().join("heaps").join(heap).exists(), "{events:?}");
    let mut command = python();
    command.args([serve.url().as_str(), "tasks"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    let heap = done["heap"].as_str().unwrap();
    assert!(dir.path().join("heaps").join(heap).exists(), "{done}");
}

#[test]
fn python_mcp_client_threads_a_counter_through_three_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut command = python();
    command.args([serve.url().as_str(), "counter"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    let heap = done["heap"].as_str().unwrap();
    assert!(
        dir.path().join("heaps").join(heap).exists(),
        "the last heap is stored"
    );
}

#[test]
fn a_2025_11_25_client_and_a_2026_07_28_client_share_one_deployment_and_its_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut legacy = node();
    legacy.args([&serve.url(), "counter"]);
    let first = finish(legacy);
    assert_eq!(first["protocol"], "2025-11-25");
    let shared = first["heap"].as_str().unwrap().to_owned();

    // Both eras at once: the 2026-07-28 client continues the session-era
    // client's heap by its key while another session-era client runs.
    let mut modern = python_modern();
    modern.args([&serve.url(), "py-modern", &shared]);
    let mut legacy = node();
    legacy.args([&serve.url(), "counter"]);
    let modern = std::thread::spawn(move || finish(modern));
    let second = finish(legacy);
    let modern = modern.join().unwrap();

    assert_eq!(second["protocol"], "2025-11-25");
    assert_eq!(modern["protocol"], "2026-07-28");
    assert_eq!(
        modern["counter"], 6,
        "the counter went on from the shared heap"
    );
    let log = modern["log"].as_array().unwrap();
    assert_eq!(log.len(), 3, "the session argument kept a log: {log:?}");
    assert_eq!(log[2], modern["heap"]);
    // Completions and log messages in this era too: the session named by
    // the run's argument completes, and console lines arrived only where
    // the client opted in with the request's logLevel.
    assert_eq!(modern["completed"], serde_json::json!(["py-modern"]));
    assert_eq!(modern["logs"], 2, "{modern}");
    // The same through the TypeScript SDK's 2026-07-28 client.
    let mut typescript = node_script("ts_modern_client.mjs");
    typescript.args([&serve.url(), "ts-modern"]);
    let typescript = finish(typescript);
    let completed = typescript["completed"].as_array().unwrap();
    assert!(completed.contains(&"ts-modern".into()), "{typescript}");
    assert_eq!(typescript["logs"], 2, "{typescript}");
    for heap in [&shared, modern["heap"].as_str().unwrap()] {
        assert!(dir.path().join("heaps").join(heap).exists(), "{heap}");
    }
}

/// One 2026-07-28 `tools/call` (no session to set up): the tool's
/// `structuredContent`, or why the call did not complete.
async fn call_2026(
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

#[test]
fn sigkill_under_load_leaves_every_logged_heap_stored_and_verifiable() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let dir = tempfile::tempdir().unwrap();
    // Every run continuing `latest` is answered before its save.
    let mut serve = Serve::start_with(
        dir.path(),
        common::net::free_port(),
        vec![("MCP_V8_ANSWER_BEFORE_SAVE_MB".into(), "0".into())],
    );
    let url = serve.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sessions: Vec<String> = (0..8).map(|i| format!("kill-{i}")).collect();
    // Odd sessions continue `latest`; even ones thread the keys they get.
    let continues_latest = |i: usize| i % 2 == 1;
    let clients: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(i, session)| {
            let (url, session, stop) = (url.clone(), session.clone(), stop.clone());
            let answered = answered.clone();
            let latest = continues_latest(i);
            runtime.spawn(async move {
                let http = reqwest::Client::new();
                let (mut heap, mut runs, mut last_n) = (None::<String>, 0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let mut arguments = serde_json::json!({
                        "code": "globalThis.n = (globalThis.n ?? 0) + 1; globalThis.pad = 'x'.repeat(1000 * n); n",
                        "session": session});
                    if latest {
                        arguments["heap"] = "latest".into();
                    } else if let Some(heap) = &heap {
                        arguments["heap"] = heap.as_str().into();
                    }
                    match call_2026(&http, &url, "run_js", arguments).await {
                        Ok(outcome) => {
                            heap = outcome["heap"].as_str().map(str::to_owned);
                            last_n = outcome["result"].as_str().unwrap().parse().unwrap();
                            runs += 1;
                            // A run threading keys is logged before its
                            // answer; `latest` runs answer first, faster
                            // than their heaps are stored.
                            if !latest {
                                answered.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        // The kill cuts requests off mid-flight.
                        Err(_) => break,
                    }
                }
                (runs, last_n)
            })
        })
        .collect();
    // Once the clients threading keys have had runs logged, kill the
    // process outright.
    let started = Instant::now();
    while answered.load(Ordering::Relaxed) < 8 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the load never got going: {} runs answered",
            answered.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    serve.restart();
    stop.store(true, Ordering::Relaxed);
    let ended: Vec<(u64, u64)> = clients
        .into_iter()
        .map(|c| runtime.block_on(c).unwrap())
        .collect();
    let runs: u64 = ended.iter().map(|(runs, _)| runs).sum();
    assert!(runs >= 8, "the load ran before the kill: {runs} runs");
    // A session answered before its save continues from its newest answer
    // if that save ended before the kill, else is told its heap is lost:
    // never from an older heap in silence.
    let http = reqwest::Client::new();
    let mut lost = 0;
    for (i, session) in sessions
        .iter()
        .enumerate()
        .filter(|(i, _)| continues_latest(*i))
    {
        let last_n = ended[i].1;
        let next = runtime.block_on(call_2026(
            &http,
            &serve.url(),
            "run_js",
            serde_json::json!({"code": "globalThis.n ?? 0", "session": session, "heap": "latest"}),
        ));
        match next {
            Ok(outcome) => {
                let n: u64 = outcome["result"].as_str().unwrap().parse().unwrap();
                assert!(
                    n >= last_n,
                    "{session}: continued from n = {n}, older than the answered n = {last_n}"
                );
            }
            Err(said) => {
                assert!(
                    said.contains("is lost") && said.contains("heap: \\\""),
                    "{session}: {said}"
                );
                lost += 1;
            }
        }
    }

    let heaps = mcp_v8_lambda::heap::FileHeapStore::new(dir.path().join("heaps"));
    let mut logged = 0;
    let mut verified = 0;
    for session in &sessions {
        let log = runtime
            .block_on(call_2026(
                &http,
                &serve.url(),
                "list_session_snapshots",
                serde_json::json!({"session": session, "fields": "index,input_heap,output_heap"}),
            ))
            .unwrap();
        let entries = log["entries"].as_array().unwrap();
        for (i, entry) in entries.iter().enumerate() {
            assert_eq!(
                entry["index"], i as u64,
                "{session}: gapless after the kill"
            );
            for field in ["input_heap", "output_heap"] {
                let Some(key) = entry[field].as_str() else {
                    continue;
                };
                let key = mcp_v8_lambda::heap::HeapKey::parse(key).unwrap();
                let stored = runtime.block_on(mcp_v8_lambda::heap::HeapStore::get(
                    &heaps,
                    &Tenant::anonymous(),
                    &key,
                ));
                assert!(
                    matches!(stored, Ok(Some(_))),
                    "{session} entry {i}: {field} {key} is stored and verifies: {stored:?}"
                );
                verified += 1;
            }
        }
        logged += entries.len();
    }
    eprintln!(
        "SIGKILL under load: {runs} runs answered, {logged} log entries, {verified} heaps verified, \
         {lost} sessions told their answered heap was lost"
    );
    assert!(logged >= 8, "{logged} entries logged");
    // Every logged run of these stateful clients made a heap.
    assert!(
        verified >= logged,
        "{verified} heaps verified of {logged} entries"
    );
}

/// The official conformance suite against `serve` with the suite's
/// fixture tools (the fixtures' server, [`fixture_server`]), once per protocol
/// version: 2025-11-25 and 2026-07-28 run exactly what their revisions
/// require, the older versions the active suite at their wire version. A
/// check may fail only when tests/conformance/expected-failures-*.yaml lists
/// it with its reason, and a listed check that passes fails the run too.
#[test]
fn the_mcp_conformance_suite_passes_but_for_the_listed_expected_failures() {
    let ConformanceSuite {
        dir: suite,
        node,
        cli,
    } = ConformanceSuite::installed();
    let dir = tempfile::tempdir().unwrap();
    // The suite's fixture tools, so its scenarios check how our layer
    // carries what they ask.
    let serve = Serve::start_fixtures(dir.path(), common::net::free_port());
    // With the checks each selection passed on 2026-11-30 (the suite
    // 0.2.0-alpha.12, pinned in tests/conformance), with every fixture of
    // its reference server but those of input requests other than
    // elicitation: fewer means it selected less, which would pass
    // unnoticed. 2025-03-26 selects one scenario.
    let runs = [
        (["--spec-version", "2025-03-26"], "2025-11-25", 3),
        (["--spec-version", "2025-06-18"], "2025-11-25", 53),
        (["--requirements", "2025-11-25"], "2025-11-25", 77),
        (["--requirements", "2026-07-28"], "2026-07-28", 181),
    ];
    for (selection, baseline, least) in runs {
        let results = tempfile::tempdir().unwrap();
        let output = Command::new(&node)
            .arg(&cli)
            .args(["server", "--url", &serve.url()])
            .args(selection)
            .arg("--expected-failures")
            .arg(suite.join(format!("expected-failures-{baseline}.yaml")))
            .arg("-o")
            .arg(results.path())
            .current_dir(&suite)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let total = stdout
            .lines()
            .find(|line| line.starts_with("Total:"))
            .unwrap_or("no total printed");
        eprintln!("conformance {}: {total}", selection.join(" "));
        assert!(
            output.status.success(),
            "conformance {} failed:\n{stdout}\n{}",
            selection.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        // A selection that ran nothing would pass too: count the checks.
        let passed: usize = total
            .strip_prefix("Total: ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count of checks: {total}\n{stdout}"));
        assert!(
            passed >= least,
            "conformance {} passed {passed} checks, fewer than the {least} it passed: {total}",
            selection.join(" ")
        );
    }
}

/// The conformance suite's tasks-extension scenarios against `serve` with
/// the fixture tools they call (`greet`, `slow_compute`, `failing_job`,
/// `protocol_error_job`: the fixtures' server, [`fixture_server`]), each a
/// run through the engine and the task store. A check may fail only when
/// tests/conformance/expected-failures-tasks.yaml lists it with its reason.
#[test]
fn the_conformance_suite_tasks_scenarios_pass_but_for_the_listed_expected_failures() {
    let suite = ConformanceSuite::installed();
    let listed = Command::new(&suite.node)
        .arg(&suite.cli)
        .args(["list", "--server"])
        .output()
        .unwrap();
    let scenarios: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("tasks-"))
        .map(str::to_owned)
        .collect();
    // The suite's own count: a renamed or dropped scenario shows here.
    assert!(
        scenarios.len() >= 10,
        "expected the tasks-* scenarios, found {scenarios:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start_fixtures(dir.path(), common::net::free_port());
    let expected = suite.dir.join("expected-failures-tasks.yaml");
    for scenario in &scenarios {
        suite.scenario(&serve.url(), scenario, Some(&expected));
    }
}

/// The conformance suite's Skills-extension scenarios (SEP-2640:
/// enumeration and retrieval, the SKILL.md manifest, directory reads)
/// against `serve` with its built-in skills. None is listed as an expected
/// failure, none warns (a SHOULD not met), and the checks they pass are
/// counted, so a scenario that selects nothing fails.
#[test]
fn the_conformance_suite_skills_scenarios_pass() {
    let suite = ConformanceSuite::installed();
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), common::net::free_port());
    let mut passed = 0;
    for scenario in [
        "sep-2640-skills-enumeration",
        "sep-2640-skills-manifest",
        "sep-2640-skills-directory",
    ] {
        let line = suite.scenario(&serve.url(), scenario, None);
        assert!(line.ends_with(", 0 warnings"), "{scenario}: {line}");
        passed += line
            .strip_prefix("Passed: ")
            .and_then(|rest| rest.split(['/', ' ']).next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no count of checks: {line}"));
    }
    // Every check of the three scenarios, as counted on 2026-12-01 (the
    // suite 0.2.0-alpha.12).
    assert!(passed >= SKILLS_CHECKS, "{passed} skills checks passed");
}

/// How many checks the skills scenarios pass.
const SKILLS_CHECKS: usize = 45;

/// The official conformance suite as scripts/test.sh installs it.
struct ConformanceSuite {
    dir: PathBuf,
    node: PathBuf,
    cli: PathBuf,
}

impl ConformanceSuite {
    fn installed() -> Self {
        let dir = project().join("tests/conformance");
        let node = dir.join("node_modules/.bin/node");
        assert!(
            node.exists(),
            "the conformance suite is not installed: run scripts/test.sh (it runs npm ci in tests/conformance)"
        );
        let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
        Self { dir, node, cli }
    }

    /// Runs `scenario` against `url`, where only what `expected` lists may
    /// fail; returns its `Passed:` line.
    fn scenario(&self, url: &str, scenario: &str, expected: Option<&Path>) -> String {
        let mut command = Command::new(&self.node);
        command
            .arg(&self.cli)
            .args(["server", "--url", url, "--scenario", scenario])
            .current_dir(&self.dir);
        if let Some(expected) = expected {
            command.arg("--expected-failures").arg(expected);
        }
        let output = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let passed = stdout
            .lines()
            .find(|line| line.starts_with("Passed:"))
            .unwrap_or("no total printed")
            .to_owned();
        eprintln!("conformance {scenario}: {passed}");
        assert!(
            output.status.success(),
            "conformance {scenario} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        passed
    }
}

/// Runs the TypeScript client in `mode`, restarting `serve` (SIGKILL, then a
/// new process on the same port and data) when the client asks; returns the
/// events it printed.
fn run_with_restart(mode: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    run_with_restart_on(Serve::start(dir.path(), common::net::free_port()), mode)
}

fn run_with_restart_on(mut serve: Serve, mode: &str) -> Vec<Value> {
    let url = serve.url();
    drive(&url, mode, || serve.restart())
}

/// Runs the TypeScript client in `mode` against `url`, calling `restart`
/// when the client asks for a new server instance; returns its events.
fn drive(url: &str, mode: &str, restart: impl FnMut()) -> Vec<Value> {
    drive_with(url, mode, &[], restart)
}

/// [`drive`] with the mode's further arguments.
fn drive_with(url: &str, mode: &str, extra: &[&str], mut restart: impl FnMut()) -> Vec<Value> {
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

fn names(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

#[test]
fn a_session_survives_a_server_restart_and_a_deleted_one_reinitializes() {
    let events = run_with_restart("replay");
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );
    assert_eq!(
        events[0]["session"], events[1]["session"],
        "the same transport session continued"
    );
    assert_ne!(
        events[0]["session"], events[3]["session"],
        "re-initialize made a new session"
    );
}

#[test]
fn tags_queries_the_session_log_and_executions_work_through_serve_and_survive_a_restart() {
    let events = run_with_restart("tools");
    assert_eq!(names(&events), ["restart", "done"]);
}

fn heap_in_s3(bucket: &str, heap: &str) -> bool {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let (s3, _) = common::moto::clients().await;
        s3.head_object()
            .bucket(bucket)
            .key(heap)
            .send()
            .await
            .is_ok()
    })
}

/// Entries of a logical session's log in DynamoDB, read directly.
fn logged_runs(table_prefix: &str, session: &str) -> i32 {
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

/// The environment a deployment on AWS has, pointed at moto.

#[test]
fn on_s3_and_dynamodb_a_session_survives_a_restart_and_nothing_is_kept_locally_but_the_cache() {
    let bucket = common::moto::unique("e2e");
    let prefix = format!("{}-", common::moto::unique("e2e"));
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let cache = dir.path().join("cache");
    let env = common::moto::serve_env(&bucket, &prefix, &cache);

    let setup = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .arg("setup")
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&setup.stdout);
    assert!(
        setup.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    assert!(
        printed.contains(&format!("created table {prefix}sessions")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("bucket {bucket} created")),
        "{printed}"
    );

    let serve = Serve::start_with(&data_dir, common::net::free_port(), env);
    let events = run_with_restart_on(serve, "replay");
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );

    assert!(
        !data_dir.join("meta.redb").exists(),
        "sessions and metadata live in DynamoDB"
    );
    assert!(!data_dir.join("heaps").exists(), "heaps live in S3");
    let last_heap = events[3]["heap"].as_str().unwrap().to_owned();
    assert!(
        cache.join(&last_heap).exists(),
        "the cache holds the last heap"
    );
    let stored = (
        heap_in_s3(&bucket, &last_heap),
        logged_runs(&prefix, "ts-replay"),
    );
    assert_eq!(
        stored,
        (true, 3),
        "the heap is in S3 and three runs are logged in DynamoDB"
    );
}

/// `cargo lambda watch` (installed in the venv by scripts/test.sh) emulating
/// Lambda and its function URL on `port`, in a process group of its own so
/// that stopping it stops the function instance too.
struct Watch {
    child: Child,
    port: u16,
    env: Vec<(String, String)>,
    /// More arguments of `cargo lambda watch`.
    args: Vec<String>,
}

/// Variables `cargo test` sets for a test binary, which the `cargo run`
/// under `cargo lambda watch` must not inherit: build scripts watch some of
/// them (ring reruns when `CARGO_MANIFEST_DIR` changes), so with them every
/// crate above ring was rebuilt inside the test, minutes of CI's time.
/// How this test binary's crate was built, for the `cargo run` under
/// `cargo lambda watch`: its release profile when the tests are built in
/// it, so that the watch finds the binary built and rebuilds nothing. (The
/// target and the flags come from the environment scripts/test.sh exports.)
const BUILT_AS: [&str; 1] = [if cfg!(debug_assertions) {
    ""
} else {
    "--release"
}];

fn set_by_cargo_test(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_BIN_NAME"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

impl Watch {
    fn start(port: u16, env: Vec<(String, String)>) -> Self {
        Self::start_with(port, env, Vec::new())
    }

    fn start_with(port: u16, env: Vec<(String, String)>, args: Vec<String>) -> Self {
        use std::os::unix::process::CommandExt;
        let bin = project().join(".venv/bin");
        assert!(
            bin.join("cargo-lambda").exists(),
            "cargo-lambda is not installed: run scripts/test.sh"
        );
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = Command::new("cargo")
            .args([
                "lambda",
                "watch",
                "--quiet",
                // A reload mid-test would be a new instance the test did not ask for.
                "--ignore-changes",
                // The emulator's URL events carry no IAM caller: the local
                // loop as docs/deployment.md gives it.
                "--env-var",
                "MCP_V8_ALLOW_UNAUTHENTICATED=true",
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .args(BUILT_AS.iter().copied().filter(|arg| !arg.is_empty()))
            .args(&args)
            .current_dir(project())
            .env_clear()
            .envs(std::env::vars().filter(|(name, _)| !set_by_cargo_test(name)))
            .envs(env.iter().cloned())
            .env("PATH", path)
            .env("RUST_LOG", "warn")
            // The function exits with an error when its emulator is killed;
            // one line says so, a backtrace would only bury the test output.
            .env("RUST_BACKTRACE", "0")
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting cargo lambda watch");
        let watch = Self {
            child,
            port,
            env,
            args,
        };
        watch.wait_until_the_function_answers();
        watch
    }

    /// The emulator listens before the function is built and running, and
    /// holds requests until then. A GET reaches the MCP handler only once the
    /// function runs, which answers it 405 with `Allow`; until then the probe
    /// times out or gets the emulator's own error. The budget covers a cold
    /// build, which CI's `cargo build` beforehand normally makes a no-op.
    fn wait_until_the_function_answers(&self) {
        let started = Instant::now();
        loop {
            match self.probe() {
                Ok(status) if status.starts_with("HTTP/1.1 405") => return,
                outcome => assert!(
                    started.elapsed() < Duration::from_secs(900),
                    "the function under cargo lambda watch never answered: {outcome:?}"
                ),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// One GET of the function URL; the response's status line.
    fn probe(&self) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "GET /lambda-url/mcp-v8-lambda/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        let mut status = String::new();
        BufReader::new(stream).read_line(&mut status)?;
        Ok(status)
    }

    pub(crate) fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/lambda-url/mcp-v8-lambda/mcp",
            self.port
        )
    }

    fn stop(&mut self) {
        let group = format!("-{}", self.child.id());
        // Already gone after a restart's stop; nothing to report then.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops this emulator (and its function instance) and starts a new one
    /// on the same port: a cold start of a new Lambda instance.
    fn restart(&mut self) {
        self.stop();
        *self = Watch::start_with(self.port, self.env.clone(), self.args.clone());
    }

    /// `cargo lambda invoke` of an event file's text; the function URL
    /// response (`statusCode`, `headers`, `body`).
    fn invoke(&self, event: &str) -> Value {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), event).unwrap();
        let output = Command::new(project().join(".venv/bin/cargo-lambda"))
            .args([
                "lambda",
                "invoke",
                "-A",
                "127.0.0.1",
                "-P",
                &self.port.to_string(),
                "mcp-v8-lambda",
                "-F",
            ])
            .arg(file.path())
            .current_dir(project())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

fn event_file(name: &str, session: &str) -> String {
    std::fs::read_to_string(project().join("events").join(format!("{name}.json")))
        .unwrap()
        .replace("REPLACE_WITH_SESSION_ID", session)
}

// `cargo lambda watch` runs the function with `cargo run`, whose build
// differs from the one `cargo test` made (no dev-dependency features), so in a
// clean clone it compiles the dependencies again. scripts/test.sh runs
// `cargo build` first, and `Watch::start` waits for the function itself, so
// the client's 60 s request timeout never covers a build.
/// Two `cargo lambda watch` emulators side by side do not both come up
/// (the second never answered in CI): the tests that start one take turns.
static ONE_EMULATOR_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Response streaming through the Lambda entry, as a function URL with
/// `InvokeMode: RESPONSE_STREAM` runs it: the TypeScript client's 14 s run
/// completes under its 10 s request timeout because progress arrives.
#[test]
fn under_cargo_lambda_watch_progress_streams_and_resets_the_client_timeout() {
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let bucket = common::moto::unique("stream");
    let prefix = format!("{}-", common::moto::unique("s"));
    let dir = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(&bucket, &prefix, &dir.path().join("cache"));
    env.push(("MCP_V8_INVOKE_MODE".into(), "RESPONSE_STREAM".into()));
    common::moto::setup(&env);
    let watch = Watch::start(common::net::free_port(), env);
    let events = drive(&watch.url(), "surface", || unreachable!("no restart"));
    assert_eq!(names(&events), SURFACE_EVENTS);
}

#[test]
fn under_cargo_lambda_watch_a_session_survives_a_new_instance_and_every_event_answers() {
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let bucket = common::moto::unique("watch");
    let prefix = format!("{}-", common::moto::unique("w"));
    let dir = tempfile::tempdir().unwrap();
    let env = common::moto::serve_env(&bucket, &prefix, &dir.path().join("cache"));
    common::moto::setup(&env);

    let mut watch = Watch::start(common::net::free_port(), env);
    let url = watch.url();
    let events = drive(&url, "replay", || watch.restart());
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );
    assert_eq!(
        events[0]["session"], events[1]["session"],
        "the new instance continued the session"
    );
    assert_eq!(
        logged_runs(&prefix, "ts-replay"),
        3,
        "every run across both instances is in the session log"
    );

    let init = watch.invoke(&event_file("initialize", ""));
    assert_eq!(init["statusCode"], 200, "{init}");
    let session = init["headers"]["mcp-session-id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, status) in [
        ("initialized", 202),
        ("tools-list", 200),
        ("run-js", 200),
        ("unknown-session", 404),
        ("delete", 204),
        ("run-js-2026", 200),
    ] {
        let response = watch.invoke(&event_file(name, &session));
        assert_eq!(response["statusCode"], status, "{name}: {response}");
        if name == "run-js" {
            let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["result"]["structuredContent"]["result"], "1", "{body}");
        }
    }
}

/// docs/deployment.md's "Local development", as a new user runs it:
/// `infra/local-stack.sh` (its build, moto, `setup`, the environment it
/// prints), then `cargo lambda watch` with the flags the docs give. A 14 s
/// run reports progress through the streamed function URL, and a run the
/// client makes a task is handed to a new invocation through the
/// emulator's own Invoke API and completes. A session's run that asks the
/// person sends its asks on the streamed response and gets the replies.
#[test]
fn under_cargo_lambda_watch_the_documented_local_stack_streams_progress_and_runs_a_task() {
    use std::os::unix::process::CommandExt;
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let moto_port = common::net::free_port();
    /// The script's process group (moto with it), ended when the test is.
    struct Stack(Child);
    impl Drop for Stack {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", self.0.id())])
                .status();
            let _ = self.0.wait();
        }
    }
    let mut stack = Stack(
        Command::new(project().join("infra/local-stack.sh"))
            .arg(moto_port.to_string())
            .args(BUILT_AS.iter().copied().filter(|arg| !arg.is_empty()))
            .current_dir(project())
            .env_clear()
            .envs(std::env::vars().filter(|(name, _)| !set_by_cargo_test(name)))
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting infra/local-stack.sh"),
    );
    // The environment the script tells the user to export.
    let mut env = Vec::new();
    let mut args = Vec::new();
    for line in BufReader::new(stack.0.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(exports) = line.strip_prefix("export ") {
            env.extend(exports.split_whitespace().filter_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                Some((name.to_owned(), value.to_owned()))
            }));
        }
        if line.starts_with("cargo lambda watch") {
            // The documented command's own variables and instance count.
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                match pair[0] {
                    "--env-var" => {
                        let (name, value) = pair[1].split_once('=').unwrap();
                        env.push((name.to_owned(), value.to_owned()));
                    }
                    "--concurrency" => {
                        args.extend(["--concurrency".to_owned(), pair[1].to_owned()])
                    }
                    _ => {}
                }
            }
            break;
        }
    }
    assert!(
        env.iter().any(|(name, _)| name == "MCP_V8_INVOKE_MODE"),
        "the printed watch command streams responses: {env:?}"
    );
    assert!(
        env.iter().any(|(name, _)| name == "MCP_V8_TABLE_PREFIX"),
        "the script printed no environment: {env:?}"
    );
    assert!(
        !args.is_empty(),
        "the printed watch command runs instances side by side, as tasks need"
    );
    let watch = Watch::start_with(common::net::free_port(), env, args);
    let events = drive(&watch.url(), "surface", || unreachable!("no restart"));
    assert_eq!(names(&events), SURFACE_EVENTS);
    let events = drive(&watch.url(), "task", || unreachable!("no restart"));
    assert_eq!(names(&events), ["task_completed"]);
    assert_eq!(
        events[0]["messages"][0], "taskCreated",
        "the run became a task: {events:?}"
    );
    // A 2025-11-25 session whose run asks twice: each elicitation/create
    // goes out on the call's streamed function URL response, and each reply
    // (a POST that may reach another instance) comes back to the run.
    let mut asks = node();
    asks.args([watch.url().as_str(), "asks"]);
    let done = finish(asks);
    assert_eq!(
        done["asked"],
        serde_json::json!(["Factor 1?", "Factor 2?"]),
        "{done}"
    );
    assert_eq!(done["result"], "210", "{done}");
    events_readme_commands_answer_as_its_table_says(&watch);
}

/// events/README.md's commands, run as written against the documented
/// emulator (its port and a scratch directory for `/tmp/` are the only
/// changes): each row of its table gets the status it names, read from the
/// response `cargo lambda invoke` prints, though the function URL streams.
fn events_readme_commands_answer_as_its_table_says(watch: &Watch) {
    let readme = std::fs::read_to_string(project().join("events/README.md")).unwrap();
    let commands: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .filter(|line| line.starts_with("cargo lambda invoke") || line.starts_with("sed "))
        .collect();
    let [initialize, substitute, invoke] = commands[..] else {
        panic!("events/README.md gives initialize, a sed and an invoke: {commands:?}");
    };
    let scratch = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        project().join(".venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |script: String, session: &str| -> Value {
        let script = script.replace("/tmp/", &format!("{}/", scratch.path().display()));
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(project())
            .env("PATH", &path)
            .env("SESSION", session)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "{script} printed no response ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    };
    let port = format!(" --invoke-port {}", watch.port);
    let mut session = String::new();
    let mut rows = 0;
    for row in readme.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let file = cells[1].trim_matches('`');
        let expected: u16 = cells[3]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|status| status.parse().ok())
            .unwrap_or_else(|| panic!("{row}: the expected column starts with a status"));
        let response = if file == "initialize.json" {
            assert!(
                initialize.contains("events/initialize.json"),
                "{initialize}"
            );
            run(format!("{initialize}{port}"), "")
        } else {
            let name = file.trim_end_matches(".json");
            let script = format!(
                "{}\n{}{port}",
                substitute.replace("run-js", name),
                invoke.replace("run-js", name)
            );
            run(script, &session)
        };
        rows += 1;
        assert_eq!(response["statusCode"], expected, "{file}: {response}");
        let body: Value =
            serde_json::from_str(response["body"].as_str().unwrap_or("null")).unwrap_or_default();
        match file {
            "initialize.json" => {
                session = response["headers"]["mcp-session-id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no mcp-session-id header: {response}"))
                    .to_owned();
            }
            "run-js.json" => {
                assert_eq!(body["result"]["structuredContent"]["result"], "1", "{body}");
                assert!(
                    body["result"]["structuredContent"]["heap"].is_string(),
                    "{body}"
                );
            }
            "unknown-session.json" => assert_eq!(body["error"]["code"], -32001, "{body}"),
            "run-js-2026.json" => {
                assert_eq!(
                    body["result"]["structuredContent"]["result"], "42",
                    "{body}"
                );
                assert_eq!(body["result"]["resultType"], "complete", "{body}");
            }
            _ => {}
        }
    }
    let files = std::fs::read_dir(project().join("events"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".json")
        })
        .count();
    assert_eq!(rows, files, "the table has a row for every event file");
}
