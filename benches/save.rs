//! Where a heap's save goes: V8's snapshot of a heap, then what the server
//! does with the payload (hashing, chunking, compression, writes), on the
//! embedded store and on S3 (moto), for heaps of about 5, 50 and 200 MB,
//! first stored and then with one record changed. By hand:
//!
//!     cargo bench --bench benches -- save [--objects 60000,600000,2400000] [--runs 3] [--no-s3]
//!
//! The heaps are made by the engine in this process (`EngineConfig::in_process()`:
//! the same isolate code an engine worker runs), each of `--objects` small
//! objects (`{i, s: 'item' + i}`, as the HTTP bench's think-time heaps).
//! "create_blob" is V8's `CreateBlob` as the engine reports it (a tracing
//! event of the engine, absent in builds before it), and "save" is
//! [`Snapshot::from_payload`] plus [`HeapStore::put`]: everything the
//! server does with a payload, which is what a build before a change and
//! after it are compared on. Steps are timed on their own as well; each
//! figure is the median of `--runs`. Prints Markdown; asserts nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore, S3HeapStore, Snapshot};
use mcp_v8_lambda::tenant::Tenant;

use crate::moto;

// The binary's allocator (src/main.rs), so the figures are the server's.
#[cfg(feature = "mimalloc")]
struct Args {
    objects: Vec<usize>,
    runs: usize,
    s3: bool,
}

fn args() -> Args {
    let mut args = Args {
        objects: vec![60_000, 600_000, 2_400_000],
        runs: 3,
        s3: true,
    };
    let mut it = crate::args();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--objects" => {
                args.objects = it
                    .next()
                    .expect("--objects N,N")
                    .split(',')
                    .map(|n| n.parse().expect("a count"))
                    .collect()
            }
            "--runs" => args.runs = it.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--no-s3" => args.s3 = false,
            // cargo bench passes --bench
            _ => {}
        }
    }
    args
}

