//! A run's local disk: the files it writes, as files of a folder of its
//! own under the scratch root, never in its memory. A file written this
//! run is a *blob*: optionally a stored prefix (the chunks of the stored
//! file it continues, so appending to a 1 GiB file fetches and stores
//! only its last chunk) and a local tail; stored files are read a chunk at
//! a time. When the run's heap is kept, each blob the tree still names is
//! sealed ([`super::seal`]) for the host to store before the heap
//! (docs/storage.md, "Files of /work").

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use crate::backends::content::ContentKey;
use crate::files::chunked::{self, FileChunk, FileManifest};

use super::quota::Quota;
use crate::units::MIB;

/// Reads a stored object by key, as the run's file source does.
pub(crate) type Fetch<'a> = &'a mut dyn FnMut(&ContentKey) -> Result<Option<Bytes>, String>;

pub(crate) use super::error::{DiskError, DiskResult};

/// How many decompressed chunks a run keeps for its next reads (2 MiB at
/// most each): a stream reads a chunk in many small pieces.
const CACHED_CHUNKS: usize = 8;

/// `ENOMEM` unless a read of `len` bytes fits the `room` the run's memory
/// holds: said before anything is read, with how to read less at once.
fn fits(len: u64, room: u64) -> DiskResult<()> {
    if len <= room {
        return Ok(());
    }
    Err(DiskError::new(
        "ENOMEM",
        format!(
            "reading {len} bytes at once needs more than the run's memory holds ({room} bytes, \
             heap_memory_max_mb, ArrayBuffers included): read the file in pieces, with \
             fs.createReadStream(path) (node:readline's createInterface for lines) or fs.readSync \
             with a position, or raise heap_memory_max_mb"
        ),
    ))
}

/// A stored prefix of a blob.
#[derive(Debug, Clone, Default)]
pub(super) struct Base {
    pub(super) chunks: Vec<FileChunk>,
    pub(super) offsets: Vec<u64>,
    pub(super) len: u64,
}

impl Base {
    fn of(manifest: &FileManifest) -> Self {
        Self {
            offsets: manifest.offsets(),
            chunks: manifest.chunks.clone(),
            len: manifest.len,
        }
    }
}

/// One file written in this run.
#[derive(Debug)]
pub(super) struct Blob {
    /// Shared with the manifest cache and copies: reads clone the handle,
    /// not the chunk list.
    pub(super) base: Arc<Base>,
    /// The local bytes after the base.
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) tail: u64,
}

impl Blob {
    fn size(&self) -> u64 {
        self.base.len + self.tail
    }
}

/// A run's local disk.
#[derive(Debug)]
pub(crate) struct Disk {
    /// The run's folder, made on first write.
    pub(super) home: Option<PathBuf>,
    pub(super) dir: Option<PathBuf>,
    pub(super) quota: Quota,
    pub(super) next: u32,
    pub(super) blobs: HashMap<u32, Blob>,
    pub(super) used: u64,
    pub(super) manifests: HashMap<ContentKey, Arc<Base>>,
    pub(super) chunks: VecDeque<(ContentKey, Arc<Vec<u8>>)>,
    pub(super) whole: Option<(ContentKey, Bytes)>,
    /// Objects written to `out/`, for the host to store.
    pub(super) sealed: Vec<ContentKey>,
    pub(super) sealed_set: HashSet<ContentKey>,
}

impl Disk {
    /// A disk in the folder `home` (made on first write; `None`: no local
    /// disk), holding what `quota` allows.
    pub(crate) fn new(home: Option<PathBuf>, quota: Quota) -> Self {
        Self {
            home,
            dir: None,
            quota,
            next: 1,
            blobs: HashMap::new(),
            used: 0,
            manifests: HashMap::new(),
            chunks: VecDeque::new(),
            whole: None,
            sealed: Vec::new(),
            sealed_set: HashSet::new(),
        }
    }

