//! Behaviour of the engine: fresh and restored runs, snapshots, limits.

pub(crate) mod allocator;
pub(crate) mod code_mode;
pub(crate) mod code_mode_asks;
pub(crate) mod disk;
pub(crate) mod display;
pub(crate) mod fetch;
pub(crate) mod files;
pub(crate) mod memory;
pub(crate) mod node_process;
pub(crate) mod node_tests;
pub(crate) mod packages;
pub(crate) mod repl;
pub(crate) mod url_modules;
pub(crate) mod warm;
pub(crate) mod web;
pub(crate) mod workers;
pub(crate) mod wpt_url;

use std::sync::Arc;
use std::time::Duration;

use mcp_v8_lambda::engine::{
    CapabilitySettings, ConsoleSettings, Engine, EngineConfig, EngineError, Language, RunOutcome,
    RunRequest, RunStatus,
};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;

use crate::common::engine::{self, completed};

mod bounds;
mod output;

struct Fixture {
    engine: Engine,
    store: FileHeapStore,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    fixture_with(EngineConfig::default())
}

fn fixture_with(config: EngineConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path().join("heaps"));
    let engine = crate::common::engine::on_workers(
        config,
        Some(Arc::new(store.clone()) as Arc<dyn HeapStore>),
    );
    Fixture {
        engine,
        store,
        _dir: dir,
    }
}

impl Fixture {
    async fn stateful(&self, code: &str, heap: Option<&HeapKey>) -> RunOutcome {
        engine::stateful(&self.engine, code, heap).await
    }

    async fn stateless(&self, code: &str) -> RunOutcome {
        engine::stateless(&self.engine, code).await
    }

    async fn run(&self, request: RunRequest) -> RunOutcome {
        engine::run(&self.engine, request).await
    }
}

#[tokio::test]
async fn stateless_run_returns_the_completion_value_and_no_heap() {
    let f = fixture();
    let out = f.stateless("1 + 1").await;
    assert_eq!(completed(&out), "2");
    assert_eq!(out.heap, None);
    assert_eq!(out.input_heap, None);
    assert!(out.error.is_none());
}

#[tokio::test]
async fn counter_is_threaded_through_three_heaps() {
    let f = fixture();
    let first = f.stateful("globalThis.counter = 1; counter", None).await;
    assert_eq!(completed(&first), "1");
    let mut heap = first.heap.clone().expect("a heap");
    for expected in 2..=3 {
        let next = f
            .stateful("globalThis.counter += 1; counter", Some(&heap))
            .await;
        assert_eq!(completed(&next), expected.to_string());
        assert_eq!(next.input_heap.as_ref(), Some(&heap));
        assert_ne!(
            next.heap.as_ref(),
            Some(&heap),
            "each state is a new content address"
        );
        heap = next.heap.clone().unwrap();
    }
    assert_eq!(heap.as_str().len(), 64);
    assert!(f.store.path_of(&Tenant::anonymous(), &heap).exists());
}

#[tokio::test]
async fn restored_heap_keeps_let_const_function_and_class_declarations() {
    let f = fixture();
    let code = "let a = 40; const b = 2; function add(x, y) { return x + y } class Box { constructor(v) { this.v = v } }";
    let first = f.stateful(code, None).await;
    completed(&first);
    let next = f
        .stateful("new Box(add(a, b)).v", first.heap.as_ref())
        .await;
    assert_eq!(completed(&next), "42");
}

#[tokio::test]
async fn two_heaps_from_one_parent_stay_isolated() {
    let f = fixture();
    let parent = f
        .stateful("globalThis.items = ['root']; items.length", None)
        .await;
    let parent_heap = parent.heap.clone().unwrap();
    let left = f
        .stateful("items.push('left'); items.join()", Some(&parent_heap))
        .await;
    let right = f
        .stateful("items.push('right'); items.join()", Some(&parent_heap))
        .await;
    assert_eq!(completed(&left), "\"root,left\"");
    assert_eq!(completed(&right), "\"root,right\"");
    let left_again = f.stateful("items.join()", left.heap.as_ref()).await;
    assert_eq!(completed(&left_again), "\"root,left\"");
    let parent_again = f.stateful("items.join()", Some(&parent_heap)).await;
    assert_eq!(completed(&parent_again), "\"root\"");
}

