//! The heap store backends against the shared conformance suite, plus what
//! only the directory store promises.

use mcp_v8_lambda::tenant::Tenant;
use std::sync::Arc;

use crate::common::conformance::heap::{self as conformance, sample_snapshot};
use mcp_v8_lambda::heap::{
    FileHeapStore, HeapKey, HeapStore, HeapStoreError, MemoryCacheHeapStore,
    WriteThroughCacheHeapStore,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path().join("heaps"));
    conformance::run_all(Arc::new(store.clone())).await;
    conformance::run_chunked(Arc::new(store.clone()), &DirRaw(store)).await;
}

/// The directory store's files, for the chunked checks.
pub struct DirRaw(pub FileHeapStore);

#[async_trait::async_trait]
impl conformance::Raw for DirRaw {
    fn fresh(&self) -> Arc<dyn HeapStore> {
        Arc::new(self.0.clone())
    }
    async fn write_heap(&self, tenant: &Tenant, key: &HeapKey, bytes: Vec<u8>) {
        let path = self.0.path_of(tenant, key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    async fn read_heap(&self, tenant: &Tenant, key: &HeapKey) -> Vec<u8> {
        std::fs::read(self.0.path_of(tenant, key)).unwrap()
    }
    async fn chunks(&self, tenant: &Tenant) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.0.folder_of(tenant).join("chunks"))
            .map(|dir| {
                dir.map(|e| e.unwrap().path().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
    async fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(name).unwrap()
    }
    async fn write(&self, name: &str, bytes: Vec<u8>) {
        std::fs::write(name, bytes).unwrap();
    }
    async fn delete(&self, name: &str) {
        std::fs::remove_file(name).unwrap();
    }
}

#[tokio::test]
async fn directory_is_created_on_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/heaps");
    let store = FileHeapStore::new(&nested);
    assert!(!nested.exists());
    store
        .put(&Tenant::anonymous(), &sample_snapshot(1))
        .await
        .unwrap();
    assert!(nested.is_dir());
}

#[tokio::test]
async fn existing_files_are_not_rewritten() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path());
    let snapshot = crate::common::conformance::heap::related_snapshot(2, 0);
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    // A rewrite renames a new file over the old one: a new inode.
    let inodes = || {
        let mut files = vec![store.path_of(&Tenant::anonymous(), snapshot.key())];
        files.extend(
            std::fs::read_dir(dir.path().join("chunks"))
                .unwrap()
                .map(|e| e.unwrap().path()),
        );
        files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().ino())
            .collect::<Vec<_>>()
    };
    let before = inodes();
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    assert_eq!(inodes(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileHeapStore::new(dir.path()));
    let mut tasks = Vec::new();
    for seed in 0..4 {
        for _ in 0..4 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .put(&Tenant::anonymous(), &sample_snapshot(seed))
                    .await
            }));
        }
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let names = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let heaps = names(dir.path());
    assert_eq!(heaps.len(), 4, "{heaps:?}");
    assert!(heaps.iter().all(|n| n.len() == 64), "{heaps:?}");
}

#[tokio::test]
async fn a_truncated_file_is_corrupt_and_names_the_heap() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path());
    let snapshot = sample_snapshot(3);
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    let path = store.path_of(&Tenant::anonymous(), snapshot.key());
    // An original file and a manifest, each cut in half.
    for bytes in [snapshot.framed().to_vec(), std::fs::read(&path).unwrap()] {
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let err = store
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                HeapStoreError::Corrupt { .. } | HeapStoreError::Chunks { .. }
            ),
            "{err}"
        );
        assert!(err.to_string().contains(snapshot.key().as_str()), "{err}");
    }
}

