//! A `/work` file stored in chunks: a small manifest naming content-defined
//! chunks of the file's bytes (FastCDC), each compressed with zstd and
//! stored as its own content-addressed object in the tenant's
//! [`FileStore`], so appending to a large file stores about one chunk, two
//! files that share most bytes share most chunks, and a read of a part
//! fetches only the chunks it covers.
//!
//! Every object is a plain [`FileStore`] object (named by the SHA-256 of
//! the bytes stored), so every backend holds chunked files with no change
//! to the seam, and every read is verified by the store. Manifest layout:
//! `MCPV8FILE\0`, the file's length (u64 LE), the chunk count (u32 LE),
//! then per chunk the SHA-256 of its stored (compressed) bytes (32 bytes)
//! and its raw length (u32 LE). A tree entry names the manifest's key and
//! says it is one (`chunked`); entries of heaps made before chunking name
//! the file's bytes stored whole, which read as they always did.

use bytes::Bytes;

use super::{FileStore, FileStoreError};
use crate::backends::content::ContentKey;
use crate::tenant::Tenant;
use crate::units::MIB;

/// The ten bytes every file manifest starts with.
pub const FILE_MAGIC: &[u8; 10] = b"MCPV8FILE\0";
const FIXED_LEN: usize = FILE_MAGIC.len() + 8 + 4;
const ENTRY_LEN: usize = 32 + 4;

/// FastCDC's bounds for file bytes: chunks of 256 KiB to 2 MiB, 1 MiB on
/// average, so a 1 GiB file is about a thousand objects and an append
/// rewrites one or two of them. 2 MiB also bounds what one read of the
/// worker's pipe carries.
pub const MIN_CHUNK: usize = 256 * 1024;
/// The average chunk.
pub const AVG_CHUNK: usize = MIB;
/// The largest chunk.
pub const MAX_CHUNK: usize = 2 * MIB;

/// zstd level 1, as heaps use: fast enough to keep up with a disk.
const LEVEL: i32 = 1;

/// One chunk of a stored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChunk {
    /// The key of its stored (compressed) bytes.
    pub key: ContentKey,
    /// Its raw length.
    pub len: u32,
}

/// A file as its chunks, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileManifest {
    /// The file's length: the sum of its chunks' raw lengths.
    pub len: u64,
    /// In file order.
    pub chunks: Vec<FileChunk>,
}

impl FileManifest {
    /// The manifest of `chunks`.
    pub fn of(chunks: Vec<FileChunk>) -> Self {
        let len = chunks.iter().map(|c| u64::from(c.len)).sum();
        Self { len, chunks }
    }

    /// Its stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + ENTRY_LEN * self.chunks.len());
        out.extend_from_slice(FILE_MAGIC);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for chunk in &self.chunks {
            let digest = hex::decode(chunk.key.as_str()).expect("a content key is hex");
            out.extend_from_slice(&digest);
            out.extend_from_slice(&chunk.len.to_le_bytes());
        }
        out
    }

    /// Reads a stored manifest; `Err` says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < FIXED_LEN || &bytes[..FILE_MAGIC.len()] != FILE_MAGIC {
            return Err("not a file manifest (bad magic or too short)".into());
        }
        let mut at = FILE_MAGIC.len();
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        at += 8;
        let count = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 4;
        if bytes.len() != FIXED_LEN + count * ENTRY_LEN {
            return Err(format!(
                "a manifest of {count} chunks is {} bytes, not {}",
                FIXED_LEN + count * ENTRY_LEN,
                bytes.len()
            ));
        }
        let mut chunks = Vec::with_capacity(count);
        for _ in 0..count {
            let key =
                ContentKey::parse(&hex::encode(&bytes[at..at + 32])).expect("32 bytes of hex");
            let len = u32::from_le_bytes(bytes[at + 32..at + 36].try_into().expect("4 bytes"));
            if len as usize > MAX_CHUNK {
                return Err(format!("chunk {key} claims {len} bytes, over {MAX_CHUNK}"));
            }
            chunks.push(FileChunk { key, len });
            at += ENTRY_LEN;
        }
        let manifest = Self { len, chunks };
        let sum: u64 = manifest.chunks.iter().map(|c| u64::from(c.len)).sum();
        if sum != len {
            return Err(format!(
                "its chunks hold {sum} bytes, not the {len} it states"
            ));
        }
        Ok(manifest)
    }

    /// Where each chunk starts in the file.
    pub fn offsets(&self) -> Vec<u64> {
        let mut at = 0;
        self.chunks
            .iter()
            .map(|c| {
                let start = at;
                at += u64::from(c.len);
                start
            })
            .collect()
    }
}

