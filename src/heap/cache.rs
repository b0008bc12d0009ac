//! A write-through cache: a size-bounded local directory in front of another
//! heap store (S3 in Lambda's `/tmp`).

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use super::lru::{ByteLru, Slot};
use super::{FileHeapStore, HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;

/// Reads served from a local directory when possible, writes go to both:
/// to the remote store first, which decides whether the write succeeded,
/// then to the directory, whose failure only costs the cache.
///
/// Keys are content hashes, so a cached entry can never be stale; it can
/// only be damaged, and every read still verifies it (a damaged file is
/// dropped and fetched again). The directory holds at most `max_bytes`;
/// the least recently used heaps are evicted first.
#[derive(Debug)]
pub struct WriteThroughCacheHeapStore {
    local: FileHeapStore,
    remote: Arc<dyn HeapStore>,
    max_bytes: u64,
    lru: Mutex<Lru>,
}

/// Which heaps the directory holds, their sizes and use order. Rebuilt from
/// the directory on first use, so a warm `/tmp` is reused after a restart.
#[derive(Debug, Default)]
struct Lru {
    loaded: bool,
    heaps: ByteLru<()>,
}

impl WriteThroughCacheHeapStore {
    /// A cache in `local` of at most `max_bytes` in front of `remote`.
    pub fn new(local: FileHeapStore, remote: Arc<dyn HeapStore>, max_bytes: u64) -> Self {
        Self {
            local,
            remote,
            max_bytes,
            lru: Mutex::new(Lru::default()),
        }
    }

    /// The cache directory.
    pub fn local(&self) -> &FileHeapStore {
        &self.local
    }

    fn load_once(&self) {
        let mut lru = self.lru.lock().unwrap_or_else(PoisonError::into_inner);
        if lru.loaded {
            return;
        }
        lru.loaded = true;
        let mut folders = vec![(Tenant::anonymous(), self.local.dir().to_owned())];
        if let Ok(tenants) = std::fs::read_dir(self.local.dir().join("tenants")) {
            for entry in tenants.flatten() {
                let name = entry.file_name();
                if let Some(tenant) = name.to_str().and_then(Tenant::from_id) {
                    folders.push((tenant, entry.path()));
                }
            }
        }
        for (tenant, folder) in folders {
            let Ok(dir) = std::fs::read_dir(folder) else {
                continue;
            };
            for entry in dir.flatten() {
                let name = entry.file_name();
                if let (Some(key), Ok(meta)) = (
                    name.to_str().and_then(|n| HeapKey::parse(n).ok()),
                    entry.metadata(),
                ) {
                    lru.heaps.insert(&(tenant.clone(), key), (), meta.len());
                }
            }
        }
    }

    /// Records a cached heap and evicts what no longer fits.
    async fn admit(&self, slot: &Slot, size: u64) {
        self.lru
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .heaps
            .insert(slot, (), size);
        self.evict_to(self.max_bytes, slot).await;
    }

    /// Removes the least recently used heaps but `keep` until the directory
    /// holds at most `max_bytes`.
    async fn evict_to(&self, max_bytes: u64, keep: &Slot) {
        let evicted = self
            .lru
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .heaps
            .evict_to(max_bytes, keep);
        for (tenant, key) in evicted {
            if let Err(e) = tokio::fs::remove_file(self.local.path_of(&tenant, &key)).await {
                tracing::warn!(heap = %key, %tenant, error = %e, "could not evict a cached heap");
            }
        }
    }

    /// Copies a snapshot into the directory. A failed write (a full or
    /// read-only `/tmp`) is logged and answered by dropping what it left and
    /// evicting the older half of the cache, so the next write has room.
    async fn keep_local(&self, tenant: &Tenant, snapshot: &Snapshot) {
        let slot = (tenant.clone(), snapshot.key().clone());
        match self.local.put(tenant, snapshot).await {
            Ok(()) => self.admit(&slot, snapshot.framed().len() as u64).await,
            Err(e) => {
                tracing::warn!(heap = %slot.1, error = %e, "could not write the heap cache; evicting");
                self.drop_local(&slot).await;
                self.evict_to(self.max_bytes / 2, &slot).await;
            }
        }
    }

    async fn drop_local(&self, slot: &Slot) {
        self.lru
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .heaps
            .remove(slot);
        let _ = tokio::fs::remove_file(self.local.path_of(&slot.0, &slot.1)).await;
    }
}

#[async_trait]
impl HeapStore for WriteThroughCacheHeapStore {
    /// The remote store is the truth: its write decides the result. The
    /// local copy is a convenience that never fails a write.
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        self.load_once();
        self.remote.put(tenant, snapshot).await?;
        self.keep_local(tenant, snapshot).await;
        Ok(())
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        self.load_once();
        let slot = (tenant.clone(), key.clone());
        match self.local.get(tenant, key).await {
            Ok(Some(snapshot)) => {
                self.admit(&slot, snapshot.framed().len() as u64).await;
                return Ok(Some(snapshot));
            }
            Ok(None) => {}
            Err(HeapStoreError::Corrupt { source, .. }) => {
                tracing::warn!(heap = %key, error = %source, "cached heap failed verification; fetching it again");
                self.drop_local(&slot).await;
            }
            Err(e) => {
                tracing::warn!(heap = %key, error = %e, "cache read failed; fetching from the store")
            }
        }
        let Some(snapshot) = self.remote.get(tenant, key).await? else {
            return Ok(None);
        };
        self.keep_local(tenant, &snapshot).await;
        Ok(Some(snapshot))
    }
}