    /// The run's folder, made now if need be.
    pub(super) fn dir(&mut self) -> DiskResult<PathBuf> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let dir = self.home.clone().ok_or_else(|| {
            DiskError::new(
                "EROFS",
                "this server has no local disk for /work (no scratch directory is configured)",
            )
        })?;
        std::fs::create_dir_all(dir.join("out"))
            .map_err(|e| DiskError::io("making the run's scratch folder", e))?;
        self.dir = Some(dir.clone());
        Ok(dir)
    }

    pub(super) fn blob(&mut self, id: u32) -> DiskResult<&mut Blob> {
        self.blobs
            .get_mut(&id)
            .ok_or_else(|| DiskError::new("EBADF", format!("file {id} is not open in this run")))
    }

    /// Room for `more` local bytes, or ENOSPC naming the setting.
    fn reserve(&mut self, more: u64) -> DiskResult<()> {
        let dir = self.dir()?;
        self.quota.reserve(&dir, self.used, more)?;
        self.used += more;
        Ok(())
    }

    /// A new empty file.
    pub(crate) fn create(&mut self) -> DiskResult<u32> {
        self.with_base(Arc::default())
    }

    fn with_base(&mut self, base: Arc<Base>) -> DiskResult<u32> {
        let dir = self.dir()?;
        let id = self.next;
        self.next += 1;
        let path = dir.join(format!("b{id}"));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| DiskError::io("making a local file", e))?;
        self.blobs.insert(
            id,
            Blob {
                base,
                file,
                path,
                tail: 0,
            },
        );
        Ok(id)
    }

    /// A file that continues the stored file `key` (a manifest when
    /// `chunked`, else bytes stored whole, which are copied locally).
    pub(crate) fn derive(
        &mut self,
        key: &ContentKey,
        chunked: bool,
        fetch: Fetch,
    ) -> DiskResult<u32> {
        if chunked {
            let base = self.manifest(key, fetch)?;
            return self.with_base(base);
        }
        let bytes = self.whole(key, fetch)?;
        let id = self.create()?;
        self.write(id, Some(0), &bytes, fetch)?;
        Ok(id)
    }

    /// A copy of file `id`.
    pub(crate) fn copy(&mut self, id: u32) -> DiskResult<u32> {
        let (base, path, tail) = {
            let blob = self.blob(id)?;
            (blob.base.clone(), blob.path.clone(), blob.tail)
        };
        self.reserve(tail)?;
        let copy = self.with_base(base).inspect_err(|_| self.used -= tail)?;
        let to = self.blobs[&copy].path.clone();
        if let Err(e) = std::fs::copy(&path, &to) {
            self.remove(copy);
            return Err(DiskError::io("copying a local file", e));
        }
        self.blobs.get_mut(&copy).expect("just made").tail = tail;
        Ok(copy)
    }

    /// Forgets file `id` and frees its local bytes.
    pub(crate) fn remove(&mut self, id: u32) {
        if let Some(blob) = self.blobs.remove(&id) {
            self.used -= blob.tail;
            let _ = std::fs::remove_file(&blob.path);
        }
    }

    /// The size of file `id`.
    pub(crate) fn size(&mut self, id: u32) -> DiskResult<u64> {
        Ok(self.blob(id)?.size())
    }

    /// Writes `bytes` at `at` (the end when `None`); the file's new size.
    /// Checked before anything is written: a write the quota refuses
    /// changes nothing.
    pub(crate) fn write(
        &mut self,
        id: u32,
        at: Option<u64>,
        bytes: &[u8],
        fetch: Fetch,
    ) -> DiskResult<u64> {
        let (base_len, size) = {
            let blob = self.blob(id)?;
            (blob.base.len, blob.size())
        };
        let at = at.unwrap_or(size);
        if at < base_len && !bytes.is_empty() {
            self.materialize(id, fetch)?;
            return self.write(id, Some(at), bytes, fetch);
        }
        let end = at + bytes.len() as u64;
        self.reserve(end.saturating_sub(size))?;
        let blob = self.blobs.get_mut(&id).expect("checked above");
        let local = at - blob.base.len;
        if let Err(e) = blob.file.write_all_at(bytes, local) {
            // What the write added is given back; bytes already there stay.
            let _ = blob.file.set_len(blob.tail);
            self.used -= end.saturating_sub(size);
            return Err(DiskError::io("writing a local file", e));
        }
        blob.tail = blob.tail.max(end - blob.base.len);
        Ok(blob.size())
    }

    /// Sets file `id`'s size to `len`, cutting or adding zeros.
    pub(crate) fn truncate(&mut self, id: u32, len: u64, fetch: Fetch) -> DiskResult<()> {
        let (base_len, size) = {
            let blob = self.blob(id)?;
            (blob.base.len, blob.size())
        };
        if len == 0 && base_len > 0 {
            // Cut to nothing: the stored part is dropped, not fetched.
            let blob = self.blobs.get_mut(&id).expect("checked above");
            blob.base = Arc::default();
            let tail = blob.tail;
            blob.tail = 0;
            self.used -= tail;
            return blob
                .file
                .set_len(0)
                .map_err(|e| DiskError::io("resizing a local file", e));
        }
        if len < base_len {
            self.materialize(id, fetch)?;
            return self.truncate(id, len, fetch);
        }
        self.reserve(len.saturating_sub(size))?;
        let blob = self.blobs.get_mut(&id).expect("checked above");
        let tail = len - base_len;
        if let Err(e) = blob.file.set_len(tail) {
            self.used -= len.saturating_sub(size);
            return Err(DiskError::io("resizing a local file", e));
        }
        self.used -= blob.tail.saturating_sub(tail);
        blob.tail = tail;
        Ok(())
    }

    /// Makes file `id` wholly local: a write or cut inside its stored part.
    fn materialize(&mut self, id: u32, fetch: Fetch) -> DiskResult<()> {
        let base_len = self.blob(id)?.base.len;
        self.reserve(base_len)?;
        let dir = self.dir()?;
        let path = dir.join(format!("m{id}"));
        let made = (|| {
            let mut file = File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| DiskError::io("making a local file", e))?;
            let base = self.blobs[&id].base.clone();
            for chunk in &base.chunks {
                let raw = self.chunk(chunk, fetch)?;
                file.write_all(&raw)
                    .map_err(|e| DiskError::io("writing a local file", e))?;
            }
            let blob = &self.blobs[&id];
            let mut tail = vec![0; MIB];
            let mut at = 0;
            while at < blob.tail {
                let n = (blob.tail - at).min(tail.len() as u64) as usize;
                blob.file
                    .read_exact_at(&mut tail[..n], at)
                    .map_err(|e| DiskError::io("reading a local file", e))?;
                file.write_all(&tail[..n])
                    .map_err(|e| DiskError::io("writing a local file", e))?;
                at += n as u64;
            }
            Ok(file)
        })();
        let file = match made {
            Ok(file) => file,
            Err(e) => {
                self.used -= base_len;
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let blob = self.blobs.get_mut(&id).expect("checked above");
        let _ = std::fs::remove_file(&blob.path);
        std::fs::rename(&path, &blob.path)
            .map_err(|e| DiskError::io("renaming a local file", e))?;
        blob.file = file;
        blob.tail += base_len;
        blob.base = Arc::default();
        Ok(())
    }

    /// Up to `len` bytes of file `id` from `at`, refused (`ENOMEM`) past
    /// `room`, what the run's memory holds at most.
    pub(crate) fn read(
        &mut self,
        id: u32,
        at: u64,
        len: u64,
        room: u64,
        fetch: Fetch,
    ) -> DiskResult<Vec<u8>> {
        let (base, size) = {
            let blob = self.blob(id)?;
            (blob.base.clone(), blob.size())
        };
        let end = size.min(at.saturating_add(len));
        if at >= end {
            return Ok(Vec::new());
        }
        fits(end - at, room)?;
        let mut out = Vec::with_capacity((end - at) as usize);
        if at < base.len {
            self.read_base(&base, at, end.min(base.len), &mut out, fetch)?;
        }
        if end > base.len {
            let from = at.max(base.len);
            let blob = &self.blobs[&id];
            let start = out.len();
            out.resize(start + (end - from) as usize, 0);
            blob.file
                .read_exact_at(&mut out[start..], from - base.len)
                .map_err(|e| DiskError::io("reading a local file", e))?;
        }
        Ok(out)
    }

    /// Up to `len` bytes from `at` of the stored file `key`.
    pub(crate) fn read_stored(
        &mut self,
        key: &ContentKey,
        chunked: bool,
        at: u64,
        len: u64,
        room: u64,
        fetch: Fetch,
    ) -> DiskResult<Vec<u8>> {
        if !chunked {
            let bytes = self.whole(key, fetch)?;
            let start = (at as usize).min(bytes.len());
            let end = (at.saturating_add(len) as usize).min(bytes.len());
            fits((end - start) as u64, room)?;
            return Ok(bytes[start..end].to_vec());
        }
        let base = self.manifest(key, fetch)?;
        let end = base.len.min(at.saturating_add(len));
        fits(end.saturating_sub(at), room)?;
        let mut out = Vec::with_capacity(end.saturating_sub(at) as usize);
        if at < end {
            self.read_base(&base, at, end, &mut out, fetch)?;
        }
        Ok(out)
    }

    /// Bytes `at..end` of a stored prefix, appended to `out`.
    fn read_base(
        &mut self,
        base: &Base,
        at: u64,
        end: u64,
        out: &mut Vec<u8>,
        fetch: Fetch,
    ) -> DiskResult<()> {
        let first = base.offsets.partition_point(|&o| o <= at).saturating_sub(1);
        for (chunk, &start) in base.chunks.iter().zip(&base.offsets).skip(first) {
            if start >= end {
                break;
            }
            let raw = self.chunk(chunk, fetch)?;
            let from = at.max(start) - start;
            let to = (end.min(start + u64::from(chunk.len)) - start) as usize;
            out.extend_from_slice(&raw[from as usize..to]);
        }
        Ok(())
    }

    fn missing(what: &str, key: &ContentKey) -> DiskError {
        DiskError::new(
            "EIO",
            format!(
                "the file's {what} {key} is missing from the store (it may have expired with its heap)"
            ),
        )
    }

    fn object(key: &ContentKey, what: &str, fetch: Fetch) -> DiskResult<Bytes> {
        fetch(key)
            .map_err(|why| DiskError::new("EIO", format!("reading the file failed: {why}")))?
            .ok_or_else(|| Self::missing(what, key))
    }

    fn manifest(&mut self, key: &ContentKey, fetch: Fetch) -> DiskResult<Arc<Base>> {
        if let Some(base) = self.manifests.get(key) {
            return Ok(base.clone());
        }
        let bytes = Self::object(key, "manifest", fetch)?;
        let manifest = FileManifest::decode(&bytes).map_err(|why| {
            DiskError::new(
                "EIO",
                format!("the file's manifest {key} is damaged: {why}"),
            )
        })?;
        let base = Arc::new(Base::of(&manifest));
        self.manifests.insert(key.clone(), base.clone());
        Ok(base)
    }

    pub(super) fn chunk(&mut self, chunk: &FileChunk, fetch: Fetch) -> DiskResult<Arc<Vec<u8>>> {
        if let Some(at) = self.chunks.iter().position(|(k, _)| *k == chunk.key) {
            let hit = self.chunks.remove(at).expect("found");
            self.chunks.push_front(hit.clone());
            return Ok(hit.1);
        }
        let stored = Self::object(&chunk.key, "chunk", fetch)?;
        let raw = Arc::new(
            chunked::decompress(chunk, &stored).map_err(|why| DiskError::new("EIO", why))?,
        );
        self.chunks.push_front((chunk.key.clone(), raw.clone()));
        self.chunks.truncate(CACHED_CHUNKS);
        Ok(raw)
    }

    fn whole(&mut self, key: &ContentKey, fetch: Fetch) -> DiskResult<Bytes> {
        if let Some((held, bytes)) = &self.whole
            && held == key
        {
            return Ok(bytes.clone());
        }
        let bytes = Self::object(key, "contents", fetch)?;
        self.whole = Some((key.clone(), bytes.clone()));
        Ok(bytes)
    }
}

