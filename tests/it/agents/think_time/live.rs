//! A call that continues a heap an engine worker still holds live, before the
//! save of the run before it has ended: what it reads, what it waits for, what
//! it says when a save under it fails, and after a kill.

use super::*;

/// A server of one engine worker whose heap store goes through `plan`,
/// answering every `latest` run before its save, as `serve` does with
/// large heaps.
fn live_with_workers(
    plan: &Arc<FaultPlan>,
    configure: impl FnOnce(&mut mcp_v8_lambda::config::Config),
) -> Server {
    let mut config = test_config(3600, false);
    config.engine.answer_before_save_mb = Some(0);
    configure(&mut config);
    common::server_with_workers(config, 1, |stores| Stores {
        heaps: stores
            .heaps
            .map(|heaps| Arc::new(Faulty::<dyn HeapStore>::new(heaps, plan.clone())) as _),
        ..stores
    })
}

/// A `latest` call while the session's last heap is still being stored
/// continues it at once from the engine worker that keeps it live, and
/// does not wait for the save (here held): before, each such call waited
/// for the whole save of the heap before it. The saves that follow are
/// logged in the order the runs continued each other, each entry's input
/// the entry before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latest_call_continues_the_live_heap_without_waiting_for_the_save_before() {
    let plan = FaultPlan::new();
    let s = live_with_workers(&plan, |_| {});
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let call = |code: &str| json!({"code": code, "session": "live", "heap": "latest"});
    let first = run(
        &s,
        &sid,
        call("require('fs').writeFileSync('/work/a.txt', 'kept'); globalThis.n = 1; n"),
    )
    .await;
    assert_eq!(outcome(&first)["result"], "1", "{first}");
    // The live heap's files are readable before its snapshot is stored.
    let reads =
        "n += 1; require('fs').readFileSync('/work/a.txt', 'utf8') === 'kept' ? n : 'no file'";
    for expected in ["2", "3"] {
        let next = s.call(&sid, call(reads));
        tokio::pin!(next);
        let next = tokio::select! {
            next = &mut next => next,
            () = tokio::time::sleep(Duration::from_secs(10)) => {
                panic!("latest waited for the save before it")
            }
        };
        let answered = outcome(&next);
        assert_eq!(answered["result"], expected, "{next}");
        assert!(answered["heap"].is_null(), "{next}");
        assert!(answered["heap_saving"].is_string(), "{next}");
    }
    let (tenant, session) = (Default::default(), common::logical("live"));
    let log = || s.meta.read_log(&tenant, &session, 0, 10);
    assert!(
        log().await.unwrap().is_empty(),
        "a save went before the held store"
    );
    plan.release("heap.put");
    let after = run(&s, &sid, call("n")).await;
    assert_eq!(outcome(&after)["result"], "3", "{after}");
    // Each save is logged once stored, in the order the runs came.
    let mut entries = log().await.unwrap();
    for _ in 0..200 {
        if entries.len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        entries = log().await.unwrap();
    }
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(entries[0].input_heap.is_none(), "{entries:?}");
    for pair in entries.windows(2) {
        assert_eq!(
            pair[1].input_heap.as_ref(),
            Some(&pair[0].output_heap),
            "each run's entry continues the one before: {entries:?}"
        );
    }
}

