//! The HTTP benchmark: `serve` (embedded store) driven over loopback by N
//! concurrent MCP clients, side by side with a reference server (the
//! official TypeScript SDK evaluating code in `node:vm`, benches/reference/),
//! plus cold start. Run it through `scripts/bench.sh`, which installs the
//! reference; by hand:
//!
//!     cargo bench --bench benches -- http [--clients 1] [--calls 1000] [--only SCENARIO,...] [--no-reference] [--no-cold-start] [--server PATH]
//!
//! Scenarios, each a fixed count of `tools/call`s (or `tools/list`s) shared
//! by the clients, after a warm-up of 20 calls per client:
//! - `stateless`: `run_js` `1+1` on `serve --stateless` (and on the reference);
//! - `fresh`: a stateful run in a fresh isolate, snapshotted and stored;
//! - `chained`: each client threads a counter through small heaps;
//! - `streamed`: the same, each call with a progress token, so answered as
//!   an event stream (the cost of streaming over the JSON answer);
//! - `large`: the same from a ~10 MiB heap (120k objects);
//! - `list`: `tools/list`, the cost of the replay alone (and on the reference);
//! - `think-tiny`, `think-5mb`, `think-50mb` (only when named in `--only`):
//!   each client threads a counter through the `latest` heap of its own
//!   logical session, on a tiny heap, ~5 MB (60k small objects) or ~50 MB
//!   (600k), pausing `--pause-ms` (3000) before each call as an agent's
//!   model does; `--think-calls` (10) calls after two warm-up calls.
//!
//! `--think-limit-mb N` names `heap_memory_max_mb: N` on every think-time
//! call, as agents do once a large heap needed it.
//!
//! With `--lambda-watch PROJECT`, only the think-time scenarios (those named
//! in `--only`, else all three), each against the Lambda function of the
//! checkout PROJECT under `cargo lambda watch --release` with its stores on
//! moto.
//!
//! With `--lambda-frozen`, the think-time scenarios against `--server` as a
//! standard Lambda function under the test Runtime API that freezes its
//! process group between invocations (tests/it/common/runtime_api.rs),
//! stores on moto behind a proxy that adds `--latency-ms` (0) before every
//! S3 and DynamoDB request, in a function of `--memory-mb` (1024; with
//! `--no-freeze` the environment is never stopped; with `--max-concurrency
//! N` it is a Lambda Managed Instance taking N invocations at once, never
//! stopped): what the client waits, and the post-response phase after the
//! answer (what Lambda bills besides).
//!
//! Cold start, from spawning to the first answer: `serve`; the Lambda entry
//! against a minimal Runtime API served by the bench; and the project's
//! release build under `cargo lambda watch --wait`.
//!
//! Prints one Markdown table row per scenario and server; no timing is
//! asserted: docs/performance.md records the figures.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::delay_proxy;
use crate::mcp;
use crate::moto;
use crate::net;
use crate::runtime_api;

const WARM_UP_CALLS: usize = 20;
/// 120k small objects: about 10 MiB of heap, as in benches/engine.rs.
const LARGE_HEAP: &str = "globalThis.items = Array.from({length: 120000}, (_, i) => ({i, s: 'item' + i})); globalThis.n = 0; n";

struct Args {
    clients: usize,
    calls: usize,
    only: Option<Vec<String>>,
    reference: bool,
    cold_start: bool,
    /// The binary under test; another build can be compared against this one.
    server: std::path::PathBuf,
    /// The pause before each call of the think-time scenarios.
    pause: Duration,
    /// Calls of each think-time scenario.
    think_calls: usize,
    /// Run the think-time scenarios against this checkout under `cargo
    /// lambda watch` (stores on moto) instead of `serve`.
    lambda_watch: Option<std::path::PathBuf>,
    /// Run the think-time scenarios against `server` as a Lambda function
    /// under the test Runtime API that freezes it between invocations.
    lambda_frozen: bool,
    /// First-byte latency added to every S3 and DynamoDB request (with
    /// `--lambda-frozen`).
    latency: Duration,
    /// `heap_memory_max_mb` named on every call of the think-time
    /// scenarios, as agents name it once a large heap needed it.
    think_limit_mb: Option<usize>,
    /// The function's memory with `--lambda-frozen` (1024).
    memory_mb: usize,
    /// With `--lambda-frozen`, never freeze (`--no-freeze`): what the
    /// freeze itself costs.
    freeze: bool,
    /// With `--lambda-frozen`, a Lambda Managed Instance instead
    /// (`--max-concurrency N`): `AWS_LAMBDA_MAX_CONCURRENCY=N`, never frozen.
    max_concurrency: Option<usize>,
}

