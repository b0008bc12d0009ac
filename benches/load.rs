//! Load test: concurrent MCP sessions doing chained stateful runs against
//! `serve` on loopback, on the embedded store or on S3 and DynamoDB (moto),
//! for a fixed time, twice on the same server.
//!
//!     cargo bench --bench benches -- load [--store embedded|moto] [--sessions 32] [--seconds 60] [--rounds 2]
//!
//! Each session initializes (2025-11-25, its own X-MCP-Session-Id), then
//! threads a counter through heaps until the time is up. Afterwards every
//! session log is read back and must hold exactly the runs that were
//! answered, in order, each entry continuing from the one before. Prints
//! throughput, latency percentiles and the server's RSS after each round and
//! its peak; exits non-zero on any protocol error, lost or duplicated entry.
//! No timing is asserted: docs/performance.md records the figures.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp;
use crate::moto;
use crate::net;

struct Args {
    store: String,
    sessions: usize,
    seconds: u64,
    rounds: usize,
}

fn args() -> Args {
    let mut args = Args {
        store: "embedded".into(),
        sessions: 32,
        seconds: 60,
        rounds: 2,
    };
    let mut it = crate::args();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--store" => args.store = it.next().expect("--store embedded|moto"),
            "--sessions" => {
                args.sessions = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--sessions N")
            }
            "--seconds" => {
                args.seconds = it.next().and_then(|v| v.parse().ok()).expect("--seconds N")
            }
            "--rounds" => args.rounds = it.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            // cargo bench passes --bench.
            _ => {}
        }
    }
    args
}

struct Serve {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(store: &str) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let port = net::free_port();
    let mut env: Vec<(String, String)> = Vec::new();
    if store == "moto" {
        let unique = uuid::Uuid::new_v4().simple().to_string();
        env = moto::serve_env(
            &format!("load-{}", &unique[..12]),
            &format!("load-{}-", &unique[..12]),
            &dir.path().join("cache"),
        );
        moto::setup(&env);
    } else {
        assert_eq!(store, "embedded", "--store embedded|moto");
    }
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path().join("data"))
        .envs(env)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    net::wait_listening(port, "serve", Duration::from_secs(30));
    Serve {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        _dir: dir,
    }
}

/// `VmRSS` and `VmHWM` (peak) of a process and its children (serve's engine
/// workers), in MiB; the peak is the sum of each process's own peak.
fn rss_mib(pid: u32) -> (u64, u64) {
    let mut pids = vec![pid];
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pids.extend(
                children
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    let mut rss_kb = 0;
    let mut peak_kb = 0;
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
                .unwrap_or(0)
        };
        rss_kb += field("VmRSS:");
        peak_kb += field("VmHWM:");
    }
    (rss_kb / 1024, peak_kb / 1024)
}

struct Client {
    session: mcp::Session,
    name: String,
    heap: Option<String>,
    /// Heaps of the answered runs, in order.
    heaps: Vec<String>,
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    protocol_errors: Vec<String>,
}

impl Client {
    async fn connect(url: &str, name: String) -> Client {
        Client {
            session: mcp::Session::connect(url, &name, "load").await,
            name,
            heap: None,
            heaps: Vec::new(),
        }
    }