#[tokio::test]
async fn typescript_is_stripped_before_running() {
    let f = fixture();
    let out = f.stateless("const x: number = 41; x + 1").await;
    assert_eq!(completed(&out), "42");
    let report = f
        .engine
        .run(RunRequest {
            code: "interface P { n: number }\nconst p: P = { n: 1 };\np.n".into(),
            language: Language::Typescript,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(completed(&report.outcome), "1");
    assert!(
        !report.executed_code.contains("interface"),
        "{}",
        report.executed_code
    );
}

/// The trial's probe: `import type` on short code, twice on one heap (the
/// second from a heap whose run imported a value), runs.
#[tokio::test]
async fn import_type_runs_and_keeps_running_on_the_heap() {
    let f = fixture();
    let first = f
        .stateful(
            "import type { Stats } from 'node:fs';\nimport { statSync } from 'node:fs';\nglobalThis.size = (s: Stats) => s.isDirectory(); typeof statSync",
            None,
        )
        .await;
    assert_eq!(completed(&first), "\"function\"");
    let second = f
        .stateful(
            "import type { Stats } from 'node:fs';\nlet t: string = typeof size; t",
            first.heap.as_ref(),
        )
        .await;
    assert_eq!(completed(&second), "\"function\"");
}

#[tokio::test]
async fn typescript_syntax_error_names_line_and_column() {
    let f = fixture();
    let out = f
        .run(RunRequest {
            code: "const a: number = 1;\nconst b: = ;".into(),
            language: Language::Typescript,
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap();
    assert_eq!(error.name, "SyntaxError");
    assert!(
        error.message.contains("line 2, column"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn javascript_syntax_error_names_line_and_column() {
    let f = fixture();
    let out = f.stateless("let ok = 1;\nlet = = 2;").await;
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap();
    assert_eq!(error.name, "SyntaxError");
    assert!(
        error.message.contains("line 2, column"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn thrown_errors_fail_with_name_message_and_stack() {
    let f = fixture();
    let out = f
        .stateless("function boom() { throw new TypeError('bad thing') }\nboom()")
        .await;
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap();
    assert_eq!(error.name, "TypeError");
    assert_eq!(error.message, "bad thing");
    assert!(error.stack.unwrap().contains("boom"));
    let out = f.stateless("throw { code: 7 }").await;
    assert_eq!(out.status, RunStatus::Failed);
    // Not an Error: the value, and where it was thrown.
    let error = out.error.unwrap();
    assert_eq!(error.name, "Uncaught");
    assert!(
        error.message.starts_with(
            "{ code: 7 } (line 1, column 1): the code threw a value that is not an Error"
        ),
        "{error:?}"
    );
    assert_eq!(
        error.stack.as_deref(),
        Some("Uncaught { code: 7 }\n    at run_js.js:1:1")
    );
}

#[tokio::test]
async fn a_promise_completion_value_is_awaited() {
    let f = fixture();
    let out = f.stateless("Promise.resolve(20).then(v => v + 1)").await;
    assert_eq!(completed(&out), "21");
    let out = f.stateless("Promise.reject(new RangeError('nope'))").await;
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.error.unwrap().name, "RangeError");
}

#[tokio::test]
async fn top_level_await_works_and_globals_it_sets_persist() {
    let f = fixture();
    let out = f
        .stateful("const v = await new Promise(r => setTimeout(() => r(5), 10));\nglobalThis.kept = v * 2;\nv + 1", None)
        .await;
    assert_eq!(completed(&out), "6");
    let next = f.stateful("kept", out.heap.as_ref()).await;
    assert_eq!(completed(&next), "10");
}

#[tokio::test]
async fn timers_and_microtasks_run_until_idle_in_order() {
    let f = fixture();
    let out = f
        .stateless(
            "const seen = [];\
             setTimeout(() => seen.push('t20'), 20);\
             setTimeout(() => seen.push('t0'), 0);\
             const cancelled = setTimeout(() => seen.push('never'), 5); clearTimeout(cancelled);\
             queueMicrotask(() => seen.push('micro'));\
             let n = 0; const iv = setInterval(() => { seen.push('iv' + n); if (++n === 3) clearInterval(iv) }, 1);\
             new Promise(r => setTimeout(r, 40)).then(() => seen.join())",
        )
        .await;
    assert_eq!(completed(&out), "\"micro,t0,iv0,iv1,iv2,t20\"");
}

#[tokio::test]
async fn host_functions_work_after_a_restore() {
    let f = fixture();
    let first = f
        .stateful("globalThis.log = (m) => console.log(m); 1", None)
        .await;
    let out = f
        .stateful("log('from saved closure'); console.warn('direct'); new Promise(r => setTimeout(() => r('timer'), 1))", first.heap.as_ref())
        .await;
    assert_eq!(completed(&out), "\"timer\"");
    assert_eq!(out.output, "from saved closure\n[WARN] direct\n");
}

#[tokio::test]
async fn there_is_no_ambient_authority() {
    let f = fixture();
    for (code, name) in [
        // `require` loads installed packages and the node: modules made of
        // the run's own globals; nothing of the host (`fs` is /work only).
        ("require('fs').readFileSync('/etc/passwd')", "Error"),
        ("require('child_process')", "Error"),
        ("Deno.readTextFileSync('/etc/passwd')", "ReferenceError"),
        ("new XMLHttpRequest()", "ReferenceError"),
    ] {
        let out = f.stateless(code).await;
        assert_eq!(out.status, RunStatus::Failed, "{code}");
        assert_eq!(out.error.unwrap().name, name, "{code}");
    }
    // Node's `process` has none of the host's: an empty env, /work.
    let out = f
        .stateless("[Object.keys(process.env).length, process.env.HOME, process.cwd()]")
        .await;
    assert_eq!(completed(&out), "[0,null,\"/work\"]");
    let out = f
        .stateless("(await import('fs')).readFileSync('/etc/hostname')")
        .await;
    assert_ne!(out.status, RunStatus::Completed, "{out:?}");
    let out = f.stateless("await import('/etc/passwd')").await;
    assert!(
        out.error
            .unwrap()
            .message
            .contains("has no files to import")
    );
    let globals = f
        .stateless("Object.getOwnPropertyNames(globalThis).filter(n => /process|Deno|Bun/.test(n))")
        .await;
    assert_eq!(
        completed(&globals),
        "[\"process\"]",
        "only Node's, checked above"
    );
    // fetch exists, and with no egress policy configured reaches nothing.
    let out = f.stateless("await fetch('http://127.0.0.1')").await;
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap();
    assert_eq!(error.name, "TypeError");
    assert!(error.message.contains("egress policy"), "{}", error.message);
}

#[tokio::test]
async fn a_missing_heap_starts_fresh_with_a_warning() {
    let f = fixture();
    let missing = HeapKey::parse(&"ab".repeat(32)).unwrap();
    let out = f.stateful("typeof counter", Some(&missing)).await;
    assert_eq!(completed(&out), "\"undefined\"");
    assert_eq!(out.input_heap.as_ref(), Some(&missing));
    assert!(
        out.warnings.iter().any(|w| w.contains("not found")),
        "{:?}",
        out.warnings
    );
    assert!(out.heap.is_some());
}

#[tokio::test]
async fn a_tampered_snapshot_is_rejected_and_nothing_is_restored() {
    let f = fixture();
    let out = f.stateful("globalThis.secret = 1", None).await;
    let heap = out.heap.unwrap();
    // A byte of the stored (compressed) heap, then of the heap in its
    // original format: each is refused with what is wrong.
    let path = f.store.path_of(&Tenant::anonymous(), &heap);
    let good = std::fs::read(&path).unwrap();
    let mut bytes = good.clone();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();
    let out = f.stateful("secret", Some(&heap)).await;
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap();
    assert_eq!(error.name, "HeapError");
    assert!(error.message.contains(heap.as_str()), "{}", error.message);
    assert!(
        error.message.contains("failed verification"),
        "{}",
        error.message
    );
    assert_eq!(out.heap, None);

    std::fs::write(&path, good).unwrap();
    let original = f
        .store
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap();
    let mut bytes = original.framed().to_vec();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(f.store.path_of(&Tenant::anonymous(), &heap), bytes).unwrap();
    let out = f.stateful("secret", Some(&heap)).await;
    let error = out.error.unwrap();
    assert_eq!(error.name, "HeapError");
    assert!(error.message.contains("checksum"), "{}", error.message);
    assert_eq!(out.heap, None);
}

#[tokio::test]
async fn a_snapshot_stored_under_the_wrong_key_is_rejected() {
    let f = fixture();
    let a = f
        .stateful("globalThis.which = 'a'", None)
        .await
        .heap
        .unwrap();
    let b = f
        .stateful("globalThis.which = 'b'", None)
        .await
        .heap
        .unwrap();
    std::fs::copy(
        f.store.path_of(&Tenant::anonymous(), &a),
        f.store.path_of(&Tenant::anonymous(), &b),
    )
    .unwrap();
    let out = f.stateful("which", Some(&b)).await;
    assert_eq!(out.status, RunStatus::Failed);
    let message = out.error.unwrap().message;
    assert!(
        message.contains(b.as_str()) && message.contains("not the heap asked for"),
        "{message}"
    );
}

#[tokio::test]
async fn the_outcome_serializes_with_the_documented_fields() {
    let f = fixture();
    let out = f.stateful("1", None).await;
    let json = serde_json::to_value(&out).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "duration_ms",
            "error",
            "execution_id",
            "heap",
            "input_heap",
            "output",
            "result",
            "status",
            "warnings"
        ]
    );
    assert_eq!(json["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_runs_from_different_heaps_all_complete() {
    // Regression: isolates restored from different snapshots at once, next to
    // fresh snapshot creators and plain isolates, aborted the process inside
    // V8's shared read-only heap. Snapshot runs go one at a time in
    // process: on a loaded machine a run may wait longer than the default
    // bound for its turn, which is not what this test is about.
    let f = Arc::new(fixture_with(EngineConfig {
        queue_wait: Duration::from_secs(300),
        ..EngineConfig::default()
    }));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let f = f.clone();
        tasks.push(tokio::spawn(async move {
            let mut heap = f
                .stateful(&format!("globalThis.n = {i}; n"), None)
                .await
                .heap
                .unwrap();
            for step in 1..=4 {
                let out = f.stateful("n += 1; n", Some(&heap)).await;
                assert_eq!(completed(&out), (i + step).to_string());
                heap = out.heap.unwrap();
                let plain = f.stateless(&format!("{i} * {step}")).await;
                assert_eq!(completed(&plain), (i * step).to_string());
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// What made `tests/fixtures/heaps/d429e185…`, with V8's read-only promotion
/// on (a fresh isolate, `run_js` with this code, on v8 152.2.0).
const PROMOTED_HEAP_CODE: &str = r#"
globalThis.m = new Map([["a", 1], ["b", [1,2,3]]]);
globalThis.re = /x(\d+)y/g;
globalThis.sym = Symbol("s");
globalThis.o = { [sym]: 5, d: new Date(0), ta: new Uint8Array([1,2,3]), big: 12345678901234567890n };
globalThis.f = function fib(n) { return n < 2 ? n : fib(n-1) + fib(n-2) };
class K { #p = 7; get p() { return this.#p } }; globalThis.k = new K();
globalThis.p = Promise.resolve(3);
globalThis.ws = new WeakMap(); ws.set(o, "w");
"ok"
"#;
const PROMOTED_HEAP: &str = "d429e185687e796df3f46b967d33e601e46fc10ac5c6e14e6f9c111d13d64f74";
const READ_PROMOTED_STATE: &str = r#"JSON.stringify([m.get("b"), "x12y".replace(re, "$1"), o[sym],
  o.d.toISOString(), Array.from(o.ta), String(o.big * 2n), f(15), k.p, ws.get(o),
  typeof Intl.NumberFormat, [3,1,2].toSorted().join(), sym.description])"#;
const PROMOTED_STATE: &str = r#"[[1,2,3],"12",5,"1970-01-01T00:00:00.000Z",[1,2,3],"24691357802469135780",610,7,"w","function","1,2,3","s"]"#;

#[tokio::test]
async fn a_heap_stored_with_read_only_promotion_still_restores() {
    // Heaps in S3 and on disk outlive deployments: one written before
    // promotion was turned off (src/engine/run/platform.rs) must restore, and so
    // must what it leads to, alternating with heaps made without it.
    let f = fixture();
    std::fs::create_dir_all(f.store.dir()).unwrap();
    let old = HeapKey::parse(PROMOTED_HEAP).unwrap();
    let file = format!(
        "{}/tests/fixtures/heaps/{PROMOTED_HEAP}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::copy(file, f.store.path_of(&Tenant::anonymous(), &old)).unwrap();
    let expected = serde_json::to_string(PROMOTED_STATE).unwrap();

    let from_old = f.stateful(READ_PROMOTED_STATE, Some(&old)).await;
    assert_eq!(completed(&from_old), expected);
    let next = from_old.heap.expect("a new heap");
    // The same code today gives a heap with the same state.
    let fresh = f.stateful(PROMOTED_HEAP_CODE, None).await;
    assert_eq!(completed(&fresh), "\"ok\"");
    let from_fresh = f.stateful(READ_PROMOTED_STATE, fresh.heap.as_ref()).await;
    assert_eq!(completed(&from_fresh), expected);
    let again = f.stateful(READ_PROMOTED_STATE, Some(&next)).await;
    assert_eq!(completed(&again), expected);
    let old_again = f.stateful("m.size + k.p", Some(&old)).await;
    assert_eq!(completed(&old_again), "9");
    let fresh_again = f.stateful("o[sym] + f(10)", fresh.heap.as_ref()).await;
    assert_eq!(completed(&fresh_again), "60");
}

/// A throw inside a `queueMicrotask` or `process.nextTick` callback fails
/// the run with the error and where it was thrown, as Node ends its process
/// with it, where the run used to complete as if nothing had happened. A
/// stateful run that fails so keeps no heap; an exception caught inside the
/// callback is the code's own business.
#[tokio::test]
async fn a_throw_in_a_microtask_or_next_tick_fails_the_run() {
    let f = fixture();
    for (code, name, message, line) in [
        (
            "let seen = 1;\nqueueMicrotask(() => { throw new Error('boom in a microtask') });\n'after'",
            "Error",
            "boom in a microtask",
            "run_js.js:2",
        ),
        (
            "process.nextTick(() => {\n  null.x;\n});\n'after'",
            "TypeError",
            "Cannot read properties of null (reading 'x')",
            "run_js.js:2",
        ),
        (
            "setTimeout(() => queueMicrotask(() => { throw new RangeError('later') }), 5);\n'after'",
            "RangeError",
            "later",
            "run_js.js:1",
        ),
    ] {
        let out = f.stateful(code, None).await;
        assert_eq!(out.status, RunStatus::Failed, "{code}: {out:#?}");
        assert_eq!(out.heap, None, "{code}");
        let error = out.error.unwrap();
        assert_eq!(error.name, name, "{code}");
        assert_eq!(error.message, message, "{code}");
        let stack = error.stack.unwrap_or_default();
        assert!(stack.contains(line), "{code}: {stack}");
    }
    let caught = f
        .stateless("let n = 0; queueMicrotask(() => { try { throw new Error('x') } catch { n = 1 } }); await null; n")
        .await;
    assert_eq!(completed(&caught), "1");
    // A thrown value that is not an Error says what it was.
    let out = f.stateless("queueMicrotask(() => { throw 42 }); 1").await;
    assert_eq!(out.status, RunStatus::Failed, "{out:#?}");
    assert!(out.error.unwrap().message.contains("42"));
}
