//! The behaviour every [`SessionStore`] must show: redb and DynamoDB run it
//! unchanged.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_v8_lambda::protocol::mcp::ClientInfo;
use mcp_v8_lambda::session::{InitState, LogicalSession, McpSessionId, SessionStore};

const NOW: i64 = 1_800_000_000;

/// A state for tests, expiring an hour after `NOW`.
pub fn sample_state(logical_session: Option<&str>) -> InitState {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("roots".into(), serde_json::json!({ "listChanged": true }));
    InitState {
        session_id: McpSessionId::generate(),
        protocol_version: "2025-06-18".into(),
        client_capabilities: capabilities,
        client_info: ClientInfo {
            name: "conformance".into(),
            version: "1.0.0".into(),
            title: None,
        },
        mcp_headers: BTreeMap::from([("session-id".to_owned(), "agent-7".to_owned())]),
        logical_session: logical_session
            .map(|name| LogicalSession::parse(name).expect("a valid name")),
        principal: None,
        initialized: false,
        // A level set by logging/setLevel is part of what replays.
        log_level: Some(mcp_v8_lambda::protocol::logging::LoggingLevel::Warning),
        created_at: NOW,
        expires_at: NOW + 3600,
    }
}

/// Runs every check below against `store`.
pub async fn run_all(store: Arc<dyn SessionStore>) {
    unknown_id_is_none(store.as_ref()).await;
    put_then_get_returns_the_state(store.as_ref()).await;
    put_replaces_the_state(store.as_ref()).await;
    expired_state_is_none(store.as_ref()).await;
    touch_extends_only_live_states(store.as_ref()).await;
    delete_removes_and_reports(store.as_ref()).await;
    cancels_are_seen_for_their_request_only_until_they_expire(store.as_ref()).await;
    replies_are_seen_for_their_request_only_until_they_expire(store.as_ref()).await;
    concurrent_sessions_do_not_interfere(store).await;
}

/// A cancel is seen for its own session and request, until it expires.
pub async fn cancels_are_seen_for_their_request_only_until_they_expire(store: &dyn SessionStore) {
    let (a, b) = (McpSessionId::generate(), McpSessionId::generate());
    assert!(!store.request_cancelled(&a, "7", 100).await.unwrap());
    store.cancel_request(&a, "7", 200).await.unwrap();
    assert!(store.request_cancelled(&a, "7", 100).await.unwrap());
    assert!(
        !store.request_cancelled(&a, "7", 200).await.unwrap(),
        "expired"
    );
    assert!(!store.request_cancelled(&a, "8", 100).await.unwrap());
    assert!(!store.request_cancelled(&a, "\"7\"", 100).await.unwrap());
    assert!(!store.request_cancelled(&b, "7", 100).await.unwrap());
    // A cancel record is not a session.
    assert!(store.get(&a, 100).await.unwrap().is_none());
}

/// A relayed reply is seen for its own session and request, the latest
/// one, until it expires.
pub async fn replies_are_seen_for_their_request_only_until_they_expire(store: &dyn SessionStore) {
    let (a, b) = (McpSessionId::generate(), McpSessionId::generate());
    assert_eq!(store.relayed_reply(&a, "\"e1\"", 100).await.unwrap(), None);
    store
        .relay_reply(&a, "\"e1\"", r#"{"result":{"action":"decline"}}"#, 200)
        .await
        .unwrap();
    store
        .relay_reply(&a, "\"e1\"", r#"{"result":{"action":"accept"}}"#, 200)
        .await
        .unwrap();
    assert_eq!(
        store
            .relayed_reply(&a, "\"e1\"", 100)
            .await
            .unwrap()
            .as_deref(),
        Some(r#"{"result":{"action":"accept"}}"#),
        "the latest reply"
    );
    assert_eq!(
        store.relayed_reply(&a, "\"e1\"", 200).await.unwrap(),
        None,
        "expired"
    );
    assert_eq!(store.relayed_reply(&a, "\"e2\"", 100).await.unwrap(), None);
    assert_eq!(store.relayed_reply(&b, "\"e1\"", 100).await.unwrap(), None);
    // A reply is neither a session nor a cancel.
    assert!(store.get(&a, 100).await.unwrap().is_none());
    assert!(!store.request_cancelled(&a, "\"e1\"", 100).await.unwrap());
}

/// A never-stored id is absent.
pub async fn unknown_id_is_none(store: &dyn SessionStore) {
    assert!(
        store
            .get(&McpSessionId::generate(), NOW)
            .await
            .unwrap()
            .is_none()
    );
}

/// What `put` stored, `get` returns field for field.
pub async fn put_then_get_returns_the_state(store: &dyn SessionStore) {
    let state = sample_state(Some("agent-7"));
    store.put(&state).await.unwrap();
    assert_eq!(
        store.get(&state.session_id, NOW).await.unwrap(),
        Some(state)
    );
}

/// `put` of a known id replaces every field (e.g. `initialized`).
pub async fn put_replaces_the_state(store: &dyn SessionStore) {
    let mut state = sample_state(None);
    store.put(&state).await.unwrap();
    state.initialized = true;
    state.principal = Some("arn:aws:iam::123456789012:user/alice".into());
    store.put(&state).await.unwrap();
    assert_eq!(
        store.get(&state.session_id, NOW).await.unwrap(),
        Some(state)
    );
}

/// From `expires_at` on, the state reads as absent.
pub async fn expired_state_is_none(store: &dyn SessionStore) {
    let state = sample_state(None);
    store.put(&state).await.unwrap();
    assert!(
        store
            .get(&state.session_id, state.expires_at - 1)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .get(&state.session_id, state.expires_at)
            .await
            .unwrap()
            .is_none()
    );
}

/// `touch` moves the expiry of a live state and never revives or creates one.
pub async fn touch_extends_only_live_states(store: &dyn SessionStore) {
    let state = sample_state(None);
    store.put(&state).await.unwrap();
    let later = state.expires_at + 7200;
    assert!(store.touch(&state.session_id, NOW, later).await.unwrap());
    let read = store
        .get(&state.session_id, state.expires_at + 10)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.expires_at, later);
    assert!(
        !store
            .touch(&state.session_id, later, later + 100)
            .await
            .unwrap(),
        "expired"
    );
    assert!(
        !store
            .touch(&McpSessionId::generate(), NOW, later)
            .await
            .unwrap(),
        "unknown"
    );
}

/// `delete` removes the state and reports whether there was one.
pub async fn delete_removes_and_reports(store: &dyn SessionStore) {
    let state = sample_state(None);
    store.put(&state).await.unwrap();
    assert!(store.delete(&state.session_id).await.unwrap());
    assert!(store.get(&state.session_id, NOW).await.unwrap().is_none());
    assert!(!store.delete(&state.session_id).await.unwrap());
}

/// Sessions written at once stay separate.
pub async fn concurrent_sessions_do_not_interfere(store: Arc<dyn SessionStore>) {
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let state = sample_state(Some(&format!("logical-{i}")));
            store.put(&state).await.unwrap();
            state
        }));
    }
    for task in tasks {
        let state = task.await.unwrap();
        assert_eq!(
            store.get(&state.session_id, NOW).await.unwrap(),
            Some(state)
        );
    }
}
