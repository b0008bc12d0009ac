//! The behaviour every [`PackageStore`] backend must show: the directory
//! and S3 stores run it unchanged.

use std::sync::Arc;

use bytes::Bytes;
use mcp_v8_lambda::backends::content::ContentKey;
use mcp_v8_lambda::packages::{Installed, PackageIndex, PackageStore, PackageStoreError};

fn installed(version: &str) -> Installed {
    Installed {
        version: version.to_owned(),
        bundle: ContentKey::of(version.as_bytes()),
        bytes: 1,
        entries: vec![".".into()],
        shape: None,
    }
}

/// Runs every check below against `store`, which must be empty.
pub async fn run_all(store: Arc<dyn PackageStore>) {
    an_empty_store_has_no_index_and_no_bundles(store.as_ref()).await;
    bundles_round_trip_under_their_hash(store.as_ref()).await;
    the_index_is_a_compare_and_swap(store.as_ref()).await;
    concurrent_updates_lose_nothing(store.clone()).await;
}

pub async fn an_empty_store_has_no_index_and_no_bundles(store: &dyn PackageStore) {
    assert!(store.index().await.unwrap().is_none());
    assert!(
        store
            .get_bundle(&ContentKey::of(b"never stored"))
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn bundles_round_trip_under_their_hash(store: &dyn PackageStore) {
    let bytes = Bytes::from_static(b"{\"format\":1}");
    let key = store.put_bundle(&bytes).await.unwrap();
    assert_eq!(key, ContentKey::of(&bytes));
    assert_eq!(store.get_bundle(&key).await.unwrap(), Some(bytes.clone()));
    // Idempotent.
    assert_eq!(store.put_bundle(&bytes).await.unwrap(), key);
}

pub async fn the_index_is_a_compare_and_swap(store: &dyn PackageStore) {
    let mut index = PackageIndex::default();
    index.packages.insert("a".into(), installed("1.0.0"));
    store.put_index(&index, None).await.unwrap();
    let (read, revision) = store.index().await.unwrap().unwrap();
    assert_eq!(read, index);
    // Creating again, or writing from a stale revision, changes nothing.
    let mut other = PackageIndex::default();
    other.packages.insert("b".into(), installed("2.0.0"));
    let err = store.put_index(&other, None).await.unwrap_err();
    assert!(matches!(err, PackageStoreError::Conflict), "{err}");
    store.put_index(&other, Some(&revision)).await.unwrap();
    let err = store.put_index(&index, Some(&revision)).await.unwrap_err();
    assert!(matches!(err, PackageStoreError::Conflict), "{err}");
    assert_eq!(store.index().await.unwrap().unwrap().0, other);
    // Leave it empty for the next check.
    let (_, revision) = store.index().await.unwrap().unwrap();
    store
        .put_index(&PackageIndex::default(), Some(&revision))
        .await
        .unwrap();
}

/// Writers that read, change and swap, retrying on conflict, all land.
pub async fn concurrent_updates_lose_nothing(store: Arc<dyn PackageStore>) {
    let mut tasks = Vec::new();
    for i in 0..6 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let (mut index, revision) = match store.index().await.unwrap() {
                    Some((index, revision)) => (index, Some(revision)),
                    None => (PackageIndex::default(), None),
                };
                index
                    .packages
                    .insert(format!("p{i}"), installed(&format!("{i}.0.0")));
                match store.put_index(&index, revision.as_ref()).await {
                    Ok(()) => break,
                    Err(PackageStoreError::Conflict) => continue,
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let (index, _) = store.index().await.unwrap().unwrap();
    for i in 0..6 {
        assert!(index.packages.contains_key(&format!("p{i}")), "{index:?}");
    }
}
