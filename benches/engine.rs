//! Engine benchmark: `cargo bench --bench benches -- engine [--quick |
//! --prelude | --files]`.
//!
//! Prints one markdown table per `FunctionCodeHandling` mode with latency
//! percentiles of each scenario and the stored snapshot sizes; the figures in
//! docs/performance.md come from here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{
    CodeHandling, Engine, EngineConfig, RunOutcome, RunRequest, RunStatus,
};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;

// The binary's allocator (src/main.rs), so the figures are the server's.
#[cfg(feature = "mimalloc")]
struct Bench {
    engine: Engine,
    store: FileHeapStore,
    runtime: tokio::runtime::Runtime,
}

impl Bench {
    fn run(&self, code: &str, heap: Option<&HeapKey>, stateful: bool) -> RunOutcome {
        let request = RunRequest {
            code: code.to_owned(),
            heap: heap.cloned(),
            stateful,
            ..Default::default()
        };
        let out = self
            .runtime
            .block_on(self.engine.run(request))
            .expect("accepted")
            .outcome;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        out
    }

    fn stored_size(&self, key: &HeapKey) -> u64 {
        std::fs::metadata(self.store.path_of(&Tenant::anonymous(), key))
            .expect("stored")
            .len()
    }
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{:.2} | {:.2} | {:.2} | {}",
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(0.99)),
        samples.len()
    )
}

fn time<F: FnMut()>(iterations: usize, mut f: F) -> Vec<Duration> {
    f(); // warm-up
    (0..iterations)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect()
}

const BIG_HEAP: &str = "globalThis.big = Array.from({ length: 120000 }, (_, i) => ({ i, s: 'item-' + i, t: [i, i * 2] })); big.length";
const CALL_AFTER_RESTORE: &str =
    "globalThis.fib = function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) }; fib(20)";

/// What an agent's awaiting run looks like: declarations, a loop, a
/// try/catch and a last expression.
const AWAITING: &str = "const items = await Promise.resolve([1, 2, 3]);\n\
let total = 0;\nfor (const item of items) { total += item }\n\
function describe(n) { return `total ${n}` }\n\
try { await Promise.resolve(total) } catch (e) { 'failed' }\n\
describe(total)";
/// The same without `await`: compiled as it is.
const NOT_AWAITING: &str = "const items = [1, 2, 3];\n\
let total = 0;\nfor (const item of items) { total += item }\n\
function describe(n) { return `total ${n}` }\n\
try { total } catch (e) { 'failed' }\n\
describe(total)";

/// A prelude of the kind operators write: a few dozen helpers and a table.
const PRELUDE: &str = "const helpers = {};\n\
for (let i = 0; i < 40; i++) helpers['h' + i] = (x) => x * i + 1;\n\
function mean(xs) { return xs.reduce((a, b) => a + b, 0) / xs.length }\n\
function groupBy(xs, f) { const out = {}; for (const x of xs) (out[f(x)] ??= []).push(x); return out }\n\
const UNITS = Object.fromEntries(Array.from({ length: 200 }, (_, i) => ['u' + i, i]));";

/// `--prelude`: fresh runs with and without a prelude, interleaved so that
/// drift of the machine's speed hits both alike.
fn prelude(n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("prelude.js");
    std::fs::write(&file, PRELUDE).expect("prelude");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = |with: bool| {
        let store = FileHeapStore::new(dir.path().join(if with { "with" } else { "without" }));
        let engine = Engine::new(
            EngineConfig::in_process(),
            Some(Arc::new(store) as Arc<dyn HeapStore>),
        );
        if with {
            engine.with_prelude(Arc::new(mcp_v8_lambda::engine::FilePrelude(file.clone())))
        } else {
            engine
        }
    };
    let (without, with) = (engine(false), engine(true));
    let run = |engine: &Engine, stateful: bool| {
        let started = Instant::now();
        let out = runtime
            .block_on(engine.run(RunRequest {
                code: "globalThis.counter = 0".into(),
                stateful,
                ..Default::default()
            }))
            .expect("accepted")
            .outcome;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        assert!(out.warnings.is_empty(), "{out:?}");
        started.elapsed()
    };
    println!("## Prelude\n\n| scenario | p50 ms | p95 ms | p99 ms | runs |\n|---|---|---|---|---|");
    for stateful in [false, true] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        run(&without, stateful);
        run(&with, stateful); // makes the prelude's heap
        for _ in 0..n {
            a.push(run(&without, stateful));
            b.push(run(&with, stateful));
        }
        let kind = if stateful { "stateful" } else { "stateless" };
        println!("| fresh {kind}, no prelude | {} |", percentiles(a));
        println!("| fresh {kind}, with the prelude | {} |", percentiles(b));
    }
}