#[tokio::test]
async fn a_put_replaces_a_file_cut_short() {
    // What a crash between the write and the disk leaves behind; a put that
    // trusted the name alone would keep the heap unreadable for good.
    let (durable, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for store in [
        FileHeapStore::new(durable.path()),
        FileHeapStore::cache(cache.path()),
    ] {
        let snapshot = crate::common::conformance::heap::related_snapshot(5, 0);
        let path = store.path_of(&Tenant::anonymous(), snapshot.key());
        std::fs::write(&path, &snapshot.framed()[..snapshot.framed().len() - 1]).unwrap();
        assert!(
            store
                .get(&Tenant::anonymous(), snapshot.key())
                .await
                .is_err()
        );
        store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
        let read = store
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.framed(), snapshot.framed());
        // And a chunk left empty (a crash before an unsynced write reached
        // the disk) is replaced too.
        let chunk = std::fs::read_dir(store.dir().join("chunks"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let whole = std::fs::read(&chunk).unwrap();
        std::fs::write(&chunk, b"").unwrap();
        assert!(
            store
                .get(&Tenant::anonymous(), snapshot.key())
                .await
                .is_err()
        );
        store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
        assert_eq!(std::fs::read(&chunk).unwrap(), whole);
    }
}

#[tokio::test]
async fn an_unreadable_store_is_a_backend_error_not_a_missing_heap() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: every read fails with an I/O error.
    let blocker = dir.path().join("heaps");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let store = FileHeapStore::new(&blocker);
    let snapshot = sample_snapshot(4);
    let err = store
        .get(&Tenant::anonymous(), snapshot.key())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            HeapStoreError::Backend {
                store: "directory",
                ..
            }
        ),
        "{err}"
    );
    let err = store
        .put(&Tenant::anonymous(), &snapshot)
        .await
        .unwrap_err();
    assert!(matches!(err, HeapStoreError::Backend { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_cache_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let files = FileHeapStore::new(dir.path());
    let cache = Arc::new(MemoryCacheHeapStore::new(Arc::new(files.clone()), 4 << 20));
    conformance::run_all(cache.clone()).await;
    conformance::run_chunked(cache, &DirRaw(files)).await;
}

/// The memory cache in front of a directory, bounded to two sample heaps.
fn memory_over_files(dir: &std::path::Path) -> (MemoryCacheHeapStore, FileHeapStore) {
    let files = FileHeapStore::new(dir);
    let two = 2 * sample_snapshot(0).framed().len();
    (
        MemoryCacheHeapStore::new(Arc::new(files.clone()), two),
        files,
    )
}

#[tokio::test]
async fn memory_cache_serves_recent_heaps_without_reading_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, files) = memory_over_files(dir.path());
    let written = sample_snapshot(10);
    cache.put(&Tenant::anonymous(), &written).await.unwrap();
    // Stored below as well: the cache never holds what the store refused.
    let path = files.path_of(&Tenant::anonymous(), written.key());
    assert!(path.exists());
    // Damage the file: a read that reached the directory would fail.
    std::fs::write(&path, b"damaged").unwrap();
    let read = cache
        .get(&Tenant::anonymous(), written.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.framed(), written.framed());
}

#[tokio::test]
async fn memory_cache_evicts_the_least_recently_used_heap_first() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, files) = memory_over_files(dir.path());
    let (a, b, c) = (
        sample_snapshot(11),
        sample_snapshot(12),
        sample_snapshot(13),
    );
    cache.put(&Tenant::anonymous(), &a).await.unwrap();
    cache.put(&Tenant::anonymous(), &b).await.unwrap();
    // Using `a` makes `b` the oldest, so storing `c` evicts `b`.
    cache
        .get(&Tenant::anonymous(), a.key())
        .await
        .unwrap()
        .unwrap();
    cache.put(&Tenant::anonymous(), &c).await.unwrap();
    assert_eq!(cache.cached_bytes(), 2 * a.framed().len());
    for heap in [&a, &b, &c] {
        std::fs::remove_file(files.path_of(&Tenant::anonymous(), heap.key())).unwrap();
    }
    assert!(
        cache
            .get(&Tenant::anonymous(), a.key())
            .await
            .unwrap()
            .is_some(),
        "a was used last"
    );
    assert!(
        cache
            .get(&Tenant::anonymous(), c.key())
            .await
            .unwrap()
            .is_some(),
        "c was stored last"
    );
    assert!(
        cache
            .get(&Tenant::anonymous(), b.key())
            .await
            .unwrap()
            .is_none(),
        "b was evicted"
    );
}

