//! `/work` objects on S3 expire by the template's `work/` lifecycle rule
//! (tagged objects, heaps' retention and a day), simulated over days on
//! moto: a file named only by an expired heap goes, chunks and manifest;
//! one every retained heap names stays, and so does a chunk it shares with
//! the file that went. docs/storage.md, "Files of /work".

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use common::moto::provisioned;
use mcp_v8_lambda::files::chunked::{FileChunk, FileManifest, compress};
use mcp_v8_lambda::files::{ContentKey, EXPIRES_TAG, FileStore, FileStoreError, S3FileStore};
use mcp_v8_lambda::tenant::Tenant;

const RETENTION: u64 = 3;
const START: u64 = 20_000; // a UTC day number

/// Stores a file of `parts` as a run's keep does: chunks, then the
/// manifest; its key and its chunks' keys.
async fn store_file(
    store: &S3FileStore,
    tenant: &Tenant,
    parts: &[&[u8]],
) -> (ContentKey, Vec<ContentKey>) {
    let mut chunks = Vec::new();
    for part in parts {
        let key = store.put(tenant, &compress(part)).await.unwrap();
        chunks.push(FileChunk {
            key,
            len: part.len() as u32,
        });
    }
    let keys = chunks.iter().map(|c| c.key.clone()).collect();
    let manifest = Bytes::from(FileManifest::of(chunks).encode());
    (store.put(tenant, &manifest).await.unwrap(), keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_only_an_expired_heap_names_goes_and_one_a_retained_heap_names_stays() {
    let (s3, _, bucket, _) = provisioned().await;
    let day = Arc::new(AtomicU64::new(START));
    let clock_day = day.clone();
    let clock: mcp_v8_lambda::heap::Clock = Arc::new(move || {
        // Late in the day: a write just before midnight is the hard case.
        UNIX_EPOCH + Duration::from_secs(clock_day.load(Ordering::SeqCst) * 86_400 + 86_000)
    });
    let instance = || S3FileStore::new(s3.clone(), &bucket, "").with_clock(clock.clone());
    let owner = Tenant::of_principal("jwt:https://issuer.test#work-expiry");
    let shared: &[u8] = b"a chunk both files hold";
    // A legacy object: written before collection, untagged (never expires
    // while untagged); a heap of today names it.
    let legacy = Bytes::from_static(b"bytes stored whole before chunks");
    let legacy_key = ContentKey::of(&legacy);
    let legacy_object = format!("work/{}{legacy_key}", owner.heap_folder().unwrap());
    s3.put_object()
        .bucket(&bucket)
        .key(&legacy_object)
        .body(legacy.to_vec().into())
        .send()
        .await
        .unwrap();

    let store = instance();
    let (kept, kept_chunks) = store_file(&store, &owner, &[b"kept file, part one", shared]).await;
    let (dropped, dropped_chunks) = store_file(&store, &owner, &[b"dropped file", shared]).await;
    let shared_key = kept_chunks[1].clone();
    assert_eq!(dropped_chunks[1], shared_key);
    // Heaps by day and the objects they name.
    let mut heaps: Vec<(u64, Vec<ContentKey>)> = Vec::new();
    let first = vec![kept.clone(), dropped.clone(), legacy_key.clone()];
    store.keep_named(&owner, &first).await.unwrap();
    heaps.push((START, first));

    // Objects by the day S3 dates them, with the LastModified seen.
    let mut born: HashMap<String, (u64, String)> = HashMap::new();
    for today in START..START + 3 * RETENTION {
        // moto dates objects to the second: a day's writes and copies must
        // fall in a later second than the day before's to be seen.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        day.store(today, Ordering::SeqCst);
        if today > START {
            // Each day a chained run on yesterday's heap, on an instance of
            // its own every other day (the index of fresh objects is per
            // instance), names the kept file and a new one.
            let store = if today % 2 == 0 {
                instance()
            } else {
                store.clone()
            };
            let (new, _) = store_file(&store, &owner, &[format!("day {today}").as_bytes()]).await;
            let names = vec![kept.clone(), new];
            store.keep_named(&owner, &names).await.unwrap();
            heaps.push((today, names));
        }
        let listed = s3.list_objects_v2().bucket(&bucket).send().await.unwrap();
        for object in listed.contents() {
            let (key, modified) = (object.key().unwrap(), object.last_modified().unwrap());
            let seen = born.entry(key.to_owned()).or_insert((today, String::new()));
            if seen.1 != modified.to_string() {
                *seen = (today, modified.to_string());
            }
        }
        // The next midnight: the work/ rule deletes tagged objects dated
        // more than R + 1 days before.
        let midnight = today + 1;
        for (key, (created, _)) in born.clone() {
            let tags = s3
                .get_object_tagging()
                .bucket(&bucket)
                .key(&key)
                .send()
                .await
                .unwrap();
            let tagged = tags
                .tag_set()
                .iter()
                .any(|t| format!("{}={}", t.key(), t.value()) == EXPIRES_TAG);
            if key.starts_with("work/") && tagged && created + RETENTION + 1 < midnight {
                s3.delete_object()
                    .bucket(&bucket)
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                born.remove(&key);
            }
        }
        // A new instance, the next morning: every retained heap's files
        // read back whole.
        let fresh = instance();
        for (made, names) in &heaps {
            if made + RETENTION < midnight {
                continue;
            }
            for name in names {
                let bytes =
                    fresh.get(&owner, name).await.unwrap().unwrap_or_else(|| {
                        panic!("day {today}: {name} of day {made}'s heap is gone")
                    });
                if let Ok(manifest) = FileManifest::decode(&bytes) {
                    for chunk in manifest.chunks {
                        assert!(
                            fresh.get(&owner, &chunk.key).await.unwrap().is_some(),
                            "day {today}: chunk {} of {name} (day {made}'s heap) is gone",
                            chunk.key
                        );
                    }
                }
            }
        }
    }
    let fresh = instance();
    let present = |key: &ContentKey| {
        let (fresh, owner, key) = (fresh.clone(), owner.clone(), key.clone());
        async move { fresh.get(&owner, &key).await.unwrap().is_some() }
    };
    assert!(!present(&dropped).await, "the dropped file's manifest went");
    assert!(!present(&dropped_chunks[0]).await, "and its own chunk");
    assert!(
        present(&shared_key).await,
        "the chunk the kept file shares stays"
    );
    assert!(present(&kept).await && present(&kept_chunks[0]).await);
    // The legacy object, refreshed by the first heap and tagged then, went
    // with that heap.
    assert!(!present(&legacy_key).await);
}

/// A heap naming an object the store no longer has is refused before it
/// is stored: `Missing`, naming the object.
#[tokio::test]
async fn keeping_names_of_a_missing_object_fails_naming_it() {
    let (s3, _, bucket, _) = provisioned().await;
    let owner = Tenant::anonymous();
    let store = S3FileStore::new(s3.clone(), &bucket, "");
    let (manifest, chunks) = store_file(&store, &owner, &[b"one", b"two"]).await;
    s3.delete_object()
        .bucket(&bucket)
        .key(format!("work/{}", chunks[1]))
        .send()
        .await
        .unwrap();
    // This instance wrote it today: nothing to refresh, nothing read.
    store
        .keep_named(&owner, std::slice::from_ref(&manifest))
        .await
        .unwrap();
    // Another instance reads the manifest and refreshes its chunks.
    let other = S3FileStore::new(s3.clone(), &bucket, "");
    let err = other.keep_named(&owner, &[manifest]).await.unwrap_err();
    assert!(
        matches!(&err, FileStoreError::Missing { key } if *key == chunks[1].to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("missing from the store"), "{err}");
    // What a run writes is tagged for the work/ rule.
    let tags = s3
        .get_object_tagging()
        .bucket(&bucket)
        .key(format!("work/{}", chunks[0]))
        .send()
        .await
        .unwrap();
    assert_eq!(tags.tag_set().len(), 1);
    assert_eq!(
        format!("{}={}", tags.tag_set()[0].key(), tags.tag_set()[0].value()),
        EXPIRES_TAG
    );
}
