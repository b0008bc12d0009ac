//! A call costs its run, not its heap: a run in a logical session is
//! answered before its heap is stored, a `latest` waits for that save, a
//! save that never ends is reported rather than skipped, and engine
//! workers keep heaps restored for the next call within
//! `MCP_V8_READY_HEAPS_MB` (docs/protocol.md, "Answer first, save after").

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::faults::{Fault, FaultPlan, Faulty};
use common::process::{Serve, children};
use common::{Server, Stores, server_configured, test_config};
use mcp_v8_lambda::heap::HeapStore;
use serde_json::{Value, json};

mod live;

/// A server whose heap store goes through `plan`, answering every run in a
/// logical session before its save (a threshold of 0 MiB).
fn answering_first(plan: &Arc<FaultPlan>) -> Server {
    answering_first_within(plan, test_config(3600, false))
}

/// [`answering_first`] whose engine workers keep no heap ready
/// (`MCP_V8_READY_HEAPS_MB=0`): a call that continues a heap still being
/// saved waits for the save, as it does where no worker holds it live.
fn answering_first_unready(plan: &Arc<FaultPlan>) -> Server {
    let mut config = test_config(3600, false);
    config.engine.ready_heaps_mb_set = Some(0);
    answering_first_within(plan, config)
}

fn answering_first_within(
    plan: &Arc<FaultPlan>,
    mut config: mcp_v8_lambda::config::Config,
) -> Server {
    config.engine.answer_before_save_mb = Some(0);
    server_configured(config, |stores| Stores {
        heaps: stores
            .heaps
            .map(|heaps| Arc::new(Faulty::<dyn HeapStore>::new(heaps, plan.clone())) as _),
        ..stores
    })
}

fn outcome(result: &Value) -> &Value {
    &result["structuredContent"]
}

/// `run_js` in `session`, failing the test if it takes over 30 s (an
/// answer that waits for a held save never comes).
async fn run(s: &Server, sid: &str, arguments: Value) -> Value {
    tokio::time::timeout(Duration::from_secs(30), s.call(sid, arguments))
        .await
        .expect("the call was answered")
}

/// A run answered before its heap is stored is reachable by the execution
/// id its answer has: its files as `mcp-v8://heaps/{execution_id}/files/…`
/// and its record by get_execution, each waiting for the save (before,
/// the URI needed the key, which the answer did not have).
#[tokio::test]
async fn a_runs_files_and_record_are_read_by_its_execution_id_before_its_key_exists() {
    let plan = FaultPlan::new();
    let s = answering_first(&plan);
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let first = run(
        &s,
        &sid,
        json!({"code": "require('fs').writeFileSync('/work/a.txt', 'kept'); 1", "session": "byid", "heap": "latest"}),
    )
    .await;
    let answered = outcome(&first);
    assert!(answered["heap"].is_null(), "{first}");
    let id = answered["execution_id"].as_str().unwrap().to_owned();
    let uri = format!("mcp-v8://heaps/{id}/files/a.txt");
    assert!(
        answered["heap_saving"]
            .as_str()
            .is_some_and(|text| text.contains(&format!("mcp-v8://heaps/{id}/files/"))),
        "{first}"
    );
    let read = s.rpc(
        Some(&sid),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": uri}}),
    );
    tokio::pin!(read);
    tokio::select! {
        early = &mut read => panic!("the read did not wait for the save: {:?}", early.body),
        () = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    plan.release("heap.put");
    let read = read.await.body;
    assert_eq!(read["result"]["contents"][0]["text"], "kept", "{read}");
    assert_eq!(read["result"]["contents"][0]["uri"], uri.as_str());
    let record = s
        .tool(&sid, "get_execution", json!({"execution_id": id}))
        .await;
    let stored = s
        .meta
        .last_log_entry(&Default::default(), &common::logical("byid"))
        .await
        .unwrap()
        .expect("the run's entry");
    assert!(
        record.to_string().contains(stored.output_heap.as_str()),
        "{record}"
    );
    // The answer's duration could not hold the save; the record says
    // how long it took after.
    assert!(answered["saved_after_ms"].is_null(), "{first}");
    assert!(
        record["structuredContent"]["saved_after_ms"].is_u64(),
        "{record}"
    );
    // An id no run of this caller has names nothing, at once.
    let unknown = format!("mcp-v8://heaps/{}/files/a.txt", uuid::Uuid::new_v4());
    let read = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": unknown}}),
        )
        .await
        .body;
    assert_eq!(read["error"]["message"], "Resource not found", "{read}");
}

