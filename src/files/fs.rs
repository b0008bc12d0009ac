//! File bytes in a directory: `<dir>/<key>` for the anonymous tenant,
//! `<dir>/tenants/<id>/<key>` for the others (the heaps' layout).

use std::collections::HashSet;
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

    /// Records that a heap of `tenant` stored now names `keys` (its
    /// `/work` files' manifests, or bytes stored whole), for
    /// [`Self::collect`]: a record per set of keys, named by their SHA-256
    /// and aged like the heaps that name it. A set already recorded only
    /// has its time renewed (no write, no sync), so a chain of runs over
    /// the same files costs a `utimes` each; a new set is written and
    /// synced once.
    pub fn write_names(&self, tenant: &Tenant, keys: &[ContentKey]) -> io::Result<()> {
        let names = self.dir.join(NAMES);
        if !names.join(SINCE).exists() {
            std::fs::create_dir_all(&names)?;
            match std::fs::File::create_new(names.join(SINCE)) {
                Ok(file) => file.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        let mut sorted: Vec<&ContentKey> = keys.iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let text: String = sorted.iter().map(|k| format!("{k}\n")).collect();
        let record = names
            .join(tenant.heap_folder().unwrap_or_default())
            .join(ContentKey::of(text.as_bytes()).as_str());
        match std::fs::File::options().write(true).open(&record) {
            Ok(file) => file.set_modified(std::time::SystemTime::now()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_atomically(&record, text.as_bytes())
            }
            Err(e) => Err(e),
        }
    }

    /// Removes the file objects no retained heap names: a record
    /// ([`Self::write_names`]) not renewed within `max_age` (the heaps'
    /// retention and a day, as chunks outlive their heaps) goes, then every
    /// object is removed that no remaining record names, is named by no
    /// kept manifest, was stored after the first record was ever written
    /// (objects of heaps from before are kept: no record names them) and is
    /// older than `grace` (an object stored for a heap that is being stored
    /// now is not named yet). How many it removed.
    pub fn collect(
        &self,
        max_age: std::time::Duration,
        grace: std::time::Duration,
    ) -> io::Result<usize> {
        let names = self.dir.join(NAMES);
        let Ok(since) = std::fs::metadata(names.join(SINCE)).and_then(|m| m.modified()) else {
            return Ok(0);
        };
        let now = std::time::SystemTime::now();
        let young = now.checked_sub(grace).unwrap_or(std::time::UNIX_EPOCH);
        let expired = now.checked_sub(max_age).unwrap_or(std::time::UNIX_EPOCH);
        let mut removed = 0;
        for (tenant, folder) in self.folders()? {
            let mut live: HashSet<String> = HashSet::new();
            let records = names.join(tenant.heap_folder().unwrap_or_default());
            for entry in read_dir_or_empty(&records)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let meta = entry.metadata()?;
                if !meta.is_file() || name.starts_with('.') {
                    continue;
                }
                if meta.modified()? >= expired {
                    let text = std::fs::read_to_string(entry.path())?;
                    live.extend(text.lines().map(str::to_owned));
                } else {
                    std::fs::remove_file(entry.path())?;
                }
            }
            // Objects kept: named, young, or from before any record; then
            // the chunks every kept manifest names.
            let mut objects = Vec::new();
            let mut kept_chunks: HashSet<String> = HashSet::new();
            for entry in read_dir_or_empty(&folder)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let meta = entry.metadata()?;
                if !meta.is_file() || ContentKey::parse(&name).is_none() {
                    continue;
                }
                let modified = meta.modified()?;
                let kept = live.contains(&name) || modified >= young || modified < since;
                if kept
                    && let Ok(bytes) = std::fs::read(entry.path())
                    && let Ok(manifest) = super::chunked::FileManifest::decode(&bytes)
                {
                    kept_chunks.extend(manifest.chunks.iter().map(|c| c.key.to_string()));
                }
                objects.push((entry.path(), name, kept));
            }
            for (path, name, kept) in objects {
                if kept || kept_chunks.contains(&name) {
                    continue;
                }
                match std::fs::remove_file(&path) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(removed)
    }

    /// Each tenant's folder of objects: the anonymous one and `tenants/*`.
    fn folders(&self) -> io::Result<Vec<(Tenant, PathBuf)>> {
        let mut folders = vec![(Tenant::anonymous(), self.dir.clone())];
        for entry in read_dir_or_empty(&self.dir.join("tenants"))? {
            let entry = entry?;
            let id = entry.file_name().to_string_lossy().into_owned();
            if let Some(tenant) = Tenant::from_id(&id) {
                folders.push((tenant, entry.path()));
            }
        }
        Ok(folders)
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

    /// `work` on the blocking pool (the store's file I/O), its failure
    /// named by `key`.
    async fn blocking<T: Send + 'static>(
        key: &str,
        work: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> Result<T, FileStoreError> {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| Self::backend(key, io::Error::other(e)))?
            .map_err(|e| Self::backend(key, e))
    }
}

/// Where heaps' records of the files they name live, beside the objects.
const NAMES: &str = "names";
/// Made with the first record: objects older than it belong to heaps from
/// before records, which no record names.
const SINCE: &str = ".since";

fn read_dir_or_empty(dir: &Path) -> io::Result<Vec<io::Result<std::fs::DirEntry>>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
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
        let refresh = self.refresh;
        Self::blocking(key.as_str(), move || {
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
        .await?;
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
        Self::blocking(key.as_str(), move || {
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
    }

    async fn name_heap(
        &self,
        tenant: &Tenant,
        heap: &str,
        keys: &[ContentKey],
    ) -> Result<(), FileStoreError> {
        let (store, tenant, keys) = (self.clone(), tenant.clone(), keys.to_vec());
        Self::blocking(heap, move || store.write_names(&tenant, &keys)).await
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

    /// A file named only by a heap that is gone is collected, chunks and
    /// manifest; one a retained heap names stays, and so do objects from
    /// before any record (heaps made before records name them).
    #[tokio::test]
    async fn objects_no_retained_heap_names_are_collected() {
        use crate::files::chunked::{FileChunk, FileManifest, compress};
        let dir = tempfile::tempdir().unwrap();
        let store = DirFileStore::new(dir.path());
        let alice = Tenant::of_principal("alice");
        let legacy = store
            .put(&alice, &Bytes::from_static(b"old whole file"))
            .await
            .unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
        let age = |path: std::path::PathBuf| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        };
        age(store.path_of(&alice, &legacy));
        store.write_names(&alice, &[]).unwrap();
        let file = |raw: &'static [u8]| {
            let stored = compress(raw);
            let chunk = FileChunk {
                key: ContentKey::of(&stored),
                len: raw.len() as u32,
            };
            let manifest = Bytes::from(FileManifest::of(vec![chunk.clone()]).encode());
            (stored, chunk.key, manifest)
        };
        let (kept_chunk, kept_chunk_key, kept_manifest) = file(b"kept file");
        let (gone_chunk, gone_chunk_key, gone_manifest) = file(b"gone file");
        let mut keys = Vec::new();
        for bytes in [kept_chunk, kept_manifest, gone_chunk, gone_manifest] {
            keys.push(store.put(&alice, &bytes).await.unwrap());
        }
        // The gone file's record was last renewed long ago (the heaps that
        // named it are gone), and the empty set's; the kept one's now, and
        // naming it again renews it without writing it.
        store.write_names(&alice, &[keys[3].clone()]).unwrap();
        let records = dir.path().join(NAMES).join(alice.heap_folder().unwrap());
        for entry in std::fs::read_dir(&records).unwrap() {
            age(entry.unwrap().path());
        }
        store.write_names(&alice, &[keys[1].clone()]).unwrap();
        store.write_names(&alice, &[keys[1].clone()]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let hour = std::time::Duration::from_secs(3600);
        let removed = store.collect(hour, std::time::Duration::ZERO).unwrap();
        assert_eq!(removed, 2, "the gone file's chunk and manifest");
        for key in [&kept_chunk_key, &keys[1], &legacy] {
            assert!(
                store.get(&alice, key).await.unwrap().is_some(),
                "{key} stays"
            );
        }
        for key in [&gone_chunk_key, &keys[3]] {
            assert!(
                store.get(&alice, key).await.unwrap().is_none(),
                "{key} is collected"
            );
        }
        // Within the grace, nothing unnamed goes.
        let young = store
            .put(&alice, &Bytes::from_static(b"being stored"))
            .await
            .unwrap();
        store.collect(hour, hour).unwrap();
        assert!(store.get(&alice, &young).await.unwrap().is_some());
    }

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
