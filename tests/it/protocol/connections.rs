//! `serve`'s listener sheds what does not finish (src/transport/listen.rs):
//! headers sent slowly, a body sent slowly and idle kept-alive connections
//! are closed after their bounds, and past its connection cap a newcomer
//! takes the place of the connection that has waited longest, so slow
//! clients lock no one out (src/transport/shedding.rs).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::process::Serve;

/// Reads until the server closes the connection (or `limit` passes, which
/// fails the test): what it sent before closing.
fn until_closed(mut tcp: TcpStream, limit: Duration) -> String {
    tcp.set_read_timeout(Some(limit)).unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return String::from_utf8_lossy(&got).into_owned(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return String::from_utf8_lossy(&got).into_owned();
            }
            Err(e) => panic!(
                "the connection was still open after {:?} ({e}); read: {}",
                started.elapsed(),
                String::from_utf8_lossy(&got)
            ),
        }
    }
}

fn connect(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port)).unwrap()
}

const SHORT: &[(&str, &str)] = &[
    ("MCP_V8_HTTP_HEADER_TIMEOUT_MS", "500"),
    ("MCP_V8_HTTP_BODY_TIMEOUT_MS", "500"),
];

#[test]
fn slow_headers_slow_bodies_and_idle_connections_are_closed() {
    let server = Serve::start(&["--stateless"], SHORT);
    // Ten times the 500 ms asked for, and half the 10 s defaults: only the
    // settings in SHORT can close a connection this soon.
    let limit = Duration::from_secs(5);

    let mut headers = connect(server.port);
    headers
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
        .unwrap();
    until_closed(headers, limit);

    let mut body = connect(server.port);
    body.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .unwrap();
    let answered = until_closed(body, limit);
    assert!(
        answered.is_empty() || answered.starts_with("HTTP/1.1 4"),
        "a half-sent body gets no success: {answered}"
    );

    let mut idle = connect(server.port);
    idle.write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let answered = until_closed(idle, limit);
    assert!(
        answered.starts_with("HTTP/1.1 "),
        "answered, then closed: {answered}"
    );
}

/// `serve --stateless` under a descriptor limit of 256, its log in a file.
struct Limited {
    child: std::process::Child,
    port: u16,
    log: tempfile::NamedTempFile,
    _dir: tempfile::TempDir,
}

impl Limited {
    fn start(env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = tempfile::NamedTempFile::new().unwrap();
        let port = crate::common::net::free_port();
        let binary = env!("CARGO_BIN_EXE_mcp-v8-lambda");
        let child = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -n 256 && exec {binary} serve --stateless --port {port} --data-dir {}",
                dir.path().display()
            ))
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
        Self {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    /// 300 connections that each send `start` and then nothing more.
    fn flood(&self, start: &[u8]) -> Vec<TcpStream> {
        (0..300)
            .map(|_| {
                let mut tcp = connect(self.port);
                tcp.write_all(start).unwrap();
                tcp
            })
            .collect()
    }

    /// `6 * 7` over a new connection, five times, each answered while the
    /// flood holds: long before its connections' own bounds (a minute)
    /// could have shed them. The client gives each call 10 s only so that
    /// a failure says so rather than hanging; what was measured is printed.
    async fn answered_every_time(&self) {
        for attempt in 1..=5 {
            let started = Instant::now();
            let answer =
                tokio::time::timeout(Duration::from_secs(10), six_times_seven(self.port)).await;
            println!("call {attempt} during the flood: {:?}", started.elapsed());
            assert_eq!(
                answer.ok().flatten().as_deref(),
                Some("42"),
                "call {attempt} during the flood was not served"
            );
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap()
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Bounds a flood would otherwise rely on: a minute for headers and bodies.
const PATIENT: &[(&str, &str)] = &[
    ("MCP_V8_HTTP_HEADER_TIMEOUT_MS", "60000"),
    ("MCP_V8_HTTP_BODY_TIMEOUT_MS", "60000"),
];

/// 300 connections that send half a request line, against a process with
/// 256 file descriptors: every new client is served at once (the flood's
/// oldest connections give way), and a run streaming its progress through
/// the flood is never the one closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_half_sent_request_lines_locks_no_one_out_and_closes_no_served_stream() {
    let server = Limited::start(PATIENT);
    let port = server.port;
    let (progressed_tx, progressed) = tokio::sync::oneshot::channel();
    let long = tokio::spawn(streamed_run(port, progressed_tx));
    tokio::time::timeout(Duration::from_secs(20), progressed)
        .await
        .expect("the long run reported progress")
        .unwrap();
    let slow = server.flood(b"POST /mcp HT");
    server.answered_every_time().await;
    let last = tokio::time::timeout(Duration::from_secs(30), long)
        .await
        .expect("the long run finished")
        .unwrap();
    assert_eq!(
        last["result"]["structuredContent"]["result"], "\"done\"",
        "the streamed run survived the flood: {last}"
    );
    drop(slow);
    let log = server.log();
    assert!(
        log.contains("connections_shed_total"),
        "the shed connections are counted in the log: {log}"
    );
}

/// The same with 300 connections that sent their headers and part of their
/// body, one address allowed the whole cap: the newcomer takes the place of
/// the longest-waiting connection, not a 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_half_sent_bodies_locks_no_one_out() {
    let mut env = PATIENT.to_vec();
    env.push(("MCP_V8_MAX_WAITING_PER_ADDRESS", "1000"));
    let server = Limited::start(&env);
    let slow = server.flood(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    );
    server.answered_every_time().await;
    drop(slow);
}

/// A 2026-07-28 `run_js` that keeps its isolate busy for 4 s with a
/// progress token: says when its first progress event arrived, and gives
/// its last message.
async fn streamed_run(
    port: u16,
    progressed: tokio::sync::oneshot::Sender<()>,
) -> serde_json::Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "run_js",
        "arguments": {"code": "const t = Date.now(); while (Date.now() - t < 4000) {} 'done'"},
        "_meta": {
            "progressToken": "long",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
        }
    }});
    let mut response = run_js_request(port, &body).send().await.unwrap();
    let mut progressed = Some(progressed);
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.expect("the stream stays open") {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if text.contains("notifications/progress")
            && let Some(progressed) = progressed.take()
        {
            let _ = progressed.send(());
        }
    }
    let last = text
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .last()
        .unwrap_or_else(|| panic!("no events: {text}"));
    serde_json::from_str(last).unwrap()
}

/// `6 * 7` through `run_js` as a 2026-07-28 call; `None` when the server
/// refused or did not answer with a result.
async fn six_times_seven(port: u16) -> Option<String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_js", "arguments": {"code": "6 * 7"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
        }
    }});
    let answered = async {
        let response = run_js_request(port, &body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        serde_json::from_str::<serde_json::Value>(&text).map_err(|_| format!("{status}: {text}"))
    };
    match answered.await {
        Ok(answer) => {
            let result = answer["result"]["structuredContent"]["result"].as_str();
            if result.is_none() {
                println!("answered without a result: {answer}");
            }
            result.map(str::to_owned)
        }
        Err(why) => {
            println!("not answered: {why}");
            None
        }
    }
}

/// A 2026-07-28 `tools/call` of `run_js` with `body`, over a new client
/// (so a new connection).
fn run_js_request(port: u16, body: &serde_json::Value) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_js")
        .body(body.to_string())
}