#[tokio::test]
async fn memory_cache_keeps_a_heap_read_from_the_store_and_not_a_corrupt_one() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, files) = memory_over_files(dir.path());
    let (good, bad) = (sample_snapshot(14), sample_snapshot(15));
    files.put(&Tenant::anonymous(), &good).await.unwrap();
    files.put(&Tenant::anonymous(), &bad).await.unwrap();
    std::fs::write(files.path_of(&Tenant::anonymous(), bad.key()), b"damaged").unwrap();
    let err = cache
        .get(&Tenant::anonymous(), bad.key())
        .await
        .unwrap_err();
    assert!(matches!(err, HeapStoreError::Corrupt { .. }), "{err}");
    assert!(
        cache
            .get(&Tenant::anonymous(), good.key())
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        cache.cached_bytes(),
        good.framed().len(),
        "only the good heap is kept"
    );
    std::fs::remove_file(files.path_of(&Tenant::anonymous(), good.key())).unwrap();
    assert!(
        cache
            .get(&Tenant::anonymous(), good.key())
            .await
            .unwrap()
            .is_some(),
        "served from memory"
    );
}

#[tokio::test]
async fn memory_cache_of_zero_bytes_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = FileHeapStore::new(dir.path());
    let cache = MemoryCacheHeapStore::new(Arc::new(files.clone()), 0);
    let heap = sample_snapshot(16);
    cache.put(&Tenant::anonymous(), &heap).await.unwrap();
    assert_eq!(cache.cached_bytes(), 0);
    std::fs::remove_file(files.path_of(&Tenant::anonymous(), heap.key())).unwrap();
    assert!(
        cache
            .get(&Tenant::anonymous(), heap.key())
            .await
            .unwrap()
            .is_none()
    );
}

/// A write-through cache whose directory refuses every write (Lambda's
/// `/tmp` full, or not writable) still stores and serves every heap through
/// the store behind it: the cache never fails a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_directory_that_refuses_writes_never_fails_a_put_or_a_get() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the cache directory should be: as root, permissions
    // would not stop a write, this does.
    let blocker = dir.path().join("tmp-full");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let remote: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("remote")));
    let cache = Arc::new(WriteThroughCacheHeapStore::new(
        FileHeapStore::cache(blocker.join("heaps")),
        remote.clone(),
        1 << 20,
    ));
    let snapshot = sample_snapshot(11);
    cache
        .put(&Tenant::anonymous(), &snapshot)
        .await
        .expect("the cache's failure fails no put");
    assert_eq!(
        remote
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap()
            .unwrap()
            .framed(),
        snapshot.framed(),
        "the store behind has it"
    );
    assert_eq!(
        cache
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap()
            .unwrap()
            .framed(),
        snapshot.framed()
    );
    conformance::run_all(cache).await;
}

/// Sets a stored file's time `days` back, as if written then.
fn age(path: &std::path::Path, days: u64) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(then)
        .unwrap();
}