fn args() -> Args {
    let mut args = Args {
        clients: 1,
        calls: 1000,
        only: None,
        reference: true,
        cold_start: true,
        server: env!("CARGO_BIN_EXE_mcp-v8-lambda").into(),
        pause: Duration::from_secs(3),
        think_calls: 10,
        lambda_watch: None,
        lambda_frozen: false,
        latency: Duration::ZERO,
        think_limit_mb: None,
        memory_mb: 1024,
        freeze: true,
        max_concurrency: None,
    };
    let mut it = crate::args();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--clients" => {
                args.clients = it.next().and_then(|v| v.parse().ok()).expect("--clients N")
            }
            "--calls" => args.calls = it.next().and_then(|v| v.parse().ok()).expect("--calls N"),
            "--only" => {
                args.only = Some(
                    it.next()
                        .expect("--only a,b")
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--no-reference" => args.reference = false,
            "--no-cold-start" => args.cold_start = false,
            "--server" => args.server = it.next().expect("--server PATH").into(),
            "--pause-ms" => {
                args.pause = Duration::from_millis(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--pause-ms N"),
                )
            }
            "--lambda-watch" => {
                args.lambda_watch = Some(it.next().expect("--lambda-watch PROJECT").into())
            }
            "--lambda-frozen" => args.lambda_frozen = true,
            "--no-freeze" => args.freeze = false,
            "--max-concurrency" => {
                let n = it
                    .next()
                    .expect("--max-concurrency N")
                    .parse()
                    .expect("a count");
                args.max_concurrency = Some(n);
                args.freeze = false;
            }
            "--memory-mb" => {
                args.memory_mb = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--memory-mb N")
            }
            "--think-limit-mb" => {
                args.think_limit_mb = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--think-limit-mb N"),
                )
            }
            "--latency-ms" => {
                args.latency = Duration::from_millis(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--latency-ms N"),
                )
            }
            "--think-calls" => {
                args.think_calls = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--think-calls N")
            }
            // cargo bench passes --bench.
            _ => {}
        }
    }
    args
}

/// A server process, killed on drop.
struct Server {
    child: Child,
    url: String,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_serve(
    server: &std::path::Path,
    stateless: bool,
    port: u16,
    data: &std::path::Path,
) -> Child {
    let mut command = Command::new(server);
    command
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null());
    if stateless {
        command.arg("--stateless");
    }
    command.spawn().expect("starting serve")
}

fn start_serve(server: &std::path::Path, stateless: bool) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = net::free_port();
    let child = spawn_serve(server, stateless, port, &dir.path().join("data"));
    net::wait_listening(port, "server", Duration::from_secs(30));
    Server {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        _dir: Some(dir),
    }
}

fn reference_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/reference")
}

fn start_reference() -> Server {
    let dir = reference_dir();
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").exists(),
        "the reference server is not installed: run scripts/bench.sh, or npm ci in benches/reference"
    );
    let mut child = Command::new("node")
        .arg("server.mjs")
        .arg("0")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting node (the reference needs Node.js 18 or later)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the reference printed {line:?}"));
    Server {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        _dir: None,
    }
}

/// A bench client: one MCP session.
struct Client(mcp::Session);

impl Client {
    async fn connect(url: &str, name: &str) -> Client {
        Client(mcp::Session::connect(url, name, "bench").await)
    }

    async fn send(&self, body: Value) -> Result<Value, String> {
        self.0.send(body).await
    }

