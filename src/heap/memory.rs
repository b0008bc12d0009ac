//! Recently used heaps kept in memory in front of another heap store.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use super::lru::{ByteLru, Slot};
use super::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;

/// Serves the heaps this process wrote or read last from memory.
///
/// A session threads each run's heap into the next, so the heap a run
/// restores is most often the one the previous run stored. A [`Snapshot`]
/// is only ever built by hashing its payload or by verifying stored bytes,
/// so one held in memory needs neither a read nor a second hash. `put`
/// stores in the inner store first and caches only what it accepted; the
/// cache holds at most `max_bytes` of framed snapshots, least recently used
/// evicted first.
#[derive(Debug)]
pub struct MemoryCacheHeapStore {
    inner: Arc<dyn HeapStore>,
    max_bytes: u64,
    entries: Mutex<ByteLru<Snapshot>>,
}

/// Keeps `snapshot` unless it alone exceeds `max_bytes`, evicting the least
/// recently used others to make room.
fn admit(entries: &mut ByteLru<Snapshot>, tenant: &Tenant, snapshot: &Snapshot, max_bytes: u64) {
    let size = snapshot.framed_len() as u64;
    let slot: Slot = (tenant.clone(), snapshot.key().clone());
    if size > max_bytes || entries.get(&slot).is_some() {
        return;
    }
    entries.insert(&slot, snapshot.bare(), size);
    entries.evict_to(max_bytes, &slot);
}

impl MemoryCacheHeapStore {
    /// At most `max_bytes` of snapshots in memory in front of `inner`.
    pub fn new(inner: Arc<dyn HeapStore>, max_bytes: usize) -> Self {
        Self {
            inner,
            max_bytes: max_bytes as u64,
            entries: Mutex::default(),
        }
    }

    /// Bytes of framed snapshots held now.
    pub fn cached_bytes(&self) -> usize {
        self.lock().total() as usize
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByteLru<Snapshot>> {
        // The map is consistent between statements; a panic elsewhere
        // cannot leave it half-updated.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl HeapStore for MemoryCacheHeapStore {
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        self.inner.put(tenant, snapshot).await?;
        admit(&mut self.lock(), tenant, snapshot, self.max_bytes);
        Ok(())
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        if let Some(snapshot) = self.lock().get(&(tenant.clone(), key.clone())) {
            return Ok(Some(snapshot.clone()));
        }
        let found = self.inner.get(tenant, key).await?;
        if let Some(snapshot) = &found {
            admit(&mut self.lock(), tenant, snapshot, self.max_bytes);
        }
        Ok(found)
    }
}
