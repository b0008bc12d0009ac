//! What `fetch` adds to a small loopback GET: `cargo bench --bench benches -- fetch
//! [--runs N]`.
//!
//! Three series, interleaved so the VM's drift hits them alike: a run whose
//! code awaits one `fetch` and reads its text; the same run shape without
//! the request (`await Promise.resolve(…)`); the request made directly with
//! reqwest. What fetch adds is the first p50 minus the other two. Both on
//! an isolate made for each run (the engine's default) and on warm
//! isolates (`serve` and Lambda keep them for stateless runs).

use std::time::{Duration, Instant};

use mcp_v8_lambda::egress::FetchConfig;
use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};

#[cfg(feature = "mimalloc")]
fn p50(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

pub(crate) fn main() {
    let runs: usize = crate::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let address = runtime.block_on(async {
        let app = axum::Router::new().route(
            "/small",
            axum::routing::get(|| async { "hello from loopback" }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        address
    });
    let url = format!("http://{address}/small");
    let engine_with = |warm_isolates: usize| {
        Engine::new(
            EngineConfig {
                fetch: FetchConfig {
                    allow: vec![format!("http://{address}")],
                    ..FetchConfig::off()
                },
                warm_isolates,
                ..EngineConfig::in_process()
            },
            None,
        )
    };
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let with_fetch = format!("await (await fetch({url:?})).text()");
    let without = "await Promise.resolve('hello from loopback')".to_owned();
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
        started.elapsed()
    };
    let direct = || {
        let started = Instant::now();
        let text = runtime
            .block_on(async { client.get(&url).send().await.unwrap().text().await.unwrap() });
        assert_eq!(text, "hello from loopback");
        started.elapsed()
    };
    for (name, warm) in [("isolate per run", 0), ("warm isolate", 1)] {
        let engine = engine_with(warm);
        for _ in 0..20 {
            run(&engine, &with_fetch);
            run(&engine, &without);
            direct();
        }
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            a.push(run(&engine, &with_fetch));
            b.push(run(&engine, &without));
            c.push(direct());
        }
        let (a, b, c) = (p50(a), p50(b), p50(c));
        println!("\n### {name}\n\n| series | p50 ms |\n|---|---|");
        println!("| run with one fetch | {a:.3} |");
        println!("| the same run without it | {b:.3} |");
        println!("| the GET with reqwest directly | {c:.3} |");
        println!(
            "| fetch's own cost (first − second − third) | {:.3} |",
            a - b - c
        );
    }
}
