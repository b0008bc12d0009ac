//! A directory of snapshot files, one per heap key.

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{HeapKey, HeapStorage, HeapStoreError, Snapshot, verify_read};

/// Heaps as files named by their key in one directory (created on demand).
#[derive(Debug, Clone)]
pub struct FileHeapStorage {
    dir: PathBuf,
}

impl FileHeapStorage {
    /// A store in `dir`; nothing is touched until the first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the snapshot of `key` lives.
    pub fn path_of(&self, key: &HeapKey) -> PathBuf {
        self.dir.join(key.as_str())
    }

    fn backend(key: &HeapKey, source: io::Error) -> HeapStoreError {
        HeapStoreError::Backend {
            store: "directory",
            key: key.clone(),
            source: Box::new(source),
        }
    }

    /// Blocking body of [`HeapStorage::put`]: one trip to the blocking pool
    /// per write instead of one per file operation.
    fn put_blocking(&self, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let path = self.path_of(key);
        if path.try_exists().unwrap_or(false) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| Self::backend(key, e))?;
        // A unique temporary name per writer: two runs producing the same heap
        // at once must not interleave bytes in one temp file.
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            key.as_str(),
            uuid::Uuid::new_v4().simple()
        ));
        let result =
            std::fs::write(&tmp, snapshot.framed()).and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(Self::backend(key, e));
        }
        Ok(())
    }

    /// Blocking body of [`HeapStorage::get`]; the checksum is computed there
    /// too, so a 400 KB hash does not hold up the async workers.
    fn get_blocking(&self, key: &HeapKey) -> Result<Option<Snapshot>, HeapStoreError> {
        match std::fs::read(self.path_of(key)) {
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

#[async_trait]
impl HeapStorage for FileHeapStorage {
    async fn put(&self, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let (store, owned) = (self.clone(), snapshot.clone());
        tokio::task::spawn_blocking(move || store.put_blocking(&owned))
            .await
            .map_err(|e| Self::joined(snapshot.key(), e))?
    }

    async fn get(&self, key: &HeapKey) -> Result<Option<Snapshot>, HeapStoreError> {
        let (store, owned) = (self.clone(), key.clone());
        tokio::task::spawn_blocking(move || store.get_blocking(&owned))
            .await
            .map_err(|e| Self::joined(key, e))?
    }
}
