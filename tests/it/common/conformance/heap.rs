//! The behaviour every [`HeapStore`] backend must show: the directory, S3,
//! the write-through and memory caches run it unchanged.

use std::sync::Arc;

use mcp_v8_lambda::heap::format::ChunkError;
use mcp_v8_lambda::heap::{HeapKey, HeapStore, HeapStoreError, MIN_PAYLOAD_LEN, Snapshot};
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

/// A 4 MB snapshot (stored as chunks: over the size kept whole): the same
/// bytes for every `variant` of one `base`, but the last 64, so heaps of
/// one base share all their chunks but the last.
pub fn related_snapshot(base: u64, variant: u8) -> Snapshot {
    let mut state = base.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut payload: Vec<u8> = (0..4_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let len = payload.len();
    payload[len - 64..].fill(variant);
    Snapshot::from_payload(&payload).expect("payload is over the minimum")
}

/// What the chunked checks reach below a store: its stored objects by
/// name, and a store over the same durable bytes with nothing of them
/// cached in this process (a new instance).
#[async_trait::async_trait]
pub trait Raw: Send + Sync {
    /// A store over the same bytes, as a new instance would open it.
    fn fresh(&self) -> Arc<dyn HeapStore>;
    /// Replaces what is stored under the heap key.
    async fn write_heap(&self, tenant: &Tenant, key: &HeapKey, bytes: Vec<u8>);
    /// What is stored under the heap key.
    async fn read_heap(&self, tenant: &Tenant, key: &HeapKey) -> Vec<u8>;
    /// The names of `tenant`'s stored chunks.
    async fn chunks(&self, tenant: &Tenant) -> Vec<String>;
    /// A stored object's bytes.
    async fn read(&self, name: &str) -> Vec<u8>;
    /// Replaces a stored object.
    async fn write(&self, name: &str, bytes: Vec<u8>);
    /// Removes a stored object.
    async fn delete(&self, name: &str);
}

/// Runs the chunked-format checks: every backend writes manifests and
/// shared chunks, reads original files, and refuses damage clearly.
pub async fn run_chunked(store: Arc<dyn HeapStore>, raw: &dyn Raw) {
    an_original_snapshot_file_still_reads(raw).await;
    a_small_heap_is_one_compressed_object(store.as_ref(), raw).await;
    heaps_are_manifests_and_share_their_chunks(store.as_ref(), raw).await;
    a_damaged_chunk_or_manifest_is_refused_and_names_the_heap(store.as_ref(), raw).await;
    a_missing_chunk_is_an_error_not_a_missing_heap(store.as_ref(), raw).await;
    concurrent_writers_of_shared_chunks_leave_every_heap_whole(store.clone()).await;
}

fn tenant(name: &str) -> Tenant {
    Tenant::of_principal(&format!("jwt:https://issuer.test#{name}"))
}

/// A heap in the original `MCPV8SNAP` format, as the seed's server and
/// every build before the chunked format wrote it, restores as it is.
pub async fn an_original_snapshot_file_still_reads(raw: &dyn Raw) {
    let owner = tenant("original");
    let snapshot = sample_snapshot(30);
    raw.write_heap(&owner, snapshot.key(), snapshot.framed().to_vec())
        .await;
    let read = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .expect("an original file reads")
        .expect("and is there");
    assert_eq!(read.framed(), snapshot.framed());
}

/// A heap under a megabyte is one object, compressed, with no chunks; a
/// damaged byte in it is refused.
pub async fn a_small_heap_is_one_compressed_object(store: &dyn HeapStore, raw: &dyn Raw) {
    let owner = tenant("whole");
    // Compressible, as V8's snapshots are.
    let payload: Vec<u8> = (0..100_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    let snapshot = Snapshot::from_payload(&payload).unwrap();
    store.put(&owner, &snapshot).await.unwrap();
    let stored = raw.read_heap(&owner, snapshot.key()).await;
    assert!(
        stored.starts_with(b"MCPV8ZSTD\0"),
        "{:?}",
        &stored[..12.min(stored.len())]
    );
    assert!(stored.len() < payload.len() / 4, "{} bytes", stored.len());
    assert!(raw.chunks(&owner).await.is_empty());
    let read = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.framed(), snapshot.framed());
    let mut damaged = stored.clone();
    let at = damaged.len() - 2;
    damaged[at] ^= 0x5A;
    raw.write_heap(&owner, snapshot.key(), damaged).await;
    let err = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .expect_err("a damaged heap is refused");
    assert!(matches!(err, HeapStoreError::Chunks { .. }), "{err}");
    assert!(err.to_string().contains(snapshot.key().as_str()), "{err}");
    raw.write_heap(&owner, snapshot.key(), stored).await;
}

/// What a `put` stores is a small manifest; a second heap of the same base
/// adds only the chunks that differ; each reads back whole.
pub async fn heaps_are_manifests_and_share_their_chunks(store: &dyn HeapStore, raw: &dyn Raw) {
    let owner = tenant("sharing");
    let (a, b) = (related_snapshot(1, 1), related_snapshot(1, 2));
    store.put(&owner, &a).await.unwrap();
    let manifest = raw.read_heap(&owner, a.key()).await;
    assert!(manifest.starts_with(b"MCPV8CHNK\0"), "a manifest is stored");
    assert!(manifest.len() < 4096, "{} bytes", manifest.len());
    let first = raw.chunks(&owner).await;
    assert!(first.len() > 3, "{first:?}");
    store.put(&owner, &b).await.unwrap();
    let both = raw.chunks(&owner).await;
    assert_eq!(
        both.len(),
        first.len() + 1,
        "the second heap adds its last chunk only"
    );
    let fresh = raw.fresh();
    for heap in [&a, &b] {
        let read = fresh.get(&owner, heap.key()).await.unwrap().unwrap();
        assert_eq!(read.framed(), heap.framed());
    }
}

/// A flipped byte in any chunk, or a manifest cut short, is an error that
/// names the heap, never a crash and never another heap's bytes; the heap
/// reads again once the bytes are whole.
pub async fn a_damaged_chunk_or_manifest_is_refused_and_names_the_heap(
    store: &dyn HeapStore,
    raw: &dyn Raw,
) {
    let owner = tenant("damage");
    let snapshot = related_snapshot(2, 0);
    store.put(&owner, &snapshot).await.unwrap();
    for name in raw.chunks(&owner).await {
        let good = raw.read(&name).await;
        let mut bad = good.clone();
        let at = bad.len() / 2;
        bad[at] ^= 0x5A;
        raw.write(&name, bad).await;
        let err = raw
            .fresh()
            .get(&owner, snapshot.key())
            .await
            .expect_err("a damaged chunk is refused");
        assert!(matches!(err, HeapStoreError::Chunks { .. }), "{err}");
        assert!(err.to_string().contains(snapshot.key().as_str()), "{err}");
        raw.write(&name, good).await;
    }
    let manifest = raw.read_heap(&owner, snapshot.key()).await;
    raw.write_heap(
        &owner,
        snapshot.key(),
        manifest[..manifest.len() - 3].to_vec(),
    )
    .await;
    let err = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .expect_err("a short manifest is refused");
    assert!(err.to_string().contains("shorter than"), "{err}");
    raw.write_heap(&owner, snapshot.key(), manifest).await;
    let read = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.framed(), snapshot.framed());
}

