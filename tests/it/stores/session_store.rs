//! The session stores against the shared conformance suite, plus what only
//! the embedded store promises.

use std::sync::Arc;

use crate::common::conformance::session::{self as conformance, sample_state};
use mcp_v8_lambda::session::{McpSessionId, RedbSessionStore, SessionStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbSessionStore::open(&dir.path().join("data/meta.redb")).unwrap();
    conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn a_state_survives_reopening_the_database() {
    // The replay proof in miniature: a new process finds what the last one wrote.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.redb");
    let state = sample_state(Some("agent"));
    {
        let store = RedbSessionStore::open(&path).unwrap();
        store.put(&state).await.unwrap();
    }
    let reopened = RedbSessionStore::open(&path).unwrap();
    assert_eq!(
        reopened
            .get(&state.session_id, state.created_at)
            .await
            .unwrap(),
        Some(state)
    );
}

#[test]
fn session_ids_are_long_random_and_visible_ascii() {
    let a = McpSessionId::generate();
    let b = McpSessionId::generate();
    assert_ne!(a, b);
    assert_eq!(a.as_str().len(), 48, "192 bits in hex");
    assert!(a.as_str().bytes().all(|c| c.is_ascii_graphic()));
    assert_eq!(McpSessionId::parse(a.as_str()).unwrap(), a);
    for bad in [
        "",
        "short",
        &"G".repeat(48),
        &"a".repeat(47),
        "../../etc/passwd",
    ] {
        assert!(McpSessionId::parse(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn an_unopenable_database_is_a_backend_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let err = RedbSessionStore::open(&blocker.join("meta.redb")).unwrap_err();
    assert!(
        err.to_string().contains("redb MCP session store failed"),
        "{err}"
    );
}
