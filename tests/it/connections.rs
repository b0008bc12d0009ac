//! `serve`'s listener sheds what does not finish (src/transport/listen.rs):
//! headers sent slowly, a body sent slowly and idle kept-alive connections
//! are closed after their bounds, and past its connection cap a process
//! answers 503 at once instead of letting slow clients lock others out.

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
    let limit = Duration::from_secs(10);

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

/// 300 connections that send half a request, against a process with 256
/// file descriptors: a client that comes meanwhile is answered at once (503
/// while the slow ones hold the cap), and served once they are shed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_past_the_descriptor_limit_lock_no_one_out() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::common::net::free_port();
    let binary = env!("CARGO_BIN_EXE_mcp-v8-lambda");
    let mut child = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {binary} serve --stateless --port {port} --data-dir {}",
            dir.path().display()
        ))
        .env("MCP_V8_HTTP_HEADER_TIMEOUT_MS", "2000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
    let slow: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut tcp = connect(port);
            tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            tcp
        })
        .collect();
    // Answered at once, whatever the answer: never left waiting.
    let mut client = connect(port);
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    client
        .write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    client
        .read_to_string(&mut answer)
        .expect("an answer, not a wait");
    assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    if answer.starts_with("HTTP/1.1 503") {
        assert!(answer.contains("MCP_V8_MAX_CONNECTIONS"), "{answer}");
    }
    // Once the slow ones are shed, MCP is served again.
    let started = Instant::now();
    let served = loop {
        match tokio::time::timeout(Duration::from_secs(5), six_times_seven(port)).await {
            Ok(Some(answer)) if answer == "42" => break true,
            _ if started.elapsed() > Duration::from_secs(30) => break false,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    assert!(served, "served again after the slow clients were shed");
    drop(slow);
    let _ = child.kill();
    let _ = child.wait();
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
    let answer: serde_json::Value = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_js")
        .body(body.to_string())
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    answer["result"]["structuredContent"]["result"]
        .as_str()
        .map(str::to_owned)
}
