//! The metadata stores against the shared conformance suite.

use std::sync::Arc;

use crate::common::conformance::meta as conformance;
use mcp_v8_lambda::backends::embedded::open_database;
use mcp_v8_lambda::meta::RedbMetaStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    conformance::run_all(Arc::new(RedbMetaStore::new(db).unwrap())).await;
}

/// The task store in the same database, against the task store suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_store_passes_the_task_store_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    crate::common::conformance::tasks::run_all(Arc::new(RedbMetaStore::new(db).unwrap())).await;
}

/// A database written before the session index existed lists every
/// session it holds, once opened by this version.
#[tokio::test]
async fn a_database_from_before_the_session_index_lists_its_sessions() {
    use mcp_v8_lambda::meta::MetaStore;
    use mcp_v8_lambda::tenant::Tenant;

    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    {
        // The heads table as earlier versions wrote it, and nothing else.
        let heads: redb::TableDefinition<&str, u64> =
            redb::TableDefinition::new("session_log_heads");
        let tx = db.begin_write().unwrap();
        {
            let mut table = tx.open_table(heads).unwrap();
            table.insert("old-b", 3).unwrap();
            table.insert("old-a", 1).unwrap();
        }
        tx.commit().unwrap();
    }
    let store = RedbMetaStore::new(db).unwrap();
    let listed = store
        .list_sessions(&Tenant::anonymous(), None, 10)
        .await
        .unwrap();
    assert_eq!(
        listed,
        [
            crate::common::logical("old-a"),
            crate::common::logical("old-b")
        ]
    );
}

mod execution_records {
    //! An execution record is on disk when the call that writes it returns,
    //! with or without a log entry; these check it against what a crash
    //! leaves.

    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mcp_v8_lambda::backends::embedded::open_database;
    use mcp_v8_lambda::engine::{RunOutcome, RunStatus};
    use mcp_v8_lambda::meta::{ExecutionRecord, MetaStore, RedbMetaStore};
    use mcp_v8_lambda::tenant::Tenant;
    use uuid::Uuid;

    fn record() -> ExecutionRecord {
        crate::common::execution_record(
            RunOutcome {
                heap_saving: None,
                execution_id: Uuid::new_v4(),
                status: RunStatus::Completed,
                result: Some("2".into()),
                output: String::new(),
                heap: None,
                input_heap: None,
                error: None,
                warnings: vec![],
                duration_ms: 0,
                save_wait_ms: None,
                saved_after_ms: None,
                superseded: None,
                fetches: None,
                mcp_calls: None,
                reports: Default::default(),
            },
            "2026-11-22T12:00:00Z",
            "2026-11-22T12:00:00Z",
            2_000_000_000,
        )
    }

    /// What the disk holds now: a copy of the file, opened as after a crash
    /// (redb falls back to the last durable commit).
    async fn on_disk(path: &Path, id: Uuid) -> Option<ExecutionRecord> {
        let copy = path.with_extension("crashed");
        std::fs::copy(path, &copy).unwrap();
        let store = RedbMetaStore::new(open_database(&copy).unwrap()).unwrap();
        let found = store
            .get_execution(&Tenant::anonymous(), id, 0)
            .await
            .unwrap();
        drop(store);
        std::fs::remove_file(&copy).unwrap();
        found
    }

    #[tokio::test]
    async fn a_record_without_a_log_entry_is_readable_at_once_and_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.redb");
        let store = RedbMetaStore::new(open_database(&path).unwrap()).unwrap();
        let record = record();
        let id = record.execution_id;
        store
            .record_run(&Tenant::anonymous(), None, &record)
            .await
            .unwrap();
        assert_eq!(
            store
                .get_execution(&Tenant::anonymous(), id, 0)
                .await
                .unwrap(),
            Some(record.clone())
        );

        let start = Instant::now();
        loop {
            if on_disk(&path, id).await.as_ref() == Some(&record) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the record never reached the disk"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test]
    async fn dropping_the_store_flushes_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.redb");
        let db = open_database(&path).unwrap();
        let store = RedbMetaStore::new(db.clone()).unwrap();
        let record = record();
        let id = record.execution_id;
        store
            .record_run(&Tenant::anonymous(), None, &record)
            .await
            .unwrap();
        drop(store);
        // The database handle is still open: only the flush on drop can have
        // put the record on disk this soon.
        assert_eq!(on_disk(&path, id).await, Some(record));
        drop(db);
    }

    #[tokio::test]
    async fn a_log_entry_and_its_record_are_on_disk_when_the_call_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.redb");
        let store = Arc::new(RedbMetaStore::new(open_database(&path).unwrap()).unwrap());
        let record = record();
        let id = record.execution_id;
        let entry = mcp_v8_lambda::meta::NewLogEntry {
            input_heap: None,
            output_heap: mcp_v8_lambda::heap::HeapKey::parse(&"a".repeat(64)).unwrap(),
            code: "1".into(),
            timestamp: "2026-11-22T12:00:00Z".into(),
            superseded_by: None,
        };
        store
            .record_run(
                &Tenant::anonymous(),
                Some((&crate::common::logical("s"), entry)),
                &record,
            )
            .await
            .unwrap();
        assert_eq!(on_disk(&path, id).await, Some(record));
    }

    /// Records written at once from many tasks: every one is readable as
    /// soon as its call returns, and every one is in the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn records_accepted_at_once_from_many_tasks_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.redb");
        let db = open_database(&path).unwrap();
        let store = Arc::new(RedbMetaStore::new(db.clone()).unwrap());
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..200 {
                    let record = record();
                    store
                        .record_run(&Tenant::anonymous(), None, &record)
                        .await
                        .unwrap();
                    let id = record.execution_id;
                    assert_eq!(
                        store
                            .get_execution(&Tenant::anonymous(), id, 0)
                            .await
                            .unwrap(),
                        Some(record)
                    );
                    ids.push(id);
                }
                ids
            }));
        }
        let mut ids = Vec::new();
        for task in tasks {
            ids.extend(task.await.unwrap());
        }
        drop(store);
        let copy = path.with_extension("crashed");
        std::fs::copy(&path, &copy).unwrap();
        let reopened = RedbMetaStore::new(open_database(&copy).unwrap()).unwrap();
        for id in &ids {
            assert!(
                reopened
                    .get_execution(&Tenant::anonymous(), *id, 0)
                    .await
                    .unwrap()
                    .is_some(),
                "record {id} was lost"
            );
        }
        assert_eq!(ids.len(), 1600);
        drop(db);
    }

    #[tokio::test]
    async fn an_expired_record_is_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbMetaStore::new(open_database(&dir.path().join("m.redb")).unwrap()).unwrap();
        let record = record();
        let id = record.execution_id;
        store
            .record_run(&Tenant::anonymous(), None, &record)
            .await
            .unwrap();
        assert_eq!(
            store
                .get_execution(&Tenant::anonymous(), id, record.expires_at)
                .await
                .unwrap(),
            None
        );
        assert!(
            store
                .get_execution(&Tenant::anonymous(), id, 0)
                .await
                .unwrap()
                .is_some()
        );
    }
}
