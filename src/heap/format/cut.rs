//! Cutting a payload into content-defined chunks (FastCDC after a head
//! chunk of its own), hashing each and compressing it when a store lacks it.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::HeapKey;
use super::{ChunkRef, LEVEL, Manifest};
use crate::backends::content::digest;

/// The payload's first bytes are a chunk of their own: V8 writes its
/// roots and startup objects there, and they differ in every snapshot
/// (measured: the first ~130 KB of two snapshots one record apart), so
/// whatever content-defined chunk held them would be stored anew each time.
const HEAD_CHUNK: usize = 256 * 1024;

/// FastCDC's bounds after the head: an average chunk of a 32nd of the
/// payload, a power of two from 64 KiB to 512 KiB, chunks a quarter to four
/// times that. A one-record change touches the head and two or three
/// chunks elsewhere (V8 rewrites a few scattered bytes), so a smaller heap
/// needs smaller chunks for a change to store a small part of it; a larger
/// one keeps them large, each a request (docs/performance.md, "Where a
/// save goes"). Readers take any chunking: only [`MAX_CHUNK`] is checked.
const MIN_AVG_CHUNK: usize = 64 * 1024;
const MAX_AVG_CHUNK: usize = 512 * 1024;
pub(super) const MAX_CHUNK: u32 = 2048 * 1024;

/// FastCDC's (min, average, max) chunk sizes for a payload of `len` bytes.
fn chunk_bounds(len: usize) -> (usize, usize, usize) {
    let average = (len / 32)
        .next_power_of_two()
        .clamp(MIN_AVG_CHUNK, MAX_AVG_CHUNK);
    (average / 4, average, average * 4)
}

/// A chunk to store: its reference, where it is in the payload, and its
/// compressed bytes, computed only when a store lacks the chunk (most of
/// a chained run's chunks are stored already, and zstd is most of the cost
/// of a split).
#[derive(Debug, Clone)]
pub struct StoredChunk {
    /// What the manifest says of it.
    pub chunk: ChunkRef,
    offset: usize,
    compressed: Arc<OnceLock<Bytes>>,
}

impl StoredChunk {
    /// A chunk whose stored bytes are known (read from a store).
    pub(crate) fn ready(chunk: ChunkRef, compressed: Bytes) -> Self {
        Self {
            chunk,
            offset: 0,
            compressed: Arc::new(OnceLock::from(compressed)),
        }
    }

    /// zstd of the chunk's raw bytes, out of the `payload` it was cut from.
    pub fn compressed(&self, payload: &[u8]) -> &Bytes {
        self.compressed.get_or_init(|| {
            let raw = &payload[self.offset..self.offset + self.chunk.len as usize];
            Bytes::from(zstd::bulk::compress(raw, LEVEL).expect("zstd compresses any input"))
        })
    }

    /// Its stored size, if its stored bytes were computed or read.
    pub(crate) fn known_len(&self) -> Option<usize> {
        self.compressed.get().map(Bytes::len)
    }
}

/// Splits `payload` into its manifest and chunks (a chunk that occurs
/// twice in the payload is returned once; each compressed on demand).
pub fn split(payload: &[u8]) -> (Manifest, Vec<StoredChunk>) {
    split_keyed(HeapKey::of_payload(payload), payload)
}

/// [`split`] of a payload whose key is known already.
pub(crate) fn split_keyed(heap: HeapKey, payload: &[u8]) -> (Manifest, Vec<StoredChunk>) {
    keyed(split_unkeyed(payload), &heap)
}

/// A split whose manifest does not name its heap yet ([`keyed`] does): so
/// that cutting and hashing the chunks can go beside hashing the whole.
pub(crate) struct Unkeyed {
    payload_len: u64,
    chunks: Vec<ChunkRef>,
    stored: Vec<StoredChunk>,
}

