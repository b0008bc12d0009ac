//! `/work` as a disk (src/engine/host/disk, src/files/chunked.rs): bytes a
//! run writes go to its local disk as they are written, outside its memory;
//! they are stored in content-defined chunks, read a chunk at a time, and
//! versioned with the heap, on engine workers as the binary runs them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_v8_lambda::engine::{
    CapabilitySettings, DiskSettings, Engine, EngineConfig, RunOutcome, RunRequest, RunStatus,
};
use mcp_v8_lambda::files::DirFileStore;
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};

use crate::common::engine::error_text;

/// A stateful engine on workers over a directory's heaps and files, its
/// runs' local disk in `<dir>/scratch` holding at most `run_mb` MiB.
fn engine(dir: &Path, run_mb: u64) -> Engine {
    engine_with(dir, run_mb, 8192)
}

/// The same, a tenant's runs holding at most `tenant_mb` MiB together.
fn engine_with(dir: &Path, run_mb: u64, tenant_mb: u64) -> Engine {
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.join("heaps")));
    let config = EngineConfig {
        capabilities: CapabilitySettings {
            disk: DiskSettings {
                scratch: Some(dir.join("scratch")),
                run_bytes: run_mb << 20,
                tenant_bytes: tenant_mb << 20,
            },
            ..Default::default()
        },
        ..EngineConfig::default()
    };
    crate::common::engine::on_workers(config, Some(heaps))
        .with_files(Arc::new(DirFileStore::new(dir.join("work"))))
}

