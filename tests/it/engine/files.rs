//! `/work` (src/files, src/engine/host/fs.js): `node:fs` in runs, the
//! tree versioned with the heap, bytes beside it in a file store, on every
//! engine mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use mcp_v8_lambda::backends::content::ContentKey;
use mcp_v8_lambda::engine::{
    CapabilitySettings, Engine, EngineConfig, FileLimits, RunOutcome, RunRequest, RunStatus,
};
use mcp_v8_lambda::files::{DirFileStore, FileStore, FileStoreError};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};

use crate::common::engine::{error_text, run_code};

/// A file store that counts its reads and writes.
#[derive(Debug)]
struct Counting {
    inner: DirFileStore,
    gets: AtomicUsize,
    puts: AtomicUsize,
}

#[async_trait]
impl FileStore for Counting {
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<ContentKey, FileStoreError> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put(tenant, bytes).await
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &ContentKey,
    ) -> Result<Option<Bytes>, FileStoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(tenant, key).await
    }
}

struct Stores {
    dir: tempfile::TempDir,
    heaps: Arc<dyn HeapStore>,
    files: Arc<Counting>,
}

fn stores() -> Stores {
    let dir = tempfile::tempdir().unwrap();
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let files = Arc::new(Counting {
        inner: DirFileStore::new(dir.path().join("work")),
        gets: AtomicUsize::new(0),
        puts: AtomicUsize::new(0),
    });
    Stores { dir, heaps, files }
}

/// A stateful engine over `stores`.
fn engine_over(stores: &Stores, config: EngineConfig) -> Engine {
    crate::common::engine::on_workers(config, Some(stores.heaps.clone()))
        .with_files(stores.files.clone())
}

async fn run_as(engine: &Engine, code: &str, heap: Option<&HeapKey>, tenant: Tenant) -> RunOutcome {
    engine
        .run(RunRequest {
            code: code.into(),
            stateful: engine.heaps().is_some(),
            heap: heap.cloned(),
            timeout: Some(Duration::from_secs(30)),
            tenant,
            ..Default::default()
        })
        .await
        .expect("request accepted")
        .outcome
}

