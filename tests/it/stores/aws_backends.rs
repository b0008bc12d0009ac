//! The AWS backends against moto, a real S3 and DynamoDB protocol endpoint:
//! the same conformance suites as the embedded stores, plus what only they
//! promise (conditional writes, the cache, item overflow, setup).

use crate::common;

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use common::conformance::heap::{self as heap_conformance, sample_snapshot};
use common::conformance::meta as meta_conformance;
use common::conformance::session as session_conformance;
use common::faults::CancelTransactions;
use common::moto::{clients, provisioned, unique};
use heap_conformance::Raw as _;
use mcp_v8_lambda::backends::aws::{TABLES, setup};
use mcp_v8_lambda::engine::{RunOutcome, RunStatus};
use mcp_v8_lambda::heap::{
    FileHeapStore, HeapKey, HeapStore, HeapStoreError, S3HeapStore, WriteThroughCacheHeapStore,
    generation_at,
};
use mcp_v8_lambda::meta::{DynamoMetaStore, MetaStore, MetaTables, NewLogEntry};
use mcp_v8_lambda::packages::{PackageStore, S3PackageStore};
use mcp_v8_lambda::session::DynamoSessionStore;
use mcp_v8_lambda::tenant::Tenant;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_store_passes_the_heap_conformance_suite() {
    let (s3, _, bucket, _) = provisioned().await;
    heap_conformance::run_all(Arc::new(S3HeapStore::new(s3.clone(), &bucket, ""))).await;
    heap_conformance::run_all(Arc::new(S3HeapStore::new(
        s3.clone(),
        &bucket,
        "under/a/prefix/",
    )))
    .await;
    let fresh_client = s3.clone();
    let fresh_bucket = bucket.clone();
    let raw = S3Raw::new(s3.clone(), &bucket, "p/", move || {
        Arc::new(S3HeapStore::new(fresh_client.clone(), &fresh_bucket, "p/"))
    });
    heap_conformance::run_chunked(Arc::new(S3HeapStore::new(s3, &bucket, "p/")), &raw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_file_store_passes_the_conformance_suite() {
    use mcp_v8_lambda::files::{FileStore, FileStoreError, S3FileStore};
    let (s3, _, bucket, _) = provisioned().await;
    common::conformance::files::run_all(Arc::new(S3FileStore::new(s3.clone(), &bucket, ""))).await;
    common::conformance::files::run_all(Arc::new(S3FileStore::new(
        s3.clone(),
        &bucket,
        "under/a/prefix/",
    )))
    .await;
    // Beside the heaps, under a prefix heaps' rules do not match (those
    // match a key's first hex digit): its own rule expires it by age, which
    // later heaps naming it restart (tests/it/stores/work_expiry.rs).
    let store = S3FileStore::new(s3.clone(), &bucket, "");
    let bytes = bytes::Bytes::from_static(b"x,y\n");
    let key = store.put(&Tenant::anonymous(), &bytes).await.unwrap();
    let object = format!("work/{key}");
    assert!(!object.starts_with(|c: char| c.is_ascii_hexdigit()));
    s3.head_object()
        .bucket(&bucket)
        .key(&object)
        .send()
        .await
        .unwrap();
    // Damaged bytes are refused, never returned.
    s3.put_object()
        .bucket(&bucket)
        .key(&object)
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"x,z\n"))
        .send()
        .await
        .unwrap();
    let err = store.get(&Tenant::anonymous(), &key).await.unwrap_err();
    assert!(matches!(err, FileStoreError::Corrupt { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_package_store_passes_the_conformance_suite() {
    let (s3, _, bucket, _) = provisioned().await;
    common::conformance::packages::run_all(Arc::new(S3PackageStore::new(s3.clone(), &bucket, "")))
        .await;
    // Beside the heaps, outside every lifecycle rule that expires them (those
    // match a heap key's first hex digit) and outside tenants' folders.
    let key = S3PackageStore::new(s3.clone(), &bucket, "")
        .put_bundle(&bytes::Bytes::from_static(b"{}"))
        .await
        .unwrap();
    let object = format!("packages/bundles/{key}");
    s3.head_object()
        .bucket(&bucket)
        .key(&object)
        .send()
        .await
        .unwrap();
    // A damaged bundle is refused.
    s3.put_object()
        .bucket(&bucket)
        .key(&object)
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"{ }"))
        .send()
        .await
        .unwrap();
    let err = S3PackageStore::new(s3, &bucket, "")
        .get_bundle(&key)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("failed verification"), "{err}");
}

/// A heap is a manifest under its bare key and chunks under
/// `chunks/<UTC day>/`, each verified on read.
#[tokio::test]
async fn s3_heaps_are_a_manifest_under_the_bare_key_and_chunks_of_the_day() {
    let (s3, _, bucket, _) = provisioned().await;
    let store = S3HeapStore::new(s3.clone(), &bucket, "");
    let snapshot = heap_conformance::related_snapshot(42, 0);
    store.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    let raw = S3Raw::new(s3.clone(), &bucket, "", || unreachable!());
    let manifest = raw.object(snapshot.key().as_str()).await;
    assert!(manifest.starts_with(b"MCPV8CHNK\0"));
    let day = generation_at(std::time::SystemTime::now());
    let chunks = raw.chunks(&Tenant::anonymous()).await;
    assert!(!chunks.is_empty());
    for chunk in &chunks {
        assert!(chunk.starts_with(&format!("chunks/{day}/")), "{chunk}");
        assert_eq!(chunk.len(), format!("chunks/{day}/").len() + 64, "{chunk}");
    }
}

/// An authenticated tenant's heaps are objects under `tenants/<id>/`
/// beside the prefix, never under the bare key another tenant reads, and
/// so are its chunks under the day's folder.
#[tokio::test]
async fn a_tenants_heaps_are_objects_under_tenants_and_its_id() {
    let (s3, _, bucket, _) = provisioned().await;
    let store = S3HeapStore::new(s3.clone(), &bucket, "heaps/");
    let tenant = Tenant::of_principal("jwt:https://issuer.test#alice");
    let snapshot = sample_snapshot(43);
    store.put(&tenant, &snapshot).await.unwrap();
    let expected = format!("heaps/tenants/{}/{}", tenant.id().unwrap(), snapshot.key());
    assert_eq!(store.object_key(&tenant, snapshot.key()), expected);
    let listed = s3.list_objects_v2().bucket(&bucket).send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    let day = generation_at(std::time::SystemTime::now());
    let chunk_folder = format!("heaps/chunks/{day}/tenants/{}/", tenant.id().unwrap());
    assert!(keys.contains(&expected.as_str()), "{keys:?}");
    assert!(
        keys.iter()
            .all(|k| *k == expected || k.starts_with(&chunk_folder)),
        "{keys:?}"
    );
}

/// S3's objects, for the chunked checks.
pub struct S3Raw {
    s3: aws_sdk_s3::Client,
    bucket: String,
    store: S3HeapStore,
    fresh: Box<dyn Fn() -> Arc<dyn HeapStore> + Send + Sync>,
}

impl S3Raw {
    pub fn new(
        s3: aws_sdk_s3::Client,
        bucket: &str,
        prefix: &str,
        fresh: impl Fn() -> Arc<dyn HeapStore> + Send + Sync + 'static,
    ) -> Self {
        Self {
            store: S3HeapStore::new(s3.clone(), bucket, prefix),
            s3,
            bucket: bucket.into(),
            fresh: Box::new(fresh),
        }
    }

    async fn object(&self, name: &str) -> Vec<u8> {
        let object = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(name)
            .send()
            .await
            .unwrap();
        object.body.collect().await.unwrap().into_bytes().to_vec()
    }
}

#[async_trait::async_trait]
impl heap_conformance::Raw for S3Raw {
    fn fresh(&self) -> Arc<dyn HeapStore> {
        (self.fresh)()
    }
    async fn write_heap(&self, tenant: &Tenant, key: &HeapKey, bytes: Vec<u8>) {
        self.write(&self.store.object_key(tenant, key), bytes).await;
    }
    async fn read_heap(&self, tenant: &Tenant, key: &HeapKey) -> Vec<u8> {
        self.object(&self.store.object_key(tenant, key)).await
    }
    async fn chunks(&self, tenant: &Tenant) -> Vec<String> {
        // The chunk key of a sample digest shows where this tenant's
        // chunks of a day live: all but the digest.
        let sample = mcp_v8_lambda::heap::format::ChunkRef {
            digest: [0; 32],
            len: 0,
        };
        let day = generation_at(std::time::SystemTime::now());
        let folder = self.store.chunk_key(tenant, day, &sample);
        let folder = &folder[..folder.len() - 64];
        let listed = self
            .s3
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(folder)
            .send()
            .await
            .unwrap();
        let mut names: Vec<String> = listed
            .contents()
            .iter()
            .filter_map(|o| o.key())
            .filter(|k| k.len() == folder.len() + 64)
            .map(str::to_owned)
            .collect();
        names.sort();
        names
    }
    async fn read(&self, name: &str) -> Vec<u8> {
        self.object(name).await
    }
    async fn write(&self, name: &str, bytes: Vec<u8>) {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(name)
            .body(bytes.into())
            .send()
            .await
            .unwrap();
    }
    async fn delete(&self, name: &str) {
        self.s3
            .delete_object()
            .bucket(&self.bucket)
            .key(name)
            .send()
            .await
            .unwrap();
    }
}

/// A session logged before the session index existed (a head without
/// `listed`) joins the listing with its next append.
#[tokio::test]
async fn a_session_from_before_the_index_is_listed_after_its_next_append() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let store = DynamoMetaStore::new(
        dynamodb.clone(),
        s3,
        &bucket,
        "overflow/",
        MetaTables::with_prefix(&prefix),
    );
    let old = common::logical("from-before");
    let entry = |n: u64| NewLogEntry {
        input_heap: None,
        output_heap: HeapKey::parse(&format!("{n:064x}")).unwrap(),
        code: format!("{n}"),
        timestamp: "2026-11-20T00:00:00Z".into(),
        superseded_by: None,
    };
    // What an earlier version left: an entry and a head, nothing indexed.
    store
        .append_log(&Tenant::anonymous(), &old, entry(0))
        .await
        .unwrap();
    dynamodb
        .delete_item()
        .table_name(format!("{prefix}session-index"))
        .key("tenant", AttributeValue::S("anonymous".into()))
        .key("session_name", AttributeValue::S(old.to_string()))
        .send()
        .await
        .unwrap();
    dynamodb
        .update_item()
        .table_name(format!("{prefix}session-heads"))
        .key("session_name", AttributeValue::S(old.to_string()))
        .update_expression("REMOVE listed")
        .send()
        .await
        .unwrap();
    let anonymous = Tenant::anonymous();
    assert!(
        store
            .list_sessions(&anonymous, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.append_log(&anonymous, &old, entry(1)).await.unwrap(),
        1
    );
    assert_eq!(
        store.list_sessions(&anonymous, None, 10).await.unwrap(),
        [old]
    );
}

#[tokio::test]
async fn a_missing_bucket_is_a_backend_error_not_a_missing_heap() {
    let (s3, _) = clients().await;
    let store = S3HeapStore::new(s3, unique("no-such-bucket"), "");
    let err = store
        .get(&Tenant::anonymous(), sample_snapshot(1).key())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HeapStoreError::Backend { store: "s3", .. }),
        "{err}"
    );
}

