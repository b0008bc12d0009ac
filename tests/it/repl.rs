//! Top-level `await` with REPL semantics (src/engine/repl.rs): a run that
//! awaits keeps its declarations and its completion value exactly as the
//! same run without `await`, in every engine mode.

use std::sync::Arc;
use std::time::Duration;

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunRequest, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};

use crate::common::engine::run;

/// Code agents write, the same code without `await`, and the result both
/// give (so the result is what a classic script gives).
pub const COMPLETIONS: &[(&str, &str, &str)] = &[
    (
        "try { await Promise.reject(new Error('boom')) } catch (e) { 'caught: ' + e.message }",
        "try { throw new Error('boom') } catch (e) { 'caught: ' + e.message }",
        "\"caught: boom\"",
    ),
    (
        "await 0; if (true) { 'yes' }",
        "0; if (true) { 'yes' }",
        "\"yes\"",
    ),
    (
        "const data = await Promise.resolve([1, 2, 3]); data.length",
        "const data = [1, 2, 3]; data.length",
        "3",
    ),
    (
        "let s = 0; for (const x of [1, 2, 3]) { s += await x } s",
        "let s = 0; for (const x of [1, 2, 3]) { s += x } s",
        "6",
    ),
    (
        "await null; switch (2) { case 2: 'two'; break; default: 'other' }",
        "null; switch (2) { case 2: 'two'; break; default: 'other' }",
        "\"two\"",
    ),
    (
        "label: { await 0; 'in block'; break label; }",
        "label: { 0; 'in block'; break label; }",
        "\"in block\"",
    ),
    (
        "await 0; do { 'once' } while (false)",
        "do { 'once' } while (false)",
        "\"once\"",
    ),
];

/// A run that declares every kind of top-level name and awaits, and a
/// later run that reads them all.
pub const DECLARES: &str = "var v = 1; let l = 2; const c = 3; function f() { return 4 }\n\
class K { get five() { return 5 } }\nconst { a, b: [d] } = { a: 6, b: [7] };\n\
for (var k of ['eight']) {}\nlet count = 0; function inc() { return ++count }\n\
const data = await Promise.resolve('nine'); inc()";
pub const READS: &str = "[typeof v, l, c, f(), new K().five, a, d, k, data, inc(), count].join()";
pub const READ_BACK: &str = "\"number,2,3,4,5,6,7,eight,nine,2,2\"";

async fn request(engine: &Engine, code: &str, heap: Option<&HeapKey>) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            stateful: engine.heaps().is_some(),
            heap: heap.cloned(),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await
}

fn completed(code: &str, outcome: &RunOutcome) -> String {
    assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
    assert!(outcome.warnings.is_empty(), "{code}: {outcome:#?}");
    outcome.result.clone().unwrap_or_default()
}

/// The engines of every mode: cold and warm (stateless), in process and
/// with an engine worker (stateful).
struct Modes {
    _dir: tempfile::TempDir,
    stateless: Vec<Engine>,
    stateful: Vec<Engine>,
}

fn modes() -> Modes {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("repl-worker-under-test");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcp-v8-lambda"), &program).unwrap();
    let store =
        |name: &str| -> Arc<dyn HeapStore> { Arc::new(FileHeapStore::new(dir.path().join(name))) };
    Modes {
        stateless: vec![
            Engine::new(EngineConfig::default(), None),
            Engine::new(
                EngineConfig {
                    warm_isolates: 1,
                    ..EngineConfig::default()
                },
                None,
            ),
        ],
        stateful: vec![
            Engine::new(EngineConfig::default(), Some(store("local"))),
            Engine::new(
                EngineConfig {
                    engine_workers: 1,
                    worker_program: Some(program),
                    ..EngineConfig::default()
                },
                Some(store("pooled")),
            ),
        ],
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_level_await_keeps_completion_values_and_declarations_in_every_mode() {
    let mut modes = modes();
    for engine in &modes.stateless {
        for (code, plain, expected) in COMPLETIONS {
            assert_eq!(
                completed(code, &request(engine, code, None).await),
                *expected
            );
            assert_eq!(
                completed(plain, &request(engine, plain, None).await),
                *expected
            );
        }
    }
    // An idle warm isolate holds the read-only heap that snapshotting runs
    // need alone: it goes first.
    modes.stateless.clear();
    for engine in &modes.stateful {
        let base = request(engine, "globalThis.base = 1; 1", None).await;
        let base = base.heap.expect("a base heap");
        for start in [None, Some(&base)] {
            for (code, _, expected) in COMPLETIONS {
                assert_eq!(
                    completed(code, &request(engine, code, start).await),
                    *expected
                );
            }
            let declared = request(engine, DECLARES, start).await;
            assert_eq!(completed(DECLARES, &declared), "1");
            let read = request(engine, READS, declared.heap.as_ref()).await;
            assert_eq!(completed(READS, &read), READ_BACK);
            // Exactly as without `await`.
            let plain = DECLARES.replace("await Promise.resolve('nine')", "'nine'");
            let declared = request(engine, &plain, start).await;
            let read = request(engine, READS, declared.heap.as_ref()).await;
            assert_eq!(completed(READS, &read), READ_BACK);
        }
    }
}

/// `let` and `const` cannot be declared twice across runs, with `await`
/// or without; `var` can, and `var x;` keeps the value x had.
#[tokio::test]
async fn redeclaration_across_runs_is_what_it_is_without_await() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::new(
        EngineConfig::default(),
        Some(Arc::new(FileHeapStore::new(dir.path()))),
    );
    for (first, second) in [
        ("let r = 1; await 0", "let r = 2; await 0"),
        ("let r = 1", "let r = 2"),
        ("const r = 1; await 0", "const r = 2"),
    ] {
        let first = request(&engine, first, None).await;
        let second = request(&engine, second, first.heap.as_ref()).await;
        assert_eq!(second.status, RunStatus::Failed, "{second:#?}");
        let error = second.error.unwrap();
        assert_eq!(error.name, "SyntaxError");
        assert!(error.message.contains("already been declared"), "{error:?}");
    }
    let first = request(&engine, "var x = 5; await 0", None).await;
    let second = request(&engine, "var x; await 0; x", first.heap.as_ref()).await;
    assert_eq!(completed("var x", &second), "5");
}