    async fn run_js(&self, code: &str, heap: Option<&str>) -> Result<Value, String> {
        self.run_js_with(code, heap, false).await
    }

    /// `run_js` in logical session `session`, naming `limit_mb` as
    /// `heap_memory_max_mb` when set.
    async fn run_js_in(
        &self,
        code: &str,
        heap: Option<&str>,
        session: &str,
        limit_mb: Option<usize>,
    ) -> Result<Value, String> {
        self.call_run_js(code, heap, false, Some(session), limit_mb)
            .await
    }

    /// `run_js`, with a progress token when `streamed`.
    async fn run_js_with(
        &self,
        code: &str,
        heap: Option<&str>,
        streamed: bool,
    ) -> Result<Value, String> {
        self.call_run_js(code, heap, streamed, None, None).await
    }

    async fn call_run_js(
        &self,
        code: &str,
        heap: Option<&str>,
        streamed: bool,
        session: Option<&str>,
        limit_mb: Option<usize>,
    ) -> Result<Value, String> {
        let mut arguments = json!({ "code": code });
        if let Some(limit_mb) = limit_mb {
            arguments["heap_memory_max_mb"] = json!(limit_mb);
        }
        if let Some(session) = session {
            arguments["session"] = json!(session);
        }
        if let Some(heap) = heap {
            arguments["heap"] = json!(heap);
        }
        let mut params = json!({"name":"run_js","arguments":arguments});
        if streamed {
            params["_meta"] = json!({"progressToken": "bench"});
        }
        let result = self
            .send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}))
            .await?;
        if result["isError"] == true {
            return Err(format!("run_js failed: {result}"));
        }
        Ok(result)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    Stateless,
    Fresh,
    Chained,
    Streamed,
    Large,
    List,
    /// A counter through `latest` in a session, after a pause, on a heap
    /// of this many small objects.
    Think(usize),
}

impl Scenario {
    /// Run only when named.
    const THINK: [Scenario; 3] = [
        Scenario::Think(0),
        Scenario::Think(60_000),
        Scenario::Think(600_000),
    ];

    const ALL: [Scenario; 6] = [
        Scenario::Stateless,
        Scenario::Fresh,
        Scenario::Chained,
        Scenario::Streamed,
        Scenario::Large,
        Scenario::List,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::Stateless => "stateless",
            Scenario::Fresh => "fresh",
            Scenario::Chained => "chained",
            Scenario::Streamed => "streamed",
            Scenario::Large => "large",
            Scenario::List => "list",
            Scenario::Think(0) => "think-tiny",
            Scenario::Think(60_000) => "think-5mb",
            Scenario::Think(_) => "think-50mb",
        }
    }

    /// Large heaps take ~0.3 s a run; a tenth of the calls keeps the bench short.
    fn calls(self, calls: usize) -> usize {
        if self == Scenario::Large {
            (calls / 10).max(20)
        } else {
            calls
        }
    }
}

/// What one client does per call in a scenario; holds its heap chain.
struct Worker {
    client: Client,
    scenario: Scenario,
    heap: Option<String>,
    counter: u64,
    /// The logical session of a think-time scenario.
    session: String,
    pause: Duration,
    /// `heap_memory_max_mb` of each think-time call.
    limit_mb: Option<usize>,
}

impl Worker {
    async fn new(
        url: &str,
        scenario: Scenario,
        name: &str,
        pause: Duration,
        limit_mb: Option<usize>,
    ) -> Worker {
        let client = Client::connect(url, name).await;
        let mut worker = Worker {
            client,
            scenario,
            heap: None,
            counter: 0,
            session: name.to_owned(),
            pause,
            limit_mb,
        };
        if let Scenario::Think(objects) = scenario {
            let code = format!(
                "globalThis.items = Array.from({{length: {objects}}}, (_, i) => ({{i, s: 'item' + i}})); globalThis.n = 0; n"
            );
            worker
                .client
                .run_js_in(&code, None, name, limit_mb)
                .await
                .expect("first heap");
        }
        if matches!(
            scenario,
            Scenario::Chained | Scenario::Streamed | Scenario::Large
        ) {
            let code = if scenario == Scenario::Large {
                LARGE_HEAP
            } else {
                "globalThis.n = 0; n"
            };
            let result = worker.client.run_js(code, None).await.expect("first heap");
            worker.heap = Some(heap_of(&result));
        }
        worker
    }

