//! What code mode adds to one upstream tool call on loopback: `cargo bench
//! --bench benches -- code_mode [--runs N] [--python PATH]`.
//!
//! Starts tests/upstream/server.py (under `.venv-mcp2`, the 2026-07-28
//! server; scripts/install-test-deps.sh makes it) and interleaves three
//! series, so the VM's drift hits them alike: a run whose code awaits one
//! `mcp.up.add(…)`; the same run shape without the call (`await
//! Promise.resolve(…)`); the same call made directly by an rmcp client of
//! its own. What code mode adds is the first p50 minus the other two. Both
//! on an isolate made for each run (the engine's default) and on warm
//! isolates (`serve` and Lambda keep them for stateless runs).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};
use mcp_v8_lambda::upstream::UpstreamConfig;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

#[cfg(feature = "mimalloc")]
const TOKEN: &str = "bench-token";

fn p50(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

fn arg(name: &str) -> Option<String> {
    crate::args().skip_while(|a| a != name).nth(1)
}

pub(crate) fn main() {
    let runs: usize = arg("--runs").and_then(|n| n.parse().ok()).unwrap_or(300);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python =
        arg("--python").unwrap_or_else(|| root.join(".venv-mcp2/bin/python").display().to_string());
    let mut upstream = Command::new(&python)
        .arg(root.join("tests/upstream/server.py"))
        .arg(TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{python}: {e} (run scripts/install-test-deps.sh)"));
    let mut lines = BufReader::new(upstream.stdout.take().unwrap()).lines();
    let first: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    // The server prints a line per request; keep its pipe drained.
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    let url = format!("http://127.0.0.1:{}/mcp", first["port"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let servers = serde_json::json!({"up": {"url": url, "headers": {"Authorization": format!("Bearer {TOKEN}")}}});
    let mut mcp = UpstreamConfig::off();
    mcp.servers = UpstreamConfig::parse_servers(&servers.to_string(), None).unwrap();
    let engine_with = |warm_isolates: usize| {
        Engine::new(
            EngineConfig {
                capabilities: mcp_v8_lambda::engine::CapabilitySettings {
                    mcp: mcp.clone(),
                    ..Default::default()
                },
                warm_isolates,
                ..EngineConfig::in_process()
            },
            None,
        )
    };
    let direct_client = runtime.block_on(async {
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let client = reqwest_013::Client::builder()
            .no_proxy()
            .default_headers(headers)
            .build()
            .unwrap();
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url.as_str()),
        );
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("bench", "1"),
        );
        info.serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap()
    });
    let with_call = "(await mcp.up.add({ a: 1, b: 2 })).sum";
    let without = "(await Promise.resolve({ sum: 3 })).sum";
    let run = |engine: &Engine, code: &str| {
        let started = Instant::now();
        let out = runtime
            .block_on(engine.run(RunRequest {
                code: code.to_owned(),
                ..Default::default()
            }))
            .unwrap()
            .outcome;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        assert_eq!(out.result.as_deref(), Some("3"), "{out:?}");
        started.elapsed()
    };
    let direct = || {
        let started = Instant::now();
        let result = runtime.block_on(async {
            let mut args = serde_json::Map::new();
            args.insert("a".into(), 1.into());
            args.insert("b".into(), 2.into());
            direct_client
                .call_tool(CallToolRequestParams::new("add").with_arguments(args))
                .await
                .unwrap()
        });
        assert_eq!(
            result.structured_content,
            Some(serde_json::json!({"sum": 3}))
        );
        started.elapsed()
    };
    println!("| isolate | with mcp call | without | direct rmcp call | code mode's own cost |");
    println!("|---|---|---|---|---|");
    for (label, warm) in [("made for the run", 0), ("warm", 2)] {
        let engine = engine_with(warm);
        // Warm-up: the connection, the family's code cache, the allocator.
        for _ in 0..20 {
            run(&engine, with_call);
            run(&engine, without);
            direct();
        }
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            a.push(run(&engine, with_call));
            b.push(run(&engine, without));
            c.push(direct());
        }
        let (a, b, c) = (p50(a), p50(b), p50(c));
        println!(
            "| {label} | {a:.2} | {b:.2} | {c:.2} | **{:.2} ms** |",
            a - b - c
        );
    }
    let _ = upstream.kill();
    let _ = upstream.wait();
}