fn cache_over(
    s3: aws_sdk_s3::Client,
    bucket: &str,
    dir: &std::path::Path,
    max_bytes: u64,
) -> (WriteThroughCacheHeapStore, Arc<S3HeapStore>) {
    let remote = Arc::new(S3HeapStore::new(s3, bucket, ""));
    let cache = WriteThroughCacheHeapStore::new(FileHeapStore::new(dir), remote.clone(), max_bytes);
    (cache, remote)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_write_through_cache_passes_the_heap_conformance_suite() {
    let (s3, _, bucket, _) = provisioned().await;
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_over(s3.clone(), &bucket, dir.path(), 512 * 1024 * 1024);
    heap_conformance::run_all(Arc::new(cache)).await;
    // The chunked checks on a second cache; fresh() is a new instance: an
    // empty directory over the same bucket.
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_over(s3.clone(), &bucket, dir.path(), 512 * 1024 * 1024);
    let (fresh_client, fresh_bucket) = (s3.clone(), bucket.clone());
    let raw = S3Raw::new(s3, &bucket, "", move || {
        let dir = tempfile::tempdir().unwrap().keep();
        Arc::new(cache_over(fresh_client.clone(), &fresh_bucket, &dir, 512 * 1024 * 1024).0)
    });
    heap_conformance::run_chunked(Arc::new(cache), &raw).await;
}

#[tokio::test]
async fn the_cache_writes_through_and_refills_after_the_directory_is_wiped() {
    let (s3, _, bucket, _) = provisioned().await;
    let dir = tempfile::tempdir().unwrap();
    let (cache, remote) = cache_over(s3, &bucket, dir.path(), 512 * 1024 * 1024);
    let snapshot = sample_snapshot(7);
    cache.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    assert!(
        remote
            .get(&Tenant::anonymous(), snapshot.key())
            .await
            .unwrap()
            .is_some(),
        "written through to S3"
    );
    let local = cache.local().path_of(&Tenant::anonymous(), snapshot.key());
    assert!(local.exists(), "and kept locally");

    std::fs::remove_file(&local).unwrap();
    let read = cache
        .get(&Tenant::anonymous(), snapshot.key())
        .await
        .unwrap()
        .expect("fetched from S3");
    assert_eq!(read.framed(), snapshot.framed());
    assert!(local.exists(), "the miss refilled the cache");
}

#[tokio::test]
async fn a_corrupted_cache_file_is_rejected_and_fetched_again() {
    let (s3, _, bucket, _) = provisioned().await;
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_over(s3, &bucket, dir.path(), 512 * 1024 * 1024);
    let snapshot = heap_conformance::related_snapshot(8, 0);
    cache.put(&Tenant::anonymous(), &snapshot).await.unwrap();
    let local = cache.local().path_of(&Tenant::anonymous(), snapshot.key());
    let good = std::fs::read(&local).unwrap();
    // A chunk's digest in the manifest, then the chunk itself.
    let mut bytes = good.clone();
    bytes[100] ^= 0xff;
    std::fs::write(&local, &bytes).unwrap();
    let read = cache
        .get(&Tenant::anonymous(), snapshot.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.framed(), snapshot.framed());
    assert_eq!(
        std::fs::read(&local).unwrap(),
        good,
        "the cache holds a good manifest again"
    );
    let chunk_dir = local.parent().unwrap().join("chunks");
    let chunk = std::fs::read_dir(&chunk_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let good_chunk = std::fs::read(&chunk).unwrap();
    let mut bad_chunk = good_chunk.clone();
    bad_chunk[10] ^= 0xff;
    std::fs::write(&chunk, &bad_chunk).unwrap();
    let read = cache
        .get(&Tenant::anonymous(), snapshot.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.framed(), snapshot.framed());
    assert_eq!(
        std::fs::read(&chunk).unwrap(),
        good_chunk,
        "and a good chunk"
    );
}

#[tokio::test]
async fn the_cache_evicts_the_least_recently_used_heaps_under_its_bound() {
    let (s3, _, bucket, _) = provisioned().await;
    let dir = tempfile::tempdir().unwrap();
    let one = sample_snapshot(20).framed().len() as u64;
    // Room for two snapshots, not three.
    let (cache, remote) = cache_over(s3, &bucket, dir.path(), one * 2 + one / 2);
    let (a, b, c) = (
        sample_snapshot(20),
        sample_snapshot(21),
        sample_snapshot(22),
    );
    cache.put(&Tenant::anonymous(), &a).await.unwrap();
    cache.put(&Tenant::anonymous(), &b).await.unwrap();
    cache.get(&Tenant::anonymous(), a.key()).await.unwrap(); // a is now more recent than b
    cache.put(&Tenant::anonymous(), &c).await.unwrap();
    let cached = |key: &HeapKey| cache.local().path_of(&Tenant::anonymous(), key).exists();
    assert!(
        cached(a.key()) && cached(c.key()),
        "recently used heaps stay"
    );
    assert!(!cached(b.key()), "the least recently used heap is evicted");
    assert!(
        remote
            .get(&Tenant::anonymous(), b.key())
            .await
            .unwrap()
            .is_some(),
        "eviction never touches S3"
    );
    assert_eq!(
        cache
            .get(&Tenant::anonymous(), b.key())
            .await
            .unwrap()
            .unwrap()
            .framed(),
        b.framed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_session_store_passes_the_session_conformance_suite() {
    let (_, dynamodb, _, prefix) = provisioned().await;
    let store = DynamoSessionStore::new(
        dynamodb,
        mcp_v8_lambda::backends::aws::SESSIONS.name(&prefix),
    );
    session_conformance::run_all(Arc::new(store)).await;
}

fn meta_store(
    s3: aws_sdk_s3::Client,
    dynamodb: aws_sdk_dynamodb::Client,
    bucket: &str,
    prefix: &str,
) -> DynamoMetaStore {
    DynamoMetaStore::new(
        dynamodb,
        s3,
        bucket,
        "overflow/",
        MetaTables::with_prefix(prefix),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_meta_store_passes_the_meta_conformance_suite_with_eight_concurrent_writers() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    meta_conformance::run_all(Arc::new(meta_store(s3, dynamodb, &bucket, &prefix))).await;
}

/// Tasks in their own table, against the task store suite, one item per
/// page so the listing is read across pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_task_store_passes_the_task_store_conformance_suite() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let store = meta_store(s3, dynamodb, &bucket, &prefix).with_page_items(1);
    common::conformance::tasks::run_all(Arc::new(store)).await;
}

/// One item per page: every listing of two or more items (the log, the
/// sessions, a tag pair's heaps) is read across pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_meta_store_passes_the_meta_conformance_suite_one_item_per_page() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let store = meta_store(s3, dynamodb, &bucket, &prefix).with_page_items(1);
    meta_conformance::run_all(Arc::new(store)).await;
}

#[tokio::test]
async fn fields_too_large_for_an_item_go_to_s3_and_come_back_whole() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let store = meta_store(s3.clone(), dynamodb, &bucket, &prefix);
    let big_code = format!("/* {} */ 1", "x".repeat(500 * 1024));
    let heap = HeapKey::of_payload(b"overflow");
    let entry = NewLogEntry {
        input_heap: None,
        output_heap: heap.clone(),
        code: big_code.clone(),
        timestamp: "2026-11-22T00:00:00Z".into(),
        superseded_by: None,
    };
    store
        .append_log(&Tenant::anonymous(), &common::logical("big"), entry)
        .await
        .unwrap();
    assert_eq!(
        store
            .read_log(&Tenant::anonymous(), &common::logical("big"), 0, 10)
            .await
            .unwrap()[0]
            .code,
        big_code
    );
    let record = crate::common::execution_record(
        RunOutcome {
            heap_saving: None,
            execution_id: uuid::Uuid::new_v4(),
            status: RunStatus::Completed,
            result: None,
            output: "y".repeat(900 * 1024),
            heap: Some(heap),
            input_heap: None,
            error: None,
            warnings: vec![],
            duration_ms: 1,
            save_wait_ms: None,
            saved_after_ms: None,
            superseded: None,
            fetches: None,
            mcp_calls: None,
            reports: Default::default(),
        },
        "a",
        "b",
        i64::MAX / 2,
    );
    store
        .put_execution(&Tenant::anonymous(), &record)
        .await
        .unwrap();
    let read = store
        .get_execution(&Tenant::anonymous(), record.execution_id, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read, record);
    let overflow = s3
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("overflow/")
        .send()
        .await
        .unwrap();
    assert_eq!(overflow.key_count(), Some(2), "both large items live in S3");
}

#[tokio::test]
async fn setup_is_idempotent_and_creates_every_table() {
    let (s3, dynamodb) = clients().await;
    let bucket = unique("setup");
    let prefix = format!("{}-", unique("s"));
    let first = setup(&dynamodb, &s3, &prefix, &bucket).await.unwrap();
    assert_eq!(first.created_tables.len(), TABLES.len());
    assert!(first.created_bucket);
    let second = setup(&dynamodb, &s3, &prefix, &bucket).await.unwrap();
    assert!(second.created_tables.is_empty());
    assert_eq!(second.existing_tables.len(), TABLES.len());
    for table in TABLES {
        let described = dynamodb
            .describe_table()
            .table_name(table.name(&prefix))
            .send()
            .await
            .unwrap();
        let table_description = described.table().unwrap();
        assert_eq!(
            table_description
                .billing_mode_summary()
                .and_then(|b| b.billing_mode())
                .map(|m| m.as_str()),
            Some("PAY_PER_REQUEST"),
            "{}",
            table.suffix
        );
        if let Some(ttl) = table.ttl_attribute {
            let described = dynamodb
                .describe_time_to_live()
                .table_name(table.name(&prefix))
                .send()
                .await
                .unwrap();
            assert_eq!(
                described
                    .time_to_live_description()
                    .and_then(|d| d.attribute_name()),
                Some(ttl)
            );
        }
    }
}

fn log_entry(n: u64) -> NewLogEntry {
    NewLogEntry {
        input_heap: None,
        output_heap: HeapKey::of_payload(&n.to_le_bytes()),
        code: format!("step({n})"),
        timestamp: "2026-11-24T00:00:00Z".into(),
        superseded_by: None,
    }
}

/// A transaction that lost the race for the session's head is tried again;
/// one cancelled for any other reason fails the append at once, without a
/// second attempt and without a log entry.
#[tokio::test]
async fn a_log_append_retries_only_a_transaction_that_lost_a_race() {
    let (s3, dynamodb, bucket, prefix) = provisioned().await;
    let raced = CancelTransactions::new(&["ConditionalCheckFailed", "None"], 2);
    let store = meta_store(s3.clone(), raced.around(&dynamodb), &bucket, &prefix);
    let session = common::logical("raced");
    assert_eq!(
        store
            .append_log(&Tenant::anonymous(), &session, log_entry(0))
            .await
            .unwrap(),
        0
    );
    assert_eq!(raced.calls(), 3, "two lost races, then the write");
    assert_eq!(
        store
            .read_log(&Tenant::anonymous(), &session, 0, 10)
            .await
            .unwrap()
            .len(),
        1
    );

    for reasons in [
        &["ValidationError", "None"][..],
        &["None", "ThrottlingError"][..],
    ] {
        let refused = CancelTransactions::new(reasons, u64::MAX);
        let store = meta_store(s3.clone(), refused.around(&dynamodb), &bucket, &prefix);
        let session = common::logical(&unique("refused"));
        let error = store
            .append_log(&Tenant::anonymous(), &session, log_entry(0))
            .await
            .unwrap_err();
        assert_eq!(refused.calls(), 1, "{reasons:?}: no second attempt");
        assert!(
            error.to_string().contains("TransactionCanceled"),
            "{reasons:?}: {error}"
        );
        assert!(
            store
                .read_log(&Tenant::anonymous(), &session, 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

/// Outside us-east-1 S3 wants the bucket's region named at creation (moto,
/// like S3, refuses it otherwise): `setup` works in any region.
#[tokio::test]
async fn setup_creates_the_bucket_outside_us_east_1() {
    let sdk = common::moto::sdk_config()
        .await
        .into_builder()
        .region(aws_config::Region::new("eu-west-1"))
        .build();
    let clients = mcp_v8_lambda::backends::aws::Clients::new(&sdk, true, None);
    let bucket = unique("eu-setup");
    let prefix = format!("{}-", unique("eu"));
    let report = setup(&clients.dynamodb, &clients.s3, &prefix, &bucket)
        .await
        .unwrap();
    assert!(report.created_bucket);
    let location = clients
        .s3
        .get_bucket_location()
        .bucket(&bucket)
        .send()
        .await
        .unwrap();
    assert_eq!(
        location.location_constraint().map(|c| c.as_str()),
        Some("eu-west-1")
    );
    let again = setup(&clients.dynamodb, &clients.s3, &prefix, &bucket)
        .await
        .unwrap();
    assert!(!again.created_bucket, "idempotent there too");
}

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
