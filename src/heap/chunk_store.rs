//! Chunked heaps in a store: the seam a local cache offers a remote store
//! (chunks it already holds), the per-instance index of chunks known to be
//! stored, the generation clock, and the parallel, verified gathering of a
//! manifest's chunks that every backend shares.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};

use super::format::{self, ChunkError, ChunkRef, Manifest, StoredChunk};
use super::{HeapKey, HeapStoreError, Snapshot};
use crate::BoxError;
use crate::tenant::Tenant;

/// Stored (compressed) chunks a process holds locally, consulted before a
/// store reads its own: the `/tmp` cache in front of S3.
///
/// # Contract
/// - `get` returns bytes `put` was given for the same tenant and chunk, or
///   `None`; it may return damaged bytes (a disk is not trusted), which the
///   caller verifies and then fetches again.
/// - `put` never fails the caller: a cache that cannot keep a chunk only
///   misses it later.
/// - One tenant's chunks are never returned for another.
#[async_trait]
pub trait ChunkCache: Send + Sync {
    /// The stored bytes of `chunk`, if held.
    async fn get(&self, tenant: &Tenant, chunk: &ChunkRef) -> Option<Bytes>;
    /// Keeps the stored bytes of `chunk`.
    async fn put(&self, tenant: &Tenant, chunk: &ChunkRef, stored: Bytes);
}

/// The cache of a store with none in front of it.
#[derive(Debug)]
pub(crate) struct NoChunkCache;

#[async_trait]
impl ChunkCache for NoChunkCache {
    async fn get(&self, _: &Tenant, _: &ChunkRef) -> Option<Bytes> {
        None
    }
    async fn put(&self, _: &Tenant, _: &ChunkRef, _: Bytes) {}
}

/// How many chunk reads or writes one heap has in flight at once.
pub(crate) const PARALLEL: usize = 16;

/// At most this many chunks are remembered; past it the index starts over,
/// which only costs conditional writes that find the chunk there.
const KNOWN_CAP: usize = 1 << 18;

/// Chunks this instance wrote to or read from its store, by tenant folder,
/// generation and digest: a run writes only chunks missing here, and the
/// store's conditional write catches the rest without a listing.
#[derive(Debug, Default)]
pub(crate) struct KnownChunks {
    set: Mutex<HashSet<(String, u32, [u8; 32])>>,
}

impl KnownChunks {
    pub(crate) fn contains(&self, tenant: &Tenant, generation: u32, chunk: &ChunkRef) -> bool {
        self.lock()
            .contains(&(folder(tenant), generation, chunk.digest))
    }