fn completed(code: &str, outcome: &RunOutcome) -> String {
    assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
    outcome.result.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_persist_with_the_heap_and_fork_with_it() {
    {
        let stores = stores();
        let engine = engine_over(&stores, EngineConfig::default());
        let write = "import { writeFileSync, mkdirSync } from 'node:fs';\n\
            import fsp from 'node:fs/promises';\n\
            mkdirSync('data/raw', { recursive: true });\n\
            writeFileSync('data/raw/a.csv', 'x,y\\n1,2\\n');\n\
            await fsp.writeFile('/work/notes.txt', 'first');\n\
            (await fsp.readdir('.')).join()";
        let outcome = run_code(&engine, write, None).await;
        assert_eq!(completed(write, &outcome), "\"data,notes.txt\"");
        let base = outcome.heap.clone().unwrap();
        // A later run reads them (relative, absolute, as text and bytes) from
        // the store: this is where the bytes are, not the heap.
        let read = "const fs = require('fs');\n\
            [fs.readFileSync('data/raw/a.csv', 'utf8'), String(fs.readFileSync('/work/notes.txt')),\n\
             fs.statSync('notes.txt').size, fs.existsSync('nope'), fs.statSync('data').isDirectory()]";
        let outcome = run_code(&engine, read, Some(&base)).await;
        assert_eq!(
            completed(read, &outcome),
            "[\"x,y\\n1,2\\n\",\"first\",5,false,true]"
        );
        // Two runs from one heap fork the tree; each keeps its own, and the
        // heap they came from keeps its own.
        let left = run_code(
            &engine,
            "require('fs').writeFileSync('notes.txt', 'left')",
            Some(&base),
        )
        .await;
        let right = run_code(
            &engine,
            "require('fs').appendFileSync('notes.txt', ' and right'); require('fs').rmSync('data', { recursive: true })",
            Some(&base),
        )
        .await;
        let show = "const fs = require('fs'); [fs.readFileSync('notes.txt', 'utf8'), fs.existsSync('data/raw/a.csv')]";
        for (heap, expected) in [
            (left.heap.as_ref(), "[\"left\",true]"),
            (right.heap.as_ref(), "[\"first and right\",false]"),
            (Some(&base), "[\"first\",true]"),
        ] {
            let outcome = run_code(&engine, show, heap).await;
            assert_eq!(completed(show, &outcome), expected);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_run_has_a_throwaway_work() {
    let engines = [crate::common::engine::on_workers(
        EngineConfig::default(),
        None,
    )];
    for engine in &engines {
        let code = "const fs = require('node:fs'); fs.writeFileSync('a.txt', 'hi'); fs.readFileSync('a.txt', 'utf8')";
        assert_eq!(
            completed(code, &run_code(engine, code, None).await),
            "\"hi\""
        );
        let code = "require('node:fs').existsSync('a.txt')";
        assert_eq!(
            completed(code, &run_code(engine, code, None).await),
            "false"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_work_are_refused_and_never_reach_the_host() {
    let stores = stores();
    let engine = engine_over(&stores, EngineConfig::default());
    let host_file = stores.dir.path().join("host-secret.txt");
    std::fs::write(&host_file, "secret").unwrap();
    let cases = [
        (
            "require('fs').readFileSync('/etc/passwd', 'utf8')",
            "EACCES",
        ),
        (
            "require('fs').readFileSync('../../etc/passwd', 'utf8')",
            "EACCES",
        ),
        (
            "require('fs').readFileSync('/work/../etc/passwd')",
            "EACCES",
        ),
        (
            "require('fs').readFileSync(new URL('file:///etc/passwd'))",
            "EACCES",
        ),
        ("require('fs').writeFileSync('/tmp/x', 'y')", "EACCES"),
        (
            "require('fs').readFileSync('a\\u0000b')",
            "ERR_INVALID_ARG_VALUE",
        ),
        ("require('fs').readFileSync('missing.txt')", "ENOENT"),
        ("require('fs').writeFileSync('no/dir/x', 'y')", "ENOENT"),
        ("require('fs').readFileSync('.')", "EISDIR"),
        ("require('fs').rmdirSync('/work')", "EBUSY"),
    ];
    for (code, expected) in cases {
        let probe = format!("try {{ {code}; 'no error' }} catch (e) {{ [e.code, e.message] }}");
        let result = completed(&probe, &run_code(&engine, &probe, None).await);
        assert!(result.contains(expected), "{code}: {result}");
    }
    // The refusal says what to do.
    let probe = "try { require('fs').readFileSync('/etc/passwd') } catch (e) { e.message }";
    let result = completed(probe, &run_code(&engine, probe, None).await);
    assert!(result.contains("under /work"), "{result}");
    // The host's file of the same name is untouched, and the file store
    // holds only what runs wrote.
    let code = &format!(
        "require('fs').writeFileSync({:?}, 'pwned')",
        host_file.display().to_string()
    );
    let outcome = run_code(&engine, code, None).await;
    assert!(error_text(code, &outcome).contains("EACCES"));
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_bytes_live_beside_the_heap_and_are_read_only_when_opened() {
    let stores = stores();
    let engine = engine_over(&stores, EngineConfig::default());
    // 5 MiB of data that does not compress into the heap by accident.
    // The data is not kept in the heap: only the file has it.
    let write = "(() => { const big = new Uint8Array(5 * 1024 * 1024);\n\
        for (let i = 0; i < big.length; i += 65536) crypto.getRandomValues(big.subarray(i, i + 65536));\n\
        require('fs').writeFileSync('big.bin', big); })();\n\
        require('fs').statSync('big.bin').size";
    let outcome = run_code(&engine, write, None).await;
    assert_eq!(completed(write, &outcome), "5242880");
    // Stored in chunks and a manifest naming them.
    let objects = stores.files.puts.load(Ordering::SeqCst);
    assert!(
        objects >= 3,
        "5 MiB in chunks and a manifest, got {objects} objects"
    );
    let heap = outcome.heap.unwrap();
    let heap_bytes = stores
        .heaps
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap()
        .payload()
        .len();
    assert!(heap_bytes < 2_000_000, "the heap holds {heap_bytes} bytes");
    // A run that leaves the file alone reads nothing and stores nothing
    // new but its heap.
    let gets = stores.files.gets.load(Ordering::SeqCst);
    let outcome = run_code(&engine, "globalThis.n = 1", Some(&heap)).await;
    let next = outcome.heap.unwrap();
    assert_eq!(stores.files.gets.load(Ordering::SeqCst), gets);
    assert_eq!(stores.files.puts.load(Ordering::SeqCst), objects);
    // One that opens it reads each object once: the manifest, then chunks.
    let read = "require('fs').readFileSync('big.bin').length";
    let outcome = run_code(&engine, read, Some(&next)).await;
    assert_eq!(completed(read, &outcome), "5242880");
    assert_eq!(stores.files.gets.load(Ordering::SeqCst), gets + objects);
    // A new instance (a new engine, nothing cached) restores it too.
    let fresh = engine_over(&stores, EngineConfig::default());
    let outcome = run_code(&fresh, read, Some(&next)).await;
    assert_eq!(completed(read, &outcome), "5242880");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_capped_with_errors_naming_the_setting() {
    let stores = stores();
    let engine = engine_over(
        &stores,
        EngineConfig {
            capabilities: CapabilitySettings {
                files: FileLimits {
                    max_file_bytes: 1024,
                    max_tree_bytes: 2048,
                    max_files: 3,
                },
                ..Default::default()
            },
            ..EngineConfig::default()
        },
    );
    let cases = [
        (
            "require('fs').writeFileSync('a', 'x'.repeat(1025))",
            "MCP_V8_MAX_FILE_MB",
        ),
        (
            "const fs = require('fs'); fs.writeFileSync('a', 'x'.repeat(1000)); fs.writeFileSync('b', 'x'.repeat(1000)); fs.writeFileSync('c', 'x'.repeat(100))",
            "MCP_V8_MAX_WORK_MB",
        ),
        (
            "const fs = require('fs'); for (const n of 'abcd') fs.writeFileSync(n, n)",
            "MCP_V8_MAX_FILES",
        ),
    ];
    for (code, setting) in cases {
        let error = error_text(code, &run_code(&engine, code, None).await);
        assert!(error.contains(setting), "{code}: {error}");
    }
    // File bytes are on the run's local disk, not in its memory: 180 MiB
    // of files with a 16 MiB heap limit.
    let engine = engine_over(&stores, EngineConfig::default());
    let code = "const fs = require('fs'); const chunk = new Uint8Array(9 * 1024 * 1024);\n\
        for (let i = 0; i < 20; i++) { chunk[0] = i; fs.writeFileSync('f' + i, chunk); }\n\
        fs.readdirSync('.').length";
    let outcome = engine
        .run(RunRequest {
            code: code.into(),
            stateful: true,
            heap_limit_mb: Some(16),
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        })
        .await
        .unwrap()
        .outcome;
    assert_eq!(completed(code, &outcome), "20");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_files_are_its_own() {
    let stores = stores();
    let engine = engine_over(&stores, EngineConfig::default());
    let alice = Tenant::of_principal("alice");
    let outcome = run_as(
        &engine,
        "require('fs').writeFileSync('secret.txt', 'alice only')",
        None,
        alice.clone(),
    )
    .await;
    let heap = outcome.heap.unwrap();
    // The bytes (a chunk and the manifest naming it) are in alice's
    // namespace only.
    let folder = alice.heap_folder().unwrap();
    let keys: Vec<ContentKey> = std::fs::read_dir(stores.dir.path().join("work").join(&folder))
        .unwrap()
        .map(|entry| ContentKey::parse(&entry.unwrap().file_name().to_string_lossy()).unwrap())
        .collect();
    assert_eq!(keys.len(), 2, "a chunk and its manifest: {keys:?}");
    for key in &keys {
        assert!(stores.files.get(&alice, key).await.unwrap().is_some());
    }
    for other in [Tenant::of_principal("bob"), Tenant::anonymous()] {
        for key in &keys {
            assert!(stores.files.get(&other, key).await.unwrap().is_none());
        }
        // Nor can another tenant restore the heap that names them: to it
        // the heap does not exist, and its run starts fresh, saying so.
        let code = "require('fs').existsSync('secret.txt')";
        let outcome = run_as(&engine, code, Some(&heap), other).await;
        assert_eq!(completed(code, &outcome), "false");
        assert!(
            outcome.warnings.iter().any(|w| w.contains("not found")),
            "{outcome:#?}"
        );
    }
}

#[tokio::test]
async fn the_directory_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::conformance::files::run_all(Arc::new(DirFileStore::new(dir.path()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_files_are_in_work_before_the_code_runs() {
    let stores = stores();
    let engines = [
        crate::common::engine::on_workers(EngineConfig::default(), None),
        engine_over(&stores, EngineConfig::default()),
    ];
    for engine in &engines {
        let code = "const fs = require('fs'); [fs.readFileSync('in/data.csv', 'utf8'), [...fs.readFileSync('/work/img.bin')]]";
        let outcome = engine
            .run(RunRequest {
                code: code.into(),
                stateful: engine.heaps().is_some(),
                arguments: files_argument(json!({
                    "in/data.csv": "a,b\n1,2\n",
                    "/work/img.bin": { "base64": "AAH/" },
                })),
                ..Default::default()
            })
            .await
            .unwrap()
            .outcome;
        assert_eq!(completed(code, &outcome), "[\"a,b\\n1,2\\n\",[0,1,255]]");
        // A stateful engine made a heap; a stateless one none.
        assert_eq!(
            outcome.heap.is_some(),
            engine.heaps().is_some(),
            "{outcome:?}"
        );
        if let Some(heap) = &outcome.heap {
            // Kept with the heap like any file the code wrote.
            let code = "require('fs').readdirSync('in').join()";
            assert_eq!(
                completed(code, &run_code(engine, code, Some(heap)).await),
                "\"data.csv\""
            );
        }
        // A path outside /work: refused before the code runs.
        let outcome = engine
            .run(RunRequest {
                code: "globalThis.ran = true".into(),
                stateful: engine.heaps().is_some(),
                arguments: files_argument(json!({ "../etc/passwd": "x" })),
                ..Default::default()
            })
            .await
            .unwrap()
            .outcome;
        let error = error_text("files", &outcome);
        assert!(
            error.contains("EACCES") && error.contains("did not run"),
            "{error}"
        );
        assert!(outcome.heap.is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_js_takes_files_and_describes_work() {
    let server = crate::common::server();
    let session = server.initialize().await;
    let tools = server.tools_list(&session).await;
    let description = tools["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("/work")
            && description.contains("1000 files")
            && description.contains("display(data, { mimeType, name })")
            && description.contains("mcp-v8://heaps/{heap}/files/{path}"),
        "{description}"
    );
    assert!(
        tools["tools"][0]["inputSchema"]["properties"]["files"].is_object(),
        "{tools:#}"
    );
    let result = server
        .call(
            &session,
            serde_json::json!({
                "code": "const fs = require('fs'); fs.readFileSync('data.csv', 'utf8').split('\\n').length + fs.statSync('b.bin').size",
                "files": {"data.csv": "a\nb\nc", "b.bin": {"base64": "AAECAw=="}},
            }),
        )
        .await;
    assert_eq!(result["structuredContent"]["result"], "7", "{result:#}");
    // Bad base64 is the tool's error, naming the entry; nothing ran.
    let result = server
        .call(
            &session,
            serde_json::json!({"code": "1", "files": {"x.bin": {"base64": "not base64!"}}}),
        )
        .await;
    assert_eq!(result["isError"], true, "{result:#}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("x.bin") && text.contains("base64"), "{text}");
}

/// The `files` argument of a run, as a call gives it.
fn files_argument(files: Value) -> serde_json::Map<String, Value> {
    serde_json::Map::from_iter([("files".to_owned(), files)])
}
