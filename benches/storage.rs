//! The storage benchmark: what a stateful run costs on S3 (moto) through
//! `serve`, in bytes stored, requests and time, for the latency model in
//! docs/performance.md ("Chunked heaps"). All AWS traffic goes through a
//! loopback proxy that counts requests and bytes by service and can add a
//! first-byte latency to each request, as S3 and DynamoDB have over a
//! network. By hand:
//!
//!     cargo bench --profile dev --bench benches -- storage [--runs 20] [--latency-ms 0] [--mbps 0] [--only small,unchanged,large,cold] [--server PATH]
//!
//! Scenarios:
//! - `small`: a counter threaded through small heaps, one run per call;
//! - `unchanged`: `1` run again and again on one small heap (each run
//!   stores a heap, V8's snapshot of the same state differing slightly);
//! - `large`: a ~5 MB heap (60k rows), each run changing one row;
//! - `cold`: the large heap restored by a new instance (empty `/tmp`
//!   cache, empty memory), three times.
//!
//! `--server` runs another build (the one before a change) on the same
//! bench. Prints Markdown rows; nothing is asserted.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::mcp;
use crate::moto;
use crate::net;

const LARGE_HEAP: &str = "globalThis.rows = Array.from({length: 60000}, (_, i) => ({id: i, name: 'row-' + i, v: i % 97})); rows.length";

struct Args {
    runs: usize,
    latency: Duration,
    /// Bytes per second a connection carries each way; 0: unlimited.
    rate: u64,
    only: Option<Vec<String>>,
    server: std::path::PathBuf,
}

fn args() -> Args {
    let mut args = Args {
        runs: 20,
        latency: Duration::ZERO,
        rate: 0,
        only: None,
        server: env!("CARGO_BIN_EXE_mcp-v8-lambda").into(),
    };
    let mut it = crate::args();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--runs" => args.runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--latency-ms" => {
                args.latency = Duration::from_millis(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--latency-ms N"),
                )
            }
            "--mbps" => {
                args.rate = it
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("--mbps N (MB/s per connection)")
                    * 1_000_000
            }
            "--only" => {
                args.only = Some(
                    it.next()
                        .expect("--only a,b")
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--server" => args.server = it.next().expect("--server PATH").into(),
            _ => {}
        }
    }
    args
}

/// Requests and bytes through the proxy, by service.
#[derive(Default)]
struct Counters {
    s3_requests: AtomicU64,
    s3_up: AtomicU64,
    s3_down: AtomicU64,
    dynamodb_requests: AtomicU64,
}

#[derive(Clone, Copy, Default, Debug)]
struct Traffic {
    s3_requests: u64,
    s3_up: u64,
    s3_down: u64,
    dynamodb_requests: u64,
}

impl Counters {
    fn now(&self) -> Traffic {
        Traffic {
            s3_requests: self.s3_requests.load(Ordering::SeqCst),
            s3_up: self.s3_up.load(Ordering::SeqCst),
            s3_down: self.s3_down.load(Ordering::SeqCst),
            dynamodb_requests: self.dynamodb_requests.load(Ordering::SeqCst),
        }
    }
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;
    fn sub(self, o: Traffic) -> Traffic {
        Traffic {
            s3_requests: self.s3_requests - o.s3_requests,
            s3_up: self.s3_up - o.s3_up,
            s3_down: self.s3_down - o.s3_down,
            dynamodb_requests: self.dynamodb_requests - o.dynamodb_requests,
        }
    }
}