#[tokio::test]
async fn a_run_is_answered_before_its_save_ends_and_latest_waits_for_it() {
    let plan = FaultPlan::new();
    let s = answering_first_unready(&plan);
    let sid = s.initialize().await;
    plan.hold("heap.put");
    let first = run(
        &s,
        &sid,
        json!({"code": "globalThis.a = 41; a", "session": "think", "heap": "latest"}),
    )
    .await;
    let answered = outcome(&first);
    assert_eq!(answered["status"], "completed", "{first}");
    assert_eq!(answered["result"], "41");
    assert!(
        answered["heap"].is_null(),
        "no key before the save: {first}"
    );
    let saving = answered["heap_saving"].as_str().unwrap_or_default();
    assert!(
        saving.contains("heap: \"latest\"") && saving.contains("think"),
        "{first}"
    );
    // The session's log has nothing yet: the save is held.
    let log = s
        .meta
        .last_log_entry(&Default::default(), &common::logical("think"))
        .await
        .unwrap();
    assert!(log.is_none(), "{log:?}");

    let next = run(
        &s,
        &sid,
        json!({"code": "a + 1", "session": "think", "heap": "latest"}),
    );
    tokio::pin!(next);
    tokio::select! {
        early = &mut next => panic!("latest did not wait for the save going on: {early}"),
        () = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    plan.release("heap.put");
    let next = next.await;
    assert_eq!(outcome(&next)["result"], "42", "{next}");
    let stored = s
        .meta
        .last_log_entry(&Default::default(), &common::logical("think"))
        .await
        .unwrap()
        .expect("the first run's entry, written once its heap was stored");
    assert_eq!(
        outcome(&next)["input_heap"],
        stored.output_heap.as_str(),
        "latest continued the heap just stored: {next}"
    );
    // The execution record has the key.
    let id = answered["execution_id"].as_str().unwrap();
    let record = s
        .tool(&sid, "get_execution", json!({"execution_id": id}))
        .await;
    assert!(
        record.to_string().contains(stored.output_heap.as_str()),
        "{record}"
    );
}

#[tokio::test]
async fn a_save_that_fails_after_its_answer_makes_latest_say_so_and_name_the_last_stored_heap() {
    let plan = FaultPlan::new();
    let s = answering_first_unready(&plan);
    let sid = s.initialize().await;
    // The second run's save fails: it starts once the first's is done.
    plan.fail_nth("heap.put", 2, Fault::Fail);
    let first = run(
        &s,
        &sid,
        json!({"code": "globalThis.a = 1; a", "session": "lost", "heap": "latest"}),
    )
    .await;
    assert_eq!(outcome(&first)["status"], "completed", "{first}");
    // Waits for the first save, and is answered before its own.
    let second = run(
        &s,
        &sid,
        json!({"code": "a = 2; a", "session": "lost", "heap": "latest"}),
    )
    .await;
    assert_eq!(outcome(&second)["status"], "completed", "{second}");
    let kept = outcome(&second)["input_heap"].as_str().unwrap().to_owned();
    let third = run(
        &s,
        &sid,
        json!({"code": "a", "session": "lost", "heap": "latest"}),
    )
    .await;
    assert_eq!(third["isError"], true, "never silently older: {third}");
    let text = third["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("is lost"), "{text}");
    assert!(text.contains("storing it failed"), "{text}");
    assert!(
        text.contains(&format!("pass heap: \"{kept}\"")),
        "names the last stored heap: {text}"
    );
    assert!(
        text.contains(outcome(&second)["execution_id"].as_str().unwrap()),
        "{text}"
    );
    // What it says to do works.
    plan.clear();
    let resumed = run(
        &s,
        &sid,
        json!({"code": "a", "session": "lost", "heap": kept}),
    )
    .await;
    assert_eq!(outcome(&resumed)["result"], "1", "{resumed}");
}

#[tokio::test]
async fn small_heaps_and_calls_that_do_not_continue_latest_keep_their_key_in_the_answer() {
    let plan = FaultPlan::new();
    let mut config = test_config(3600, false);
    config.engine.answer_before_save_mb = Some(4);
    let s = server_configured(config, |stores| stores);
    let sid = s.initialize().await;
    let small = run(
        &s,
        &sid,
        json!({"code": "1", "session": "small", "heap": "latest"}),
    )
    .await;
    assert!(outcome(&small)["heap"].is_string(), "{small}");
    assert!(outcome(&small)["heap_saving"].is_null(), "{small}");
    let s = answering_first(&plan);
    let sid = s.initialize().await;
    let sessionless = run(&s, &sid, json!({"code": "1"})).await;
    let key = outcome(&sessionless)["heap"]
        .as_str()
        .expect("without a session the key is the only handle")
        .to_owned();
    // A caller threading keys gets keys, in a session too.
    let keyed = run(
        &s,
        &sid,
        json!({"code": "2", "session": "keys", "heap": key}),
    )
    .await;
    assert!(outcome(&keyed)["heap"].is_string(), "{keyed}");
    let fresh = run(&s, &sid, json!({"code": "3", "session": "keys"})).await;
    assert!(outcome(&fresh)["heap"].is_string(), "{fresh}");
}

/// 600k small objects: about 50 MB of heap, whose snapshot and store take
/// long enough for a kill to land between the answer and the save.
const LARGE: &str =
    "globalThis.items = Array.from({length: 600000}, (_, i) => ({i, s: 'item' + i})); items.length";

/// An answer that waited for its heap's save counts the save in
/// `duration_ms` (loading, running and storing the heap, as run_js's output
/// schema says), so a large heap's cost is not hidden: the field is most
/// of the call's wall time, where the code alone takes a fraction of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_ms_of_an_answer_that_waited_for_its_save_counts_the_save() {
    let s = common::server();
    let sid = s.initialize().await;
    let wall = std::time::Instant::now();
    let large = run(&s, &sid, json!({ "code": LARGE })).await;
    let wall_ms = wall.elapsed().as_millis() as u64;
    let large = outcome(&large);
    assert!(
        large["heap"].is_string(),
        "the answer waited for the save: {large}"
    );
    let duration = large["duration_ms"].as_u64().unwrap();
    assert!(
        duration * 10 >= wall_ms * 7,
        "duration_ms {duration} of a call that took {wall_ms} ms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_a_save_makes_the_next_latest_say_so() {
    let mut serve = Serve::start(&[], &[]);
    let first = serve
        .run_js(json!({"code": "globalThis.small = 1; small", "session": "killed"}))
        .await;
    let stored = first["heap"]
        .as_str()
        .expect("a small heap is stored first")
        .to_owned();
    let large = serve
        .run_js(json!({"code": LARGE, "session": "killed", "heap": "latest"}))
        .await;
    assert_eq!(large["status"], "completed", "{large}");
    assert!(large["heap"].is_null(), "answered before the save: {large}");
    serve.restart_after_kill(&[], &[]);
    let next = serve
        .run_js(json!({"code": "items.length", "session": "killed", "heap": "latest"}))
        .await;
    let text = next["error_text"].as_str().unwrap_or_default();
    assert!(
        text.contains("ended before the heap was stored"),
        "never silently older: {next}"
    );
    assert!(text.contains(&stored), "names the last stored heap: {next}");
    let resumed = serve
        .run_js(json!({"code": "small", "session": "killed", "heap": stored}))
        .await;
    assert_eq!(resumed["result"], "1", "{resumed}");
}

/// 200k small objects: a worker keeping this heap ready holds about
/// 110 MiB resident.
const MEDIUM: &str =
    "globalThis.items = Array.from({length: 200000}, (_, i) => ({i, s: 'item' + i})); items.length";

/// `VmRSS` of `pid` in KiB; `None` for a process that is ending.
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_heaps_are_dropped_past_their_memory_bound() {
    // Room for two such workers, not four: a worker keeping this heap live
    // holds about 48 MiB resident.
    const BOUND_MIB: u64 = 100;
    let serve = Serve::start(
        &["--engine-workers", "4"],
        &[("MCP_V8_READY_HEAPS_MB", "100"), ("RUST_LOG", "warn")],
    );
    let mut sessions = Vec::new();
    for i in 0..4 {
        let session = format!("burst-{i}");
        let made = serve
            .run_js(json!({"code": MEDIUM, "session": session}))
            .await;
        assert_eq!(made["status"], "completed", "{made}");
        sessions.push(session);
    }
    // Each session's run went to a worker of its own (the others kept
    // heaps ready); the ones made first were dropped with their workers.
    let live = || {
        children(serve.pid())
            .into_iter()
            .filter_map(resident_kib)
            .collect::<Vec<_>>()
    };
    let mut workers = live();
    for _ in 0..100 {
        if workers.len() <= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        workers = live();
    }
    assert!(
        workers.len() <= 2,
        "{} engine workers alive: ready heaps past MCP_V8_READY_HEAPS_MB were kept",
        workers.len()
    );
    let resident_mib = workers.iter().sum::<u64>() / 1024;
    eprintln!("engine workers' RSS with the heaps kept ready: {resident_mib} MiB");
    // The bound is held when a heap is made ready; what a worker holds may
    // grow a little after.
    assert!(
        resident_mib <= BOUND_MIB * 6 / 5,
        "{resident_mib} MiB resident"
    );
    // And the heaps within the bound were kept: two of ~48 MiB fit it,
    // where a worker without a heap holds about 30 MiB.
    assert!(
        resident_mib >= BOUND_MIB / 2,
        "{resident_mib} MiB resident: no heap was kept ready within the bound"
    );
    // Every session continues, from a ready heap or from the store.
    for session in &sessions {
        let next = serve
            .run_js(json!({"code": "items.length", "session": session, "heap": "latest"}))
            .await;
        assert_eq!(next["result"], "200000", "{session}: {next}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_past_the_worker_count_end_a_worker_that_keeps_a_heap_ready() {
    // Two workers, both keeping a heap ready after two sessions: a third
    // session's run needs one of them, whose ready heap V8 cannot simply
    // drop; the worker is ended and a new one runs it.
    let serve = Serve::start(&["--engine-workers", "2"], &[("RUST_LOG", "warn")]);
    for i in 0..4 {
        let made = serve
            .run_js(json!({"code": "globalThis.n = 0; n", "session": format!("past-{i}")}))
            .await;
        assert_eq!(made["status"], "completed", "session {i}: {made}");
    }
    for i in 0..4 {
        let next = serve
            .run_js(json!({"code": "++n", "session": format!("past-{i}"), "heap": "latest"}))
            .await;
        assert_eq!(next["result"], "1", "session {i}: {next}");
    }
}

/// Agents name `heap_memory_max_mb` on every call once a large heap needed
/// it. The worker keeps the heap ready with the limit its run asked for, so
/// the next call naming that limit continues from the ready heap and reads
/// nothing from the store; a call naming another limit is restored from the
/// store with that limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_names_its_heap_limit_continues_from_the_ready_heap() {
    use crate::common::engine::{completed, run, worker_program};
    use mcp_v8_lambda::engine::{EngineConfig, RunRequest};
    use mcp_v8_lambda::heap::FileHeapStore;

    let dir = tempfile::tempdir().unwrap();
    let plan = FaultPlan::new();
    let heaps: Arc<dyn HeapStore> = Arc::new(Faulty::<dyn HeapStore>::new(
        Arc::new(FileHeapStore::new(dir.path().join("heaps"))),
        plan.clone(),
    ));
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            engine_workers: 1,
            worker_program: Some(worker_program(dir.path(), "ready-limit-worker-under-test")),
            ready_heaps_bytes: 512 * 1024 * 1024,
            ..Default::default()
        },
        Some(heaps),
    );
    let request =
        |code: &str, heap: Option<&mcp_v8_lambda::heap::HeapKey>, limit: usize| RunRequest {
            code: code.into(),
            stateful: true,
            heap: heap.cloned(),
            heap_limit_mb: Some(limit),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        };
    let first = run(&engine, request("globalThis.n = 1; n", None, 512)).await;
    assert_eq!(completed(&first), "1");
    let key = first.heap.clone().expect("stored");
    let gets = plan.calls("heap.get");
    let second = run(&engine, request("n += 1; n", Some(&key), 512)).await;
    assert_eq!(completed(&second), "2");
    assert_eq!(
        plan.calls("heap.get"),
        gets,
        "the call naming the limit its heap was made with read the heap from the store"
    );
    let key = second.heap.clone().expect("stored");
    let third = run(&engine, request("n += 1; n", Some(&key), 256)).await;
    assert_eq!(completed(&third), "3");
    assert_eq!(
        plan.calls("heap.get"),
        gets + 1,
        "a call naming another limit must restore with that limit, from the store"
    );
}

/// Under `serve`'s configuration, the worker that ran a session's call
/// keeps its heap ready: the next `latest` call continues from it and reads
/// no heap from the store. With ready heaps off (`MCP_V8_READY_HEAPS_MB=0`)
/// the same call reads the heap, which shows the count can see a read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latest_call_continues_from_the_ready_heap_and_reads_nothing_from_the_store() {
    for ready in [true, false] {
        let plan = FaultPlan::new();
        let mut config = test_config(3600, false);
        if !ready {
            config.engine.ready_heaps_mb_set = Some(0);
        }
        let s = common::server_with_workers(config, 1, |stores| Stores {
            heaps: stores
                .heaps
                .map(|heaps| Arc::new(Faulty::<dyn HeapStore>::new(heaps, plan.clone())) as _),
            ..stores
        });
        let sid = s.initialize().await;
        let first = run(
            &s,
            &sid,
            json!({"code": "globalThis.n = 41; n", "session": "ready", "heap": "latest"}),
        )
        .await;
        assert_eq!(outcome(&first)["status"], "completed", "{first}");
        let made = outcome(&first)["heap"].clone();
        let gets = plan.calls("heap.get");
        let next = run(
            &s,
            &sid,
            json!({"code": "n + 1", "session": "ready", "heap": "latest"}),
        )
        .await;
        assert_eq!(outcome(&next)["result"], "42", "{next}");
        assert_eq!(outcome(&next)["input_heap"], made, "{next}");
        let read = plan.calls("heap.get") - gets;
        if ready {
            assert_eq!(read, 0, "latest read its heap from the store: {next}");
        } else {
            assert_eq!(read, 1, "without ready heaps latest reads its heap once");
        }
    }
}