/// The embedded store's retention: heaps older than it go, then the chunks
/// only they named; a heap within it keeps every chunk, shared ones too,
/// and storing a heap again makes it new.
#[tokio::test]
async fn a_sweep_removes_old_heaps_and_only_the_chunks_no_other_heap_names() {
    use crate::common::conformance::heap::related_snapshot;
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path());
    let alice = Tenant::of_principal("jwt:https://issuer.test#alice");
    let (old, new, again) = (
        related_snapshot(5, 1),
        related_snapshot(5, 2),
        related_snapshot(6, 0),
    );
    for (tenant, heap) in [(&alice, &old), (&alice, &new), (&alice, &again)] {
        store.put(tenant, heap).await.unwrap();
    }
    let chunks = || {
        std::fs::read_dir(store.folder_of(&alice).join("chunks"))
            .unwrap()
            .count()
    };
    let before = chunks();
    age(&store.path_of(&alice, old.key()), 10);
    age(&store.path_of(&alice, again.key()), 10);
    store.put(&alice, &again).await.unwrap(); // stored again: new
    let swept = store
        .sweep(std::time::Duration::from_secs(5 * 86_400))
        .unwrap();
    assert_eq!((swept.heaps, swept.chunks), (1, 1), "{swept:?}");
    assert_eq!(chunks(), before - 1);
    assert!(store.get(&alice, old.key()).await.unwrap().is_none());
    for heap in [&new, &again] {
        let read = store.get(&alice, heap.key()).await.unwrap().unwrap();
        assert_eq!(read.framed(), heap.framed());
    }
    assert_eq!(
        store
            .sweep(std::time::Duration::from_secs(5 * 86_400))
            .unwrap(),
        Default::default(),
        "nothing more to remove"
    );
}

/// `MCP_V8_HEAP_RETENTION_DAYS` reaches the embedded store of a server:
/// building it sweeps, and unset keeps everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retention_setting_sweeps_the_embedded_store() {
    use mcp_v8_lambda::config::Config;
    // Deletion first: the kept case then waits three times as long as the
    // sweep took to delete, so a heap kept only by a late sweep fails it.
    let mut swept_in = std::time::Duration::ZERO;
    for (days, kept) in [(Some("2"), false), (None, true)] {
        let dir = tempfile::tempdir().unwrap();
        let files = FileHeapStore::new(dir.path().join("heaps"));
        let heap = sample_snapshot(60);
        files.put(&Tenant::anonymous(), &heap).await.unwrap();
        age(&files.path_of(&Tenant::anonymous(), heap.key()), 3);
        let config = Config::from_lookup(|name| {
            (name == "MCP_V8_HEAP_RETENTION_DAYS")
                .then_some(days)
                .flatten()
                .map(str::to_owned)
        })
        .unwrap();
        let _app = crate::common::app_on_workers(&config, dir.path(), None);
        let path = files.path_of(&Tenant::anonymous(), heap.key());
        let started = std::time::Instant::now();
        if kept {
            let wait = (swept_in * 3).max(std::time::Duration::from_secs(1));
            tokio::time::sleep(wait).await;
        } else {
            let deadline = started + std::time::Duration::from_secs(10);
            while path.exists() && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            swept_in = started.elapsed();
        }
        assert_eq!(path.exists(), kept, "retention {days:?}");
    }
}

/// `heap export` writes the original `MCPV8SNAP` file of a chunked heap;
/// a bad key and an unknown heap are errors that say which.
#[tokio::test]
async fn heap_export_writes_the_original_format() {
    let dir = tempfile::tempdir().unwrap();
    let files = FileHeapStore::new(dir.path().join("heaps"));
    let heap = crate::common::conformance::heap::related_snapshot(7, 0);
    files.put(&Tenant::anonymous(), &heap).await.unwrap();
    let out = dir.path().join("exported");
    let export = |key: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
            .args(["heap", "export", key, "--data-dir"])
            .arg(dir.path())
            .arg("--out")
            .arg(&out)
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .env_remove("MCP_V8_HEAP_BUCKET")
            .output()
            .unwrap()
    };
    let done = export(heap.key().as_str());
    assert!(done.status.success(), "{done:?}");
    assert_eq!(std::fs::read(&out).unwrap(), &heap.framed()[..]);
    assert!(std::fs::read(&out).unwrap().starts_with(b"MCPV8SNAP\0"));

    let bad = export("not-a-key");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("not-a-key"),
        "{bad:?}"
    );
    let unknown = export(&"e".repeat(64));
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no heap"),
        "{unknown:?}"
    );
}
