//! A write-through cache: a size-bounded local directory in front of another
//! heap store (S3 in Lambda's `/tmp`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;

use super::format::{ChunkRef, Manifest};
use super::fs::CHUNKS;
use super::lru::ByteLru;
use super::{ChunkCache, FileHeapStore, HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;

/// Reads served from a local directory when possible, writes go to both:
/// to the remote store first, which decides whether the write succeeded,
/// then to the directory, whose failure only costs the cache.
///
/// The directory holds heaps as the remote store does, a manifest per heap
/// and chunks shared between heaps, so a heap missing here is fetched as
/// only the chunks the directory lacks ([`HeapStore::get_using`]). Keys are
/// content hashes, so a cached file can never be stale; it can only be
/// damaged, and every read still verifies it (a damaged file is dropped and
/// fetched again). The directory holds at most `max_bytes`; the least
/// recently used manifests and chunks are evicted first, and a heap that
/// lost a chunk that way reads the chunk from the remote store.
#[derive(Debug)]
pub struct WriteThroughCacheHeapStore {
    local: FileHeapStore,
    remote: Arc<dyn HeapStore>,
    max_bytes: u64,
    lru: Mutex<Lru>,
}

/// A cached file: a heap's manifest (or original snapshot) or a chunk.
/// A one-chunk heap's digest is its chunk's, so the kind is part of the key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct File {
    tenant: Tenant,
    key: HeapKey,
    chunk: bool,
}

/// Which files the directory holds, their sizes and use order. Rebuilt from
/// the directory on first use, so a warm `/tmp` is reused after a restart.
#[derive(Debug, Default)]
struct Lru {
    loaded: bool,
    files: ByteLru<(), File>,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn load_once(&self) {
        let mut lru = self.lock();
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
            for (dir, chunk) in [(folder.clone(), false), (folder.join(CHUNKS), true)] {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    if let (Some(key), Ok(meta)) = (
                        name.to_str().and_then(|n| HeapKey::parse(n).ok()),
                        entry.metadata(),
                    ) {
                        let file = File {
                            tenant: tenant.clone(),
                            key,
                            chunk,
                        };
                        lru.files.insert(&file, (), meta.len());
                    }
                }
            }
        }
    }

    fn path_of(&self, file: &File) -> PathBuf {
        if file.chunk {
            self.local
                .folder_of(&file.tenant)
                .join(CHUNKS)
                .join(file.key.as_str())
        } else {
            self.local.path_of(&file.tenant, &file.key)
        }
    }

    /// Records cached files as the most recently used and evicts what no
    /// longer fits, never the first of them.
    async fn admit(&self, files: &[(File, u64)]) {
        let Some((keep, _)) = files.first() else {
            return;
        };
        {
            let mut lru = self.lock();
            for (file, size) in files {
                lru.files.insert(file, (), *size);
            }
        }
        self.evict_to(self.max_bytes, keep).await;
    }

    /// Marks a cached heap and the chunks it read as just used.
    fn touch(&self, tenant: &Tenant, key: &HeapKey, manifest: Option<&Manifest>) {
        let mut lru = self.lock();
        let heap = File {
            tenant: tenant.clone(),
            key: key.clone(),
            chunk: false,
        };
        lru.files.get(&heap);
        for chunk in manifest.map(Manifest::distinct).unwrap_or_default() {
            lru.files.get(&chunk_file(tenant, chunk));
        }
    }

    /// Removes the least recently used files but `keep` until the directory
    /// holds at most `max_bytes`.
    async fn evict_to(&self, max_bytes: u64, keep: &File) {
        let evicted = self.lock().files.evict_to(max_bytes, keep);
        for file in evicted {
            if let Err(e) = tokio::fs::remove_file(self.path_of(&file)).await {
                tracing::warn!(file = %file.key, tenant = %file.tenant, error = %e, "could not evict a cached heap file");
            }
        }
    }

    /// Copies a snapshot into the directory (the chunks it lacks, then the
    /// manifest). A failed write (a full or read-only `/tmp`) is logged and
    /// answered by dropping what it left and evicting the older half of the
    /// cache, so the next write has room.
    async fn keep_local(&self, tenant: &Tenant, snapshot: &Snapshot) {
        let heap = File {
            tenant: tenant.clone(),
            key: snapshot.key().clone(),
            chunk: false,
        };
        match self.local.put(tenant, snapshot).await {
            Ok(()) => {
                if let Some(whole) = snapshot.stored_whole() {
                    self.admit(&[(heap, whole.len() as u64)]).await;
                    return;
                }
                let (manifest, stored) = snapshot.split();
                // Chunks this put wrote, or read from the remote store, are
                // new here; the others are held already and become recent.
                let mut files = vec![(heap, manifest.encode().len() as u64)];
                files.extend(stored.iter().filter_map(|c| {
                    c.known_len()
                        .map(|len| (chunk_file(tenant, &c.chunk), len as u64))
                }));
                self.touch(tenant, snapshot.key(), Some(manifest));
                self.admit(&files).await;
            }
            Err(e) => {
                tracing::warn!(heap = %heap.key, error = %e, "could not write the heap cache; evicting");
                self.drop_local(&heap).await;
                self.evict_to(self.max_bytes / 2, &heap).await;
            }
        }
    }

    async fn drop_local(&self, file: &File) {
        self.lock().files.remove(file);
        let _ = tokio::fs::remove_file(self.path_of(file)).await;
    }

    async fn read_local(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<(Snapshot, Option<Manifest>)>, HeapStoreError> {
        let (local, owned_tenant, owned_key) = (self.local.clone(), tenant.clone(), key.clone());
        tokio::task::spawn_blocking(move || local.get_blocking(&owned_tenant, &owned_key))
            .await
            .unwrap_or_else(|e| {
                Err(HeapStoreError::Backend {
                    store: "directory",
                    key: key.clone(),
                    source: format!("the cache read task failed: {e}").into(),
                })
            })
    }
}