/// A run that continues a heap still being stored, and whose own save
/// begins only once that save has ended (here released while the run is
/// busy), still names that heap as its input: before, its entry named
/// none, since the save it continued was no longer going when its own
/// began.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_continuation_whose_save_before_ends_while_it_runs_names_its_input() {
    let plan = FaultPlan::new();
    let s = live_with_workers(&plan, |_| {});
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let call = |code: &str| json!({"code": code, "session": "overtaken", "heap": "latest"});
    let first = run(&s, &sid, call("globalThis.n = 1; n")).await;
    // Short, as every answer on a large heap carries it, and it says how
    // to continue.
    let note = outcome(&first)["heap_saving"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains("heap: \"latest\"") && note.len() < 200,
        "{} bytes: {first}",
        note.len()
    );
    let busy = "const t = Date.now(); while (Date.now() - t < 1500) {} n += 1; n";
    let second = s.call(&sid, call(busy));
    tokio::pin!(second);
    tokio::select! {
        early = &mut second => panic!("answered before the store was released: {early}"),
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    plan.release("heap.put");
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the busy run was answered");
    assert_eq!(outcome(&second)["result"], "2", "{second}");
    let (tenant, session) = (Default::default(), common::logical("overtaken"));
    let mut entries = Vec::new();
    for _ in 0..200 {
        entries = s.meta.read_log(&tenant, &session, 0, 10).await.unwrap();
        if entries.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(
        entries[1].input_heap.as_ref(),
        Some(&entries[0].output_heap),
        "the busy run's entry names the heap it continued: {entries:?}"
    );
}

/// Past `MCP_V8_UNSAVED_HEAPS` heaps of a session still being stored, a
/// `latest` call waits for the oldest before it runs, and says so in
/// `save_wait_ms` and a warning in words the model can act on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_bound_on_heaps_being_stored_waits_and_says_why() {
    let plan = FaultPlan::new();
    let s = live_with_workers(&plan, |config| config.engine.unsaved_heaps = 1);
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let call = |code: &str| json!({"code": code, "session": "bound", "heap": "latest"});
    let first = run(&s, &sid, call("globalThis.n = 1; n")).await;
    assert!(outcome(&first)["save_wait_ms"].is_null(), "{first}");
    let next = s.call(&sid, call("n += 1; n"));
    tokio::pin!(next);
    tokio::select! {
        early = &mut next => panic!("the call did not wait past the bound: {early}"),
        () = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    plan.release("heap.put");
    let next = tokio::time::timeout(Duration::from_secs(30), next)
        .await
        .expect("the call was answered once the save was stored");
    let answered = outcome(&next);
    assert_eq!(answered["result"], "2", "{next}");
    assert!(
        answered["save_wait_ms"]
            .as_u64()
            .is_some_and(|ms| ms >= 400),
        "{next}"
    );
    // In words the model can act on: no setting it cannot change.
    let warnings = answered["warnings"].to_string();
    assert!(
        warnings.contains("earlier heaps of this session") && !warnings.contains("MCP_V8_"),
        "{next}"
    );
}

/// A run that continued a heap live, whose own save then failed, leaves
/// the session at the next heap stored: the run after it holds both runs'
/// state, and its record says the heap it continued was not stored. Never
/// an older heap without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_save_under_a_live_continuation_leaves_the_newer_heap_and_says_so() {
    let plan = FaultPlan::new();
    let s = live_with_workers(&plan, |_| {});
    let sid = s.initialize().await;
    // The first save's put fails; the second's goes through.
    plan.fail_nth("heap.put", 1, Fault::Fail);
    plan.hold("heap.put");
    let call = |code: &str| json!({"code": code, "session": "failed", "heap": "latest"});
    let first = run(&s, &sid, call("globalThis.n = 1; n")).await;
    let first_id = outcome(&first)["execution_id"].as_str().unwrap().to_owned();
    // The first put is the first run's: the second run starts once it is
    // held.
    for _ in 0..300 {
        if plan.calls("heap.put") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(plan.calls("heap.put"), 1);
    let second = run(&s, &sid, call("n += 1; n")).await;
    assert_eq!(outcome(&second)["result"], "2", "{second}");
    let second_id = outcome(&second)["execution_id"]
        .as_str()
        .unwrap()
        .to_owned();
    plan.release("heap.put");
    let after = run(&s, &sid, call("n")).await;
    assert_eq!(
        outcome(&after)["result"],
        "2",
        "latest is the newest heap stored, which holds both runs: {after}"
    );
    let record = s
        .tool(&sid, "get_execution", json!({"execution_id": second_id}))
        .await;
    assert!(
        record.to_string().contains(&first_id) && record.to_string().contains("was not stored"),
        "{record}"
    );
}

/// `serve` killed with SIGKILL while the saves of several quick calls are
/// queued (and coalesced): after a restart, `latest` says which answered
/// run was lost, with every answered run whose effects no stored heap
/// holds, and names the last stored heap, or continues the last one
/// stored; it never continues an older heap without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_queued_saves_never_continues_an_older_heap_silently() {
    let mut serve = Serve::start(&["--engine-workers", "1"], &[]);
    let first = serve
        .run_js(json!({"code": "globalThis.small = 1; small", "session": "queued"}))
        .await;
    let stored = first["heap"].as_str().expect("stored first").to_owned();
    let large = serve
        .run_js(json!({"code": LARGE, "session": "queued", "heap": "latest", "heap_memory_max_mb": 512}))
        .await;
    assert_eq!(large["status"], "completed", "{large}");
    let mut last = String::new();
    let mut answered = vec![large["execution_id"].as_str().unwrap().to_owned()];
    for expected in 2..=8 {
        let next = serve
            .run_js(json!({"code": "small += 1; small", "session": "queued", "heap": "latest", "heap_memory_max_mb": 512}))
            .await;
        assert_eq!(next["result"], expected.to_string(), "{next}");
        last = next["execution_id"].as_str().unwrap().to_owned();
        answered.push(last.clone());
    }
    serve.restart_after_kill(&["--engine-workers", "1"], &[]);
    let next = serve
        .run_js(json!({"code": "small", "session": "queued", "heap": "latest", "heap_memory_max_mb": 512}))
        .await;
    match next["result"].as_str() {
        // Every save was over before the kill: the newest state.
        Some(result) => assert_eq!(result, "8", "{next}"),
        None => {
            let text = next["error_text"].as_str().unwrap_or_default();
            assert!(
                text.contains("is lost") && text.contains(&last),
                "names the newest answered run as lost: {next}"
            );
            // Each answered run either has its record (its effects are in
            // a stored heap) or is named as lost.
            for id in &answered {
                let record = serve
                    .tool("get_execution", json!({"execution_id": id}))
                    .await;
                assert!(
                    record["error_text"].is_null() || text.contains(id.as_str()),
                    "run {id} has no record and is not named as lost: {next}"
                );
            }
            assert!(
                text.contains(&stored) || text.contains("log entry"),
                "names the last stored heap: {next}"
            );
        }
    }
}

/// A run that continues a live heap whose key is not known yet (its
/// `input_heap` is `null`) still gets the advice of a continued heap: a
/// cell run twice names the earlier run's declaration. Before, the advice
/// took a `null` input as a fresh isolate and said nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_continuation_gets_the_advice_of_a_continued_heap() {
    let plan = FaultPlan::new();
    let s = live_with_workers(&plan, |_| {});
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let call = |code: &str| json!({"code": code, "session": "advice", "heap": "latest"});
    let cell = "const sales = [1, 2, 3]; sales.length";
    let first = run(&s, &sid, call(cell)).await;
    assert_eq!(outcome(&first)["result"], "3", "{first}");
    let again = run(&s, &sid, call(cell)).await;
    let answered = outcome(&again);
    assert!(answered["input_heap"].is_null(), "continued live: {again}");
    let error = answered["error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains("an earlier run of this heap declared `sales`"),
        "{again}"
    );
    plan.release("heap.put");
}
