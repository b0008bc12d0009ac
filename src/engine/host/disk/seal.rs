//! Sealing: when a run's heap is kept, each file it wrote is cut into
//! content-defined chunks, each compressed and named by the SHA-256 of its
//! stored bytes, written beside the run's files (`out/`) with the file's
//! manifest, for the host to store before the heap; then what the run
//! leaves ([`Kept`]) and the sweep of what a dead process left.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::local::{Disk, DiskError, DiskResult, Fetch};
use crate::backends::content::ContentKey;
use crate::files::chunked::{self, FileChunk, FileManifest};
use crate::units::MIB_U64;

/// Chunks compressed at once when a blob is sealed, on rayon's cores.
const SEAL_BATCH: usize = 16;

/// Files sealed by a run no larger than this get the SHA-256 of their whole
/// bytes, which `display()` links blocks to files by.
pub(crate) const WHOLE_DIGEST_UP_TO: u64 = 32 * MIB_U64;

/// A sealed file: its manifest's key (`None` for an empty file) and, when
/// small enough, the SHA-256 of its whole bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub manifest: Option<ContentKey>,
    pub whole: Option<ContentKey>,
}
impl Disk {
    /// Cuts file `id` into stored chunks and its manifest (written to
    /// `out/`, for the host to store) and forgets its local bytes.
    pub(crate) fn seal(&mut self, id: u32, fetch: Fetch) -> DiskResult<Sealed> {
        let (base, tail, path) = {
            let blob = self.blob(id)?;
            (blob.base.clone(), blob.tail, blob.path.clone())
        };
        if base.len + tail == 0 {
            self.remove(id);
            return Ok(Sealed {
                manifest: None,
                whole: None,
            });
        }
        // An append keeps the stored chunks but the last, which is cut
        // again with the new bytes; a file with nothing stored is cut whole.
        let mut chunks: Vec<FileChunk> = Vec::new();
        let mut head: Vec<u8> = Vec::new();
        if let Some((last, kept)) = base.chunks.split_last() {
            if tail == 0 {
                chunks = base.chunks.clone();
            } else {
                chunks.extend_from_slice(kept);
                head = self.chunk(last, fetch)?.to_vec();
            }
        }
        let mut whole = (base.chunks.is_empty() && tail <= WHOLE_DIGEST_UP_TO).then(Sha256::new);
        if tail > 0 {
            let file = File::open(&path).map_err(|e| DiskError::io("reading a local file", e))?;
            let source = std::io::Cursor::new(head).chain(file.take(tail));
            let cuts = fastcdc::v2020::StreamCDC::new(
                source,
                chunked::MIN_CHUNK,
                chunked::AVG_CHUNK,
                chunked::MAX_CHUNK,
            );
            let mut batch = Vec::with_capacity(SEAL_BATCH);
            for cut in cuts {
                let cut =
                    cut.map_err(|e| DiskError::new("EIO", format!("reading a local file: {e}")))?;
                if let Some(hash) = &mut whole {
                    hash.update(&cut.data);
                }
                batch.push(cut.data);
                if batch.len() == SEAL_BATCH {
                    self.store_chunks(&mut batch, &mut chunks)?;
                }
            }
            self.store_chunks(&mut batch, &mut chunks)?;
        }
        let manifest = FileManifest::of(chunks).encode();
        let key = ContentKey::of(&manifest);
        self.put_out(&key, &manifest)?;
        self.remove(id);
        Ok(Sealed {
            manifest: Some(key),
            whole: whole.map(|hash| {
                ContentKey::parse(&hex::encode(hash.finalize())).expect("a digest is a key")
            }),
        })
    }

    /// Compresses `batch` in parallel, writes what `out/` lacks, names
    /// each chunk in `chunks`.
    fn store_chunks(
        &mut self,
        batch: &mut Vec<Vec<u8>>,
        chunks: &mut Vec<FileChunk>,
    ) -> DiskResult<()> {
        use rayon::prelude::*;
        let stored: Vec<(Bytes, u32)> = batch
            .par_iter()
            .map(|raw| (chunked::compress(raw), raw.len() as u32))
            .collect();
        batch.clear();
        for (bytes, len) in stored {
            let key = ContentKey::of(&bytes);
            self.put_out(&key, &bytes)?;
            chunks.push(FileChunk { key, len });
        }
        Ok(())
    }

    fn put_out(&mut self, key: &ContentKey, bytes: &[u8]) -> DiskResult<()> {
        if self.sealed_set.contains(key) {
            return Ok(());
        }
        let dir = self.dir()?;
        std::fs::write(dir.join("out").join(key.as_str()), bytes)
            .map_err(|e| DiskError::io("writing a sealed chunk", e))?;
        self.sealed_set.insert(key.clone());
        self.sealed.push(key.clone());
        Ok(())
    }

    /// Ends the disk: the local files go; what was sealed stays in the
    /// run's folder for the host, which removes the folder once stored
    /// ([`Kept::dir`]).
    pub(crate) fn finish(mut self) -> Kept {
        for id in self.blobs.keys().copied().collect::<Vec<_>>() {
            self.remove(id);
        }
        let dir = self.dir.take();
        if self.sealed.is_empty() {
            if let Some(dir) = &dir {
                let _ = std::fs::remove_dir_all(dir);
            }
            return Kept::default();
        }
        Kept {
            dir,
            objects: std::mem::take(&mut self.sealed),
            names: Vec::new(),
        }
    }
}

/// What a run sealed: objects in `<dir>/out/`, by key, to be stored before
/// its heap; then the folder is removed.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Kept {
    /// The run's scratch folder.
    pub dir: Option<PathBuf>,
    /// The sealed objects' keys.
    pub objects: Vec<ContentKey>,
    /// What the tree names as the run leaves it (manifests, or bytes
    /// stored whole), recorded with the heap it is stored in.
    pub names: Vec<ContentKey>,
}

impl Kept {
    /// Where the object `key` waits.
    pub fn path_of(&self, key: &ContentKey) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|dir| dir.join("out").join(key.as_str()))
    }

    /// Removes the run's folder (after its objects are stored, or when
    /// they never will be).
    pub fn discard(&mut self) {
        self.objects.clear();
        self.names.clear();
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Empties the scratch root `root` of folders left by runs of an earlier
/// process (a crash, a kill): called once when a server starts on it.
pub fn sweep_scratch(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if let Err(e) = removed {
            tracing::warn!(path = %path.display(), error = %e, "could not remove a run's leftover scratch files");
        }
    }
}