/// Cuts `payload` into its chunks and hashes each, on as many cores as
/// are free (rayon's pool).
pub(crate) fn split_unkeyed(payload: &[u8]) -> Unkeyed {
    use rayon::prelude::*;
    let head = HEAD_CHUNK.min(payload.len());
    let (min, average, max) = chunk_bounds(payload.len());
    let mut cuts = vec![(0, head)];
    cuts.extend(
        fastcdc::v2020::FastCDC::new(&payload[head..], min, average, max)
            .map(|cut| (head + cut.offset, cut.length)),
    );
    let chunks: Vec<ChunkRef> = cuts
        .par_iter()
        .map(|&(offset, length)| ChunkRef {
            digest: digest(&payload[offset..offset + length]),
            len: length as u32,
        })
        .collect();
    let mut stored: Vec<StoredChunk> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (chunk, &(offset, _)) in chunks.iter().zip(&cuts) {
        if seen.insert(chunk.digest) {
            stored.push(StoredChunk {
                chunk: chunk.clone(),
                offset,
                compressed: Arc::default(),
            });
        }
    }
    Unkeyed {
        payload_len: payload.len() as u64,
        chunks,
        stored,
    }
}

/// The manifest of `heap` from its chunks.
pub(crate) fn keyed(split: Unkeyed, heap: &HeapKey) -> (Manifest, Vec<StoredChunk>) {
    let manifest = Manifest {
        heap: heap.clone(),
        payload_len: split.payload_len,
        generation: 0,
        chunks: split.chunks,
    };
    (manifest, split.stored)
}

/// Compresses `chunks` of `payload` that are not yet, in parallel: what a
/// store writes next.
pub fn compress_all(chunks: &[&StoredChunk], payload: &[u8]) {
    use rayon::prelude::*;
    chunks.par_iter().for_each(|chunk| {
        chunk.compressed(payload);
    });
}

#[cfg(test)]
mod tests {
    use super::super::sample_payload as payload;
    use super::*;

    #[test]
    fn a_change_in_the_middle_leaves_most_chunks_shared() {
        let raw = payload(5_000_000, 11);
        let mut changed = raw.clone();
        changed[2_500_000..2_500_040].copy_from_slice(&[0xAB; 40]);
        let (a, _) = split(&raw);
        let (b, _) = split(&changed);
        let old: std::collections::HashSet<_> = a.chunks.iter().map(|c| c.digest).collect();
        let new: u64 = b
            .chunks
            .iter()
            .filter(|c| !old.contains(&c.digest))
            .map(|c| u64::from(c.len))
            .sum();
        assert!(new <= 2 * u64::from(MAX_CHUNK), "{new} new bytes");
        assert_ne!(a.heap, b.heap);
    }

    /// V8 rewrites the first ~130 KB of every snapshot; they are a chunk
    /// of their own, so a change there stores only that chunk again, not
    /// whichever content-defined chunk (up to 2 MiB) held them.
    #[test]
    fn a_change_in_the_head_stores_only_the_head_chunk_again() {
        let raw = payload(3_000_000, 13);
        let mut changed = raw.clone();
        changed[1000] ^= 1;
        changed[120_000] ^= 1;
        let (a, _) = split(&raw);
        let (b, _) = split(&changed);
        let old: std::collections::HashSet<_> = a.chunks.iter().map(|c| c.digest).collect();
        let new: Vec<u32> = b
            .chunks
            .iter()
            .filter(|c| !old.contains(&c.digest))
            .map(|c| c.len)
            .collect();
        assert_eq!(new, [HEAD_CHUNK as u32], "new chunks: {new:?}");
    }

    #[test]
    fn smaller_payloads_are_cut_into_smaller_chunks() {
        assert_eq!(chunk_bounds(1_500_000).1, 64 * 1024);
        assert_eq!(chunk_bounds(3_200_000).1, 128 * 1024);
        assert_eq!(chunk_bounds(8_000_000).1, 256 * 1024);
        assert_eq!(chunk_bounds(28_000_000).1, 512 * 1024);
        assert_eq!(
            chunk_bounds(200_000_000),
            (128 * 1024, 512 * 1024, 2048 * 1024)
        );
        let raw = payload(3_200_000, 17);
        let (manifest, _) = split(&raw);
        assert!(manifest.chunks.len() >= 16, "{}", manifest.chunks.len());
        assert!(manifest.chunks.iter().all(|c| c.len <= MAX_CHUNK));
    }
}
