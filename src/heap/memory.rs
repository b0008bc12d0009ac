//! Recently used heaps kept in memory in front of another heap store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use super::{HeapKey, HeapStorage, HeapStoreError, Snapshot};

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
pub struct MemoryCacheHeapStorage {
    inner: Arc<dyn HeapStorage>,
    max_bytes: usize,
    entries: Mutex<Entries>,
}

/// The cached snapshots and their use order.
#[derive(Debug, Default)]
struct Entries {
    tick: u64,
    total: usize,
    by_key: HashMap<HeapKey, (Snapshot, u64)>,
    by_use: BTreeMap<u64, HeapKey>,
}

impl Entries {
    fn get(&mut self, key: &HeapKey) -> Option<Snapshot> {
        self.tick += 1;
        let (snapshot, used) = self.by_key.get_mut(key)?;
        self.by_use.remove(used);
        *used = self.tick;
        self.by_use.insert(self.tick, key.clone());
        Some(snapshot.clone())
    }

    fn insert(&mut self, snapshot: &Snapshot, max_bytes: usize) {
        let size = snapshot.framed().len();
        if size > max_bytes || self.get(snapshot.key()).is_some() {
            return;
        }
        while self.total + size > max_bytes {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some((evicted, _)) = self.by_key.remove(&oldest) {
                self.total -= evicted.framed().len();
            }
        }
        self.tick += 1;
        self.total += size;
        self.by_use.insert(self.tick, snapshot.key().clone());
        self.by_key
            .insert(snapshot.key().clone(), (snapshot.clone(), self.tick));
    }
}

impl MemoryCacheHeapStorage {
    /// At most `max_bytes` of snapshots in memory in front of `inner`.
    pub fn new(inner: Arc<dyn HeapStorage>, max_bytes: usize) -> Self {
        Self {
            inner,
            max_bytes,
            entries: Mutex::default(),
        }
    }

    /// Bytes of framed snapshots held now.
    pub fn cached_bytes(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The map is consistent between statements; a panic elsewhere
        // cannot leave it half-updated.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl HeapStorage for MemoryCacheHeapStorage {
    async fn put(&self, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        self.inner.put(snapshot).await?;
        self.lock().insert(snapshot, self.max_bytes);
        Ok(())
    }

    async fn get(&self, key: &HeapKey) -> Result<Option<Snapshot>, HeapStoreError> {
        if let Some(snapshot) = self.lock().get(key) {
            return Ok(Some(snapshot));
        }
        let found = self.inner.get(key).await?;
        if let Some(snapshot) = &found {
            self.lock().insert(snapshot, self.max_bytes);
        }
        Ok(found)
    }
}