/// Bytes of every file under `dir`.
fn tree_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// `--files`: stateful runs that touch no file, read a 5 MiB file or write
/// one, interleaved; latency and the bytes each run adds to the stores.
fn files(n: usize) {
    const MIB5: usize = 5 * 1024 * 1024;
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let heaps = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let engine = Engine::new(
        EngineConfig::in_process(),
        Some(heaps as Arc<dyn HeapStore>),
    )
    .with_files(Arc::new(mcp_v8_lambda::files::DirFileStore::new(
        dir.path().join("work"),
    )));
    let stored = || tree_bytes(dir.path());
    let run = |code: &str, heap: &HeapKey| {
        let started = Instant::now();
        let out = runtime
            .block_on(engine.run(RunRequest {
                code: code.into(),
                heap: Some(heap.clone()),
                stateful: true,
                ..Default::default()
            }))
            .expect("accepted")
            .outcome;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        started.elapsed()
    };
    let first = |code: &str| {
        runtime
            .block_on(engine.run(RunRequest {
                code: code.into(),
                stateful: true,
                ..Default::default()
            }))
            .expect("accepted")
            .outcome
            .heap
            .expect("stored")
    };
    let plain = first("globalThis.x = 1; require('fs'); x");
    let with_file = first(&format!(
        "globalThis.x = 1; require('fs').writeFileSync('big.bin', new Uint8Array({MIB5}).fill(7)); x"
    ));
    let scenarios = [
        ("no file, heap without files: `x`", plain.clone()),
        (
            "no file touched, heap with a 5 MiB file: `x`",
            with_file.clone(),
        ),
        ("reads the 5 MiB file", with_file.clone()),
        ("writes a new 5 MiB file", with_file.clone()),
    ];
    let code = |scenario: usize, i: usize| match scenario {
        0 | 1 => "x".to_owned(),
        2 => "require('fs').readFileSync('big.bin').length".to_owned(),
        _ => format!(
            "(() => {{ const b = new Uint8Array({MIB5}); new DataView(b.buffer).setFloat64(0, {i}); \
             require('fs').writeFileSync('new.bin', b) }})(); x"
        ),
    };
    let mut samples = vec![Vec::new(); scenarios.len()];
    let mut bytes = vec![0u64; scenarios.len()];
    for i in 0..n {
        for (s, (_, heap)) in scenarios.iter().enumerate() {
            let before = stored();
            samples[s].push(run(&code(s, i), heap));
            bytes[s] += stored() - before;
        }
    }
    println!(
        "## Files\n\n| scenario | p50 ms | p95 ms | p99 ms | runs | stored per run |\n|---|---|---|---|---|---|"
    );
    for (s, (name, _)) in scenarios.iter().enumerate() {
        println!(
            "| {name} | {} | {:.0} KB |",
            percentiles(std::mem::take(&mut samples[s])),
            bytes[s] as f64 / n as f64 / 1000.0
        );
    }
}

pub(crate) fn main() {
    let quick = crate::args().any(|a| a == "--quick");
    let n = if quick { 10 } else { 100 };
    if crate::args().any(|a| a == "--prelude") {
        prelude(n * 2);
        return;
    }
    if crate::args().any(|a| a == "--files") {
        files(n / 2);
        return;
    }

    let started = Instant::now();
    let _ = Engine::new(EngineConfig::in_process(), None);
    println!(
        "V8 platform initialisation: {:.2} ms\n",
        started.elapsed().as_secs_f64() * 1000.0
    );

    for handling in [CodeHandling::Clear, CodeHandling::Keep] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileHeapStore::new(dir.path());
        let config = EngineConfig {
            code_handling: handling,
            ..Default::default()
        };
        let bench = Bench {
            engine: Engine::new(config, Some(Arc::new(store.clone()) as Arc<dyn HeapStore>)),
            store,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        };
        println!("## FunctionCodeHandling::{handling:?}\n");
        println!("| scenario | p50 ms | p95 ms | p99 ms | runs |\n|---|---|---|---|---|");

        let stateless = time(n * 2, || {
            bench.run("1+1", None, false);
        });
        println!("| stateless `1+1` | {} |", percentiles(stateless));

        // Top-level await goes through the REPL rewrite (src/engine/run/repl.rs):
        // its cost is the difference to the same code without `await`.
        let awaiting = time(n * 2, || {
            bench.run(AWAITING, None, false);
        });
        println!(
            "| stateless, top-level await (REPL rewrite) | {} |",
            percentiles(awaiting)
        );
        let plain = time(n * 2, || {
            bench.run(NOT_AWAITING, None, false);
        });
        println!(
            "| stateless, the same without await | {} |",
            percentiles(plain)
        );

        let fresh = time(n, || {
            bench.run("globalThis.counter = 0", None, true);
        });
        println!(
            "| stateful fresh + snapshot + store | {} |",
            percentiles(fresh)
        );

        let mut heap = bench
            .run("globalThis.counter = 0", None, true)
            .heap
            .expect("heap");
        let chained = time(n, || {
            heap = bench
                .run("counter += 1", Some(&heap), true)
                .heap
                .expect("heap");
        });
        println!(
            "| restore + run + snapshot, small heap (chained) | {} |",
            percentiles(chained)
        );

        let fib_heap = bench
            .run(CALL_AFTER_RESTORE, None, true)
            .heap
            .expect("heap");
        let call = time(n, || {
            bench.run("fib(20)", Some(&fib_heap), true);
        });
        println!(
            "| restore + call a saved function (`fib(20)`) + snapshot | {} |",
            percentiles(call)
        );

        let big_heap = bench.run(BIG_HEAP, None, true).heap.expect("heap");
        let big = time(n / 5, || {
            bench.run("big.length", Some(&big_heap), true);
        });
        println!(
            "| restore + run + snapshot, large heap | {} |",
            percentiles(big)
        );

        let empty = bench.run("undefined", None, true).heap.expect("heap");
        println!("\n| stored snapshot | bytes |\n|---|---|");
        println!(
            "| empty context (host functions only) | {} |",
            bench.stored_size(&empty)
        );
        println!("| small heap (`counter`) | {} |", bench.stored_size(&heap));
        println!(
            "| saved function after a call (`fib`) | {} |",
            bench.stored_size(&fib_heap)
        );
        println!(
            "| large heap (120k objects) | {} |\n",
            bench.stored_size(&big_heap)
        );
    }
}
