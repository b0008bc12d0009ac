//! The heap store backends against the shared conformance suite, plus what
//! only the directory store promises.

use mcp_v8_lambda::tenant::Tenant;
use std::sync::Arc;

use crate::common::conformance::heap::{self as conformance, sample_snapshot};
use mcp_v8_lambda::heap::{
    FileHeapStore, HeapStore, HeapStoreError, MemoryCacheHeapStore, WriteThroughCacheHeapStore,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run_all(Arc::new(FileHeapStore::new(dir.path().join("heaps")))).await;
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
async fn an_existing_file_is_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path());
    let snapshot = sample_snapshot(2);
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    // Mark the stored file; a rewrite would replace the mark.
    let path = store.path_of(&Tenant::anonymous(), snapshot.key());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
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
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| n.len() == 64), "{names:?}");
}

#[tokio::test]
async fn a_truncated_file_is_corrupt_and_names_the_heap() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path());
    let snapshot = sample_snapshot(3);
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    let path = store.path_of(&Tenant::anonymous(), snapshot.key());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = store
        .get(&Tenant::anonymous(), snapshot.key())
        .await
        .unwrap_err();
    assert!(matches!(err, HeapStoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(snapshot.key().as_str()), "{err}");
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
        let snapshot = sample_snapshot(5);
        let path = store.path_of(&Tenant::anonymous(), snapshot.key());
        std::fs::write(&path, &snapshot.framed()[..snapshot.framed().len() - 1]).unwrap();
        assert!(
            store
                .get(&Tenant::anonymous(), snapshot.key())
                .await
                .is_err()
        );
        store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), &snapshot.framed()[..]);
        let read = store
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.key(), snapshot.key());
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
    let files = Arc::new(FileHeapStore::new(dir.path()));
    conformance::run_all(Arc::new(MemoryCacheHeapStore::new(files, 4 << 20))).await;
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
