//! A directory of snapshot files, one per heap key.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{HeapKey, HeapStore, HeapStoreError, Snapshot, verify_read};
use crate::tenant::Tenant;

/// Heaps as files named by their key: the anonymous tenant's in the
/// directory itself, another tenant's in `tenants/<id>/` under it (created
/// on demand).
#[derive(Debug, Clone)]
pub struct FileHeapStore {
    dir: PathBuf,
    durable: bool,
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
        }
    }

    /// A store in `dir` whose writes are not synced: for a cache in front
    /// of a durable store (Lambda's `/tmp` before S3), where a write lost in
    /// a crash is only a miss, and the instance's disk goes with it anyway.
    pub fn cache(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            durable: false,
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

    /// Blocking body of [`HeapStore::put`]: one trip to the blocking pool
    /// per write instead of one per file operation.
    fn put_blocking(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let folder = self.folder_of(tenant);
        let path = folder.join(key.as_str());
        // Same key, same bytes, so a file of the right length is this heap.
        // One of another length was cut short (a crash before this store
        // synced, a full disk) and is replaced; `get` refuses it meanwhile.
        let framed = snapshot.framed();
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == framed.len() as u64) {
            return Ok(());
        }
        if !folder.is_dir() {
            std::fs::create_dir_all(&folder).map_err(|e| Self::backend(key, e))?;
            // A new directory is on disk only once its parent is: sync each
            // parent from the tenant's folder up to the store's own.
            if self.durable {
                let mut created: &Path = &folder;
                loop {
                    let parent = match created.parent() {
                        Some(parent) if !parent.as_os_str().is_empty() => parent,
                        _ => Path::new("."),
                    };
                    sync_dir(parent).map_err(|e| Self::backend(key, e))?;
                    if created == self.dir || parent == Path::new(".") {
                        break;
                    }
                    created = parent;
                }
            }
        }
        // A unique temporary name per writer: two runs producing the same heap
        // at once must not interleave bytes in one temp file.
        let tmp = folder.join(format!(
            ".{}.{}.tmp",
            key.as_str(),
            uuid::Uuid::new_v4().simple()
        ));
        let result = self
            .write_new(&tmp, framed)
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(Self::backend(key, e));
        }
        if self.durable {
            // The rename is on disk only once the directory is.
            sync_dir(&folder).map_err(|e| Self::backend(key, e))?;
        }
        Ok(())
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

    /// Blocking body of [`HeapStore::get`]; the checksum is computed there
    /// too, so a 400 KB hash does not hold up the async workers.
    fn get_blocking(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        match std::fs::read(self.path_of(tenant, key)) {
            Ok(bytes) => verify_read(key, bytes.into()).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::backend(key, e)),
        }
    }

    fn joined(key: &HeapKey, err: tokio::task::JoinError) -> HeapStoreError {
        Self::backend(
            key,
            io::Error::other(format!("the file task failed: {err}")),
        )
    }
}

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
    }
}
