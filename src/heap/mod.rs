//! Heap snapshot storage: the content address, the stored format, and the
//! [`HeapStore`] seam with its backends.

mod cache;
mod chunk_store;
pub mod format;
mod fs;
mod key;
mod lru;
mod memory;
mod s3;
mod snapshot;

use std::fmt;

use async_trait::async_trait;

pub(crate) use crate::backends::content::is_lowercase_hex;
pub use crate::clock::{Clock, system_clock};
pub use cache::WriteThroughCacheHeapStore;
pub use chunk_store::{ChunkCache, generation_at};
pub use fs::{FileHeapStore, Swept};
pub use key::{HeapKey, InvalidHeapKey};
pub use memory::MemoryCacheHeapStore;
pub use s3::S3HeapStore;
pub use snapshot::{HEADER_LEN, MAGIC, MIN_PAYLOAD_LEN, Snapshot, SnapshotError};

use crate::BoxError;
use crate::tenant::Tenant;

/// What can go wrong reading or writing a heap.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeapStoreError {
    /// The stored bytes for `key` failed verification; nothing is restored from them.
    #[error("heap {key} failed verification: {source}")]
    Corrupt {
        /// The heap asked for.
        key: HeapKey,
        /// What was wrong.
        #[source]
        source: SnapshotError,
    },
    /// The compressed form stored for `key` (kept whole, or a manifest and
    /// the chunks it names) is missing a chunk, damaged or of another heap;
    /// nothing is restored from it.
    #[error("heap {key} failed verification: {source}")]
    Chunks {
        /// The heap asked for.
        key: HeapKey,
        /// What was wrong.
        #[source]
        source: format::ChunkError,
    },
    /// The backend itself failed (I/O, network, permissions).
    #[error("{store} heap store failed for heap {key}: {source}")]
    Backend {
        /// Backend name, e.g. `directory` or `s3`.
        store: &'static str,
        /// The heap being read or written.
        key: HeapKey,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

/// Where heap snapshots live.
///
/// Stores write heaps in the chunked format (see [`chunked`]): a manifest
/// under the heap's key and compressed chunks shared between heaps. They
/// read both it and the original `MCPV8SNAP` file.
///
/// # Contract
/// - Keys are content addresses, so a key is written at most once: `put` of a
///   key that is already stored succeeds without rewriting it (idempotent).
/// - `put` is atomic: a concurrent or later `get` sees the whole snapshot or
///   none of it, never a prefix.
/// - `get` of a key never stored is `Ok(None)`, not an error.
/// - `get` verifies what it read ([`Snapshot::verify`], and each chunk and
///   the whole for a chunked heap); bytes that fail are
///   [`HeapStoreError::Corrupt`] or [`HeapStoreError::Chunks`] and are never
///   returned. A chunk missing from the store is `Chunks`, never `Ok(None)`.
/// - `put`s of heaps sharing chunks, concurrent or not, never damage each
///   other's chunks.
/// - Each [`Tenant`] has a namespace of its own: a key `put` by one tenant
///   is `Ok(None)` to every other (no oracle: exactly as a key never
///   stored). The anonymous tenant's heaps keep the original layout.
#[async_trait]
pub trait HeapStore: Send + Sync + fmt::Debug + 'static {
    /// Stores `snapshot` under its key in `tenant`'s namespace.
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError>;
    /// Reads and verifies the snapshot stored under `key` in `tenant`'s
    /// namespace.
    async fn get(&self, tenant: &Tenant, key: &HeapKey)
    -> Result<Option<Snapshot>, HeapStoreError>;
    /// [`get`](HeapStore::get), reading chunks from `cache` where it holds
    /// them and offering it the ones read: how a local cache in front of a
    /// remote store fetches only what it lacks. A store with nothing to
    /// fetch ignores `cache`.
    async fn get_using(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
        cache: &dyn ChunkCache,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        let _ = cache;
        self.get(tenant, key).await
    }
}

/// Verification of bytes a backend read, mapped to the seam's error.
pub(crate) fn verify_read(key: &HeapKey, bytes: bytes::Bytes) -> Result<Snapshot, HeapStoreError> {
    Snapshot::verify(key, bytes).map_err(|source| HeapStoreError::Corrupt {
        key: key.clone(),
        source,
    })
}
