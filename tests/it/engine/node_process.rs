//! Node's timer model and `process`'s events in runs: `Timeout` and
//! `Immediate` objects, an unref'd timer that does not hold the run, and
//! 'exit', 'beforeExit', 'uncaughtException', 'unhandledRejection' and
//! 'warning' where code listens for them (src/engine/node/timers.js,
//! process.js, src/engine/run/process_events.rs).

use std::path::Path;
use std::sync::Arc;

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunStatus};
use mcp_v8_lambda::files::DirFileStore;
use mcp_v8_lambda::heap::{FileHeapStore, HeapStore};

use crate::common::engine::{completed, run_code};

fn engine(dir: &Path) -> Engine {
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.join("heaps")));
    crate::common::engine::on_workers(EngineConfig::default(), Some(heaps))
        .with_files(Arc::new(DirFileStore::new(dir.join("work"))))
}

#[tokio::test]
async fn timers_are_nodes_objects_and_an_unrefd_one_does_not_hold_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    // The run's only timer is unref'd: it ends at once, where waiting for
    // the timer would run into the run's 30 s.
    let code = "setTimeout(() => { globalThis.fired = true }, 60000).unref(); 'ended'";
    let out = run_code(&engine, code, None).await;
    assert_eq!(completed(&out), "\"ended\"");
    let code = "globalThis.fired ?? 'never fired'";
    let next = run_code(&engine, code, out.heap.as_ref()).await;
    assert_eq!(completed(&next), "\"never fired\"");

    let code = r#"
const order = [];
const t = setTimeout(function () { order.push(this === t ? 'this is the timeout' : 'this is not') }, 1);
const i = setImmediate(function (a) { order.push(`immediate ${a} ${this === i}`) }, 'x');
const gone = setTimeout(() => order.push('cleared by number'), 1);
clearTimeout(+gone);
const n = setInterval(() => { order.push('interval'); if (order.filter((o) => o === 'interval').length === 2) clearInterval(n) }, 1);
const r = setTimeout(() => order.push('refreshed'), 1);
r.refresh();
await new Promise((resolve) => setTimeout(resolve, 30));
[typeof t, t.hasRef(), t.unref().hasRef(), t.ref().hasRef(), i.constructor.name, order.sort()]
"#;
    let out = run_code(&engine, code, None).await;
    assert_eq!(
        completed(&out),
        r#"["object",true,false,true,"Immediate",["immediate x true","interval","interval","refreshed","this is the timeout"]]"#
    );
    // A timer a heap kept from an earlier run names none of a later one:
    // clearing it there clears nothing.
    let code = "globalThis.old = setTimeout(() => {}, 60000).unref(); globalThis.oldId = setInterval(() => {}, 60000).unref(); 1";
    let kept = run_code(&engine, code, None).await;
    completed(&kept);
    let code = "let fired = 0; setTimeout(() => fired++, 1); setTimeout(() => fired++, 1); clearTimeout(old); clearInterval(oldId); \
                await new Promise((resolve) => setTimeout(resolve, 20)); fired";
    let out = run_code(&engine, code, kept.heap.as_ref()).await;
    assert_eq!(completed(&out), "2");
    // timers/promises, as Node has it.
    let code = "const { setTimeout: wait, setImmediate: next } = require('timers/promises'); \
                [await wait(1, 'waited'), await next('next'), typeof require('timers').setImmediate]";
    let out = run_code(&engine, code, None).await;
    assert_eq!(completed(&out), r#"["waited","next","function"]"#);
}

#[tokio::test]
async fn process_emits_nodes_events_to_the_code_that_listens() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    // 'beforeExit' may queue more work; 'exit' comes last.
    let code = r#"
let again = true;
process.on('beforeExit', (code) => { console.log(`beforeExit ${code}`); if (again) { again = false; setTimeout(() => console.log('more work'), 1) } });
process.on('exit', (code) => console.log(`exit ${code}`));
setTimeout(() => console.log('timer'), 1);
'done'
"#;
    let out = run_code(&engine, code, None).await;
    assert_eq!(completed(&out), "\"done\"");
    assert_eq!(
        out.output.trim(),
        "timer\nbeforeExit 0\nmore work\nbeforeExit 0\nexit 0",
        "{out:#?}"
    );
    // The listeners are the heap's: a later run from it ends the same way.
    let code = "process._exiting";
    let next = run_code(&engine, code, out.heap.as_ref()).await;
    assert_eq!(completed(&next), "false");
    assert_eq!(next.output.trim(), "beforeExit 0\nexit 0", "{next:#?}");
    // A throw in a timer goes to 'uncaughtException' listeners, which the
    // output then says; the run goes on.
    let code = r#"
