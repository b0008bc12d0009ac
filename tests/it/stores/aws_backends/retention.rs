//! Retention on AWS: session log entries expire for every read, no heap within
//! the retention misses a chunk when objects expire by age, and a put writes
//! only the chunks the instance does not know.

use super::*;

/// With a session-log retention, log items and heads carry `expires_at`
/// for DynamoDB's TTL; past it they are gone to every read even while TTL
/// has not deleted them (moto never does), and a new run starts the log
/// anew over them. With a long retention the store passes the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_log_retention_expires_entries_for_every_read() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let long = meta_store(s3.clone(), dynamodb.clone(), &bucket, &prefix)
        .with_log_retention(std::time::Duration::from_secs(86_400));
    meta_conformance::run_all(Arc::new(long)).await;

    let store = meta_store(s3, dynamodb.clone(), &bucket, &prefix)
        .with_log_retention(std::time::Duration::from_secs(2));
    let session = common::logical(&unique("expiring"));
    for n in 0..3 {
        assert_eq!(
            store
                .append_log(&Tenant::anonymous(), &session, log_entry(n))
                .await
                .unwrap(),
            n
        );
    }
    let item = dynamodb
        .get_item()
        .table_name(format!("{prefix}session-log"))
        .key(
            "session_name",
            aws_sdk_dynamodb::types::AttributeValue::S(session.to_string()),
        )
        .key(
            "idx",
            aws_sdk_dynamodb::types::AttributeValue::N("0".into()),
        )
        .send()
        .await
        .unwrap();
    assert!(
        item.item().unwrap().contains_key("expires_at"),
        "the item carries the TTL attribute"
    );
    assert_eq!(
        store
            .read_log(&Tenant::anonymous(), &session, 0, 10)
            .await
            .unwrap()
            .len(),
        3
    );
    assert!(
        store
            .list_sessions(&Tenant::anonymous(), None, usize::MAX)
            .await
            .unwrap()
            .contains(&session)
    );

    // Past the retention (TTL has deleted nothing: moto never does).
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(
        store
            .read_log(&Tenant::anonymous(), &session, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .last_log_entry(&Tenant::anonymous(), &session)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        !store
            .list_sessions(&Tenant::anonymous(), None, usize::MAX)
            .await
            .unwrap()
            .contains(&session)
    );

    // The next run starts the log anew, over the stale items.
    assert_eq!(
        store
            .append_log(&Tenant::anonymous(), &session, log_entry(9))
            .await
            .unwrap(),
        0
    );
    let log = store
        .read_log(&Tenant::anonymous(), &session, 0, 10)
        .await
        .unwrap();
    assert_eq!(log.len(), 1, "only the new entry: {log:?}");
    assert_eq!(log[0].output_heap, log_entry(9).output_heap);
    assert_eq!(
        store
            .last_log_entry(&Tenant::anonymous(), &session)
            .await
            .unwrap()
            .unwrap()
            .index,
        0
    );
}

/// S3's lifecycle expiry by age, simulated over days: each day a session
/// restores yesterday's heap and stores one sharing all its chunks but
/// one, then every object whose age has reached its rule's days (heaps R,
/// chunks R + 1, as the template sets them; S3 rounds to the next UTC
/// midnight) is deleted. Every heap within R days must read back whole
/// from a new instance. A store that reused day-0 chunks for ever would
/// lose them on day R + 1 under heaps written since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_heap_within_the_retention_misses_a_chunk_when_objects_expire_by_age() {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, UNIX_EPOCH};
    const RETENTION: u64 = 3;
    const START: u64 = 20_000; // a UTC day number
    let (s3, _, bucket, _) = provisioned().await;
    let day = Arc::new(AtomicU64::new(START));
    let clock_day = day.clone();
    let clock: mcp_v8_lambda::heap::Clock = Arc::new(move || {
        // Late in the day: a write just before midnight is the hard case.
        UNIX_EPOCH + Duration::from_secs(clock_day.load(Ordering::SeqCst) * 86_400 + 86_000)
    });
    let store = S3HeapStore::new(s3.clone(), &bucket, "").with_clock(clock.clone());
    let owner = Tenant::of_principal("jwt:https://issuer.test#expiry");
    // Objects by their creation day, as S3 would date them.
    let mut created: HashMap<String, u64> = HashMap::new();
    let mut written: Vec<(u64, mcp_v8_lambda::heap::Snapshot)> = Vec::new();
    for today in START..START + 3 * RETENTION {
        day.store(today, Ordering::SeqCst);
        let heap = heap_conformance::related_snapshot(9, (today - START) as u8);
        store.put(&owner, &heap).await.unwrap();
        written.push((today, heap));
        let listed = s3.list_objects_v2().bucket(&bucket).send().await.unwrap();
        for object in listed.contents() {
            created
                .entry(object.key().unwrap().to_owned())
                .or_insert(today);
        }
        // The next midnight: delete what the rules expire by then.
        let midnight = today + 1;
        for (key, born) in created.clone() {
            let days = if key.starts_with("chunks/") {
                RETENTION + 1
            } else {
                RETENTION
            };
            if born + days < midnight {
                s3.delete_object()
                    .bucket(&bucket)
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                created.remove(&key);
            }
        }
        // A new instance, the next morning.
        let fresh = S3HeapStore::new(s3.clone(), &bucket, "").with_clock(clock.clone());
        for (born, heap) in &written {
            let read = fresh.get(&owner, heap.key()).await;
            if born + RETENTION >= midnight {
                let read = read
                    .unwrap_or_else(|e| panic!("day {today}: the heap of day {born}: {e}"))
                    .unwrap_or_else(|| panic!("day {today}: the heap of day {born} is gone"));
                assert_eq!(read.framed(), heap.framed());
            }
        }
    }
    assert!(
        created.keys().filter(|k| !k.starts_with("chunks/")).count() <= RETENTION as usize + 1,
        "old heaps did expire: {created:?}"
    );
}

/// A chained put writes only the chunks its instance does not know are
/// stored, and the manifest; a new instance that restored the heap knows
/// its chunks too. No listing, no read.
#[tokio::test]
async fn a_put_writes_only_the_chunks_the_instance_does_not_know() {
    use mcp_v8_lambda::backends::aws::{CallCounter, Clients};
    let (_, _, bucket, _) = provisioned().await;
    let counter = CallCounter::default();
    let s3 = Clients::new(&common::moto::sdk_config().await, true, Some(&counter)).s3;
    let owner = Tenant::of_principal("jwt:https://issuer.test#known");
    let (a, b, c) = (
        heap_conformance::related_snapshot(12, 1),
        heap_conformance::related_snapshot(12, 2),
        heap_conformance::related_snapshot(12, 3),
    );
    let store = S3HeapStore::new(s3.clone(), &bucket, "");
    store.put(&owner, &a).await.unwrap();
    let first = counter.take();
    assert!(first["S3.PutObject"] > 3, "{first:?}");
    store.put(&owner, &b).await.unwrap();
    assert_eq!(
        counter.take(),
        [("S3.PutObject".to_owned(), 2)].into(),
        "the changed last chunk and the manifest"
    );
    let fresh = S3HeapStore::new(s3, &bucket, "");
    fresh.get(&owner, b.key()).await.unwrap().unwrap();
    counter.take();
    fresh.put(&owner, &c).await.unwrap();
    assert_eq!(counter.take(), [("S3.PutObject".to_owned(), 2)].into());
}
