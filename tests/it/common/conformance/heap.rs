//! The behaviour every [`HeapStore`] backend must show: the directory, S3,
//! the write-through and memory caches run it unchanged.

use std::sync::Arc;

use mcp_v8_lambda::heap::{HeapKey, HeapStore, MIN_PAYLOAD_LEN, Snapshot};
use mcp_v8_lambda::tenant::Tenant;

/// The tenant of the checks that are not about tenants: the original layout.
const ANON: &Tenant = &Tenant::anonymous();

/// A valid snapshot of `seed`-dependent content (not a V8 heap: storage
/// does not care what the payload means).
pub fn sample_snapshot(seed: u64) -> Snapshot {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let payload: Vec<u8> = (0..MIN_PAYLOAD_LEN + 4096)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            (state >> 33) as u8
        })
        .collect();
    Snapshot::from_payload(&payload).expect("payload is over the minimum")
}

/// Runs every check below against `store`.
pub async fn run_all(store: Arc<dyn HeapStore>) {
    missing_key_is_none(store.as_ref()).await;
    put_then_get_returns_the_same_bytes(store.as_ref()).await;
    put_of_an_existing_key_is_idempotent(store.as_ref()).await;
    concurrent_puts_of_one_key_leave_one_valid_snapshot(store.clone()).await;
    distinct_keys_do_not_interfere(store.as_ref()).await;
    tenants_do_not_see_each_others_heaps(store.as_ref()).await;
}

/// `get` of a key never stored is `Ok(None)`.
pub async fn missing_key_is_none(store: &dyn HeapStore) {
    let key = HeapKey::parse(&"e".repeat(64)).unwrap();
    assert!(
        store
            .get(ANON, &key)
            .await
            .expect("get of a missing key")
            .is_none()
    );
}

/// What `put` stored, `get` returns byte for byte, verified.
pub async fn put_then_get_returns_the_same_bytes(store: &dyn HeapStore) {
    let snapshot = sample_snapshot(1);
    store.put(ANON, &snapshot).await.expect("put");
    let read = store
        .get(ANON, snapshot.key())
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(read.key(), snapshot.key());
    assert_eq!(read.framed(), snapshot.framed());
}

/// A second `put` of the same content succeeds.
pub async fn put_of_an_existing_key_is_idempotent(store: &dyn HeapStore) {
    let snapshot = sample_snapshot(2);
    store.put(ANON, &snapshot).await.expect("first put");
    store
        .put(ANON, &snapshot)
        .await
        .expect("second put of the same key");
    let read = store.get(ANON, snapshot.key()).await.unwrap().unwrap();
    assert_eq!(read.payload(), snapshot.payload());
}

/// Racing writers of one key never leave a torn snapshot.
pub async fn concurrent_puts_of_one_key_leave_one_valid_snapshot(store: Arc<dyn HeapStore>) {
    let snapshot = sample_snapshot(3);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        let snapshot = snapshot.clone();
        tasks.push(tokio::spawn(
            async move { store.put(ANON, &snapshot).await },
        ));
    }
    for task in tasks {
        task.await.expect("task").expect("concurrent put");
    }
    let read = store.get(ANON, snapshot.key()).await.unwrap().unwrap();
    assert_eq!(read.framed(), snapshot.framed());
}

/// Two keys are two independent snapshots.
pub async fn distinct_keys_do_not_interfere(store: &dyn HeapStore) {
    let a = sample_snapshot(10);
    let b = sample_snapshot(11);
    assert_ne!(a.key(), b.key());
    store.put(ANON, &a).await.unwrap();
    store.put(ANON, &b).await.unwrap();
    assert_eq!(
        store.get(ANON, a.key()).await.unwrap().unwrap().payload(),
        a.payload()
    );
    assert_eq!(
        store.get(ANON, b.key()).await.unwrap().unwrap().payload(),
        b.payload()
    );
}

/// A heap one tenant stored is, to any other (the anonymous one included),
/// a key never stored; the same content stored by two tenants is two heaps.
pub async fn tenants_do_not_see_each_others_heaps(store: &dyn HeapStore) {
    let alice = Tenant::of_principal("jwt:https://issuer.test#alice");
    let bob = Tenant::of_principal("jwt:https://issuer.test#bob");
    let snapshot = sample_snapshot(20);
    store.put(&alice, &snapshot).await.unwrap();
    for other in [&bob, ANON] {
        assert!(
            store.get(other, snapshot.key()).await.unwrap().is_none(),
            "{other:?} read a heap of {alice:?}"
        );
    }
    let read = store.get(&alice, snapshot.key()).await.unwrap().unwrap();
    assert_eq!(read.framed(), snapshot.framed());

    store.put(&bob, &snapshot).await.unwrap();
    assert!(store.get(&bob, snapshot.key()).await.unwrap().is_some());
    assert!(store.get(ANON, snapshot.key()).await.unwrap().is_none());

    let anonymous = sample_snapshot(21);
    store.put(ANON, &anonymous).await.unwrap();
    assert!(store.get(&alice, anonymous.key()).await.unwrap().is_none());
}
