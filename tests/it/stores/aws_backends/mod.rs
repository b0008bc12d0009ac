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

mod cache;
mod retention;

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