/// `code` from `heap` with the default heap limit (64 MiB).
async fn run(engine: &Engine, code: &str, heap: Option<&HeapKey>) -> RunOutcome {
    engine
        .run(RunRequest {
            code: code.into(),
            stateful: true,
            heap: heap.cloned(),
            timeout: Some(Duration::from_secs(120)),
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

/// Bytes under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            // Blocks held, not lengths: a run's grant file is sparse.
            Ok(meta) => meta.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// Deterministic, poorly compressible bytes: chunk `i` of a file, as JS.
const CHUNK_JS: &str = "function chunk(i, size) {\n\
    const out = new Uint8Array(size); let x = (i + 1) * 2654435761 >>> 0;\n\
    for (let k = 0; k < size; k++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; out[k] = x & 255; }\n\
    return out; }\n\
    function sum(bytes, s) { for (let k = 0; k < bytes.length; k++) s = (s * 31 + bytes[k]) >>> 0; return s; }\n";

/// The acceptance flow of issue 93 at test size: a file written through
/// `createWriteStream` with backpressure, read back as a stream by a later
/// run, read at a position, then appended to, which stores little.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_file_is_written_read_back_appended_to_and_read_at_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 4096);
    // 96 MiB in 4 MiB chunks, past the run's 64 MiB heap limit.
    let write = format!(
        "{CHUNK_JS}const fs = require('fs');\n\
         const out = fs.createWriteStream('/work/data.bin');\n\
         let waited = 0, s = 0;\n\
         for (let i = 0; i < 24; i++) {{ const c = chunk(i, 4 << 20); s = sum(c, s);\n\
           if (!out.write(c)) {{ waited++; await new Promise((r) => out.once('drain', r)); }} }}\n\
         await new Promise((r, j) => {{ out.on('error', j); out.end(r); }});\n\
         [fs.statSync('data.bin').size, waited > 0, s, out.bytesWritten]"
    );
    let outcome = run(&engine, &write, None).await;
    let written: serde_json::Value = serde_json::from_str(&completed(&write, &outcome)).unwrap();
    assert_eq!(written[0], 96 << 20);
    assert_eq!(written[1], true, "write() returned false and 'drain' came");
    assert_eq!(written[3], 96 << 20);
    let checksum = written[2].clone();
    let heap = outcome.heap.unwrap();
    assert_eq!(
        bytes_under(&dir.path().join("scratch")),
        0,
        "no local bytes are left once the files are stored"
    );

    // A later run reads it back as a stream: the same bytes, in order.
    let read = format!(
        "{CHUNK_JS}const fs2 = require('fs'); let s2 = 0, n2 = 0;\n\
         for await (const piece of fs2.createReadStream('data.bin', {{ highWaterMark: 1 << 20 }})) {{ s2 = sum(piece, s2); n2 += piece.length; }}\n\
         const fd = fs2.openSync('data.bin', 'r'); const b = Buffer.alloc(8);\n\
         const got = fs2.readSync(fd, b, 0, 8, (50 << 20) + 3); fs2.closeSync(fd);\n\
         const want = chunk(12, 4 << 20).subarray(((50 << 20) + 3) - 48 * 1048576, ((50 << 20) + 3) - 48 * 1048576 + 8);\n\
         [n2, s2, got, Buffer.from(want).equals(b)]"
    );
    let outcome = run(&engine, &read, Some(&heap)).await;
    let got: serde_json::Value = serde_json::from_str(&completed(&read, &outcome)).unwrap();
    assert_eq!(got[0], 96 << 20);
    assert_eq!(
        got[1], checksum,
        "the bytes read back are the bytes written"
    );
    assert_eq!(got[2], 8);
    assert_eq!(
        got[3], true,
        "a positioned read in the middle gives its bytes"
    );

    // A third run appends a line: the store grows by a chunk or two and
    // a manifest, not by the file.
    let before = bytes_under(&dir.path().join("work"));
    let append = "require('fs').appendFileSync('data.bin', 'one more line\\n'); require('fs').statSync('data.bin').size";
    let outcome = run(&engine, append, Some(&heap)).await;
    assert_eq!(completed(append, &outcome), ((96 << 20) + 14).to_string());
    let grown = bytes_under(&dir.path().join("work")) - before;
    assert!(grown < 16 << 20, "an append stored {grown} bytes");
    // Reading it whole is more than the run's memory: refused before any
    // of it is read, saying how to read it instead.
    let whole = "require('fs').readFileSync('data.bin')";
    let error = error_text(whole, &run(&engine, whole, outcome.heap.as_ref()).await);
    assert!(
        error.contains("ENOMEM")
            && error.contains("createReadStream")
            && error.contains("'data.bin'"),
        "{error}"
    );
    let tail = "const f3 = require('fs'); const fd3 = f3.openSync('data.bin', 'r'); const t3 = Buffer.alloc(14);\n\
        f3.readSync(fd3, t3, 0, 14, f3.fstatSync(fd3).size - 14); t3.toString()";
    let outcome = run(&engine, tail, outcome.heap.as_ref()).await;
    assert_eq!(completed(tail, &outcome), "\"one more line\\n\"");
}

/// What failed at a few MiB before the disk: appends that each rewrote the
/// file in memory, a pipeline into a write stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_appends_of_a_mib_and_a_sixty_mib_pipeline_fit_the_default_heap_limit() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 4096);
    let code = format!(
        "{CHUNK_JS}const fs = require('fs'); const {{ pipeline, Readable }} = require('stream');\n\
         for (let i = 0; i < 40; i++) fs.appendFileSync('log.bin', chunk(i, 1 << 20));\n\
         let i = 0;\n\
         const source = new Readable({{ read() {{ this.push(i < 60 ? chunk(100 + i++, 1 << 20) : null); }} }});\n\
         await new Promise((resolve, reject) => pipeline(source, fs.createWriteStream('piped.bin'), (e) => e ? reject(e) : resolve()));\n\
         [fs.statSync('log.bin').size, fs.statSync('piped.bin').size]"
    );
    let outcome = run(&engine, &code, None).await;
    assert_eq!(
        completed(&code, &outcome),
        format!("[{},{}]", 40 << 20, 60 << 20)
    );
    let check = format!(
        "{CHUNK_JS}const fs2 = require('fs'); const fd = fs2.openSync('log.bin', 'r'); const b = new Uint8Array(1 << 20);\n\
         fs2.readSync(fd, b, 0, b.length, 39 << 20); const first = Buffer.from(b).equals(Buffer.from(chunk(39, 1 << 20)));\n\
         const p = fs2.openSync('piped.bin', 'r'); fs2.readSync(p, b, 0, b.length, 59 << 20);\n\
         [first && Buffer.from(b).equals(Buffer.from(chunk(159, 1 << 20))), fs2.fstatSync(p).size]"
    );
    let outcome = run(&engine, &check, outcome.heap.as_ref()).await;
    assert_eq!(completed(&check, &outcome), format!("[true,{}]", 60 << 20));
}

/// A write past a limit throws the Node error naming the setting, and
/// what was written before it is still there, in the run and after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_a_limit_names_its_setting_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 8);
    let code = "const fs = require('fs'); fs.writeFileSync('kept.txt', 'safe');\n\
        fs.appendFileSync('big.bin', new Uint8Array(6 << 20));\n\
        let error; try { fs.appendFileSync('big.bin', new Uint8Array(3 << 20)); } catch (e) { error = e; }\n\
        let replaced; try { fs.writeFileSync('kept.txt', new Uint8Array(9 << 20)); } catch (e) { replaced = e; }\n\
        [error.code, error.message, fs.statSync('big.bin').size, replaced.code, fs.readFileSync('kept.txt', 'utf8')]";
    let outcome = run(&engine, code, None).await;
    let got: serde_json::Value = serde_json::from_str(&completed(code, &outcome)).unwrap();
    assert_eq!(got[0], "ENOSPC");
    let message = got[1].as_str().unwrap();
    assert!(
        message.contains("MCP_V8_RUN_DISK_MB") && message.contains("'big.bin'"),
        "{message}"
    );
    assert_eq!(got[2], 6 << 20, "the refused append wrote nothing");
    assert_eq!(got[3], "ENOSPC");
    assert_eq!(got[4], "safe", "a refused writeFile leaves the old bytes");
    // And the run's files are stored whole.
    let read = "require('fs').statSync('big.bin').size + ':' + require('fs').readFileSync('kept.txt', 'utf8')";
    let outcome = run(&engine, read, outcome.heap.as_ref()).await;
    assert_eq!(completed(read, &outcome), format!("\"{}:safe\"", 6 << 20));
    // An uncaught one fails the run with it, naming the setting.
    let code = "require('fs').writeFileSync('x', new Uint8Array(9 << 20))";
    let error = error_text(code, &run(&engine, code, None).await);
    assert!(error.contains("MCP_V8_RUN_DISK_MB"), "{error}");
}