    /// What comes before a call and is not timed: an agent's thinking.
    async fn think(&self) {
        if matches!(self.scenario, Scenario::Think(_)) {
            tokio::time::sleep(self.pause).await;
        }
    }

    async fn call(&mut self) -> Result<(), String> {
        match self.scenario {
            Scenario::Think(_) => {
                let result = self
                    .client
                    .run_js_in("n += 1; n", Some("latest"), &self.session, self.limit_mb)
                    .await?;
                self.counter += 1;
                expect_text(&result, &self.counter.to_string())
            }
            Scenario::Stateless => {
                let result = self.client.run_js("1+1", None).await?;
                expect_text(&result, "2")
            }
            Scenario::Fresh => {
                let result = self.client.run_js("globalThis.x = 41; x + 1", None).await?;
                expect_text(&result, "42")
            }
            Scenario::Chained | Scenario::Streamed | Scenario::Large => {
                let result = self
                    .client
                    .run_js_with(
                        "n += 1; n",
                        self.heap.as_deref(),
                        self.scenario == Scenario::Streamed,
                    )
                    .await?;
                self.counter += 1;
                expect_text(&result, &self.counter.to_string())?;
                self.heap = Some(heap_of(&result));
                Ok(())
            }
            Scenario::List => {
                let result = self
                    .client
                    .send(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}))
                    .await?;
                match result["tools"].as_array() {
                    Some(tools) if !tools.is_empty() => Ok(()),
                    _ => Err(format!("tools/list answered {result}")),
                }
            }
        }
    }
}

fn heap_of(result: &Value) -> String {
    result["structuredContent"]["heap"]
        .as_str()
        .unwrap_or_else(|| panic!("no heap in {result}"))
        .to_owned()
}

/// The first text content (the reference's only output), or this server's result.
fn expect_text(result: &Value, expected: &str) -> Result<(), String> {
    let got = result["structuredContent"]["result"]
        .as_str()
        .or_else(|| result["content"][0]["text"].as_str());
    if got == Some(expected) {
        Ok(())
    } else {
        Err(format!("expected {expected}, got {result}"))
    }
}

struct Figures {
    calls: usize,
    elapsed: Duration,
    sorted_us: Vec<u64>,
}

impl Figures {
    fn percentile_ms(&self, p: f64) -> f64 {
        let at = ((self.sorted_us.len() - 1) as f64 * p).round() as usize;
        self.sorted_us[at] as f64 / 1000.0
    }

    fn per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }
}

async fn measure(
    url: &str,
    scenario: Scenario,
    clients: usize,
    calls: usize,
    (pause, limit_mb): (Duration, Option<usize>),
) -> Figures {
    let mut workers = Vec::new();
    for i in 0..clients {
        let name = format!(
            "bench-{}-{i}-{}",
            scenario.name(),
            uuid::Uuid::new_v4().simple()
        );
        workers.push(Worker::new(url, scenario, &name, pause, limit_mb).await);
    }
    let warm_up = match scenario {
        Scenario::Think(_) => 2,
        _ => WARM_UP_CALLS.min(calls),
    };
    for worker in &mut workers {
        for _ in 0..warm_up {
            worker.think().await;
            worker.call().await.expect("warm-up call");
        }
    }
    let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(calls));
    let started = Instant::now();
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut worker| {
            let remaining = remaining.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while remaining
                    .fetch_update(
                        std::sync::atomic::Ordering::SeqCst,
                        std::sync::atomic::Ordering::SeqCst,
                        |n| n.checked_sub(1),
                    )
                    .is_ok()
                {
                    worker.think().await;
                    let call_started = Instant::now();
                    worker.call().await.expect("a benchmarked call");
                    latencies.push(call_started.elapsed().as_micros() as u64);
                }
                latencies
            })
        })
        .collect();
    let mut sorted_us = Vec::with_capacity(calls);
    for task in tasks {
        sorted_us.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    sorted_us.sort_unstable();
    Figures {
        calls,
        elapsed,
        sorted_us,
    }
}

