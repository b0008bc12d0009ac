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
}

#[async_trait]
impl HeapStorage for FileHeapStorage {
    async fn put(&self, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let path = self.path_of(key);
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(());
        }
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| Self::backend(key, e))?;
        // A unique temporary name per writer: two runs producing the same heap
        // at once must not interleave bytes in one temp file.
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            key.as_str(),
            uuid::Uuid::new_v4().simple()
        ));
        let bytes = snapshot.framed().clone();
        let result = async {
            tokio::fs::write(&tmp, &bytes).await?;
            tokio::fs::rename(&tmp, &path).await
        }
        .await;
        if let Err(e) = result {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(Self::backend(key, e));
        }
        Ok(())
    }

    async fn get(&self, key: &HeapKey) -> Result<Option<Snapshot>, HeapStoreError> {
        match tokio::fs::read(self.path_of(key)).await {
            Ok(bytes) => verify_read(key, bytes.into()).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::backend(key, e)),
        }
    }
}
