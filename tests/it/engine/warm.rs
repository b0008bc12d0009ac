//! Stateless runs on the plain isolate each engine worker of a stateless
//! engine keeps ready: the same behaviour as an isolate made for the run,
//! and no run sees another.

use std::time::Duration;

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};

use crate::common::engine::{completed, run, stateless};

/// A stateless engine with two workers and a small default heap, so the
/// heap-limit cases hit the ready isolate itself.
fn warm_engine() -> Engine {
    crate::common::engine::on_workers(
        EngineConfig {
            engine_workers: 2,
            default_heap_limit_mb: 32,
            ..EngineConfig::default()
        },
        None,
    )
}

#[tokio::test]
async fn no_run_sees_what_an_earlier_run_left() {
    let engine = warm_engine();
    // More runs than warm isolates, so each runner serves several in turn.
    for _ in 0..5 {
        let out = stateless(
            &engine,
            "const seen = typeof globalThis.left + ' ' + ({}).polluted; \
             globalThis.left = 1; Object.prototype.polluted = true; seen",
        )
        .await;
        assert_eq!(completed(&out), "\"undefined undefined\"");
    }
}

#[tokio::test]
async fn host_functions_timers_and_typescript_work() {
    let engine = warm_engine();
    let out = stateless(
        &engine,
        "console.log('hi', {a: 1}); new Promise(r => setTimeout(() => r(queueMicrotask.name), 5))",
    )
    .await;
    assert_eq!(completed(&out), "\"queueMicrotask\"");
    assert_eq!(out.output, "hi { a: 1 }\n");
    let ts = run(
        &engine,
        RunRequest {
            code: "const n: number = 20; n + 1".into(),
            language: mcp_v8_lambda::engine::Language::Typescript,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(completed(&ts), "21");
}

#[tokio::test]
async fn throws_timeouts_and_exhausted_heaps_end_the_run_not_the_pool() {
    let engine = warm_engine();
    let thrown = stateless(&engine, "throw new TypeError('nope')").await;
    assert_eq!(thrown.status, RunStatus::Failed);
    assert_eq!(thrown.error.unwrap().message, "nope");

    let looped = run(
        &engine,
        RunRequest {
            code: "for (;;) {}".into(),
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(looped.status, RunStatus::TimedOut, "{looped:?}");

    // The warm isolate's own limit (the default), then another limit, which
    // gets an isolate made for it.
    for heap_limit_mb in [None, Some(16)] {
        let bomb = run(
            &engine,
            RunRequest {
                code: "const hoard = []; while (true) hoard.push(new Array(100000).fill(Math.random()))"
                    .into(),
                heap_limit_mb,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            bomb.status,
            RunStatus::OutOfMemory,
            "{heap_limit_mb:?}: {bomb:?}"
        );
        assert!(
            bomb.error
                .unwrap()
                .message
                .contains(&format!("{} MiB", heap_limit_mb.unwrap_or(32))),
            "the message names the limit that applied"
        );
    }

    let deep = stateless(
        &engine,
        "function down(n) { return down(n + 1) + 1 } down(0)",
    )
    .await;
    assert_eq!(deep.status, RunStatus::Failed);
    assert_eq!(deep.error.unwrap().name, "RangeError");

    for _ in 0..3 {
        assert_eq!(completed(&stateless(&engine, "'alive'").await), "\"alive\"");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_concurrent_runs_than_workers_all_complete() {
    let engine = std::sync::Arc::new(warm_engine());
    let runs: Vec<_> = (0..12)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let code = format!("new Promise(r => setTimeout(() => r({i} * 2), 10))");
                stateless(&engine, &code).await
            })
        })
        .collect();
    for (i, run) in runs.into_iter().enumerate() {
        let out = run.await.unwrap();
        assert_eq!(completed(&out), (i * 2).to_string());
    }
}

#[tokio::test]
async fn there_is_no_ambient_authority_in_a_warm_isolate() {
    let engine = warm_engine();
    let out = stateless(&engine, "Deno.env").await;
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.error.unwrap().name, "ReferenceError");
    // Node's `process` has none of the host's: its env is empty here.
    let out = stateless(
        &engine,
        "Object.keys(process.env).length + ':' + process.env.PATH",
    )
    .await;
    assert_eq!(completed(&out), "\"0:undefined\"");
    let out = stateless(&engine, "require('child_process')").await;
    assert!(out.error.unwrap().message.contains("provides only"));
    let out = stateless(&engine, "require('fs').readFileSync('/etc/passwd')").await;
    assert!(out.error.unwrap().message.contains("EACCES"));
    let out = stateless(&engine, "await fetch('http://127.0.0.1')").await;
    assert_eq!(out.status, RunStatus::Failed);
    assert!(out.error.unwrap().message.contains("egress policy"));
}

#[tokio::test]
async fn an_engine_with_a_store_runs_stateful_and_stateless_runs_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let store = mcp_v8_lambda::heap::FileHeapStore::new(dir.path());
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            engine_workers: 2,
            ..EngineConfig::default()
        },
        Some(std::sync::Arc::new(store)),
    );
    let both = async {
        let stateful = run(
            &engine,
            RunRequest {
                code: "globalThis.x = 1; x".into(),
                stateful: true,
                ..Default::default()
            },
        )
        .await;
        let plain = stateless(&engine, "2").await;
        (stateful, plain)
    };
    let (stateful, plain) = tokio::time::timeout(Duration::from_secs(30), both)
        .await
        .expect("stateful and stateless runs finish");
    assert_eq!(completed(&stateful), "1");
    assert!(stateful.heap.is_some());
    assert_eq!(completed(&plain), "2");
}