const seen = [];
process.on('uncaughtException', (error, origin) => seen.push(`${error.message} (${origin})`));
setTimeout(() => { throw new Error('in a timer') }, 1);
process.nextTick(() => { throw new Error('in a tick') });
queueMicrotask(() => { throw new Error('in a microtask') });
setImmediate(() => { throw new Error('in an immediate') });
await new Promise((resolve) => setTimeout(resolve, 20));
seen.sort()
"#;
    let out = run_code(&engine, code, None).await;
    assert_eq!(
        completed(&out),
        r#"["in a microtask (uncaughtException)","in a tick (uncaughtException)","in a timer (uncaughtException)","in an immediate (uncaughtException)"]"#
    );
    assert!(
        out.output
            .contains("went to process.on('uncaughtException')"),
        "{out:#?}"
    );
    // Without a listener, a timer's throw fails the run, with its line.
    let code = "setImmediate(() => {\n  throw new TypeError('nobody listens');\n});\n'after'";
    let out = run_code(&engine, code, None).await;
    assert_eq!(out.status, RunStatus::Failed, "{out:#?}");
    let error = out.error.unwrap();
    assert_eq!(error.message, "nobody listens");
    assert!(error.stack.unwrap_or_default().contains("run_js.js:2"));
    // A rejection nothing handled goes to 'unhandledRejection' listeners
    // instead of the run's warnings.
    let code = "process.on('unhandledRejection', (reason) => console.log(`caught ${reason.message}`)); \
                Promise.reject(new Error('nobody awaits')); 'done'";
    let out = run_code(&engine, code, None).await;
    assert_eq!(completed(&out), "\"done\"");
    assert_eq!(out.output.trim(), "caught nobody awaits");
    assert!(out.warnings.is_empty(), "{out:#?}");
    let code = "Promise.reject(new Error('nobody awaits')); 'done'";
    let out = run_code(&engine, code, None).await;
    assert_eq!(out.warnings.len(), 1, "{out:#?}");
    // emitWarning prints as Node does and emits 'warning'.
    let code = "let heard; process.on('warning', (w) => { heard = `${w.name} ${w.code}` }); \
                process.emitWarning('careful', { type: 'CustomWarning', code: 'X1' }); \
                await new Promise((r) => setImmediate(r)); [heard, process instanceof require('events')]";
    let out = run_code(&engine, code, None).await;
    assert_eq!(completed(&out), r#"["CustomWarning X1",true]"#);
    assert!(
        out.output.contains("[X1] CustomWarning: careful"),
        "{out:#?}"
    );
    // An 'exit' listener's throw fails the run.
    let code = "process.on('exit', () => { throw new Error('at exit') }); 'done'";
    let out = run_code(&engine, code, None).await;
    assert_eq!(out.status, RunStatus::Failed, "{out:#?}");
    assert_eq!(out.error.unwrap().message, "at exit");
}

/// A heap stored before Node's timers (tests/fixtures/legacy-work, made by
/// an earlier build) keeps its own `setTimeout`, which returns a number,
/// and gains `setImmediate`.
#[tokio::test]
async fn a_heap_made_before_nodes_timers_keeps_its_own_and_gains_set_immediate() {
    let dir = tempfile::tempdir().unwrap();
    let heap = crate::common::engine::legacy_work_heap(dir.path());
    let engine = engine(dir.path());
    let code = "const id = setTimeout(() => {}, 1); clearTimeout(id); \
                const order = []; setTimeout(() => order.push('timeout'), 5); setImmediate(() => order.push('immediate')); \
                await new Promise((resolve) => setTimeout(resolve, 20)); [typeof id, kept, order]";
    let out = run_code(&engine, code, Some(&heap)).await;
    assert_eq!(completed(&out), r#"["number",42,["immediate","timeout"]]"#);
    // Its own timers' throws reach 'uncaughtException' listeners too: the
    // event loop hands them over, whichever setTimeout made the timer.
    let code = "let heard; process.on('uncaughtException', (e) => { heard = e.message }); \
                setTimeout(() => { throw new Error('from the old setTimeout') }, 1); \
                await new Promise((resolve) => setTimeout(resolve, 20)); heard";
    let out = run_code(&engine, code, out.heap.as_ref()).await;
    assert_eq!(completed(&out), r#""from the old setTimeout""#);
}
