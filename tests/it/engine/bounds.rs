//! What bounds a run and what is refused: time, memory, recursion, the limits a
//! request may ask for, heaps larger than their limit or the size bound.

use super::*;

#[tokio::test]
async fn an_infinite_loop_times_out_and_the_next_run_works() {
    let f = fixture();
    let out = f
        .run(RunRequest {
            code: "while (true) {}".into(),
            timeout: Some(Duration::from_secs(1)),
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::TimedOut);
    assert_eq!(out.error.unwrap().name, "TimeoutError");
    assert_eq!(completed(&f.stateless("2 + 2").await), "4");
}

#[tokio::test]
async fn a_stateful_timeout_stores_nothing_and_keeps_the_input_heap() {
    let f = fixture();
    let base = f.stateful("globalThis.x = 1", None).await;
    let base_heap = base.heap.clone().unwrap();
    let out = f
        .run(RunRequest {
            code: "x = 2; for (;;) {}".into(),
            heap: Some(base_heap.clone()),
            stateful: true,
            timeout: Some(Duration::from_millis(300)),
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::TimedOut);
    assert_eq!(out.heap, None);
    let again = f.stateful("x", Some(&base_heap)).await;
    assert_eq!(completed(&again), "1");
}

#[tokio::test]
async fn a_timer_past_the_deadline_is_a_timeout() {
    let f = fixture();
    let out = f
        .run(RunRequest {
            code: "setTimeout(() => {}, 60000); 1".into(),
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::TimedOut);
}

#[tokio::test]
async fn an_allocation_bomb_is_out_of_memory_and_the_next_run_works() {
    let f = fixture();
    for bomb in [
        "const hoard = []; while (true) hoard.push(new Array(100000).fill(Math.random()))",
        "let s = 'x'; const keep = []; while (true) { s = s + s.slice(0, 1000) + Math.random(); keep.push(s) }",
        // One allocation far past the limit, and a structure grown by the engine itself.
        "new Array(1e9).fill(0)",
        "new Map(Array.from({ length: 4e6 }, (_, i) => [i, i])).size",
    ] {
        let out = f
            .run(RunRequest {
                code: bomb.into(),
                stateful: true,
                heap_limit_mb: Some(32),
                ..Default::default()
            })
            .await;
        assert_eq!(out.status, RunStatus::OutOfMemory, "{bomb}: {out:?}");
        assert_eq!(out.heap, None);
        assert_eq!(out.error.unwrap().name, "OutOfMemoryError");
    }
    assert_eq!(completed(&f.stateful("'alive'", None).await), "\"alive\"");
}

#[tokio::test]
async fn deep_recursion_fails_with_a_range_error() {
    let f = fixture();
    let out = f
        .stateful("function down(n) { return down(n + 1) + 1 } down(0)", None)
        .await;
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.error.unwrap().name, "RangeError");
    assert_eq!(out.heap, None);
    assert_eq!(completed(&f.stateless("'next'").await), "\"next\"");
}

#[tokio::test]
async fn requests_outside_the_limits_are_refused_up_front() {
    let f = fixture();
    let too_big = "x".repeat(1024 * 1024 + 1);
    let err = f
        .engine
        .run(RunRequest {
            code: too_big,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::CodeTooLarge { .. }), "{err}");
    let err = f
        .engine
        .run(RunRequest {
            code: "1".into(),
            heap_limit_mb: Some(1),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::HeapLimitOutOfRange { .. }),
        "{err}"
    );
    let err = f
        .engine
        .run(RunRequest {
            code: "1".into(),
            timeout: Some(Duration::from_secs(100_000)),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::TimeoutOutOfRange { .. }),
        "{err}"
    );
    let err = f
        .engine
        .run(RunRequest {
            code: "1".into(),
            heap: Some(HeapKey::parse(&"0".repeat(64)).unwrap()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err, EngineError::HeapInStatelessRun);
}

/// A heap grown under a larger limit than the default is continued by a
/// call that does not repeat `heap_memory_max_mb`: it gets what the heap
/// needs plus room to grow, instead of failing every such call.
#[tokio::test]
async fn a_large_heap_is_continued_without_repeating_its_limit() {
    let f = fixture();
    let big = f
        .run(RunRequest {
            code: "globalThis.big = Array.from({ length: 700000 }, (_, i) => ({ i, s: 'item-' + i })); big.length".into(),
            stateful: true,
            heap_limit_mb: Some(256),
            ..Default::default()
        })
        .await;
    assert_eq!(completed(&big), "700000");
    let heap = big.heap.clone().unwrap();
    let payload = f
        .store
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap()
        .payload()
        .len();
    let default_mb = EngineConfig::default().default_heap_limit_mb;
    assert!(
        mcp_v8_lambda::engine::restore_needs_mb(payload) > default_mb,
        "the heap ({payload} bytes) must need more than the default to restore"
    );
    let out = f
        .stateful("big.push({ i: -1 }); big.length", Some(&heap))
        .await;
    assert_eq!(completed(&out), "700001", "{out:?}");
    // Given, the limit is the limit.
    let out = f
        .run(RunRequest {
            code: "big.length".into(),
            heap: Some(heap),
            stateful: true,
            heap_limit_mb: Some(default_mb),
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::OutOfMemory, "{out:?}");
}

#[tokio::test]
async fn restoring_a_heap_larger_than_the_limit_is_refused_not_fatal() {
    let f = fixture();
    let big = f
        .stateful("globalThis.big = Array.from({ length: 200000 }, (_, i) => ({ i, s: 'item-' + i })); big.length", None)
        .await;
    assert_eq!(completed(&big), "200000");
    let heap = big.heap.clone().unwrap();
    let out = f
        .run(RunRequest {
            code: "big.length".into(),
            heap: Some(heap.clone()),
            stateful: true,
            heap_limit_mb: Some(8),
            ..Default::default()
        })
        .await;
    assert_eq!(out.status, RunStatus::OutOfMemory, "{out:?}");
    assert!(out.error.unwrap().message.contains("to restore"));
    assert_eq!(out.heap, None);

    // At exactly the admitted size the restore must not be fatal either: it
    // completes, or growth past the limit ends as out_of_memory.
    let payload = f
        .store
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap()
        .payload()
        .len();
    let admitted = mcp_v8_lambda::engine::restore_needs_mb(payload);
    for code in [
        "big.length",
        "big.push(...Array.from({ length: 300000 }, (_, i) => ({ i }))); big.length",
    ] {
        let out = f
            .run(RunRequest {
                code: code.into(),
                heap: Some(heap.clone()),
                stateful: true,
                heap_limit_mb: Some(admitted),
                ..Default::default()
            })
            .await;
        assert!(
            matches!(out.status, RunStatus::Completed | RunStatus::OutOfMemory),
            "{code}: {out:?}"
        );
    }
    let again = f.stateful("big.length", Some(&heap)).await;
    assert_eq!(completed(&again), "200000");
}

#[tokio::test]
async fn snapshots_over_the_size_bound_are_neither_stored_nor_restored() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let bounded = |max_snapshot_bytes| {
        crate::common::engine::on_workers(
            EngineConfig {
                max_snapshot_bytes,
                ..EngineConfig::default()
            },
            Some(store.clone()),
        )
    };
    async fn run(engine: &Engine, code: &str, heap: Option<HeapKey>) -> RunOutcome {
        let request = RunRequest {
            code: code.into(),
            heap,
            stateful: true,
            ..Default::default()
        };
        engine.run(request).await.unwrap().outcome
    }
    let big = "globalThis.big = Array.from({ length: 200000 }, (_, i) => 'item-' + i); big.length";

    let small = bounded(2 * 1024 * 1024);
    let out = run(&small, big, None).await;
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.heap, None);
    let error = out.error.unwrap();
    assert_eq!(error.name, "SnapshotTooLarge");
    assert!(
        error.message.contains("MCP_V8_MAX_HEAP_SNAPSHOT_MB"),
        "{error:?}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("heaps")).map_or(0, |d| d.count()),
        0,
        "nothing was stored"
    );

    // Stored under a larger bound, the heap is refused by the smaller one.
    let large = bounded(64 * 1024 * 1024);
    let stored = run(&large, big, None).await;
    let heap = stored.heap.clone().expect("stored under the larger bound");
    let out = run(&small, "big.length", Some(heap.clone())).await;
    assert_eq!(out.status, RunStatus::Failed, "{out:?}");
    assert_eq!(out.error.unwrap().name, "SnapshotTooLarge");
    let out = run(&large, "big.length", Some(heap)).await;
    assert_eq!(out.result.as_deref(), Some("200000"), "{out:?}");
}
