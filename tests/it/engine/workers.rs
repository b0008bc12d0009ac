//! Engine worker processes: stateful runs in parallel, across processes, and
//! what happens when a worker fails or dies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus, WORKER_ARG};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;

use crate::common::engine::stateful;

struct Fixture {
    engine: Engine,
    store: Arc<dyn HeapStore>,
    /// A link to the binary, so that this test's workers are told apart from
    /// other tests' by their command line.
    program: PathBuf,
    _dir: tempfile::TempDir,
}

fn fixture(workers: usize) -> Fixture {
    fixture_with(workers, EngineConfig::default().worker_max_jobs)
}

fn fixture_with(workers: usize, max_jobs: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("worker-under-test");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcp-v8-lambda"), &program).unwrap();
    let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            engine_workers: workers,
            worker_program: Some(program.clone()),
            worker_max_jobs: max_jobs,
            capabilities: mcp_v8_lambda::engine::CapabilitySettings {
                disk: mcp_v8_lambda::engine::DiskSettings {
                    scratch: Some(dir.path().join("scratch")),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..EngineConfig::default()
        },
        Some(store.clone()),
    );
    Fixture {
        engine,
        store,
        program,
        _dir: dir,
    }
}

/// Pids of the live workers started as `program`.
fn worker_pids(program: &Path) -> Vec<u32> {
    let program = program.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|b| *b == 0);
        if args.next() == Some(program) && args.next() == Some(WORKER_ARG.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits until the run `control` watches has written its first console
/// line: its code is running in a worker.
/// Kills the one worker of `program` the way the OOM killer would; its pid.
fn kill_the_worker(program: &Path) -> u32 {
    let [pid] = worker_pids(program)[..] else {
        panic!("one worker: {:?}", worker_pids(program));
    };
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    pid
}

async fn spinning_started(control: &mcp_v8_lambda::engine::RunControl) {
    let started = Instant::now();
    while control.console_lines() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn chains_from_different_heaps_run_at_once_in_workers() {
    let f = fixture(2);
    let engine = Arc::new(f.engine);
    let chains: Vec<_> = (0..6)
        .map(|chain| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let first = format!("globalThis.chain = {chain}; globalThis.n = 0; n");
                let mut heap = stateful(&engine, &first, None)
                    .await
                    .heap
                    .expect("first heap");
                for step in 1..=4 {
                    let out = stateful(&engine, "n += 1; chain * 100 + n", Some(&heap)).await;
                    assert_eq!(out.status, RunStatus::Completed, "{out:#?}");
                    assert_eq!(out.result, Some((chain * 100 + step).to_string()));
                    heap = out.heap.expect("a heap per step");
                }
                heap
            })
        })
        .collect();
    let mut finals = Vec::new();
    for chain in chains {
        finals.push(chain.await.unwrap());
    }
    assert_eq!(
        worker_pids(&f.program).len(),
        2,
        "the runs used exactly the configured workers"
    );
    // A worker's heap is an ordinary snapshot: stored verified, and restored
    // by another engine's workers.
    let another = crate::common::engine::on_workers(EngineConfig::default(), Some(f.store.clone()));
    for (chain, heap) in finals.iter().enumerate() {
        assert!(
            f.store
                .get(&Tenant::anonymous(), heap)
                .await
                .unwrap()
                .is_some()
        );
        let out = stateful(&another, "chain * 100 + n", Some(heap)).await;
        assert_eq!(out.result, Some((chain * 100 + 4).to_string()));
    }
}

#[tokio::test]
async fn errors_and_timeouts_end_the_run_and_the_worker_serves_the_next() {
    let f = fixture(1);
    let heap = stateful(&f.engine, "globalThis.kept = 'yes'; kept", None)
        .await
        .heap
        .unwrap();
    let threw = stateful(&f.engine, "throw new TypeError('nope')", Some(&heap)).await;
    assert_eq!(threw.status, RunStatus::Failed);
    assert_eq!(threw.error.unwrap().name, "TypeError");
    let looped = f
        .engine
        .run(RunRequest {
            code: "while (true) {}".into(),
            heap: Some(heap.clone()),
            stateful: true,
            timeout: Some(Duration::from_millis(300)),
            ..Default::default()
        })
        .await
        .unwrap()
        .outcome;
    assert_eq!(looped.status, RunStatus::TimedOut, "{looped:#?}");
    assert_eq!(looped.heap, None);
    let after = stateful(&f.engine, "kept", Some(&heap)).await;
    assert_eq!(after.result.as_deref(), Some("\"yes\""), "{after:#?}");
    assert_eq!(
        worker_pids(&f.program).len(),
        1,
        "one worker served all four runs"
    );
}