/// Descriptors, positions, truncation and `FileHandle` behave as Node's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_positions_and_truncation_work_as_in_node() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 64);
    let code = "const fs = require('fs');\n\
        const fd = fs.openSync('f.txt', 'w+');\n\
        fs.writeSync(fd, 'hello world');\n\
        fs.writeSync(fd, 'W', 6);\n\
        const b = Buffer.alloc(5); fs.readSync(fd, b, 0, 5, 0);\n\
        fs.ftruncateSync(fd, 8); fs.fsyncSync(fd); const size = fs.fstatSync(fd).size; fs.closeSync(fd);\n\
        let bad; try { fs.readSync(fd, b, 0, 1, 0); } catch (e) { bad = e.code; }\n\
        const h = await fs.promises.open('g.txt', 'a+'); await h.write('abc'); await h.appendFile('def');\n\
        const r = await h.read(Buffer.alloc(3), 0, 3, 2); await h.truncate(5); const g = (await h.stat()).size; await h.close();\n\
        fs.truncateSync('f.txt', 2);\n\
        let missing; try { fs.openSync('nope', 'r'); } catch (e) { missing = e.code; }\n\
        [b.toString(), size, fs.readFileSync('f.txt', 'utf8'), bad, r.bytesRead, r.buffer.toString(), g, fs.readFileSync('g.txt', 'utf8'), missing]";
    let outcome = run(&engine, code, None).await;
    assert_eq!(
        completed(code, &outcome),
        r#"["hello",8,"he","EBADF",3,"cde",5,"abcde","ENOENT"]"#
    );
    // A descriptor kept in the heap writes in the next run.
    let keep = "globalThis.fd = require('fs').openSync('k.txt', 'a'); require('fs').writeSync(fd, 'one;'); 1";
    let outcome = run(&engine, keep, None).await;
    completed(keep, &outcome);
    let more = "require('fs').writeSync(fd, 'two'); require('fs').closeSync(fd); require('fs').readFileSync('k.txt', 'utf8')";
    let outcome = run(&engine, more, outcome.heap.as_ref()).await;
    assert_eq!(completed(more, &outcome), "\"one;two\"");
}