fn row(scenario: Scenario, server: &str, clients: usize, figures: &Figures) {
    println!(
        "| {} | {server} | {clients} | {} | {:.2} | {:.2} | {:.2} | {:.0} |",
        scenario.name(),
        figures.calls,
        figures.percentile_ms(0.50),
        figures.percentile_ms(0.95),
        figures.percentile_ms(0.99),
        figures.per_second(),
    );
}

/// Milliseconds from spawning `serve` to the answer of the first
/// `initialize`, which is tried every millisecond from the start.
async fn serve_cold_start(server: &std::path::Path) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let port = net::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let http = reqwest::Client::new();
    let started = Instant::now();
    let mut child = spawn_serve(server, false, port, &dir.path().join("data"));
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":mcp::PROTOCOL,"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}});
    let elapsed = loop {
        match http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .send()
            .await
        {
            Ok(response) if response.status() == 200 => break started.elapsed(),
            Ok(response) => panic!("initialize answered {}", response.status()),
            Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "serve never answered"
        );
    };
    let _ = child.kill();
    let _ = child.wait();
    elapsed.as_secs_f64() * 1000.0
}

/// Milliseconds from spawning the binary as a Lambda function (against a
/// minimal Lambda Runtime API on loopback, stores on moto) to its response
/// to the first invocation, `events/<event>.json` (`initialize`, or
/// `run-js-2026`: a stateful run, which needs the engine worker).
async fn lambda_cold_start(server: &std::path::Path, env: &[(String, String)], event: &str) -> f64 {
    let event = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("events/{event}.json")),
    )
    .unwrap()
    .replace(
        "events-agent-2026",
        &uuid::Uuid::new_v4().simple().to_string(),
    );
    let mut api = runtime_api::RuntimeApi::start().await;
    api.give(event);
    let started = Instant::now();
    let mut child = Command::new(server)
        .envs(env.iter().cloned())
        .envs(api.function_env())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("starting the Lambda entry");
    let answer = api.answer(Duration::from_secs(30)).await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        answer.outcome == "response" && answer.body.contains("\"statusCode\":200"),
        "the first invocation answered {answer:?}"
    );
    (answer.at - started).as_secs_f64() * 1000.0
}

/// `cargo lambda watch --release --wait` on a free loopback port, building
/// and running `project` (this crate's checkout, or another's to compare
/// builds) with the stores of `env`. Its process group is killed on drop.
/// `quiet` hides the output of the build and of the function being killed.
struct Watch {
    child: Child,
    port: u16,
}