/// The engine's `create_blob_ms` events, as they come.
#[derive(Clone, Default)]
struct Blobs(Arc<Mutex<Vec<f64>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Blobs {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Visit(Option<f64>);
        impl tracing::field::Visit for Visit {
            fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
                if field.name() == "create_blob_ms" {
                    self.0 = Some(value);
                }
            }
            fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
                if field.name() == "create_blob_ms" {
                    self.0 = Some(value as f64);
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        let mut visit = Visit(None);
        event.record(&mut visit);
        if let Some(ms) = visit.0 {
            self.0.lock().unwrap().push(ms);
        }
    }
}

impl Blobs {
    fn take(&self) -> Option<f64> {
        self.0.lock().unwrap().pop()
    }
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

fn median_f(mut samples: Vec<f64>) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    Some(samples[samples.len() / 2])
}

fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
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

struct Bench {
    runtime: tokio::runtime::Runtime,
    engine: Engine,
    heaps: FileHeapStore,
    blobs: Blobs,
    tenant: Tenant,
}

impl Bench {
    /// Runs `code` (from `heap`), stored; its key and V8's CreateBlob time.
    fn run(&self, code: &str, heap: Option<&HeapKey>) -> (HeapKey, Option<f64>) {
        let outcome = self
            .runtime
            .block_on(self.engine.run(RunRequest {
                code: code.to_owned(),
                heap: heap.cloned(),
                stateful: true,
                heap_limit_mb: Some(1024),
                timeout: Some(Duration::from_secs(300)),
                ..Default::default()
            }))
            .expect("accepted")
            .outcome;
        assert_eq!(outcome.status, RunStatus::Completed, "{outcome:?}");
        (outcome.heap.expect("a heap"), self.blobs.take())
    }

    fn payload(&self, key: &HeapKey) -> bytes::Bytes {
        self.runtime
            .block_on(self.heaps.get(&self.tenant, key))
            .expect("read")
            .expect("stored")
            .payload_bytes()
    }
}

/// A store to save into, fresh, and what it holds.
enum Target {
    Dir(tempfile::TempDir, FileHeapStore),
    S3(S3HeapStore, aws_sdk_s3::Client, String),
}

impl Target {
    fn store(&self) -> &dyn HeapStore {
        match self {
            Target::Dir(_, store) => store,
            Target::S3(store, ..) => store,
        }
    }

    async fn stored_bytes(&self) -> u64 {
        match self {
            Target::Dir(dir, _) => tree_bytes(dir.path()),
            Target::S3(_, client, bucket) => {
                let mut total = 0u64;
                let mut token = None;
                loop {
                    let page = client
                        .list_objects_v2()
                        .bucket(bucket)
                        .set_continuation_token(token)
                        .send()
                        .await
                        .expect("list");
                    total += page
                        .contents()
                        .iter()
                        .map(|o| o.size().unwrap_or(0) as u64)
                        .sum::<u64>();
                    match page.next_continuation_token() {
                        Some(next) => token = Some(next.to_owned()),
                        None => return total,
                    }
                }
            }
        }
    }
}

async fn fresh(kind: &str) -> Target {
    match kind {
        "embedded" => {
            let dir = tempfile::tempdir_in(std::env::var("TMPDIR").unwrap_or("/tmp".into()))
                .expect("tempdir");
            let store = FileHeapStore::new(dir.path());
            Target::Dir(dir, store)
        }
        _ => {
            let (s3, _) = moto::clients().await;
            let bucket = moto::unique("save");
            s3.create_bucket()
                .bucket(&bucket)
                .send()
                .await
                .expect("bucket");
            Target::S3(S3HeapStore::new(s3.clone(), &bucket, ""), s3, bucket)
        }
    }
}

/// Time of one save of `payload` into `target`: framing and the store's put.
async fn save(target: &Target, tenant: &Tenant, payload: &[u8]) -> Duration {
    let started = Instant::now();
    let snapshot = Snapshot::from_payload(payload).expect("a payload");
    target.store().put(tenant, &snapshot).await.expect("put");
    started.elapsed()
}

pub(crate) fn main() {
    let args = args();
    use tracing_subscriber::layer::{Layer as _, SubscriberExt};
    let blobs = Blobs::default();
    let subscriber = tracing_subscriber::registry().with(
        blobs
            .clone()
            .with_filter(tracing_subscriber::filter::LevelFilter::DEBUG),
    );
    tracing::subscriber::set_global_default(subscriber).expect("subscriber");
    let dir = tempfile::tempdir().expect("tempdir");
    let heaps = FileHeapStore::new(dir.path().join("made"));
    let config = EngineConfig {
        max_heap_limit_mb: 4096,
        max_snapshot_bytes: 2048 * 1024 * 1024,
        ..EngineConfig::in_process()
    };
    let bench = Bench {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime"),
        engine: Engine::new(config, Some(Arc::new(heaps.clone()) as Arc<dyn HeapStore>)),
        heaps,
        blobs,
        tenant: Tenant::anonymous(),
    };
    let targets: &[&str] = if args.s3 {
        &["embedded", "s3"]
    } else {
        &["embedded"]
    };
    println!("## Where a save goes (median of {} runs, ms)\n", args.runs);
    println!(
        "| objects | payload MB | create_blob | sha256 | frame (sha256 + copy) | cut (FastCDC) | split (cut + chunk sha256) | zstd-1 all chunks | zstd-1 ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut made = Vec::new();
    for &objects in &args.objects {
        let code = format!(
            "globalThis.items = Array.from({{length: {objects}}}, (_, i) => ({{i, s: 'item' + i}})); globalThis.n = 0; n"
        );
        let (key, blob_ms) = bench.run(&code, None);
        let payload = bench.payload(&key);
        let n = args.runs;
        let time = |f: &dyn Fn()| {
            median(
                (0..n)
                    .map(|_| {
                        let t = Instant::now();
                        f();
                        t.elapsed()
                    })
                    .collect(),
            )
        };
        let sha = time(&|| {
            std::hint::black_box(HeapKey::of_payload(&payload));
        });
        let frame = time(&|| {
            std::hint::black_box(Snapshot::from_payload(&payload).unwrap());
        });
        let cut = time(&|| {
            let cuts = fastcdc::v2020::FastCDC::new(&payload, 128 * 1024, 512 * 1024, 2048 * 1024);
            std::hint::black_box(cuts.count());
        });
        let split = time(&|| {
            std::hint::black_box(mcp_v8_lambda::heap::format::split(&payload));
        });
        let compressed = std::cell::Cell::new(0usize);
        let cut_zstd = time(&|| {
            let cuts = fastcdc::v2020::FastCDC::new(&payload, 128 * 1024, 512 * 1024, 2048 * 1024);
            let total: usize = cuts
                .map(|c| {
                    zstd::bulk::compress(&payload[c.offset..c.offset + c.length], 1)
                        .unwrap()
                        .len()
                })
                .sum();
            compressed.set(total);
        });
        let zstd = (cut_zstd - cut).max(0.0);
        println!(
            "| {objects} | {:.1} | {} | {sha:.1} | {frame:.1} | {cut:.1} | {split:.1} | {zstd:.1} | {:.1}× |",
            payload.len() as f64 / 1e6,
            ms(blob_ms),
            payload.len() as f64 / compressed.get() as f64
        );
        made.push((objects, key, payload, blob_ms));
    }
    println!(
        "\n## A save (framing and the store's put): first store, then one record changed (median of {} runs)\n",
        args.runs
    );
    println!(
        "| objects | store | first save ms | first stored MB | chained create_blob ms | chained save ms | chained stored KB |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (objects, key, payload, _) in &made {
        // The chained heaps: one record changed each time.
        let mut chained = Vec::new();
        let mut blob_ms = Vec::new();
        let mut from = key.clone();
        for i in 0..args.runs {
            let (next, ms) = bench.run(
                &format!("items[{}].i += 1; n += 1", 1000 + i * 7),
                Some(&from),
            );
            blob_ms.extend(ms);
            chained.push(bench.payload(&next));
            from = next;
        }
        for kind in targets {
            let runtime = &bench.runtime;
            let mut first = Vec::new();
            let mut first_bytes = 0;
            let mut next = Vec::new();
            let mut next_bytes = Vec::new();
            for _ in 0..args.runs {
                let target = runtime.block_on(fresh(kind));
                first.push(runtime.block_on(save(&target, &bench.tenant, payload)));
                first_bytes = runtime.block_on(target.stored_bytes());
                let mut before = first_bytes;
                for chain in &chained {
                    next.push(runtime.block_on(save(&target, &bench.tenant, chain)));
                    let after = runtime.block_on(target.stored_bytes());
                    next_bytes.push((after - before) as f64);
                    before = after;
                }
            }
            println!(
                "| {objects} | {} | {:.1} | {:.1} | {} | {:.1} | {:.0} |",
                fresh_name(kind),
                median(first),
                first_bytes as f64 / 1e6,
                ms(median_f(blob_ms.clone())),
                median(next),
                median_f(next_bytes).unwrap_or(0.0) / 1e3
            );
        }
    }
}

fn fresh_name(kind: &str) -> &'static str {
    if kind == "embedded" {
        "embedded"
    } else {
        "S3 (moto)"
    }
}