#[tokio::test]
async fn a_killed_worker_fails_its_run_only_and_the_next_run_starts_a_new_one() {
    let f = fixture(1);
    let heap = stateful(&f.engine, "globalThis.kept = 41; kept", None)
        .await
        .heap
        .unwrap();
    let engine = Arc::new(f.engine);
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let spinning = {
        let engine = engine.clone();
        let request = RunRequest {
            code: "console.log('spinning'); while (true) {}".into(),
            heap: Some(heap.clone()),
            stateful: true,
            timeout: Some(Duration::from_secs(20)),
            control: Some(control.clone()),
            ..Default::default()
        };
        tokio::spawn(async move { engine.run(request).await.expect("accepted").outcome })
    };
    // Once the run says it spins, kill its worker the way the OOM killer would.
    spinning_started(&control).await;
    let pid = kill_the_worker(&f.program);

    let out = spinning.await.unwrap();
    assert_eq!(out.status, RunStatus::Failed, "{out:#?}");
    assert_eq!(out.heap, None);
    let error = out.error.unwrap();
    assert_eq!(error.name, "EngineCrashed");
    assert!(error.message.contains("nothing was stored"), "{error:?}");

    let next = stateful(&engine, "kept + 1", Some(&heap)).await;
    assert_eq!(next.result.as_deref(), Some("42"), "{next:#?}");
    let pids = worker_pids(&f.program);
    assert_eq!(pids.len(), 1);
    assert_ne!(pids[0], pid, "a new worker");
}

/// A worker killed mid-run never reports its run's local folder; the
/// server removes it anyway, and with it the run's share of its tenant's
/// disk (docs/engine.md, "Files").
#[tokio::test]
async fn a_killed_workers_local_bytes_are_removed_with_its_run() {
    let f = fixture(1);
    let scratch = f.program.parent().unwrap().join("scratch");
    let engine = Arc::new(f.engine);
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let spinning = {
        let engine = engine.clone();
        let request = RunRequest {
            code: "require('fs').writeFileSync('big.bin', new Uint8Array(3 << 20));\n\
                   console.log('spinning'); while (true) {}"
                .into(),
            stateful: true,
            timeout: Some(Duration::from_secs(20)),
            control: Some(control.clone()),
            ..Default::default()
        };
        tokio::spawn(async move { engine.run(request).await.expect("accepted").outcome })
    };
    spinning_started(&control).await;
    let held: u64 = walk(&scratch)
        .iter()
        .map(|p| std::os::unix::fs::MetadataExt::blocks(&p.metadata().unwrap()) * 512)
        .sum();
    assert!(held >= 3 << 20, "the run's bytes are on disk: {held}");
    kill_the_worker(&f.program);
    let out = spinning.await.unwrap();
    assert_eq!(out.status, RunStatus::Failed, "{out:#?}");
    let left: Vec<_> = walk(&scratch)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != ".lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn a_worker_is_replaced_after_its_share_of_runs() {
    let f = fixture_with(1, 2);
    let mut heap = None;
    let mut pids_seen = Vec::new();
    for step in 1..=5 {
        let out = stateful(
            &f.engine,
            "globalThis.n = (globalThis.n ?? 0) + 1; n",
            heap.as_ref(),
        )
        .await;
        assert_eq!(out.result, Some(step.to_string()), "{out:#?}");
        heap = out.heap;
        // After every second run the worker is gone; a new one starts with
        // the next. A worker past its share is killed as the run returns,
        // and on a busy machine it may take a moment to be gone.
        let mut live = worker_pids(&f.program);
        let started = Instant::now();
        while step % 2 == 0 && !live.is_empty() && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            live = worker_pids(&f.program);
        }
        assert_eq!(
            live.len(),
            usize::from(step % 2 == 1),
            "after run {step}: {live:?}"
        );
        pids_seen.extend(live);
    }
    pids_seen.dedup();
    assert_eq!(
        pids_seen.len(),
        3,
        "runs 1, 3 and 5 each had a new worker: {pids_seen:?}"
    );
}

