//! File bytes in a directory: `<dir>/<key>` for the anonymous tenant,
//! `<dir>/tenants/<id>/<key>` for the others (the heaps' layout).

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileStore, FileStoreError, verified};
use crate::backends::content::ContentKey;
use crate::tenant::Tenant;

/// File bytes under a directory of the local file system.
#[derive(Debug, Clone)]
pub struct DirFileStore {
    dir: PathBuf,
}

impl DirFileStore {
    /// A store under `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Where `key` of `tenant` lives.
    pub fn path_of(&self, tenant: &Tenant, key: &ContentKey) -> PathBuf {
        match tenant.heap_folder() {
            Some(folder) => self.dir.join(folder).join(key.as_str()),
            None => self.dir.join(key.as_str()),
        }
    }

    fn backend(key: &str, source: io::Error) -> FileStoreError {
        FileStoreError::Backend {
            store: "directory",
            key: key.to_owned(),
            source: Box::new(source),
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)?;
    let tmp = folder.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

#[async_trait]
impl FileStore for DirFileStore {
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<ContentKey, FileStoreError> {
        let key = ContentKey::of(bytes);
        let path = self.path_of(tenant, &key);
        let owned = bytes.clone();
        let written = key.to_string();
        tokio::task::spawn_blocking(move || {
            if path.exists() {
                return Ok(());
            }
            write_atomically(&path, &owned)
        })
        .await
        .map_err(|e| Self::backend(&written, io::Error::other(e)))?
        .map_err(|e| Self::backend(&written, e))?;
        Ok(key)
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &ContentKey,
    ) -> Result<Option<Bytes>, FileStoreError> {
        let path = self.path_of(tenant, key);
        let read = tokio::task::spawn_blocking(move || std::fs::read(path))
            .await
            .map_err(|e| Self::backend(key.as_str(), io::Error::other(e)))?;
        match read {
            Ok(bytes) => verified(key, bytes.into()).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::backend(key.as_str(), e)),
        }
    }
}
