//! The behaviour every [`FileStore`] backend must show: the directory and
//! S3 stores run it unchanged.

use std::sync::Arc;

use bytes::Bytes;
use mcp_v8_lambda::backends::content::ContentKey;
use mcp_v8_lambda::files::FileStore;
use mcp_v8_lambda::tenant::Tenant;

fn tenant(name: &str) -> Tenant {
    Tenant::of_principal(name)
}

/// Runs every check below against `store`, which must be empty. (A key
/// that could name a path, `../..`, cannot be made: keys are
/// [`ContentKey`]s.)
pub async fn run_all(store: Arc<dyn FileStore>) {
    bytes_round_trip_under_their_hash(store.as_ref()).await;
    a_key_never_stored_is_none(store.as_ref()).await;
    tenants_do_not_see_each_others_files(store.as_ref()).await;
    concurrent_writers_of_the_same_bytes_both_succeed(store.clone()).await;
    a_local_file_is_stored_under_its_key(store.as_ref()).await;
}

/// `put_file` stores a local file as `put` stores its bytes (the file may
/// be moved), per tenant, idempotently.
pub async fn a_local_file_is_stored_under_its_key(store: &dyn FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let alice = tenant("alice");
    let bytes = b"a sealed chunk".to_vec();
    let key = ContentKey::of(&bytes);
    for round in 0..2 {
        let path = dir.path().join(format!("chunk{round}"));
        std::fs::write(&path, &bytes).unwrap();
        store.put_file(&alice, &key, &path).await.unwrap();
    }
    assert_eq!(
        store.get(&alice, &key).await.unwrap(),
        Some(Bytes::from(bytes))
    );
    assert!(store.get(&tenant("bob"), &key).await.unwrap().is_none());
}

pub async fn bytes_round_trip_under_their_hash(store: &dyn FileStore) {
    let bytes = Bytes::from_static(b"a,b\n1,2\n");
    let key = store.put(&Tenant::anonymous(), &bytes).await.unwrap();
    assert_eq!(key, ContentKey::of(&bytes));
    assert_eq!(
        store.get(&Tenant::anonymous(), &key).await.unwrap(),
        Some(bytes.clone())
    );
    // Idempotent.
    assert_eq!(store.put(&Tenant::anonymous(), &bytes).await.unwrap(), key);
    // Empty files are files too.
    let empty = store
        .put(&Tenant::anonymous(), &Bytes::new())
        .await
        .unwrap();
    assert_eq!(
        store.get(&Tenant::anonymous(), &empty).await.unwrap(),
        Some(Bytes::new())
    );
}

pub async fn a_key_never_stored_is_none(store: &dyn FileStore) {
    let missing = ContentKey::of(b"never stored");
    assert!(
        store
            .get(&Tenant::anonymous(), &missing)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn tenants_do_not_see_each_others_files(store: &dyn FileStore) {
    let (alice, bob) = (tenant("alice"), tenant("bob"));
    let bytes = Bytes::from_static(b"alice's secret");
    let key = store.put(&alice, &bytes).await.unwrap();
    assert_eq!(store.get(&alice, &key).await.unwrap(), Some(bytes.clone()));
    // To another tenant, exactly as a key never stored.
    assert!(store.get(&bob, &key).await.unwrap().is_none());
    assert!(
        store
            .get(&Tenant::anonymous(), &key)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn concurrent_writers_of_the_same_bytes_both_succeed(store: Arc<dyn FileStore>) {
    let bytes = Bytes::from(vec![7u8; 256 * 1024]);
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (store, bytes) = (store.clone(), bytes.clone());
            tokio::spawn(async move { store.put(&Tenant::anonymous(), &bytes).await })
        })
        .collect();
    for writer in writers {
        assert_eq!(writer.await.unwrap().unwrap(), ContentKey::of(&bytes));
    }
    assert_eq!(
        store
            .get(&Tenant::anonymous(), &ContentKey::of(&bytes))
            .await
            .unwrap(),
        Some(bytes)
    );
}