/// A loopback proxy to `upstream`: each request (the first bytes after the
/// client was idle) waits `latency` before it is forwarded, and is counted
/// as S3 or DynamoDB (by its `X-Amz-Target` header).
async fn proxy(upstream: String, latency: Duration, rate: u64, counters: Arc<Counters>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = upstream.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        loop {
            let (client, _) = listener.accept().await.unwrap();
            let (upstream, counters) = (upstream.clone(), counters.clone());
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let is_s3 = Arc::new(std::sync::atomic::AtomicBool::new(true));
                let down_counters = counters.clone();
                let down_is_s3 = is_s3.clone();
                let down = tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = server_read.read(&mut buf).await {
                        if rate > 0 {
                            tokio::time::sleep(Duration::from_secs_f64(n as f64 / rate as f64))
                                .await;
                        }
                        if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        if down_is_s3.load(Ordering::SeqCst) {
                            down_counters.s3_down.fetch_add(n as u64, Ordering::SeqCst);
                        }
                    }
                });
                let mut buf = vec![0u8; 64 * 1024];
                let mut last = Instant::now() - Duration::from_secs(1);
                while let Ok(n) = client_read.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let starts = last.elapsed() > Duration::from_millis(2)
                        && (buf[..n].starts_with(b"GET ")
                            || buf[..n].starts_with(b"PUT ")
                            || buf[..n].starts_with(b"POST ")
                            || buf[..n].starts_with(b"HEAD ")
                            || buf[..n].starts_with(b"DELETE "));
                    let s3 = if starts {
                        let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                        let s3 = !head.contains("x-amz-target: dynamodb");
                        is_s3.store(s3, Ordering::SeqCst);
                        if s3 {
                            counters.s3_requests.fetch_add(1, Ordering::SeqCst);
                        } else {
                            counters.dynamodb_requests.fetch_add(1, Ordering::SeqCst);
                        }
                        if !latency.is_zero() {
                            tokio::time::sleep(latency).await;
                        }
                        s3
                    } else {
                        is_s3.load(Ordering::SeqCst)
                    };
                    if s3 {
                        counters.s3_up.fetch_add(n as u64, Ordering::SeqCst);
                    }
                    if rate > 0 {
                        tokio::time::sleep(Duration::from_secs_f64(n as f64 / rate as f64)).await;
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    last = Instant::now();
                }
                down.abort();
            });
        }
    });
    port
}

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `serve` on the bucket and tables of `env`, with a `/tmp`-like cache
/// and data directory of its own: a new instance.
fn start_serve(server: &std::path::Path, env: &[(String, String)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = net::free_port();
    let child = Command::new(server)
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path().join("data"))
        .envs(env.iter().cloned())
        .env("MCP_V8_HEAP_CACHE_DIR", dir.path().join("cache"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("starting serve");
    net::wait_listening(port, "server", Duration::from_secs(60));
    Server {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        _dir: dir,
    }
}

async fn run_js(session: &mcp::Session, code: &str, heap: Option<&str>) -> String {
    let mut arguments = json!({ "code": code });
    if let Some(heap) = heap {
        arguments["heap"] = json!(heap);
    }
    let result: Value = session
        .send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_js","arguments":arguments}}))
        .await
        .expect("run_js");
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"]["heap"]
        .as_str()
        .unwrap_or_else(|| panic!("no heap in {result}"))
        .to_owned()
}

/// Bytes and objects in the bucket.
async fn stored(s3: &aws_sdk_s3::Client, bucket: &str) -> (u64, u64) {
    let (mut bytes, mut objects) = (0, 0);
    let mut pages = s3.list_objects_v2().bucket(bucket).into_paginator().send();
    while let Some(page) = pages.next().await {
        for object in page.unwrap().contents() {
            bytes += object.size().unwrap_or(0) as u64;
            objects += 1;
        }
    }
    (bytes, objects)
}

fn p50(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    ms[ms.len() / 2]
}

/// Runs `code` `runs` times chained from `heap`: p50 ms, stored bytes and
/// traffic per run.
async fn chained(
    session: &mcp::Session,
    mut heap: String,
    code: &str,
    runs: usize,
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    counters: &Counters,
) -> (f64, f64, Traffic, String) {
    let (bytes_before, _) = stored(s3, bucket).await;
    let traffic_before = counters.now();
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        heap = run_js(session, code, Some(&heap)).await;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let traffic = counters.now() - traffic_before;
    let (bytes_after, _) = stored(s3, bucket).await;
    (
        p50(times),
        (bytes_after - bytes_before) as f64 / runs as f64,
        traffic,
        heap,
    )
}

fn row(name: &str, p50_ms: f64, bytes: f64, traffic: Traffic, runs: usize) {
    let per = |n: u64| n as f64 / runs as f64;
    println!(
        "| {name} | {p50_ms:.1} | {:.0} | {:.1} | {:.0} | {:.0} | {:.1} |",
        bytes / 1000.0,
        per(traffic.s3_requests),
        per(traffic.s3_up) / 1000.0,
        per(traffic.s3_down) / 1000.0,
        per(traffic.dynamodb_requests),
    );
}

#[tokio::main]
pub(crate) async fn main() {
    let args = args();
    let wanted = |name: &str| {
        args.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|n| n == name))
    };
    let counters = Arc::new(Counters::default());
    let port = proxy(
        moto::moto().endpoint.clone(),
        args.latency,
        args.rate,
        counters.clone(),
    )
    .await;
    let bucket = moto::unique("storage");
    let tables = format!("{}-", moto::unique("storage"));
    let cache = tempfile::tempdir().unwrap();
    let mut env = moto::serve_env(&bucket, &tables, cache.path());
    moto::setup(&env);
    for (name, value) in &mut env {
        if name == "AWS_ENDPOINT_URL" {
            *value = format!("http://127.0.0.1:{port}");
        }
    }
    let (s3, _) = moto::clients().await;
    println!(
        "server {}, {} runs, added latency {} ms per request, {} MB/s per connection (0: unlimited)",
        args.server.display(),
        args.runs,
        args.latency.as_millis(),
        args.rate / 1_000_000
    );
    println!(
        "| scenario | p50 ms | stored KB/run | S3 requests/run | S3 KB up/run | S3 KB down/run | DynamoDB requests/run |"
    );
    println!("|---|---|---|---|---|---|---|");
    let server = start_serve(&args.server, &env);
    let session = mcp::Session::connect(&server.url, "storage-bench", "bench").await;
    if wanted("small") {
        let heap = run_js(&session, "globalThis.n = 0; n", None).await;
        let (ms, bytes, traffic, _) = chained(
            &session,
            heap,
            "n += 1; n",
            args.runs,
            &s3,
            &bucket,
            &counters,
        )
        .await;
        row("small chained", ms, bytes, traffic, args.runs);
    }
    if wanted("unchanged") {
        let heap = run_js(&session, "globalThis.n = 0; n", None).await;
        let (bytes_before, _) = stored(&s3, &bucket).await;
        let traffic_before = counters.now();
        let mut times = Vec::new();
        for _ in 0..args.runs {
            let start = Instant::now();
            run_js(&session, "1", Some(&heap)).await;
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let traffic = counters.now() - traffic_before;
        let (bytes_after, _) = stored(&s3, &bucket).await;
        row(
            "`1` again on one small heap",
            p50(times),
            (bytes_after - bytes_before) as f64 / args.runs as f64,
            traffic,
            args.runs,
        );
    }
    let mut large = None;
    if wanted("large") || wanted("cold") {
        let heap = run_js(&session, LARGE_HEAP, None).await;
        let (ms, bytes, traffic, heap) = chained(
            &session,
            heap,
            "rows[Math.floor(Math.random() * rows.length)].v++; 1",
            args.runs,
            &s3,
            &bucket,
            &counters,
        )
        .await;
        if wanted("large") {
            row("5 MB heap, one row changed", ms, bytes, traffic, args.runs);
        }
        large = Some(heap);
    }
    drop(session);
    drop(server);
    if let (true, Some(heap)) = (wanted("cold"), large) {
        let mut times = Vec::new();
        let before = counters.now();
        for _ in 0..3 {
            let server = start_serve(&args.server, &env);
            let session = mcp::Session::connect(&server.url, "storage-cold", "bench").await;
            let start = Instant::now();
            run_js(&session, "rows.length", Some(&heap)).await;
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let traffic = counters.now() - before;
        row("cold restore of the 5 MB heap", p50(times), 0.0, traffic, 3);
    }
}