/// One worker, so every run lands on its ready isolate in turn.
fn one_warm_isolate() -> Engine {
    crate::common::engine::on_workers(
        EngineConfig {
            engine_workers: 1,
            ..EngineConfig::default()
        },
        None,
    )
}

#[tokio::test]
async fn microtasks_a_failed_run_left_queued_never_run_in_the_next() {
    let engine = one_warm_isolate();
    // The timer queues a microtask and throws before it can run: the run
    // fails with the microtask still queued.
    let failed = stateless(
        &engine,
        "setTimeout(() => { queueMicrotask(() => console.log('leaked')); \
         Promise.resolve().then(() => console.log('leaked too')); throw new Error('boom') }, 0)",
    )
    .await;
    assert_eq!(failed.status, RunStatus::Failed, "{failed:?}");
    assert_eq!(failed.output, "");
    for _ in 0..3 {
        let next = stateless(&engine, "await null; console.log('mine'); 1").await;
        assert_eq!(completed(&next), "1");
        assert_eq!(next.output, "mine\n", "nothing of the earlier run's");
    }
}

#[tokio::test]
async fn a_runner_serves_many_runs_across_isolate_replacements() {
    let engine = one_warm_isolate();
    // More than two isolates' worth of runs, with failures and a timeout
    // among them, each still alone in its context.
    for i in 0..600 {
        let code = match i % 150 {
            7 => "throw new Error('x')".to_owned(),
            99 => "for (;;) {}".to_owned(),
            _ => format!("const mine = typeof seen; var seen = {i}; mine + ':' + seen"),
        };
        let out = run(
            &engine,
            RunRequest {
                code,
                // Only the loop is meant to time out: a slow machine
                // must not time out the others.
                timeout: Some(if i % 150 == 99 {
                    Duration::from_millis(100)
                } else {
                    Duration::from_secs(30)
                }),
                ..Default::default()
            },
        )
        .await;
        match i % 150 {
            7 => assert_eq!(out.status, RunStatus::Failed, "{i}"),
            99 => assert_eq!(out.status, RunStatus::TimedOut, "{i}"),
            _ => assert_eq!(completed(&out), format!("\"undefined:{i}\""), "{i}"),
        }
    }
}
