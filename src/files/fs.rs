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
    /// A `put` of bytes already stored marks them modified now, so
    /// [`Self::sweep`] counts from the newest record that named them.
    refresh: bool,
}

impl DirFileStore {
    /// A store under `dir` (created on the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            refresh: false,
        }
    }

    /// Runs' kept texts under `dir`: a `put` of bytes already there
    /// refreshes their time, which [`Self::sweep`] reads.
    pub fn records(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            refresh: true,
        }
    }

    /// Removes every stored file last put more than `max_age` ago (the
    /// records' retention); how many it removed.
    pub fn sweep(&self, max_age: std::time::Duration) -> io::Result<usize> {
        let Some(cutoff) = std::time::SystemTime::now().checked_sub(max_age) else {
            return Ok(0);
        };
        let mut removed = 0;
        let mut dirs = vec![self.dir.clone()];
        while let Some(dir) = dirs.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let meta = entry.metadata()?;
                if meta.is_dir() {
                    dirs.push(entry.path());
                } else if meta.modified()? < cutoff {
                    match std::fs::remove_file(entry.path()) {
                        Ok(()) => removed += 1,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(removed)
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
        let refresh = self.refresh;
        tokio::task::spawn_blocking(move || {
            if path.exists() {
                if refresh {
                    std::fs::File::options()
                        .write(true)
                        .open(&path)?
                        .set_modified(std::time::SystemTime::now())?;
                }
                return Ok(());
            }
            write_atomically(&path, &owned)
        })
        .await
        .map_err(|e| Self::backend(&written, io::Error::other(e)))?
        .map_err(|e| Self::backend(&written, e))?;
        Ok(key)
    }

    /// Moves the file into place when it is on the same file system (the
    /// scratch folder beside the data directory): a sealed chunk costs a
    /// rename, not a copy.
    async fn put_file(
        &self,
        tenant: &Tenant,
        key: &ContentKey,
        from: &Path,
    ) -> Result<(), FileStoreError> {
        let path = self.path_of(tenant, key);
        let from = from.to_owned();
        let written = key.to_string();
        tokio::task::spawn_blocking(move || {
            if path.exists() {
                return Ok(());
            }
            let folder = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(folder)?;
            std::fs::File::open(&from)?.sync_all()?;
            match std::fs::rename(&from, &path) {
                Ok(()) => Ok(()),
                // Another file system: copied as `put` writes.
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                    write_atomically(&path, &std::fs::read(&from)?)
                }
                Err(e) => Err(e),
            }
        })
        .await
        .map_err(|e| Self::backend(&written, io::Error::other(e)))?
        .map_err(|e| Self::backend(&written, e))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A records store's bytes put again count their age from then, and
    /// the sweep removes only what is older than its bound.
    #[tokio::test]
    async fn a_records_store_refreshes_what_is_put_again_and_sweeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirFileStore::records(dir.path());
        let tenant = Tenant::of_principal("alice");
        let (old, again) = (Bytes::from_static(b"old"), Bytes::from_static(b"again"));
        let old_key = store.put(&tenant, &old).await.unwrap();
        let again_key = store.put(&tenant, &again).await.unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
        for key in [&old_key, &again_key] {
            std::fs::File::options()
                .write(true)
                .open(store.path_of(&tenant, key))
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        store.put(&tenant, &again).await.unwrap();
        let removed = store.sweep(std::time::Duration::from_secs(86_400)).unwrap();
        assert_eq!(removed, 1);
        assert_eq!(store.get(&tenant, &old_key).await.unwrap(), None);
        assert_eq!(store.get(&tenant, &again_key).await.unwrap(), Some(again));
        // A `work/` store never rewrites, and keeps files of any age.
        let work = DirFileStore::new(dir.path().join("work"));
        let key = work.put(&tenant, &old).await.unwrap();
        let path = work.path_of(&tenant, &key);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        work.put(&tenant, &old).await.unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().modified().unwrap(),
            long_ago
        );
    }
}
