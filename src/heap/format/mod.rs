//! The chunked heap format: a stored heap as a small manifest naming content-defined chunks of the
//! raw V8 payload (FastCDC), each compressed with zstd and kept once under
//! the SHA-256 of its raw bytes, so heaps that share most of their bytes
//! share most of their chunks. The heap key stays the SHA-256 of the whole
//! raw payload, checked when a heap is put back together.
//!
//! Manifest layout: `MCPV8CHNK\0`, the heap key's 32 bytes, the payload's
//! length (u64 LE), the chunks' generation (u32 LE, the UTC day their
//! folder is named by on S3; 0 where a store has no generations), the chunk
//! count (u32 LE), then per chunk its raw SHA-256 (32 bytes) and raw length
//! (u32 LE).
//!
//! One file per job: [`cut`] splits a payload into chunks, [`manifest`]
//! names them and puts a heap back together, [`whole`] keeps a small heap
//! in one object. This file holds what they share: the error, a chunk's
//! reference and its decompression.

mod cut;
mod manifest;
mod whole;

use crate::backends::content::digest;

use super::key::HeapKey;

pub use cut::{StoredChunk, compress_all, split};
pub(crate) use cut::{keyed, split_keyed, split_unkeyed};
pub use manifest::{MANIFEST_MAGIC, Manifest};
pub use whole::{WHOLE_BELOW, WHOLE_MAGIC, decode_whole, encode_whole, is_whole};

/// zstd level 1: docs/performance.md measured 5.4x on a small heap in about
/// 0.8 ms.
const LEVEL: i32 = 1;

/// Why bytes are not a usable chunked heap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// Not a manifest.
    #[error("not a chunked-heap manifest (no MCPV8CHNK magic)")]
    BadMagic,
    /// Shorter than its own counts say.
    #[error("the manifest is {len} bytes, shorter than its header and chunk list")]
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// A manifest of another heap.
    #[error("the manifest is of heap {actual}, not the heap asked for")]
    KeyMismatch {
        /// The heap it names.
        actual: HeapKey,
    },
    /// The chunks' lengths do not add up to the payload's.
    #[error("the manifest's chunks add up to {sum} bytes, not the payload's {len}")]
    Inconsistent {
        /// The chunks' total.
        sum: u64,
        /// The payload length it states.
        len: u64,
    },
    /// A stored chunk does not decompress to its length, or not to its hash.
    #[error("chunk {key} is corrupt: {why}")]
    CorruptChunk {
        /// The chunk's key (hex).
        key: String,
        /// What was wrong.
        why: String,
    },
    /// A chunk the manifest names is not in the store.
    #[error(
        "chunk {key} is missing from the store (expired or deleted), so the heap cannot be put back together"
    )]
    MissingChunk {
        /// The chunk's key (hex).
        key: String,
    },
    /// A heap stored whole does not decompress to its stated length.
    #[error("the compressed heap is corrupt: {why}")]
    CorruptWhole {
        /// What was wrong.
        why: String,
    },
    /// The chunks put together are not the heap's payload.
    #[error(
        "its bytes, decompressed and put together, do not hash to heap {key} (altered or damaged)"
    )]
    PayloadMismatch {
        /// The heap asked for.
        key: HeapKey,
    },
}

/// One chunk a manifest names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    /// SHA-256 of the raw chunk.
    pub digest: [u8; 32],
    /// Raw length.
    pub len: u32,
}

impl ChunkRef {
    /// The chunk's key: its digest in lowercase hex.
    pub fn key(&self) -> String {
        hex::encode(self.digest)
    }
}

/// The raw bytes of `chunk` from its stored form, verified. Decompression
/// is bounded by the length the manifest states, so a tampered chunk cannot
/// make the reader allocate more.
pub fn decompress(chunk: &ChunkRef, stored: &[u8]) -> Result<Vec<u8>, ChunkError> {
    let corrupt = |why: String| ChunkError::CorruptChunk {
        key: chunk.key(),
        why,
    };
    let raw = zstd::bulk::decompress(stored, chunk.len as usize)
        .map_err(|e| corrupt(format!("does not decompress ({e})")))?;
    if raw.len() != chunk.len as usize {
        return Err(corrupt(format!("{} bytes, not {}", raw.len(), chunk.len)));
    }
    if digest(&raw) != chunk.digest {
        return Err(corrupt("its bytes do not hash to its key".into()));
    }
    Ok(raw)
}

/// Bytes that look like a heap to a chunker and a compressor: records of
/// one shape with varied values.
#[cfg(test)]
fn sample_payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u64;
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(
            format!("{{\"i\":{i},\"s\":\"item-{i}\",\"v\":{}}}", state % 100_000).as_bytes(),
        );
        i += 1;
    }
    out.truncate(len);
    out
}
