//! Memory outside V8's heap (src/engine/services/memory.rs) and the states V8
//! cannot snapshot (src/engine/web/guard.rs): what a hostile caller tries
//! ends in a tool result in every engine mode, the process lives on and
//! serves the next run, and its memory stays bounded and comes back.

use std::sync::Arc;
use std::time::Duration;

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunRequest, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use serde_json::json;

use crate::common::engine::run;
use crate::common::process::{Serve, children, proc_kib};

/// What the issue's hostile caller sent, each far past the default 64 MiB.
pub const OVER_BUDGET: &[&str] = &[
    "new Uint8Array(2e9).fill(1).length",
    "const a = []; for (let i = 0; i < 8; i++) a.push(new Uint8Array(5e8)); a.length",
    "new Blob([new Uint8Array(1e9)]).size",
    "structuredClone(new Uint8Array(6e8)).length",
    "new TextEncoder().encode('x'.repeat(2 ** 28)).length",
    "globalThis.big = new ArrayBuffer(5e9); 1",
    "try { new Uint8Array(2e9) } catch (e) { 'caught ' + e.name }",
];

/// Objects a stateful run may keep that V8 cannot write into a snapshot,
/// and what the run's error says of each.
pub const UNSNAPSHOTTABLE: &[(&str, &str)] = &[
    (
        "globalThis.rab = new ArrayBuffer(8, { maxByteLength: 1e10 }); 1",
        "maxByteLength",
    ),
    (
        "globalThis.rab = new (new Uint8Array(1).buffer.constructor)(8, { maxByteLength: 2 ** 32 }); 1",
        "maxByteLength",
    ),
    (
        "class AB extends ArrayBuffer {}; globalThis.rab = new AB(8, { maxByteLength: 1e10 }); 1",
        "maxByteLength",
    ),
    (
        "globalThis.fr = new FinalizationRegistry(() => {}); fr.register({}, 1); 1",
        "FinalizationRegistry",
    ),
    (
        "globalThis.nf = new Intl.NumberFormat('en'); nf.format(1)",
        "Intl.NumberFormat",
    ),
    (
        "globalThis.nf = Intl.NumberFormat('en'); 1",
        "Intl.NumberFormat",
    ),
    ("globalThis.c = new Intl.Collator(); 1", "Intl.Collator"),
    (
        "globalThis.d = new Intl.DateTimeFormat(); 1",
        "Intl.DateTimeFormat",
    ),
    ("globalThis.l = new Intl.Locale('en-US'); 1", "Intl.Locale"),
    (
        "globalThis.p = new Intl.PluralRules('en'); 1",
        "Intl.PluralRules",
    ),
    (
        "globalThis.s = new Intl.Segmenter().segment('ab'); 1",
        "Intl.Segmenter's segments",
    ),
];

/// A run that must have ended over its budget, with the process alive.
fn refused(code: &str, outcome: &RunOutcome) {
    let error = outcome.error.as_ref().unwrap_or_else(|| {
        panic!("{code}: {outcome:#?}");
    });
    assert!(
        matches!(outcome.status, RunStatus::OutOfMemory | RunStatus::Failed),
        "{code}: {outcome:#?}"
    );
    assert!(
        error.message.contains("limited to 64 MiB"),
        "{code}: the error names the limit: {error:?}"
    );
    assert!(outcome.heap.is_none(), "{code}: nothing stored");
}

async fn request(
    engine: &Engine,
    code: &str,
    stateful: bool,
    heap: Option<&HeapKey>,
) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            stateful,
            heap: heap.cloned(),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await
}

/// A stateful engine (on engine workers, as every test's) and its store's
/// directory.
struct Stateful {
    _dir: tempfile::TempDir,
    engine: Engine,
}