    async fn run_until(&mut self, deadline: Instant, tally: &mut Tally) {
        while Instant::now() < deadline {
            let mut arguments = json!({"code": "globalThis.n = (globalThis.n ?? 0) + 1; n"});
            if let Some(heap) = &self.heap {
                arguments["heap"] = json!(heap);
            }
            let started = Instant::now();
            let outcome = self
                .session
                .send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                    "params":{"name":"run_js","arguments":arguments}}))
                .await;
            tally
                .latencies_us
                .push(started.elapsed().as_micros() as u64);
            match outcome {
                Ok(result) if result["isError"] == false => {
                    let outcome = &result["structuredContent"];
                    let expected = (self.heaps.len() + 1).to_string();
                    if outcome["result"] != expected.as_str() {
                        tally.protocol_errors.push(format!(
                            "{}: counter {} != {expected}",
                            self.name, outcome["result"]
                        ));
                    }
                    let heap = outcome["heap"].as_str().unwrap().to_owned();
                    self.heaps.push(heap.clone());
                    self.heap = Some(heap);
                }
                Ok(result) => tally
                    .protocol_errors
                    .push(format!("{}: {result}", self.name)),
                Err(e) => tally.protocol_errors.push(format!("{}: {e}", self.name)),
            }
        }
    }

    /// Lost, duplicated or out-of-order log entries of this session.
    async fn log_problems(&self) -> Vec<String> {
        let mut entries = Vec::new();
        loop {
            let page = self
                .session
                .send(
                    json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
                    "name":"list_session_snapshots",
                    "arguments":{"fields":"index,input_heap,output_heap","offset":entries.len()}}}),
                )
                .await
                .expect("reading the log");
            let content = &page["structuredContent"];
            entries.extend(content["entries"].as_array().unwrap().iter().cloned());
            if content["next_offset"].is_null() {
                break;
            }
        }
        let mut problems = Vec::new();
        if entries.len() != self.heaps.len() {
            problems.push(format!(
                "{}: {} runs answered, {} logged",
                self.name,
                self.heaps.len(),
                entries.len()
            ));
        }
        for (i, (entry, heap)) in entries.iter().zip(&self.heaps).enumerate() {
            let input = if i == 0 {
                Value::Null
            } else {
                json!(self.heaps[i - 1])
            };
            if entry["index"] != i as u64
                || entry["output_heap"] != heap.as_str()
                || entry["input_heap"] != input
            {
                problems.push(format!("{}: entry {i} is {entry}", self.name));
                break;
            }
        }
        problems
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at] as f64 / 1000.0
}

async fn round(url: &str, sessions: &mut Vec<Client>, seconds: u64) -> Tally {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let handles: Vec<_> = std::mem::take(sessions)
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut tally = Tally::default();
                client.run_until(deadline, &mut tally).await;
                (client, tally)
            })
        })
        .collect();
    let mut total = Tally::default();
    for handle in handles {
        let (client, tally) = handle.await.unwrap();
        total.latencies_us.extend(tally.latencies_us);
        total.protocol_errors.extend(tally.protocol_errors);
        sessions.push(client);
    }
    let _ = url;
    total
}

#[tokio::main]
pub(crate) async fn main() {
    let args = args();
    let serve = start(&args.store);
    let pid = serve.child.id();
    let mut sessions = Vec::new();
    for i in 0..args.sessions {
        sessions.push(Client::connect(&serve.url, format!("load-{i}")).await);
    }
    println!(
        "load: {} sessions, {} s per round, store {}, serve pid {pid}",
        args.sessions, args.seconds, args.store
    );
    let mut failed = false;
    let mut rss_after = Vec::new();
    for round_no in 1..=args.rounds.max(2) {
        let started = Instant::now();
        let mut tally = round(&serve.url, &mut sessions, args.seconds).await;
        let elapsed = started.elapsed().as_secs_f64();
        tally.latencies_us.sort_unstable();
        let runs = tally.latencies_us.len();
        let (rss, peak) = rss_mib(pid);
        rss_after.push(rss);
        println!(
            "round {round_no}: {runs} runs in {elapsed:.1} s = {:.1} runs/s; latency ms p50 {:.1} p95 {:.1} p99 {:.1}; \
             protocol errors {}; serve RSS (with workers) {rss} MiB (peak {peak} MiB)",
            runs as f64 / elapsed,
            percentile(&tally.latencies_us, 0.50),
            percentile(&tally.latencies_us, 0.95),
            percentile(&tally.latencies_us, 0.99),
            tally.protocol_errors.len(),
        );
        for error in tally.protocol_errors.iter().take(5) {
            println!("  protocol error: {error}");
        }
        failed |= !tally.protocol_errors.is_empty();
    }
    let mut problems = Vec::new();
    for client in &sessions {
        problems.extend(client.log_problems().await);
    }
    let logged: usize = sessions.iter().map(|c| c.heaps.len()).sum();
    println!(
        "logs: {logged} entries checked across {} sessions; {} lost, duplicated or out of order; \
         RSS after each round: {rss_after:?} MiB",
        sessions.len(),
        problems.len(),
    );
    for problem in problems.iter().take(5) {
        println!("  {problem}");
    }
    failed |= !problems.is_empty();
    drop(serve);
    if failed {
        std::process::exit(1);
    }
}
