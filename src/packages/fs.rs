//! Packages in a directory (the embedded store's `<data-dir>/packages`):
//! `index.json` and `bundles/<sha256>`.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{PackageIndex, PackageStore, PackageStoreError, Revision, verified};
use crate::backends::content::ContentKey;

const STORE: &str = "directory";

/// Packages under one directory.
#[derive(Debug, Clone)]
pub struct DirPackageStore {
    root: PathBuf,
}

/// `index.json`: the index and the revision a compare-and-swap checks.
#[derive(Serialize, Deserialize)]
struct Stored {
    revision: u64,
    #[serde(flatten)]
    index: PackageIndex,
}

impl DirPackageStore {
    /// A store rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Where bundles are, by key: the engine reads them from here directly.
    pub fn bundle_dir(&self) -> PathBuf {
        self.root.join("bundles")
    }

    fn index_path(&self) -> PathBuf {
        self.root.join("index.json")
    }

    fn backend(what: impl Into<String>, source: std::io::Error) -> PackageStoreError {
        PackageStoreError::Backend {
            store: STORE,
            what: what.into(),
            source: Box::new(source),
        }
    }

    async fn read_index(&self) -> Result<Option<Stored>, PackageStoreError> {
        match tokio::fs::read(self.index_path()).await {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|source| {
                PackageStoreError::BadIndex {
                    store: STORE,
                    source,
                }
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::backend("index.json", e)),
        }
    }
}

/// Holds `index.lock` while an update compares and swaps.
struct Lock(PathBuf);

impl Lock {
    async fn take(path: PathBuf) -> Result<Self, std::io::Error> {
        for _ in 0..200 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Self(path)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    // A writer that died leaves its lock; one older than a
                    // minute is not held by anyone.
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(60));
                    if stale {
                        let _ = std::fs::remove_file(&path);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(
            ErrorKind::TimedOut,
            format!("{} is held by another writer", path.display()),
        ))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader sees all of it or none.
async fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), std::io::Error> {
    let dir = path.parent().expect("a file in a directory");
    tokio::fs::create_dir_all(dir).await?;
    let temporary = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
    tokio::fs::write(&temporary, bytes).await?;
    match tokio::fs::rename(&temporary, path).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = tokio::fs::remove_file(&temporary).await;
            Err(e)
        }
    }
}

#[async_trait]
impl PackageStore for DirPackageStore {
    async fn index(&self) -> Result<Option<(PackageIndex, Revision)>, PackageStoreError> {
        Ok(self
            .read_index()
            .await?
            .map(|s| (s.index, Revision(s.revision.to_string()))))
    }

    async fn put_index(
        &self,
        index: &PackageIndex,
        expected: Option<&Revision>,
    ) -> Result<(), PackageStoreError> {
        tokio::fs::create_dir_all(&self.root)
            .await
            .map_err(|e| Self::backend("packages directory", e))?;
        let _lock = Lock::take(self.root.join("index.lock"))
            .await
            .map_err(|e| Self::backend("index.lock", e))?;
        let current = self.read_index().await?.map(|s| s.revision);
        let expected = match expected {
            Some(r) => Some(
                r.0.parse::<u64>()
                    .map_err(|_| PackageStoreError::Conflict)?,
            ),
            None => None,
        };
        if current != expected {
            return Err(PackageStoreError::Conflict);
        }
        let stored = Stored {
            revision: current.map_or(1, |r| r + 1),
            index: index.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&stored).expect("an index serializes");
        write_atomic(&self.index_path(), &bytes)
            .await
            .map_err(|e| Self::backend("index.json", e))
    }

    async fn get_bundle(&self, key: &ContentKey) -> Result<Option<Bytes>, PackageStoreError> {
        match tokio::fs::read(self.bundle_dir().join(key.as_str())).await {
            Ok(bytes) => verified(key, Bytes::from(bytes)).map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::backend(format!("bundle {key}"), e)),
        }
    }

    async fn put_bundle(&self, bytes: &Bytes) -> Result<ContentKey, PackageStoreError> {
        let key = ContentKey::of(bytes);
        let path = self.bundle_dir().join(key.as_str());
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(key);
        }
        write_atomic(&path, bytes)
            .await
            .map_err(|e| Self::backend(format!("bundle {key}"), e))?;
        Ok(key)
    }
}