/// A file copied, renamed or removed keeps the right bytes, and two copies
/// written apart stay apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_renames_and_removals_keep_the_right_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 64);
    let code = "const fs = require('fs'); fs.writeFileSync('a', 'A'); fs.copyFileSync('a', 'b');\n\
        fs.appendFileSync('b', 'B'); fs.renameSync('a', 'c'); fs.writeFileSync('d', 'D'); fs.unlinkSync('d'); 1";
    let outcome = run(&engine, code, None).await;
    completed(code, &outcome);
    let read = "const fs2 = require('fs'); fs2.copyFileSync('b', 'e'); fs2.appendFileSync('e', 'E');\n\
        [fs2.readdirSync('.').join(), fs2.readFileSync('b', 'utf8'), fs2.readFileSync('c', 'utf8'), fs2.readFileSync('e', 'utf8')]";
    let outcome = run(&engine, read, outcome.heap.as_ref()).await;
    assert_eq!(completed(read, &outcome), r#"["b,c,e","AB","A","ABE"]"#);
}

/// A CSV written line by line and read back by `node:readline`, as agents
/// read large files, in a later run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_written_by_lines_is_read_back_by_readline() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 256);
    let write = "const fs = require('fs'); const out = fs.createWriteStream('rows.csv');\n\
        out.write('n,double\\r\\n');\n\
        for (let i = 0; i < 300000; i++) if (!out.write(`${i},${i * 2}\\n`)) await new Promise((r) => out.once('drain', r));\n\
        await new Promise((r) => out.end(r)); fs.statSync('rows.csv').size";
    let outcome = run(&engine, write, None).await;
    completed(write, &outcome);
    let read = "const readline = require('node:readline');\n\
        const lines = readline.createInterface({ input: require('fs').createReadStream('rows.csv'), crlfDelay: Infinity });\n\
        let header, count = 0, total = 0;\n\
        for await (const line of lines) { if (header === undefined) { header = line; continue; } count++; total += Number(line.split(',')[1]); }\n\
        [header, count, total]";
    let outcome = run(&engine, read, outcome.heap.as_ref()).await;
    assert_eq!(
        completed(read, &outcome),
        format!("[\"n,double\",300000,{}]", 299_999u64 * 300_000)
    );
}

/// One run filling its disk never fails another caller's: the bound is
/// per run, and the other run completes beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_disk_quota_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 16);
    let run_as = |code: &'static str, tenant: &str| {
        let request = RunRequest {
            code: code.into(),
            stateful: true,
            tenant: mcp_v8_lambda::tenant::Tenant::of_principal(tenant),
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        };
        let engine = &engine;
        async move { engine.run(request).await.expect("accepted").outcome }
    };
    let greedy = "const w = require('fs').createWriteStream('fill.bin'); const b = new Uint8Array(1 << 20);\n\
        for (let i = 0; i < 64; i++) if (!w.write(b)) await new Promise((r, j) => { w.once('drain', r); w.once('error', j); });\n\
        await new Promise((r, j) => { w.on('error', j); w.end(r); })";
    let modest = "require('fs').writeFileSync('mine.bin', new Uint8Array(12 << 20));\n\
        await new Promise((r) => setTimeout(r, 200)); require('fs').statSync('mine.bin').size";
    let (greedy_outcome, modest_outcome) =
        tokio::join!(run_as(greedy, "alice"), run_as(modest, "bob"));
    let error = error_text(greedy, &greedy_outcome);
    assert!(
        error.contains("ENOSPC") && error.contains("MCP_V8_RUN_DISK_MB"),
        "{error}"
    );
    assert_eq!(completed(modest, &modest_outcome), (12 << 20).to_string());
}