impl Watch {
    fn start(project: &std::path::Path, env: &[(String, String)], quiet: bool) -> Watch {
        use std::os::unix::process::CommandExt;
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = format!(
            "{}:{}",
            here.join(".venv/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // `cargo run` builds without dev-dependencies and their features; in the
        // bench's own target directory it would rebuild what `cargo bench` built,
        // and the other way round on the next bench.
        let target = std::path::Path::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
            .ancestors()
            .nth(2)
            .expect("the binary sits in <target>/release")
            .join("lambda-watch");
        let port = net::free_port();
        let child = Command::new("cargo")
            .args(["lambda", "watch", "--release", "--wait", "--quiet"])
            .args(["--env-var", "MCP_V8_ALLOW_UNAUTHENTICATED=true"])
            .args([
                "--ignore-changes",
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .current_dir(project)
            .envs(env.iter().cloned())
            .env("CARGO_TARGET_DIR", target)
            .env("PATH", path)
            .env("RUST_LOG", "error")
            .env("RUST_BACKTRACE", "0")
            // Killing the group stops the emulator; the function instance ends
            // with it, or as soon as its Runtime API is gone.
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(if quiet {
                Stdio::null()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("starting cargo lambda watch (scripts/bench.sh installs it)");
        // The emulator listens before it builds; the first request waits out
        // the build.
        let give_up = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < give_up,
                "cargo lambda watch never listened"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Watch { child, port }
    }

    fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/lambda-url/mcp-v8-lambda/mcp",
            self.port
        )
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

/// Cold start under `cargo lambda watch --wait`, which builds the function
/// and starts it when the first invocation arrives, as Lambda starts an
/// instance for a request. Returns the milliseconds from sending the first
/// `initialize` to its answer (the emulator, `cargo run`'s build check and
/// the function), and from the function's process appearing to that answer
/// (the function alone). The first call builds (minutes, once).
async fn watch_cold_start(env: &[(String, String)], quiet: bool) -> (f64, f64) {
    let watch = Watch::start(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), env, quiet);
    let root = watch.child.id();
    let answered_flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appeared = {
        let answered = answered_flag.clone();
        std::thread::spawn(move || function_appears(root, &answered))
    };
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":mcp::PROTOCOL,"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}});
    let started = Instant::now();
    let response = reqwest::Client::new()
        .post(watch.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("initialize under cargo lambda watch");
    let answered = Instant::now();
    answered_flag.store(true, std::sync::atomic::Ordering::SeqCst);
    let appeared = appeared.join().unwrap();
    let status = response.status();
    drop(watch);
    assert_eq!(status, 200, "initialize under cargo lambda watch");
    let appeared = appeared.expect(
        "no process named mcp-v8-lambda under cargo lambda watch (is /proc/PID/task/TID/children available?)",
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(answered - started), ms(answered - appeared))
}

/// Stores on the bench's own moto: a bucket and tables made for this run.
fn moto_env(stem: &str) -> (Vec<(String, String)>, tempfile::TempDir) {
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let dir = tempfile::tempdir().unwrap();
    let env = moto::serve_env(
        &format!("{stem}-{}", &unique[..12]),
        &format!("{stem}-{}-", &unique[..12]),
        &dir.path().join("cache"),
    );
    moto::setup(&env);
    (env, dir)
}

/// When a process running this binary first shows among the descendants of
/// `root` (polled every half millisecond; its name changes at `exec`).
/// `None` if it has not by the time `answered` is set.
fn function_appears(root: u32, answered: &std::sync::atomic::AtomicBool) -> Option<Instant> {
    fn children(pid: u32) -> Vec<u32> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten();
        tasks
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    }
    loop {
        // Read before the scan: an answer that arrives during it still
        // leaves the function running, so one more scan finds it.
        let last = answered.load(std::sync::atomic::Ordering::SeqCst);
        let mut pending = vec![root];
        while let Some(pid) = pending.pop() {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if name.trim_end() == "mcp-v8-lambda" {
                return Some(Instant::now());
            }
            pending.extend(children(pid));
        }
        if last {
            return None;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// A think-time scenario against `--server` as a standard Lambda function
/// under the test Runtime API, which freezes its process group whenever the
/// runtime and its extensions wait for the next event (stores on moto, with
/// `--latency-ms` before every AWS request). Prints the client's wait (event
/// given to answer posted) and the post-response phase (answer to the
/// extensions' next `next`, what Lambda bills past the answer).
async fn frozen_think_time(args: &Args, scenario: Scenario) {
    use std::os::unix::process::CommandExt;
    let Scenario::Think(objects) = scenario else {
        return;
    };
    let (env, _dir) = moto_env("frozen");
    let proxy = delay_proxy::DelayProxy::start(&moto::moto().endpoint).await;
    proxy.latency(args.latency);
    let mut api = runtime_api::RuntimeApi::start().await;
    let mut child = Command::new(&args.server)
        .envs(env.iter().cloned())
        .envs(api.function_env())
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            args.memory_mb.to_string(),
        )
        .env("AWS_ENDPOINT_URL", &proxy.endpoint)
        .env("RUST_LOG", "warn")
        .envs(
            args.max_concurrency
                .map(|n| ("AWS_LAMBDA_MAX_CONCURRENCY", n.to_string())),
        )
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("starting the Lambda entry");
    if args.freeze {
        api.freeze(child.id());
    }
    let session = format!("frozen-{}", uuid::Uuid::new_v4().simple());
    // Each event is given (the request) a pause after the answer before
    // it, as an agent sends its next call; an environment still in its
    // post-response phase takes it only once that phase is over, and the
    // client's wait includes that.
    let event = |code: &str, heap: Option<&str>| {
        let mut arguments = json!({"code": code, "session": session});
        if let Some(heap) = heap {
            arguments["heap"] = json!(heap);
        }
        frozen_event(arguments)
    };
    let load = format!(
        "globalThis.items = Array.from({{length: {objects}}}, (_, i) => ({{i, s: 'item' + i}})); globalThis.n = 0; n"
    );
    let mut id = api.give(event(&load, None));
    let mut answered = api.answer(Duration::from_secs(120)).await.at;
    let (mut waits, mut phases) = (Vec::new(), Vec::new());
    for i in 1..=(2 + args.think_calls) {
        tokio::time::sleep_until((answered + args.pause).into()).await;
        let next = api.give(event("n += 1; n", Some("latest")));
        let given = Instant::now();
        let answer = api.answer(Duration::from_secs(120)).await;
        assert_eq!(answer.request_id, next);
        let response: Value = serde_json::from_str(&answer.body).unwrap();
        let body: Value = serde_json::from_str(response["body"].as_str().unwrap_or("{}")).unwrap();
        let result = body["result"]["structuredContent"]["result"].clone();
        assert_eq!(result, json!(i.to_string()), "call {i} continued the state");
        if i > 2 {
            waits.push((answer.at - given).as_secs_f64() * 1000.0);
        }
        // The phase after the call before, over by now (a Managed Instance
        // has none: it registers no extension).
        if args.max_concurrency.is_none() {
            let over = api.phase_over(&id, Duration::from_secs(120)).await;
            if i > 2 {
                phases.push(over.saturating_duration_since(answered).as_secs_f64() * 1000.0);
            }
        }
        (id, answered) = (next, answer.at);
    }
    let mut sorted = waits.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted
        .get((sorted.len() * 9).div_ceil(10).saturating_sub(1))
        .copied()
        .unwrap_or_default();
    println!(
        "| {} | Lambda{}, +{} ms per AWS request | client waits p50 {:.1} ms, p90 {p90:.1} (max {:.1}) | post-response p50 {:.1} ms (max {:.1}) | {} calls, {} s pauses, {} freezes |",
        scenario.name(),
        match args.max_concurrency {
            Some(n) => format!(" Managed Instance (AWS_LAMBDA_MAX_CONCURRENCY={n})"),
            None if args.freeze => ", frozen between calls".to_owned(),
            None => ", never frozen".to_owned(),
        },
        args.latency.as_millis(),
        median(waits.clone()),
        waits.iter().cloned().fold(0.0, f64::max),
        median(phases.clone()),
        phases.iter().cloned().fold(0.0, f64::max),
        waits.len(),
        args.pause.as_secs_f64(),
        api.freezes(),
    );
    drop(api);
    // SAFETY: kill(2) on the process group started above.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
}

/// A 2026-07-28 `run_js` function URL event with `arguments`, signed by an
/// IAM caller as a function URL with `AuthType: AWS_IAM` delivers it.
fn frozen_event(arguments: Value) -> String {
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/run-js-2026.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["params"]["arguments"] = arguments;
    event["body"] = body.to_string().into();
    event.to_string()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::main]
pub(crate) async fn main() {
    let args = args();
    let named = |s: Scenario| {
        args.only
            .as_ref()
            .is_some_and(|only| only.iter().any(|o| o == s.name()))
    };
    let wanted = |s: Scenario| args.only.is_none() || named(s);
    println!(
        "| scenario | server | clients | calls | p50 ms | p95 ms | p99 ms | calls/s |\n|---|---|---|---|---|---|---|---|"
    );
    if args.lambda_frozen {
        for scenario in Scenario::THINK.into_iter().filter(|s| wanted(*s)) {
            frozen_think_time(&args, scenario).await;
        }
        return;
    }
    if let Some(project) = &args.lambda_watch {
        let (env, _dir) = moto_env("think");
        eprintln!(
            "building {} under cargo lambda watch (minutes the first time)",
            project.display()
        );
        let watch = Watch::start(project, &env, false);
        for scenario in Scenario::THINK.into_iter().filter(|s| wanted(*s)) {
            let figures = measure(
                &watch.url(),
                scenario,
                args.clients,
                args.think_calls,
                (args.pause, args.think_limit_mb),
            )
            .await;
            row(scenario, "cargo lambda watch", args.clients, &figures);
        }
        return;
    }
    let mut ratios = Vec::new();
    let stateless = start_serve(&args.server, true);
    let stateful = start_serve(&args.server, false);
    let reference = args.reference.then(start_reference);
    let scenarios = Scenario::ALL
        .into_iter()
        .filter(|s| wanted(*s))
        .chain(Scenario::THINK.into_iter().filter(|s| named(*s)));
    for scenario in scenarios {
        let calls = match scenario {
            Scenario::Think(_) => args.think_calls,
            _ => scenario.calls(args.calls),
        };
        let ours_url = if scenario == Scenario::Stateless {
            &stateless.url
        } else {
            &stateful.url
        };
        let ours = measure(
            ours_url,
            scenario,
            args.clients,
            calls,
            (args.pause, args.think_limit_mb),
        )
        .await;
        row(scenario, "mcp-v8-lambda", args.clients, &ours);
        if let (Some(reference), Scenario::Stateless | Scenario::List) = (&reference, scenario) {
            let theirs = measure(
                &reference.url,
                scenario,
                args.clients,
                calls,
                (args.pause, None),
            )
            .await;
            row(scenario, "node:vm reference", args.clients, &theirs);
            ratios.push((
                scenario,
                ours.percentile_ms(0.5) / theirs.percentile_ms(0.5),
            ));
        }
    }
    for (scenario, ratio) in ratios {
        println!("p50 ratio ours/reference, {}: {ratio:.2}", scenario.name());
    }
    drop((stateless, stateful, reference));

    if args.cold_start {
        let mut serve = Vec::new();
        for _ in 0..5 {
            serve.push(serve_cold_start(&args.server).await);
        }
        println!(
            "cold start, serve (spawn to first initialize answer), median of 5: {:.1} ms ({serve:.1?})",
            median(serve.clone())
        );
        let (env, _dir) = moto_env("cold");
        let mut lambda = Vec::new();
        for _ in 0..5 {
            lambda.push(lambda_cold_start(&args.server, &env, "initialize").await);
        }
        println!(
            "cold start, Lambda entry (spawn to first invocation response, stores on moto), median of 5: {:.1} ms ({lambda:.1?})",
            median(lambda.clone())
        );
        let mut first_run = Vec::new();
        for _ in 0..5 {
            first_run.push(lambda_cold_start(&args.server, &env, "run-js-2026").await);
        }
        println!(
            "cold start, Lambda entry, to the answer of a first stateful run_js (stores on moto), median of 5: {:.1} ms ({first_run:.1?})",
            median(first_run.clone())
        );
        eprintln!(
            "cold start under cargo lambda watch: building the function (a no-op after the first time); \
             its \"Error: serving Lambda invocations\" when the bench stops the emulator is expected"
        );
        watch_cold_start(&env, false).await;
        let (mut total, mut function) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (all, own) = watch_cold_start(&env, true).await;
            total.push(all);
            function.push(own);
        }
        println!(
            "cold start under cargo lambda watch, medians of 5: first initialize sent to answer {:.1} ms ({total:.1?}); function process start to answer {:.1} ms ({function:.1?})",
            median(total.clone()),
            median(function.clone())
        );
    }
}
