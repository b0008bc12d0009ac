//! Random graphs of kept objects (tests/fuzz/kept_objects.js) through a
//! stateful run in this process, then a restore of its heap: whatever the
//! graph, the engine answers with an outcome and the process lives on, as a
//! Lambda function's must (docs/reliability.md, "What V8 cannot snapshot").
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use mcp_v8_lambda::engine::{Engine, EngineConfig, RunRequest, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapStore};

const BUILDER: &str = include_str!("../kept_objects.js");

struct Harness {
    engine: Engine,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
        Harness {
            engine: Engine::new(EngineConfig::in_process(), Some(store)),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            _dir: dir,
        }
    })
}

fuzz_target!(|seed: &[u8]| {
    let harness = harness();
    let code = format!("(function (seed) {{ return {BUILDER}; }})({seed:?})");
    harness.runtime.block_on(async {
        let outcome = harness
            .engine
            .run(RunRequest {
                code,
                stateful: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .outcome;
        if let Some(heap) = outcome.heap {
            assert_eq!(outcome.status, RunStatus::Completed);
            let restored = harness
                .engine
                .run(RunRequest {
                    code: "Object.keys(globalThis).length".into(),
                    heap: Some(heap),
                    stateful: true,
                    ..Default::default()
                })
                .await
                .unwrap()
                .outcome;
            assert_eq!(restored.status, RunStatus::Completed, "{restored:?}");
        }
    });
});
