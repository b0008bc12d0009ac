//! Files of `/work`: the bytes of the files runs write, stored
//! content-addressed beside the heaps, per tenant. The tree that names them
//! (paths, sizes, keys) lives in the heap itself, so a heap's key covers its
//! files and a restore or a fork sees exactly the files it had; the bytes
//! are read only when a run opens a file. docs/engine.md, "Files".

pub mod chunked;
mod fs;
mod s3;

use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;

pub use fs::DirFileStore;
pub use s3::{EXPIRES_TAG, S3FileStore};

use crate::BoxError;
/// The key of a file's bytes.
pub use crate::backends::content::ContentKey;
use crate::tenant::Tenant;

/// Why a file's bytes could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileStoreError {
    /// The stored bytes do not hash to their key; they are never returned.
    #[error("file {key} failed verification: its bytes hash to {actual}")]
    Corrupt {
        /// The key asked for.
        key: String,
        /// What the bytes hash to.
        actual: String,
    },
    /// An object a retained heap names is no longer in the store (expired
    /// or deleted), so a heap naming it cannot be stored.
    #[error("file object {key} is missing from the store (expired or deleted)")]
    Missing {
        /// The object's key.
        key: String,
    },
    /// The backend itself failed.
    #[error("{store} file store failed for file {key}: {source}")]
    Backend {
        /// Backend name, `directory` or `s3`.
        store: &'static str,
        /// The file's key.
        key: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

/// Where the bytes of `/work` files live.
///
/// # Contract
/// - Content-addressed: `put` stores bytes under [`ContentKey::of`] of them and
///   returns it; a key already stored is not rewritten (idempotent), and
///   concurrent `put`s of the same bytes both succeed.
/// - `put` is atomic: `get` sees all the bytes or none.
/// - `get` of a key never stored is `Ok(None)`; `get` verifies what it
///   read and returns [`FileStoreError::Corrupt`] rather than other bytes.
/// - Each [`Tenant`] has its own namespace: bytes `put` by one tenant are
///   `Ok(None)` to every other, exactly as bytes never stored.
/// - A records store (`records`: runs' kept texts) restarts the age of
///   bytes put again, so its retention counts from the newest record that
///   named them; a `work/` store never rewrites them, and after
///   `keep_named` succeeds every object named outlives a heap stored now.
#[async_trait]
pub trait FileStore: Send + Sync + fmt::Debug + 'static {
    /// Stores `bytes` in `tenant`'s namespace; their key.
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<ContentKey, FileStoreError>;
    /// The bytes stored under `key` in `tenant`'s namespace, verified.
    async fn get(&self, tenant: &Tenant, key: &ContentKey)
    -> Result<Option<Bytes>, FileStoreError>;
    /// Records that the stored heap `heap` of `tenant` names the file
    /// objects `keys` (its files' manifests), for a store that collects
    /// objects no retained heap names (the directory store); others keep
    /// every object and record nothing.
    async fn name_heap(
        &self,
        tenant: &Tenant,
        heap: &str,
        keys: &[ContentKey],
    ) -> Result<(), FileStoreError> {
        let _ = (tenant, heap, keys);
        Ok(())
    }
    /// Makes the objects `keys` (what a heap about to be stored names:
    /// manifests, or bytes stored whole) and every chunk a manifest among
    /// them names last at least as long as that heap, for a store that
    /// expires objects by age (S3 restarts their age once a day); `Missing`
    /// when one is gone. Others keep what a retained heap names anyway.
    async fn keep_named(&self, tenant: &Tenant, keys: &[ContentKey]) -> Result<(), FileStoreError> {
        let _ = (tenant, keys);
        Ok(())
    }
    /// Stores the local file at `path`, whose bytes the caller computed
    /// `key` of, as [`put`](FileStore::put) would store them; the store
    /// may move the file rather than copy it. Reads verify as always.
    async fn put_file(
        &self,
        tenant: &Tenant,
        key: &ContentKey,
        path: &std::path::Path,
    ) -> Result<(), FileStoreError> {
        let backend = |e: std::io::Error| FileStoreError::Backend {
            store: "local",
            key: key.to_string(),
            source: Box::new(e),
        };
        let bytes = tokio::fs::read(path).await.map_err(backend)?;
        let stored = self.put(tenant, &Bytes::from(bytes)).await?;
        if &stored != key {
            return Err(FileStoreError::Corrupt {
                key: key.to_string(),
                actual: stored.to_string(),
            });
        }
        Ok(())
    }
}

/// `bytes` if they hash to `key`.
pub(crate) fn verified(key: &ContentKey, bytes: Bytes) -> Result<Bytes, FileStoreError> {
    key.verify(bytes).map_err(|actual| FileStoreError::Corrupt {
        key: key.to_string(),
        actual: actual.into(),
    })
}
