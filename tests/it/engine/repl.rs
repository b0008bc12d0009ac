//! Top-level `await` with REPL semantics (src/engine/run/repl.rs): a run that
//! awaits keeps its declarations and its completion value exactly as the
//! same run without `await`, in every engine mode.

use std::sync::Arc;

use crate::common::engine::run_report;
use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunReport, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};

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
    // Every `await` followed by a parenthesis: a classic script reads a
    // call of a function named `await` (Node's REPL awaits).
    ("String(await (Promise.resolve(3)))", "String(3)", "\"3\""),
    (
        "const r = await (Promise.resolve(2).then((x) => x * 2)); r",
        "const r = 4; r",
        "4",
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
    run_report(engine, code, heap).await.outcome
}

fn completed(code: &str, outcome: &RunOutcome) -> String {
    assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
    assert!(outcome.warnings.is_empty(), "{code}: {outcome:#?}");
    outcome.result.clone().unwrap_or_default()
}

/// The engines of both modes: stateless (a worker's ready plain isolate)
/// and stateful (restored or new snapshots).
struct Modes {
    _dir: tempfile::TempDir,
    stateless: Vec<Engine>,
    stateful: Vec<Engine>,
}

fn modes() -> Modes {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    Modes {
        stateless: vec![crate::common::engine::on_workers(
            EngineConfig::default(),
            None,
        )],
        stateful: vec![crate::common::engine::on_workers(
            EngineConfig::default(),
            Some(store),
        )],
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_level_await_keeps_completion_values_and_declarations_in_every_mode() {
    let modes = modes();
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
    let engine = crate::common::engine::on_workers(
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

/// Rejections nobody handled, and the run's result: the first two codes
/// lose an error, the rest handle theirs (late, or by awaiting).
pub const REJECTIONS: &[(&str, &[&str])] = &[
    (
        "Promise.reject(new Error('x')); 'after'",
        &["nothing handled it: Error: x (at run_js.js:1:16)"],
    ),
    (
        "async function load() { throw new TypeError('no data') }\nload(); await 0; 'after'",
        &["TypeError: no data"],
    ),
    (
        "const p = Promise.reject(new Error('late')); await 0; p.catch(() => {}); 'after'",
        &[],
    ),
    (
        "try { await Promise.reject(new Error('awaited')) } catch { } 'after'",
        &[],
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhandled_rejections_are_warnings_and_the_run_completes_in_every_mode() {
    let mut modes = modes();
    let check = |code: &str, says: &[&str], outcome: &RunOutcome| {
        assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
        assert_eq!(outcome.result.as_deref(), Some("\"after\""), "{code}");
        assert_eq!(outcome.warnings.len(), says.len(), "{code}: {outcome:#?}");
        for (warning, says) in outcome.warnings.iter().zip(says) {
            assert!(warning.contains(says), "{code}: {warning}");
        }
    };
    for engine in &modes.stateless {
        for (code, says) in REJECTIONS {
            check(code, says, &request(engine, code, None).await);
        }
    }
    modes.stateless.clear();
    for engine in &modes.stateful {
        let base = request(engine, "globalThis.base = 1; 1", None).await;
        for start in [None, base.heap.as_ref()] {
            for (code, says) in REJECTIONS {
                let outcome = request(engine, code, start).await;
                check(code, says, &outcome);
                assert!(outcome.heap.is_some(), "{code}: the heap is stored");
            }
        }
    }
}

/// Code whose positions V8 sees elsewhere than the caller wrote them, and
/// the position each error, warning or trace must name: TypeScript
/// (reprinted by oxc), top-level await (rewritten), and both.
pub const POSITIONS: &[(&str, &str)] = &[
    (
        "interface P {\n  x: number\n}\n\nconst p: P = { x: 1 };\n\nthrow new Error('line 7')",
        "run_js.js:7:7",
    ),
    (
        "const a = 1;\nconst b = 2;\n\n\nconst c = await Promise.resolve(3); throw new Error('line 5')",
        "run_js.js:5:43",
    ),
    (
        "type N = number;\nconst n: N = await Promise.resolve(1);\n\nnull.boom",
        "run_js.js:4:6",
    ),
];

/// The `run_js.js:L:C` positions in `text`, in order.
fn positions_in(text: &str) -> Vec<String> {
    text.match_indices("run_js.js:")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ')')
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_are_those_of_the_code_as_sent_in_every_mode() {
    let mut modes = modes();
    let check = |code: &str, at: &str, outcome: &RunOutcome| {
        assert_eq!(outcome.status, RunStatus::Failed, "{code}: {outcome:#?}");
        let stack = outcome.error.as_ref().unwrap().stack.clone().unwrap();
        // The first frame is the throw; no frame of the wrapper is left.
        assert_eq!(positions_in(&stack), vec![at.to_owned()], "{code}: {stack}");
    };
    let traced = "await 0;\n\n  console.trace('here')";
    let rejected = "await 0; Promise.reject(new Error('x')); 'after'";
    let check_others = |trace: &RunOutcome, rejection: &RunOutcome| {
        assert_eq!(
            positions_in(&trace.output),
            vec!["run_js.js:3:11"],
            "{trace:#?}"
        );
        assert!(
            rejection.warnings[0].contains("(at run_js.js:1:25)"),
            "{rejection:#?}"
        );
    };
    for engine in &modes.stateless {
        for (code, at) in POSITIONS {
            check(code, at, &request(engine, code, None).await);
        }
        check_others(
            &request(engine, traced, None).await,
            &request(engine, rejected, None).await,
        );
    }
    modes.stateless.clear();
    for engine in &modes.stateful {
        let base = request(engine, "globalThis.base = 1; 1", None).await;
        for start in [None, base.heap.as_ref()] {
            for (code, at) in POSITIONS {
                check(code, at, &request(engine, code, start).await);
            }
            check_others(
                &request(engine, traced, start).await,
                &request(engine, rejected, start).await,
            );
        }
    }
}

/// Values as a REPL displays them, for the text the model reads; the
/// original `result` beside it.
pub const DISPLAYED: &[(&str, &str, Option<&str>)] = &[
    (
        "[NaN, Infinity, -Infinity, -0]",
        "[ NaN, Infinity, -Infinity, -0 ]",
        Some("[null,null,null,0]"),
    ),
    ("-0", "-0", Some("0")),
    ("undefined", "undefined", None),
    ("10n", "10n", Some("10n")),
    ("'2'", "'2'", Some("\"2\"")),
    (
        "new Map([['a', 1]])",
        "Map(1) { 'a' => 1 }",
        Some("Map(1) { 'a' => 1 }"),
    ),
    ("new Set([1])", "Set(1) { 1 }", Some("Set(1) { 1 }")),
    (
        "new Uint8Array([1, 2])",
        "Uint8Array(2) [ 1, 2 ]",
        Some("{\"0\":1,\"1\":2}"),
    ),
    (
        "new Date(0)",
        "1970-01-01T00:00:00.000Z",
        Some("\"1970-01-01T00:00:00.000Z\""),
    ),
    (
        "class Point { constructor() { this.x = 1 } }; new Point()",
        "Point { x: 1 }",
        Some("{\"x\":1}"),
    ),
    (
        "const o = { n: 1 }; o.self = o; o",
        "{ n: 1, self: [Circular] }",
        Some("{ n: 1, self: [Circular] }"),
    ),
    (
        "await 0; [undefined, null]",
        "[ undefined, null ]",
        Some("[null,null]"),
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_are_displayed_as_a_repl_shows_them_in_every_mode() {
    let mut modes = modes();
    let check = |engine_report: RunReport, code: &str, shown: &str, result: Option<&str>| {
        let outcome = &engine_report.outcome;
        assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
        assert_eq!(engine_report.repl.as_deref(), Some(shown), "{code}");
        assert_eq!(outcome.result.as_deref(), result, "{code}");
    };
    for engine in &modes.stateless {
        for (code, shown, result) in DISPLAYED {
            check(run_report(engine, code, None).await, code, shown, *result);
        }
    }
    modes.stateless.clear();
    for engine in &modes.stateful {
        let base = request(engine, "globalThis.base = 1; 1", None).await;
        for start in [None, base.heap.as_ref()] {
            for (code, shown, result) in DISPLAYED {
                check(run_report(engine, code, start).await, code, shown, *result);
            }
        }
    }
}