impl Drop for Disk {
    // A run that ends without `finish` (its isolate thrown away) leaves
    // nothing behind.
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::host::disk::seal::Kept;

    /// Stored objects in memory, read as a run's file source would.
    #[derive(Default)]
    struct Objects(HashMap<ContentKey, Bytes>, usize);

    impl Objects {
        fn store(&mut self, disk: &Kept) {
            for key in &disk.objects {
                let bytes = std::fs::read(disk.path_of(key).unwrap()).unwrap();
                assert_eq!(ContentKey::of(&bytes), *key);
                self.0.insert(key.clone(), bytes.into());
            }
        }
        fn fetch(&mut self) -> impl FnMut(&ContentKey) -> Result<Option<Bytes>, String> + '_ {
            |key| {
                self.1 += 1;
                Ok(self.0.get(key).cloned())
            }
        }
    }

    fn data(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 61 + 32) as u8
            })
            .collect()
    }

    #[test]
    fn a_file_written_sealed_and_appended_to_keeps_its_bytes_and_most_chunks() {
        let root = tempfile::tempdir().unwrap();
        let mut objects = Objects::default();
        let bytes = data(9 * MIB, 3);
        let mut disk = Disk::new(
            Some(root.path().join("run")),
            Quota::new(64 << 20, u64::MAX),
        );
        let id = disk.create().unwrap();
        for piece in bytes.chunks(1 << 20) {
            disk.write(id, None, piece, &mut objects.fetch()).unwrap();
        }
        assert_eq!(
            disk.read(id, 5, 10, u64::MAX, &mut objects.fetch())
                .unwrap(),
            bytes[5..15]
        );
        let sealed = disk.seal(id, &mut objects.fetch()).unwrap();
        let key = sealed.manifest.unwrap();
        assert_eq!(sealed.whole, Some(ContentKey::of(&bytes)));
        let mut kept = disk.finish();
        objects.store(&kept);
        kept.discard();
        let first = objects.0.len();
        assert!(first > 4, "9 MiB is several chunks, got {first} objects");

        // A later run appends a line: one chunk or two are new.
        let mut disk = Disk::new(
            Some(root.path().join("run")),
            Quota::new(64 << 20, u64::MAX),
        );
        let id = disk.derive(&key, true, &mut objects.fetch()).unwrap();
        assert_eq!(disk.size(id).unwrap(), bytes.len() as u64);
        disk.write(id, None, b"one more line\n", &mut objects.fetch())
            .unwrap();
        let middle = disk
            .read(id, 4_000_000, 100, u64::MAX, &mut objects.fetch())
            .unwrap();
        assert_eq!(middle, bytes[4_000_000..4_000_100]);
        let appended = disk
            .seal(id, &mut objects.fetch())
            .unwrap()
            .manifest
            .unwrap();
        let mut kept = disk.finish();
        let added: Vec<_> = kept
            .objects
            .iter()
            .filter(|k| !objects.0.contains_key(k))
            .cloned()
            .collect();
        assert!(
            added.len() <= 3,
            "an append stores its manifest and a chunk or two, got {}",
            added.len()
        );
        objects.store(&kept);
        kept.discard();
        let mut expected = bytes.clone();
        expected.extend_from_slice(b"one more line\n");
        let mut disk = Disk::new(
            Some(root.path().join("run")),
            Quota::new(64 << 20, u64::MAX),
        );
        let all = disk
            .read_stored(&appended, true, 0, u64::MAX, u64::MAX, &mut objects.fetch())
            .unwrap();
        assert_eq!(all, expected);
        // A write in the middle of the stored part brings the file local.
        let id = disk.derive(&appended, true, &mut objects.fetch()).unwrap();
        disk.write(id, Some(10), b"XY", &mut objects.fetch())
            .unwrap();
        expected[10..12].copy_from_slice(b"XY");
        assert_eq!(
            disk.read(id, 0, u64::MAX, u64::MAX, &mut objects.fetch())
                .unwrap(),
            expected
        );
        disk.truncate(id, 100, &mut objects.fetch()).unwrap();
        assert_eq!(
            disk.read(id, 0, u64::MAX, u64::MAX, &mut objects.fetch())
                .unwrap(),
            expected[..100]
        );
        drop(disk);
        assert_eq!(
            std::fs::read_dir(root.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name() != ".lock")
                .count(),
            0,
            "nothing left"
        );
    }

    #[test]
    fn a_write_past_the_quota_is_refused_and_changes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let mut objects = Objects::default();
        let mut disk = Disk::new(Some(root.path().join("run")), Quota::new(1 << 20, u64::MAX));
        let id = disk.create().unwrap();
        disk.write(id, None, &[1; 1000], &mut objects.fetch())
            .unwrap();
        let refused = disk
            .write(id, None, &vec![2; 1 << 20], &mut objects.fetch())
            .unwrap_err();
        assert_eq!(refused.code, "ENOSPC");
        assert!(
            refused.hint.contains("MCP_V8_RUN_DISK_MB"),
            "{}",
            refused.hint
        );
        assert_eq!(disk.size(id).unwrap(), 1000);
        // Removing a file gives its room back.
        disk.remove(id);
        let id = disk.create().unwrap();
        disk.write(id, None, &vec![3; 1 << 20], &mut objects.fetch())
            .unwrap();
        assert_eq!(disk.finish().objects.len(), 0);
        assert!(!root.path().join("run").exists());
    }

    #[test]
    fn a_missing_chunk_is_an_eio_that_names_it() {
        let root = tempfile::tempdir().unwrap();
        let mut objects = Objects::default();
        let mut disk = Disk::new(
            Some(root.path().join("run")),
            Quota::new(64 << 20, u64::MAX),
        );
        let id = disk.create().unwrap();
        disk.write(id, None, &data(3 << 20, 9), &mut objects.fetch())
            .unwrap();
        let key = disk
            .seal(id, &mut objects.fetch())
            .unwrap()
            .manifest
            .unwrap();
        let kept = disk.finish();
        objects.store(&kept);
        let chunk = kept.objects.iter().find(|k| **k != key).unwrap().clone();
        objects.0.remove(&chunk);
        let mut disk = Disk::new(
            Some(root.path().join("run")),
            Quota::new(64 << 20, u64::MAX),
        );
        let error = disk
            .read_stored(&key, true, 0, u64::MAX, u64::MAX, &mut objects.fetch())
            .unwrap_err();
        assert_eq!(error.code, "EIO");
        assert!(error.hint.contains(chunk.as_str()), "{}", error.hint);
    }
}