/// A cancelled run in an engine worker ends `cancelled` at once: the pool
/// stops the worker's process, and the next run gets a new one.
#[tokio::test]
async fn a_cancelled_run_stops_its_worker_and_the_next_run_gets_a_new_one() {
    let f = fixture(1);
    let control = std::sync::Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let run = {
        let request = RunRequest {
            code: "console.log('spinning'); for (;;) {}".into(),
            stateful: true,
            timeout: Some(std::time::Duration::from_secs(120)),
            control: Some(control.clone()),
            ..RunRequest::default()
        };
        let engine = std::sync::Arc::new(f.engine);
        let running = engine.clone();
        (
            engine,
            tokio::spawn(async move { running.run(request).await }),
        )
    };
    let (engine, running) = run;
    // The worker running the loop, once the run says it spins.
    spinning_started(&control).await;
    let [cancelled_pid] = worker_pids(&f.program)[..] else {
        panic!("one worker: {:?}", worker_pids(&f.program));
    };
    control.cancel();
    let report = tokio::time::timeout(std::time::Duration::from_secs(60), running)
        .await
        .expect("the cancelled run ended")
        .unwrap()
        .unwrap();
    assert_eq!(report.outcome.status, RunStatus::Cancelled);
    assert!(report.outcome.heap.is_none());
    assert_eq!(report.outcome.error.unwrap().name, "CancelledError");
    let next = engine
        .run(RunRequest {
            code: "6 * 7".into(),
            stateful: true,
            ..RunRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(next.outcome.status, RunStatus::Completed);
    assert_eq!(next.outcome.result.as_deref(), Some("42"));
    let live = worker_pids(&f.program);
    assert!(
        !live.contains(&cancelled_pid) && live.len() == 1,
        "the cancelled run's worker {cancelled_pid} is gone and a new one ran the next: {live:?}"
    );
}

/// A run in an engine worker reports its console lines while it executes,
/// as an in-process run does: progress notifications count them.
#[tokio::test]
async fn a_run_in_a_worker_reports_its_console_lines_while_it_executes() {
    let f = fixture(1);
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let code = "for (let i = 0; i < 3; i++) console.log('line', i);\n\
                const t = Date.now(); while (Date.now() - t < 3000) {} 'done'";
    let done = std::sync::atomic::AtomicBool::new(false);
    let run = async {
        let report = f
            .engine
            .run(RunRequest {
                code: code.into(),
                stateful: true,
                timeout: Some(Duration::from_secs(30)),
                control: Some(control.clone()),
                ..Default::default()
            })
            .await;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        report
    };
    let watch = async {
        while control.console_lines() < 3 && !done.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        control.console_lines()
    };
    let (report, seen) = tokio::join!(run, watch);
    let outcome = report.expect("request accepted").outcome;
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    assert_eq!(seen, 3, "the lines were counted before the run ended");
}

/// A run inside a built-in that no termination reaches (the default sort
/// of eight million numbers, which compares them as strings, takes seconds)
/// is ended past its deadline by the worker's watchdog ending its own
/// process: the run says so, and the next run gets a new worker.
#[tokio::test]
async fn a_run_stuck_in_a_built_in_past_its_deadline_ends_its_worker() {
    let f = fixture(1);
    let request = |code: &str, heap: Option<&HeapKey>, timeout: Duration| RunRequest {
        code: code.into(),
        heap: heap.cloned(),
        stateful: true,
        heap_limit_mb: Some(512),
        timeout: Some(timeout),
        ..Default::default()
    };
    let made = f
        .engine
        .run(request(
            "globalThis.numbers = Array.from({length: 8e6}, (_, i) => (i * 7919) % 1000003); \
             numbers.length",
            None,
            Duration::from_secs(60),
        ))
        .await
        .unwrap()
        .outcome;
    assert_eq!(made.status, RunStatus::Completed, "{made:#?}");
    let heap = made.heap.expect("stored");
    let [stuck_pid] = worker_pids(&f.program)[..] else {
        panic!("one worker: {:?}", worker_pids(&f.program));
    };
    let stuck = f
        .engine
        .run(request(
            "numbers.sort(); 'sorted'",
            Some(&heap),
            Duration::from_secs(1),
        ))
        .await
        .unwrap()
        .outcome;
    assert_eq!(stuck.status, RunStatus::TimedOut, "{stuck:#?}");
    let error = stuck.error.expect("an error");
    assert!(
        error.message.contains("inside a built-in function") && error.message.contains("ended"),
        "the watchdog ended the worker, not the sort's own end: {error:?}"
    );
    assert!(
        !worker_pids(&f.program).contains(&stuck_pid),
        "the stuck run's worker {stuck_pid} is gone"
    );
    let next = f
        .engine
        .run(request(
            "numbers.length",
            Some(&heap),
            Duration::from_secs(60),
        ))
        .await
        .unwrap()
        .outcome;
    assert_eq!(next.result.as_deref(), Some("8000000"), "{next:#?}");
}
