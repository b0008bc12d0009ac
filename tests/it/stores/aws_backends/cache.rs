//! The write-through cache over S3: the heap conformance suite, writes through
//! and refills, corrupted files fetched again, LRU eviction under its bound.

use super::*;

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
