//! The metadata stores against the shared conformance suite.

use std::sync::Arc;

use mcp_v8_lambda::embedded::open_database;
use mcp_v8_lambda::meta::{RedbMetaStore, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redb_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    conformance::run_all(Arc::new(RedbMetaStore::new(db).unwrap())).await;
}