/// A tenant's runs share its bound on the machine's disk: with one run
/// holding 12 MiB of its 20, its second run's 12 MiB write is refused
/// naming the setting, while another tenant's run writes as much.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_runs_share_its_disk_quota_and_another_tenant_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(engine_with(dir.path(), 16, 20));
    let request = |code: &str, tenant: &str| RunRequest {
        code: code.into(),
        stateful: true,
        tenant: mcp_v8_lambda::tenant::Tenant::of_principal(tenant),
        timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let holding = {
        let engine = engine.clone();
        let request = RunRequest {
            control: Some(control.clone()),
            ..request(
                "require('fs').writeFileSync('held.bin', new Uint8Array(12 << 20)); console.log('holding');\n\
                 await new Promise((r) => setTimeout(r, 50000))",
                "alice",
            )
        };
        tokio::spawn(async move { engine.run(request).await.expect("accepted").outcome })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while control.console_lines() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never wrote"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let write = "require('fs').writeFileSync('more.bin', new Uint8Array(12 << 20)); require('fs').statSync('more.bin').size";
    let second = engine.run(request(write, "alice")).await.unwrap().outcome;
    let error = error_text(write, &second);
    assert!(
        error.contains("ENOSPC") && error.contains("MCP_V8_TENANT_DISK_MB"),
        "{error}"
    );
    let other = engine.run(request(write, "bob")).await.unwrap().outcome;
    assert_eq!(completed(write, &other), (12 << 20).to_string());
    control.cancel();
    holding.await.unwrap();
    // Its share is free once it ended.
    let again = engine.run(request(write, "alice")).await.unwrap().outcome;
    assert_eq!(completed(write, &again), (12 << 20).to_string());
}

/// A server killed mid-run leaves its run's local bytes behind; the next
/// process on the same data directory removes them when it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_bytes_left_by_a_killed_server_are_swept_at_start() {
    let mut serve = crate::common::process::Serve::start(&[], &[]);
    let scratch = serve.data_dir().join("scratch");
    let port = serve.port;
    let call = tokio::spawn(async move {
        let params = serde_json::json!({"name": "run_js", "arguments": {"execution_timeout_secs": 60, "code":
            "require('fs').writeFileSync('left.bin', new Uint8Array(8 << 20));\n\
             await new Promise((r) => setTimeout(r, 30000))"}});
        crate::common::post_2026(port, "tools/call", Some("run_js"), params).await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while bytes_under(&scratch) < 8 << 20 {
        if call.is_finished() {
            panic!("the call ended first: {:?}", call.await);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run's bytes never reached {}",
            scratch.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    serve.restart_after_kill(&[], &[]);
    call.abort();
    assert_eq!(
        bytes_under(&scratch),
        0,
        "the new process swept the scratch folder"
    );
    let after = serve
        .run_js(serde_json::json!({"code": "require('fs').writeFileSync('x', 'y'); 1"}))
        .await;
    assert_eq!(after["status"], "completed", "{after}");
}

/// A heap stored before `/work` was a disk (tests/fixtures/legacy-work,
/// made by the build before it) restores with its files: they read back,
/// and its `fs`, the one it loaded then, writes and appends as it did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heap_made_before_the_disk_keeps_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let heap = crate::common::engine::legacy_work_heap(dir.path());
    let engine = engine(dir.path(), 64);
    let read = "const fs1 = require('fs'); const t1 = fs1.readFileSync('data/table.bin');\n\
        let ok1 = t1.length === 300000; for (let i = 0; i < t1.length; i++) ok1 &&= t1[i] === (i * 7919) % 251;\n\
        fs1.appendFileSync('notes.txt', 'and after it\\n'); fs1.writeFileSync('new.txt', 'new');\n\
        [kept, ok1, fs1.readFileSync('notes.txt', 'utf8')]";
    let outcome = run(&engine, read, Some(&heap)).await;
    assert_eq!(
        completed(read, &outcome),
        r#"[42,true,"written before the disk\nand after it\n"]"#
    );
    let again = "const fs2 = require('fs'); [fs2.readFileSync('notes.txt', 'utf8'), fs2.readFileSync('new.txt', 'utf8'), fs2.statSync('data/table.bin').size]";
    let outcome = run(&engine, again, outcome.heap.as_ref()).await;
    assert_eq!(
        completed(again, &outcome),
        r#"["written before the disk\nand after it\n","new",300000]"#
    );
}

/// Bytes under `prefix` of `bucket`.
async fn bucket_bytes(s3: &aws_sdk_s3::Client, bucket: &str, prefix: &str) -> i64 {
    let mut total = 0;
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        total += page
            .unwrap()
            .contents()
            .iter()
            .map(|o| o.size().unwrap_or(0))
            .sum::<i64>();
    }
    total
}

/// The same on S3 (moto): a file streamed in, hashed as it streams, read
/// back from another engine (nothing cached) with the same SHA-256, and an
/// appended line that stores a chunk or two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_s3_a_streamed_file_reads_back_whole_and_an_append_stores_little() {
    use mcp_v8_lambda::files::S3FileStore;
    use mcp_v8_lambda::heap::S3HeapStore;
    let (s3, _, bucket, _) = crate::common::moto::provisioned().await;
    let dir = tempfile::tempdir().unwrap();
    let engine = || {
        let heaps: Arc<dyn HeapStore> = Arc::new(S3HeapStore::new(s3.clone(), &bucket, ""));
        let config = EngineConfig {
            capabilities: CapabilitySettings {
                disk: DiskSettings {
                    scratch: Some(dir.path().join("scratch")),
                    run_bytes: 1 << 30,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..EngineConfig::default()
        };
        crate::common::engine::on_workers(config, Some(heaps))
            .with_files(Arc::new(S3FileStore::new(s3.clone(), &bucket, "")))
    };
    let write = format!(
        "{CHUNK_JS}const h = require('crypto').createHash('sha256'); const out = require('fs').createWriteStream('s3.bin');\n\
         for (let i = 0; i < 12; i++) {{ const c = chunk(i, 4 << 20); h.update(c); if (!out.write(c)) await new Promise((r) => out.once('drain', r)); }}\n\
         await new Promise((r) => out.end(r)); h.digest('hex')"
    );
    let first = engine();
    let outcome = run(&first, &write, None).await;
    let sha = completed(&write, &outcome);
    let heap = outcome.heap.unwrap();
    let read = "const h2 = require('crypto').createHash('sha256'); let n2 = 0;\n\
        for await (const piece of require('fs').createReadStream('s3.bin')) { h2.update(piece); n2 += piece.length; }\n\
        [n2, h2.digest('hex')]";
    let outcome = run(&engine(), read, Some(&heap)).await;
    assert_eq!(completed(read, &outcome), format!("[{},{sha}]", 48 << 20));
    let before = bucket_bytes(&s3, &bucket, "work/").await;
    let append =
        "require('fs').appendFileSync('s3.bin', 'tail\\n'); require('fs').statSync('s3.bin').size";
    let outcome = run(&first, append, Some(&heap)).await;
    assert_eq!(completed(append, &outcome), ((48 << 20) + 5).to_string());
    let grown = bucket_bytes(&s3, &bucket, "work/").await - before;
    assert!(grown < 16 << 20, "an append stored {grown} bytes");
    // Every object a heap names is made to outlive it before it is stored:
    // with the file's objects gone (expired), a chained run that touches
    // no file on another instance stores no heap naming them, and says so.
    let appended = outcome.heap.unwrap();
    let mut pages = s3
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("work/")
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for object in page.unwrap().contents() {
            s3.delete_object()
                .bucket(&bucket)
                .key(object.key().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    let outcome = run(&engine(), "globalThis.untouched = 1", Some(&appended)).await;
    assert_eq!(outcome.heap, None, "{outcome:?}");
    let error = outcome.error.expect("no heap is stored");
    assert_eq!(error.name, "StorageError", "{error:?}");
    assert!(
        error.message.contains("missing from the store") && error.message.contains("rmSync"),
        "{error:?}"
    );
}

/// A stateless server keeps no files, but its runs still have a disk for
/// the length of the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_servers_runs_write_and_read_files() {
    let serve = crate::common::process::Serve::start(&[], &[("MCP_V8_STATELESS", "true")]);
    let answer = serve
        .run_js(serde_json::json!({"code":
            "const fs = require('fs'); fs.writeFileSync('t.txt', 'x'.repeat(3 << 20)); fs.appendFileSync('t.txt', 'y');\n\
             fs.statSync('t.txt').size"}))
        .await;
    assert_eq!(answer["status"], "completed", "{answer}");
    assert_eq!(answer["result"], ((3 << 20) + 1).to_string(), "{answer}");
}