fn chunk_file(tenant: &Tenant, chunk: &ChunkRef) -> File {
    File {
        tenant: tenant.clone(),
        key: HeapKey::from_digest(&chunk.digest),
        chunk: true,
    }
}

#[async_trait]
impl ChunkCache for WriteThroughCacheHeapStore {
    async fn get(&self, tenant: &Tenant, chunk: &ChunkRef) -> Option<Bytes> {
        let bytes = tokio::fs::read(self.local.chunk_path(tenant, chunk))
            .await
            .ok()?;
        self.lock().files.get(&chunk_file(tenant, chunk));
        Some(Bytes::from(bytes))
    }

    async fn put(&self, tenant: &Tenant, chunk: &ChunkRef, stored: Bytes) {
        let (local, owned_tenant, owned_chunk, len) = (
            self.local.clone(),
            tenant.clone(),
            chunk.clone(),
            stored.len(),
        );
        let written = tokio::task::spawn_blocking(move || {
            local.write_chunk(&owned_tenant, &owned_chunk, &stored)
        })
        .await;
        match written {
            Ok(Ok(())) => self.admit(&[(chunk_file(tenant, chunk), len as u64)]).await,
            Ok(Err(e)) => {
                tracing::warn!(chunk = %chunk.key(), error = %e, "could not write a chunk to the heap cache")
            }
            Err(e) => {
                tracing::warn!(chunk = %chunk.key(), error = %e, "the chunk cache task failed")
            }
        }
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
        let heap = File {
            tenant: tenant.clone(),
            key: key.clone(),
            chunk: false,
        };
        match self.read_local(tenant, key).await {
            Ok(Some((snapshot, manifest))) => {
                self.touch(tenant, key, manifest.as_ref());
                return Ok(Some(snapshot));
            }
            Ok(None) => {}
            // A chunk evicted or damaged: the chunks still here are reused.
            Err(HeapStoreError::Chunks { source, .. }) => {
                tracing::debug!(heap = %key, error = %source, "cached heap incomplete; fetching what it lacks");
            }
            Err(HeapStoreError::Corrupt { source, .. }) => {
                tracing::warn!(heap = %key, error = %source, "cached heap failed verification; fetching it again");
                self.drop_local(&heap).await;
            }
            Err(e) => {
                tracing::warn!(heap = %key, error = %e, "cache read failed; fetching from the store")
            }
        }
        let Some(snapshot) = self.remote.get_using(tenant, key, self).await? else {
            return Ok(None);
        };
        self.keep_local(tenant, &snapshot).await;
        Ok(Some(snapshot))
    }
}
