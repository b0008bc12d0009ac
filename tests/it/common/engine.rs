//! Running code on an [`Engine`] directly, for the engine-level tests.

use std::sync::{Arc, OnceLock};

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunReport, RunRequest, RunStatus};
use mcp_v8_lambda::heap::HeapStore;

/// The engine `config` describes over `heaps`, its runs in engine workers
/// as the binary's always are (the default config's count, `serve`'s,
/// unless the test names one), running this test binary's server program
/// unless `config` names one. No test runs V8 in its own process: the
/// binary never does (`EngineConfig::in_process` is left to the benches
/// and the library's unit tests, which cannot start the binary).
pub fn on_workers(mut config: EngineConfig, heaps: Option<Arc<dyn HeapStore>>) -> Engine {
    assert!(
        config.engine_workers > 0,
        "integration tests run V8 in engine workers, as the binary does"
    );
    if config.worker_program.is_none() {
        static PROGRAM: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
        let (_, program) = PROGRAM.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let program = worker_program(dir.path(), "engine-worker");
            (dir, program)
        });
        config.worker_program = Some(program.clone());
    }
    Engine::new(config, heaps)
}

/// The outcome of `request`, which the engine must accept.
pub async fn run(engine: &Engine, request: RunRequest) -> RunOutcome {
    engine.run(request).await.expect("request accepted").outcome
}

/// A stateless run of `code` with the defaults.
pub async fn stateless(engine: &Engine, code: &str) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            ..Default::default()
        },
    )
    .await
}

/// The rendered result of a run that must have completed.
pub fn completed(outcome: &RunOutcome) -> &str {
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    outcome.result.as_deref().unwrap_or("<undefined>")
}

/// A run of `code` from `heap`, stateful when the engine has a heap store,
/// with a 30 s timeout.
pub async fn run_code(
    engine: &Engine,
    code: &str,
    heap: Option<&mcp_v8_lambda::heap::HeapKey>,
) -> RunOutcome {
    run_report(engine, code, heap).await.outcome
}

/// The whole report of [`run_code`]'s run (the REPL display, `display()`
/// blocks, the executed code).
pub async fn run_report(
    engine: &Engine,
    code: &str,
    heap: Option<&mcp_v8_lambda::heap::HeapKey>,
) -> RunReport {
    engine
        .run(RunRequest {
            code: code.into(),
            stateful: engine.heaps().is_some(),
            heap: heap.cloned(),
            timeout: Some(std::time::Duration::from_secs(30)),
            ..Default::default()
        })
        .await
        .expect("request accepted")
}

/// A stateful run of `code` from `heap` (a fresh heap when `None`), its
/// heap stored: the one `stateful` of the engine-level tests.
pub async fn stateful(
    engine: &Engine,
    code: &str,
    heap: Option<&mcp_v8_lambda::heap::HeapKey>,
) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            heap: heap.cloned(),
            stateful: true,
            ..Default::default()
        },
    )
    .await
}

/// The error of a run that must have failed, as `Name: message`.
pub fn error_text(code: &str, outcome: &RunOutcome) -> String {
    let error = outcome
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{code}: an error, not {outcome:#?}"));
    format!("{}: {}", error.name, error.message)
}

/// This test binary's server program under `dir` as `name` (a link), for
/// engines whose runs go to engine workers.
pub fn worker_program(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let program = dir.join(name);
    if !program.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcp-v8-lambda"), &program).unwrap();
    }
    program
}

/// The heap stored before `/work` was a disk (tests/fixtures/legacy-work,
/// made by an earlier build), copied into `dir`'s `heaps` and `work` stores;
/// its key.
pub fn legacy_work_heap(dir: &std::path::Path) -> mcp_v8_lambda::heap::HeapKey {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy-work");
    for store in ["heaps", "work"] {
        std::fs::create_dir_all(dir.join(store)).unwrap();
        for entry in std::fs::read_dir(fixture.join(store)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join(store).join(entry.file_name())).unwrap();
        }
    }
    mcp_v8_lambda::heap::HeapKey::parse(
        "928f418fe2ea7db0c3f48a6ddb43b1e2059c0e305337b99e9a646e66ff2d08d3",
    )
    .unwrap()
}