fn stateful_engine() -> Stateful {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    Stateful {
        engine: crate::common::engine::on_workers(EngineConfig::default(), Some(store)),
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffers_past_the_budget_end_the_run_in_every_mode_and_the_next_run_is_served() {
    // A stateless engine's workers keep a plain isolate ready; a stateful
    // one's restore or snapshot.
    let stateless = crate::common::engine::on_workers(EngineConfig::default(), None);
    for code in OVER_BUDGET {
        refused(code, &request(&stateless, code, false, None).await);
        let next = request(&stateless, "1 + 1", false, None).await;
        assert_eq!(next.result.as_deref(), Some("2"), "{code}: {next:#?}");
    }
    let stateful = stateful_engine();
    {
        let engine = &stateful.engine;
        let base = request(engine, "globalThis.kept = 41; 1", true, None).await;
        let base = base.heap.expect("a base heap");
        for code in OVER_BUDGET {
            refused(code, &request(engine, code, true, None).await);
            refused(code, &request(engine, code, true, Some(&base)).await);
            let next = request(engine, "kept + 1", true, Some(&base)).await;
            assert_eq!(next.result.as_deref(), Some("42"), "{code}: {next:#?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_keeps_what_v8_cannot_snapshot_fails_and_stores_nothing() {
    let stateful = stateful_engine();
    {
        let engine = &stateful.engine;
        let base = request(engine, "globalThis.kept = 41; 1", true, None).await;
        let base = base.heap.expect("a base heap");
        for (code, says) in UNSNAPSHOTTABLE {
            for heap in [None, Some(&base)] {
                let outcome = request(engine, code, true, heap).await;
                assert_eq!(outcome.status, RunStatus::Failed, "{code}: {outcome:#?}");
                let error = outcome.error.expect("an error");
                assert!(
                    error.message.contains(says),
                    "{code}: the error says what is kept: {error:?}"
                );
                assert!(outcome.heap.is_none(), "{code}: nothing stored");
            }
            let next = request(engine, "kept + 1", true, Some(&base)).await;
            assert_eq!(next.result.as_deref(), Some("42"), "{code}: {next:#?}");
        }
        // What V8 cannot snapshot is fine inside a run, and once dropped.
        let used = request(
            engine,
            "{ const f = new Intl.NumberFormat('en-US'); globalThis.out = f.format(1234.5); } \
             let r = new FinalizationRegistry(() => {}); r.register({}, 1); r = null; out",
            true,
            Some(&base),
        )
        .await;
        assert_eq!(used.result.as_deref(), Some("\"1,234.5\""), "{used:#?}");
        assert!(used.heap.is_some(), "{used:#?}");
        let resizable = request(
            engine,
            "globalThis.rab = new ArrayBuffer(8, { maxByteLength: 1 << 20 }); rab.resize(1 << 20); rab.byteLength",
            true,
            None,
        )
        .await;
        assert_eq!(
            resizable.result.as_deref(),
            Some("1048576"),
            "{resizable:#?}"
        );
        let grown = request(
            engine,
            "rab.resize(16); rab.byteLength",
            true,
            resizable.heap.as_ref(),
        )
        .await;
        assert_eq!(grown.result.as_deref(), Some("16"), "{grown:#?}");
    }
}

/// The guarded constructors behave as the built-ins do.
#[tokio::test]
async fn the_guarded_constructors_keep_their_built_in_behaviour() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let code = r#"
        const checks = {
            abName: ArrayBuffer.name === "ArrayBuffer" && ArrayBuffer.length === 1,
            abIsView: ArrayBuffer.isView(new Uint8Array(1)),
            abProto: new ArrayBuffer(1) instanceof ArrayBuffer
                && Object.getPrototypeOf(new ArrayBuffer(1)) === ArrayBuffer.prototype,
            abConstructor: new Uint8Array(1).buffer.constructor === ArrayBuffer,
            abSpecies: ArrayBuffer[Symbol.species] === ArrayBuffer,
            abCall: (() => { try { ArrayBuffer(1); return false } catch (e) { return e instanceof TypeError } })(),
            abSubclass: (() => { class B extends ArrayBuffer { x() { return 1 } }; const b = new B(4); return b.x() === 1 && b.byteLength === 4 && b instanceof ArrayBuffer })(),
            abSlice: new ArrayBuffer(4).slice(1).byteLength === 3,
            rab: (() => { const r = new ArrayBuffer(2, { maxByteLength: 8 }); r.resize(8); return r.resizable && r.byteLength === 8 })(),
            nf: new Intl.NumberFormat("en-US").format(1234.5) === "1,234.5"
                && Intl.NumberFormat("en-US") instanceof Intl.NumberFormat
                && Intl.NumberFormat.name === "NumberFormat"
                && typeof Intl.NumberFormat.supportedLocalesOf === "function",
            dtf: new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).format(0) === "1/1/1970",
            seg: [...new Intl.Segmenter("en", { granularity: "word" }).segment("a b")].length === 3,
            fr: (() => { const r = new FinalizationRegistry(() => {}); r.register({}, 1); return r instanceof FinalizationRegistry && FinalizationRegistry.prototype.register.name === "register" })(),
            toString: Object.prototype.toString.call(Intl) === "[object Intl]",
        };
        Object.entries(checks).filter(([, ok]) => !ok).map(([name]) => name)
    "#;
    let outcome = crate::common::engine::stateless(&engine, code).await;
    assert_eq!(outcome.result.as_deref(), Some("[]"), "{outcome:#?}");
}

/// What the process may hold beyond one run's budgets (64 MiB of heap and
/// 64 MiB of buffers): V8, the server and its allocator's caches
/// (docs/reliability.md, "Memory").
const OVERHEAD_MIB: u64 = 256;

/// A server, stateless and stateful, fed the hostile runs one after
/// another: each is answered; the server, whose runs execute in engine
/// workers, stays small, and each worker's peak RSS stays under the budgets
/// plus the overhead; after the burst the server's RSS is back near where
/// it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stays_within_its_budget_and_gives_the_memory_back() {
    for args in [
        &["--stateless", "--engine-workers", "1"][..],
        &["--engine-workers", "1"][..],
    ] {
        let server = Serve::start(args, &[]);
        let pid = server.pid();
        let stateful = args[0] != "--stateless";
        let arguments = |code: &str| {
            if stateful {
                json!({"code": code, "session": "memory"})
            } else {
                json!({"code": code})
            }
        };
        for _ in 0..3 {
            assert_eq!(server.run_js(arguments("1 + 1")).await["result"], "2");
        }
        let idle = proc_kib(pid, "VmRSS:");
        for code in OVER_BUDGET {
            let outcome = server.run_js(arguments(code)).await;
            assert!(
                outcome["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("limited to 64 MiB")),
                "{args:?} {code}: {outcome}"
            );
        }
        if stateful {
            for (code, _) in UNSNAPSHOTTABLE {
                let outcome = server.run_js(arguments(code)).await;
                assert_eq!(outcome["status"], "failed", "{code}: {outcome}");
            }
        }
        assert_eq!(server.run_js(arguments("1 + 1")).await["result"], "2");
        let workers = children(pid);
        assert_eq!(
            workers.len(),
            1,
            "{args:?}: one worker ran them all: {workers:?}"
        );
        let worker_peak = proc_kib(workers[0], "VmHWM:") / 1024;
        assert!(
            worker_peak < 64 + 64 + OVERHEAD_MIB,
            "{args:?}: the worker's RSS peaked at {worker_peak} MiB"
        );
        let peak = proc_kib(pid, "VmHWM:") / 1024;
        let after = proc_kib(pid, "VmRSS:");
        assert!(
            peak < OVERHEAD_MIB,
            "{args:?}: the server's RSS peaked at {peak} MiB"
        );
        assert!(
            after < idle + 64 * 1024,
            "{args:?}: RSS {} MiB after the burst, {} MiB before",
            after / 1024,
            idle / 1024
        );
    }
}

/// A refusal the code catches leaves the run completed, with a warning
/// that names the limit, so the model knows why its data is missing.
#[tokio::test]
async fn a_caught_refusal_completes_with_a_warning_naming_the_limit() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let code = "try { new TextEncoder().encode('x'.repeat(2 ** 28)); 'encoded' } catch (e) { e.name + ': ' + e.message }";
    let outcome = request(&engine, code, false, None).await;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    assert_eq!(
        outcome.result.as_deref(),
        Some("\"RangeError: Array buffer allocation failed\""),
        "{outcome:#?}"
    );
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("limited to 64 MiB")),
        "{outcome:#?}"
    );
}
