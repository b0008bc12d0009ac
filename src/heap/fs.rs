//! A directory of heaps: a manifest per heap key, the chunks they name in
//! `chunks/` beside them.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;

use super::format::{self, ChunkError, ChunkRef, Manifest};
use super::{HeapKey, HeapStore, HeapStoreError, Snapshot, chunk_store, verify_read};
use crate::tenant::Tenant;

/// Heaps as files named by their key: the anonymous tenant's in the
/// directory itself, another tenant's in `tenants/<id>/` under it (created
/// on demand). Each folder keeps its chunks in `chunks/`, named by their
/// digest; original `MCPV8SNAP` files in it still read.
#[derive(Debug, Clone)]
pub struct FileHeapStore {
    dir: PathBuf,
    durable: bool,
    /// Writes hold it shared, [`FileHeapStore::sweep`] alone: a chunk an
    /// expired heap named must not go while a put is about to name it again.
    sweeping: Arc<RwLock<()>>,
}

/// What one [`FileHeapStore::sweep`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Heaps older than the retention.
    pub heaps: usize,
    /// Chunks no remaining heap names.
    pub chunks: usize,
    /// Their bytes, heaps and chunks.
    pub bytes: u64,
}

impl FileHeapStore {
    /// A store in `dir`; nothing is touched until the first write. A write
    /// is on disk (file and directory entry synced) before `put` returns:
    /// the session log, committed durably right after, names the heap, and
    /// must not outlive it in a crash.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            durable: true,
            sweeping: Arc::default(),
        }
    }

    /// A store in `dir` whose writes are not synced: for a cache in front
    /// of a durable store (Lambda's `/tmp` before S3), where a write lost in
    /// a crash is only a miss, and the instance's disk goes with it anyway.
    pub fn cache(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            durable: false,
            sweeping: Arc::default(),
        }
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of `tenant`'s heaps.
    pub fn folder_of(&self, tenant: &Tenant) -> PathBuf {
        match tenant.heap_folder() {
            Some(folder) => self.dir.join(folder),
            None => self.dir.clone(),
        }
    }

    /// Where the snapshot of `key` in `tenant`'s namespace lives.
    pub fn path_of(&self, tenant: &Tenant, key: &HeapKey) -> PathBuf {
        self.folder_of(tenant).join(key.as_str())
    }

    fn backend(key: &HeapKey, source: io::Error) -> HeapStoreError {
        HeapStoreError::Backend {
            store: "directory",
            key: key.clone(),
            source: Box::new(source),
        }
    }

    /// Where the stored bytes of `chunk` in `tenant`'s namespace live.
    pub fn chunk_path(&self, tenant: &Tenant, chunk: &ChunkRef) -> PathBuf {
        self.folder_of(tenant).join(CHUNKS).join(chunk.key())
    }

    /// Blocking body of [`HeapStore::put`]: one trip to the blocking pool
    /// per write instead of one per file operation. Chunks go first, the
    /// manifest that names them last, so a manifest on disk always has its
    /// chunks.
    fn put_blocking(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let _writing = self.sweeping.read().unwrap_or_else(PoisonError::into_inner);
        let key = snapshot.key();
        let folder = self.folder_of(tenant);
        if let Some(whole) = snapshot.stored_whole() {
            if !folder.is_dir() {
                self.create_dirs(&folder)
                    .map_err(|e| Self::backend(key, e))?;
            }
            return self.publish_heap(&folder, snapshot, whole);
        }
        let chunks = folder.join(CHUNKS);
        if !chunks.is_dir() {
            self.create_dirs(&chunks)
                .map_err(|e| Self::backend(key, e))?;
        }
        let (manifest, stored) = snapshot.split();
        // Same digest, same bytes: chunks are published whole (renamed
        // into place), so a file under the name is the chunk. An empty one
        // is what a crash before a cache's unsynced write reached the disk
        // leaves, and is replaced; readers verify either way.
        let missing: Vec<_> = stored
            .iter()
            .filter(|chunk| {
                !std::fs::metadata(chunks.join(chunk.chunk.key())).is_ok_and(|m| m.len() > 0)
            })
            .collect();
        // Compressed and written (each synced) in parallel: a first save of
        // a large heap writes all its chunks.
        format::compress_all(&missing, snapshot.payload());
        {
            use rayon::prelude::*;
            missing
                .par_iter()
                .try_for_each(|chunk| {
                    let path = chunks.join(chunk.chunk.key());
                    self.publish(&chunks, &path, chunk.compressed(snapshot.payload()))
                })
                .map_err(|e| Self::backend(key, e))?;
        }
        if !missing.is_empty() && self.durable {
            sync_dir(&chunks).map_err(|e| Self::backend(key, e))?;
        }
        self.publish_heap(&folder, snapshot, &manifest.encode())
    }

    /// Writes the file under the heap's key (its manifest, or the heap
    /// kept whole) unless it holds exactly that already.
    fn publish_heap(
        &self,
        folder: &Path,
        snapshot: &Snapshot,
        stored: &[u8],
    ) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let path = folder.join(key.as_str());
        if self.holds(&path, snapshot, stored) {
            return Ok(());
        }
        self.publish(folder, &path, stored)
            .map_err(|e| Self::backend(key, e))?;
        if self.durable {
            // The rename is on disk only once the directory is.
            sync_dir(folder).map_err(|e| Self::backend(key, e))?;
        }
        Ok(())
    }

    /// Whether the file at `path` already stores `snapshot`: exactly its
    /// manifest or whole form, or an original file of the right length. Anything else (a
    /// file cut short by a crash, a damaged manifest) is replaced; `get`
    /// refuses it meanwhile.
    /// A heap stored again is as new to the retention: its time is reset.
    fn holds(&self, path: &Path, snapshot: &Snapshot, manifest: &[u8]) -> bool {
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let held = meta.len() == snapshot.framed_len() as u64
            || (meta.len() == manifest.len() as u64
                && std::fs::read(path).is_ok_and(|b| b == manifest));
        if held {
            let _ = File::options()
                .append(true)
                .open(path)
                .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        }
        held
    }

    /// Removes the heaps stored (or stored again) longer than `max_age`
    /// ago, then every chunk no remaining heap names: the embedded store's
    /// retention (`MCP_V8_HEAP_RETENTION_DAYS`). Writes wait meanwhile, so a
    /// chunk is never removed under a heap being written; a heap within
    /// the retention never loses a chunk.
    pub fn sweep(&self, max_age: std::time::Duration) -> io::Result<Swept> {
        let _alone = self
            .sweeping
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let now = std::time::SystemTime::now();
        let mut swept = Swept::default();
        let mut folders = vec![self.dir.clone()];
        if let Ok(tenants) = std::fs::read_dir(self.dir.join("tenants")) {
            folders.extend(tenants.flatten().map(|e| e.path()));
        }
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            let mut named = HashSet::new();
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(key) = name.to_str().and_then(|n| HeapKey::parse(n).ok()) else {
                    continue;
                };
                let meta = entry.metadata()?;
                let age = meta
                    .modified()
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .unwrap_or_default();
                if age > max_age {
                    std::fs::remove_file(entry.path())?;
                    swept.heaps += 1;
                    swept.bytes += meta.len();
                    continue;
                }
                // A manifest that cannot be read names nothing; its heap
                // fails to read with or without its chunks.
                let bytes = std::fs::read(entry.path())?;
                if let Ok(manifest) = Manifest::decode(&key, &bytes) {
                    named.extend(manifest.chunks.iter().map(|c| c.digest));
                }
            }
            let Ok(chunks) = std::fs::read_dir(folder.join(CHUNKS)) else {
                continue;
            };
            for entry in chunks.flatten() {
                let name = entry.file_name();
                let Some(digest) = name.to_str().and_then(|n| HeapKey::parse(n).ok()) else {
                    continue;
                };
                if !named.contains(&digest.digest()) {
                    swept.bytes += entry.metadata().map_or(0, |m| m.len());
                    std::fs::remove_file(entry.path())?;
                    swept.chunks += 1;
                }
            }
        }
        Ok(swept)
    }

    /// Creates `dir` and its missing parents; in a durable store each new
    /// directory is on disk only once its parent is, so each parent is
    /// synced up to the store's own directory.
    fn create_dirs(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        if self.durable {
            let mut created: &Path = dir;
            loop {
                let parent = match created.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
                sync_dir(parent)?;
                if created == self.dir || parent == Path::new(".") {
                    break;
                }
                created = parent;
            }
        }
        Ok(())
    }

    /// Writes `bytes` to `path` through a temporary file in `dir` renamed
    /// over it, so no reader sees a prefix. The temporary name is unique
    /// per writer: two runs producing the same heap at once must not
    /// interleave bytes in one file.
    fn publish(&self, dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("heap");
        let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let result = self
            .write_new(&tmp, bytes)
            .and_then(|()| std::fs::rename(&tmp, path));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Writes `bytes` to a new file at `tmp`, synced when this store is
    /// durable, so the rename that follows never publishes a short file.
    fn write_new(&self, tmp: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut file = File::create_new(tmp)?;
        file.write_all(bytes)?;
        if self.durable {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Blocking body of [`HeapStore::get`]; checksums and decompression run
    /// there too, so they do not hold up the async workers. The manifest
    /// comes back too, for a cache to note which chunks were used.
    pub(super) fn get_blocking(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<(Snapshot, Option<Manifest>)>, HeapStoreError> {
        let bytes = match std::fs::read(self.path_of(tenant, key)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Self::backend(key, e)),
        };
        if format::is_whole(&bytes) {
            return chunk_store::whole(key, bytes.into()).map(|s| Some((s, None)));
        }
        if !Manifest::is_manifest(&bytes) {
            return verify_read(key, bytes.into()).map(|s| Some((s, None)));
        }
        let manifest = chunk_store::decode(key, &bytes)?;
        let mut raw = HashMap::new();
        for chunk in manifest.distinct() {
            let stored = match std::fs::read(self.chunk_path(tenant, chunk)) {
                Ok(stored) => stored,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(chunk_store::chunk_error(
                        key,
                        ChunkError::MissingChunk { key: chunk.key() },
                    ));
                }
                Err(e) => return Err(Self::backend(key, e)),
            };
            let bytes =
                format::decompress(chunk, &stored).map_err(|e| chunk_store::chunk_error(key, e))?;
            raw.insert(chunk.digest, bytes);
        }
        let payload = manifest
            .join(&raw)
            .map_err(|e| chunk_store::chunk_error(key, e))?;
        let snapshot = chunk_store::joined(key, payload)?;
        Ok(Some((snapshot, Some(manifest))))
    }

    /// Keeps the stored bytes of `chunk`, as `put` would.
    pub(super) fn write_chunk(
        &self,
        tenant: &Tenant,
        chunk: &ChunkRef,
        stored: &[u8],
    ) -> io::Result<()> {
        let chunks = self.folder_of(tenant).join(CHUNKS);
        if !chunks.is_dir() {
            self.create_dirs(&chunks)?;
        }
        self.publish(&chunks, &self.chunk_path(tenant, chunk), stored)
    }

    fn joined(key: &HeapKey, err: tokio::task::JoinError) -> HeapStoreError {
        Self::backend(
            key,
            io::Error::other(format!("the file task failed: {err}")),
        )
    }
}

/// The folder of a tenant's chunks, under its heaps' folder.
pub(super) const CHUNKS: &str = "chunks";

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[async_trait]
impl HeapStore for FileHeapStore {
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let (store, tenant, owned) = (self.clone(), tenant.clone(), snapshot.clone());
        tokio::task::spawn_blocking(move || store.put_blocking(&tenant, &owned))
            .await
            .map_err(|e| Self::joined(snapshot.key(), e))?
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        let (store, tenant, owned) = (self.clone(), tenant.clone(), key.clone());
        tokio::task::spawn_blocking(move || store.get_blocking(&tenant, &owned))
            .await
            .map_err(|e| Self::joined(key, e))?
            .map(|found| found.map(|(snapshot, _)| snapshot))
    }
}
