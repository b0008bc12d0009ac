//! The heap storage backends against the shared conformance suite, plus what
//! only the directory store promises.

use std::sync::Arc;

use mcp_v8_lambda::heap::conformance::{self, sample_snapshot};
use mcp_v8_lambda::heap::{FileHeapStorage, HeapStorage, HeapStoreError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run_all(Arc::new(FileHeapStorage::new(dir.path().join("heaps")))).await;
}

#[tokio::test]
async fn directory_is_created_on_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/heaps");
    let store = FileHeapStorage::new(&nested);
    assert!(!nested.exists());
    store.put(&sample_snapshot(1)).await.unwrap();
    assert!(nested.is_dir());
}

#[tokio::test]
async fn an_existing_file_is_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStorage::new(dir.path());
    let snapshot = sample_snapshot(2);
    store.put(&snapshot).await.unwrap();
    // Mark the stored file; a rewrite would replace the mark.
    let path = store.path_of(snapshot.key());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    store.put(&snapshot).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileHeapStorage::new(dir.path()));
    let mut tasks = Vec::new();
    for seed in 0..4 {
        for _ in 0..4 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.put(&sample_snapshot(seed)).await
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
    let store = FileHeapStorage::new(dir.path());
    let snapshot = sample_snapshot(3);
    store.put(&snapshot).await.unwrap();
    let path = store.path_of(snapshot.key());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = store.get(snapshot.key()).await.unwrap_err();
    assert!(matches!(err, HeapStoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(snapshot.key().as_str()), "{err}");
}

#[tokio::test]
async fn an_unreadable_store_is_a_backend_error_not_a_missing_heap() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: every read fails with an I/O error.
    let blocker = dir.path().join("heaps");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let store = FileHeapStorage::new(&blocker);
    let snapshot = sample_snapshot(4);
    let err = store.get(snapshot.key()).await.unwrap_err();
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
    let err = store.put(&snapshot).await.unwrap_err();
    assert!(matches!(err, HeapStoreError::Backend { .. }), "{err}");
}
