//! Heap snapshot storage: the content address, the stored format, and the
//! [`HeapStore`] seam with its backends.

mod cache;
pub mod chunked;
mod fs;
mod key;
mod lru;
mod memory;
mod s3;
mod snapshot;

use std::fmt;

use async_trait::async_trait;

pub use cache::WriteThroughCacheHeapStore;
pub use fs::FileHeapStore;
pub(crate) use key::is_lowercase_hex;
pub use key::{HeapKey, InvalidHeapKey};
pub use memory::MemoryCacheHeapStore;
pub use s3::S3HeapStore;
pub(crate) use s3::{get_object as s3_get_object, put_once as s3_put_once, status as s3_status};
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
/// # Contract
/// - Keys are content addresses, so a key is written at most once: `put` of a
///   key that is already stored succeeds without rewriting it (idempotent).
/// - `put` is atomic: a concurrent or later `get` sees the whole snapshot or
///   none of it, never a prefix.
/// - `get` of a key never stored is `Ok(None)`, not an error.
/// - `get` verifies what it read ([`Snapshot::verify`]); bytes that fail are
///   [`HeapStoreError::Corrupt`] and are never returned.
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
}

/// Verification of bytes a backend read, mapped to the seam's error.
pub(crate) fn verify_read(key: &HeapKey, bytes: bytes::Bytes) -> Result<Snapshot, HeapStoreError> {
    Snapshot::verify(key, bytes).map_err(|source| HeapStoreError::Corrupt {
        key: key.clone(),
        source,
    })
}