    pub(crate) fn insert(&self, tenant: &Tenant, generation: u32, chunk: &ChunkRef) {
        let mut set = self.lock();
        if set.len() >= KNOWN_CAP {
            set.clear();
        }
        set.insert((folder(tenant), generation, chunk.digest));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(String, u32, [u8; 32])>> {
        self.set.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn folder(tenant: &Tenant) -> String {
    tenant.heap_folder().unwrap_or_default()
}

/// The generation of chunks written at `now`: the UTC day number, the unit
/// of S3's lifecycle expiry (see docs/storage.md, "Retention").
pub fn generation_at(now: SystemTime) -> u32 {
    crate::clock::utc_day(now)
}

/// Decodes the manifest stored under `key`, mapped to the seam's error.
pub(crate) fn decode(key: &HeapKey, bytes: &[u8]) -> Result<Manifest, HeapStoreError> {
    Manifest::decode(key, bytes).map_err(|source| chunk_error(key, source))
}

pub(crate) fn chunk_error(key: &HeapKey, source: ChunkError) -> HeapStoreError {
    HeapStoreError::Chunks {
        key: key.clone(),
        source,
    }
}

/// A payload whose hash was just checked against `key`, framed, mapped to
/// the seam's error.
pub(crate) fn joined(key: &HeapKey, payload: Vec<u8>) -> Result<Snapshot, HeapStoreError> {
    Snapshot::from_joined(key, payload).map_err(|source| HeapStoreError::Corrupt {
        key: key.clone(),
        source,
    })
}

/// The heap kept whole in `stored` (see [`format::WHOLE_MAGIC`]),
/// verified against `key`.
pub(crate) fn whole(key: &HeapKey, stored: Bytes) -> Result<Snapshot, HeapStoreError> {
    let payload = format::decode_whole(key, &stored).map_err(|e| chunk_error(key, e))?;
    let snapshot = joined(key, payload)?;
    Ok(snapshot.with_whole(stored))
}

/// Puts the heap of `manifest` back together: each distinct chunk from
/// `cache` when it holds a sound copy, else from `fetch` (in parallel, at
/// most [`PARALLEL`] at once), every chunk and the whole verified. Chunks
/// fetched are offered to `cache`.
pub(crate) async fn gather<F, Fut>(
    store: &'static str,
    tenant: &Tenant,
    manifest: &Manifest,
    cache: &dyn ChunkCache,
    fetch: F,
) -> Result<Snapshot, HeapStoreError>
where
    F: Fn(ChunkRef) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Bytes>, BoxError>>,
{
    let key = &manifest.heap;
    let mut raw: HashMap<[u8; 32], Vec<u8>> = HashMap::new();
    let mut kept: HashMap<[u8; 32], Bytes> = HashMap::new();
    let mut missing = Vec::new();
    for chunk in manifest.distinct() {
        match cache.get(tenant, chunk).await {
            Some(stored) => match format::decompress(chunk, &stored) {
                Ok(bytes) => {
                    raw.insert(chunk.digest, bytes);
                    kept.insert(chunk.digest, stored);
                }
                Err(e) => {
                    tracing::warn!(heap = %key, error = %e, "a cached chunk failed verification; fetching it again");
                    missing.push(chunk.clone());
                }
            },
            None => missing.push(chunk.clone()),
        }
    }
    let fetched: Vec<(ChunkRef, Option<Bytes>)> = stream::iter(missing)
        .map(|chunk| {
            let read = fetch(chunk.clone());
            async move { read.await.map(|bytes| (chunk, bytes)) }
        })
        .buffer_unordered(PARALLEL)
        .try_collect()
        .await
        .map_err(|source| HeapStoreError::Backend {
            store,
            key: key.clone(),
            source,
        })?;
    for (chunk, stored) in fetched {
        let stored = stored
            .ok_or_else(|| chunk_error(key, ChunkError::MissingChunk { key: chunk.key() }))?;
        let bytes = format::decompress(&chunk, &stored).map_err(|e| chunk_error(key, e))?;
        cache.put(tenant, &chunk, stored.clone()).await;
        raw.insert(chunk.digest, bytes);
        kept.insert(chunk.digest, stored);
    }
    let payload = manifest.join(&raw).map_err(|e| chunk_error(key, e))?;
    let snapshot = joined(key, payload)?;
    // The stored chunks come along, so a cache keeping this heap writes
    // its manifest without compressing the payload again.
    let stored = manifest
        .distinct()
        .into_iter()
        .map(|chunk| {
            let compressed = kept
                .remove(&chunk.digest)
                .expect("every chunk was gathered");
            StoredChunk::ready(chunk.clone(), compressed)
        })
        .collect();
    let split = (
        Manifest {
            generation: 0,
            ..manifest.clone()
        },
        stored,
    );
    Ok(snapshot.with_split(split))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_are_utc_days() {
        let day =
            |secs: u64| generation_at(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        assert_eq!(day(0), 0);
        assert_eq!(day(86_399), 0);
        assert_eq!(day(86_400), 1);
        assert_eq!(day(20_000 * 86_400 + 5), 20_000);
    }

    #[test]
    fn known_chunks_are_per_tenant_and_generation() {
        let known = KnownChunks::default();
        let chunk = ChunkRef {
            digest: [7; 32],
            len: 10,
        };
        let alice = Tenant::of_principal("jwt:https://issuer.test#alice");
        known.insert(&Tenant::anonymous(), 5, &chunk);
        assert!(known.contains(&Tenant::anonymous(), 5, &chunk));
        assert!(!known.contains(&Tenant::anonymous(), 6, &chunk));
        assert!(!known.contains(&alice, 5, &chunk));
    }
}