/// A chunk gone from the store (deleted, expired) fails the read with an
/// error saying so: the heap exists, so it is not `Ok(None)`.
pub async fn a_missing_chunk_is_an_error_not_a_missing_heap(store: &dyn HeapStore, raw: &dyn Raw) {
    let owner = tenant("missing");
    let snapshot = related_snapshot(3, 0);
    store.put(&owner, &snapshot).await.unwrap();
    let chunks = raw.chunks(&owner).await;
    raw.delete(&chunks[chunks.len() / 2]).await;
    let err = raw
        .fresh()
        .get(&owner, snapshot.key())
        .await
        .expect_err("a heap missing a chunk is an error");
    assert!(
        matches!(
            err,
            HeapStoreError::Chunks {
                source: ChunkError::MissingChunk { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("missing from the store"), "{err}");
}

/// Eight writers at once, of heaps sharing all chunks but one: every heap
/// reads back whole, so no write of a shared chunk damaged another's.
pub async fn concurrent_writers_of_shared_chunks_leave_every_heap_whole(store: Arc<dyn HeapStore>) {
    let owner = tenant("concurrent");
    let heaps: Vec<Snapshot> = (0..8).map(|v| related_snapshot(4, v)).collect();
    let mut tasks = Vec::new();
    for heap in heaps.clone() {
        let (store, owner) = (store.clone(), owner.clone());
        tasks.push(tokio::spawn(async move { store.put(&owner, &heap).await }));
    }
    for task in tasks {
        task.await.expect("task").expect("concurrent put");
    }
    for heap in &heaps {
        let read = store.get(&owner, heap.key()).await.unwrap().unwrap();
        assert_eq!(read.framed(), heap.framed());
    }
}