/// A chunk's stored bytes: zstd of `raw`.
pub fn compress(raw: &[u8]) -> Bytes {
    Bytes::from(zstd::bulk::compress(raw, LEVEL).expect("zstd compresses any input"))
}

/// The raw bytes of `chunk` from its stored bytes (verified by the store
/// against its key already). Decompression is bounded by the length the
/// manifest states, so damaged bytes cannot make the reader allocate more.
pub fn decompress(chunk: &FileChunk, stored: &[u8]) -> Result<Vec<u8>, String> {
    let raw = zstd::bulk::decompress(stored, chunk.len as usize)
        .map_err(|e| format!("chunk {} does not decompress ({e})", chunk.key))?;
    if raw.len() != chunk.len as usize {
        return Err(format!(
            "chunk {} holds {} bytes, not {}",
            chunk.key,
            raw.len(),
            chunk.len
        ));
    }
    Ok(raw)
}

/// Why a stored file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] FileStoreError),
    /// An object the file needs is missing (expired or deleted).
    #[error("{what} {key} is missing from the file store")]
    Missing {
        /// `manifest`, `chunk` or `file`.
        what: &'static str,
        /// Its key.
        key: ContentKey,
    },
    /// The manifest or a chunk is damaged.
    #[error("{0}")]
    Damaged(String),
}

/// The stored object `key` (a `what` of a file), or [`ReadError::Missing`].
async fn object(
    store: &dyn FileStore,
    tenant: &Tenant,
    what: &'static str,
    key: &ContentKey,
) -> Result<Bytes, ReadError> {
    store
        .get(tenant, key)
        .await?
        .ok_or_else(|| ReadError::Missing {
            what,
            key: key.clone(),
        })
}

/// Bytes `start..end` (clamped to the file) of the file `key` names (a
/// manifest when `chunked`, else the bytes stored whole), fetching only the
/// chunks they cover.
pub async fn read_range(
    store: &dyn FileStore,
    tenant: &Tenant,
    key: &ContentKey,
    chunked: bool,
    start: u64,
    end: u64,
) -> Result<Bytes, ReadError> {
    if !chunked {
        let bytes = object(store, tenant, "file", key).await?;
        let end = (end as usize).min(bytes.len());
        return Ok(bytes.slice((start as usize).min(end)..end));
    }
    let manifest = FileManifest::decode(&object(store, tenant, "manifest", key).await?)
        .map_err(ReadError::Damaged)?;
    let end = end.min(manifest.len);
    let mut out = Vec::with_capacity(end.saturating_sub(start) as usize);
    for (chunk, at) in manifest.chunks.iter().zip(manifest.offsets()) {
        let stop = at + u64::from(chunk.len);
        if stop <= start || at >= end {
            continue;
        }
        let stored = object(store, tenant, "chunk", &chunk.key).await?;
        let raw = decompress(chunk, &stored).map_err(ReadError::Damaged)?;
        let from = start.max(at) - at;
        let to = end.min(stop) - at;
        out.extend_from_slice(&raw[from as usize..to as usize]);
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: u8, len: u32) -> FileChunk {
        FileChunk {
            key: ContentKey::of(&[n]),
            len,
        }
    }

    #[test]
    fn a_manifest_round_trips_and_damage_is_named() {
        let manifest = FileManifest::of(vec![chunk(1, 10), chunk(2, 5)]);
        assert_eq!(manifest.len, 15);
        assert_eq!(manifest.offsets(), vec![0, 10]);
        let bytes = manifest.encode();
        assert_eq!(FileManifest::decode(&bytes).unwrap(), manifest);
        assert!(FileManifest::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut lying = bytes.clone();
        lying[10] = 99;
        assert!(
            FileManifest::decode(&lying)
                .unwrap_err()
                .contains("not the 99")
        );
        assert!(FileManifest::decode(b"MCPV8SNAP\0").is_err());
    }

    #[test]
    fn a_chunk_decompresses_only_to_its_stated_length() {
        let raw = vec![7u8; 1000];
        let stored = compress(&raw);
        let right = FileChunk {
            key: ContentKey::of(&stored),
            len: 1000,
        };
        assert_eq!(decompress(&right, &stored).unwrap(), raw);
        let short = FileChunk { len: 999, ..right };
        assert!(decompress(&short, &stored).is_err());
    }
}
