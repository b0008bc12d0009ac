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

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::backends::content::digest;
use bytes::Bytes;

use super::key::HeapKey;
use crate::units::MIB;

/// The ten bytes every manifest starts with.
pub const MANIFEST_MAGIC: &[u8; 10] = b"MCPV8CHNK\0";
const FIXED_LEN: usize = MANIFEST_MAGIC.len() + 32 + 8 + 4 + 4;
const ENTRY_LEN: usize = 32 + 4;

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
const MAX_CHUNK: u32 = 2048 * 1024;

/// FastCDC's (min, average, max) chunk sizes for a payload of `len` bytes.
fn chunk_bounds(len: usize) -> (usize, usize, usize) {
    let average = (len / 32)
        .next_power_of_two()
        .clamp(MIN_AVG_CHUNK, MAX_AVG_CHUNK);
    (average / 4, average, average * 4)
}

/// A payload under this is stored whole, compressed, in one object: a small
/// heap's snapshot changes in most of its chunks from one run to the next
/// (measured: 4 of 5), so chunks would cost requests and save little.
pub const WHOLE_BELOW: usize = MIB;

/// The ten bytes a heap stored whole and compressed starts with; then the
/// heap key's 32 bytes, the payload length (u64 LE) and the zstd frame.
pub const WHOLE_MAGIC: &[u8; 10] = b"MCPV8ZSTD\0";
const WHOLE_HEADER: usize = WHOLE_MAGIC.len() + 32 + 8;
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

/// A heap as its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The heap: SHA-256 of the raw payload.
    pub heap: HeapKey,
    /// Length of the raw payload.
    pub payload_len: u64,
    /// Which generation of chunks it names (see the module doc).
    pub generation: u32,
    /// In payload order.
    pub chunks: Vec<ChunkRef>,
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

impl Manifest {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + ENTRY_LEN * self.chunks.len());
        out.extend_from_slice(MANIFEST_MAGIC);
        out.extend_from_slice(&self.heap.digest());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for chunk in &self.chunks {
            out.extend_from_slice(&chunk.digest);
            out.extend_from_slice(&chunk.len.to_le_bytes());
        }
        out
    }

    /// Whether stored bytes are a manifest rather than an `MCPV8SNAP` file.
    pub fn is_manifest(bytes: &[u8]) -> bool {
        bytes.starts_with(MANIFEST_MAGIC)
    }

    /// Reads a manifest stored under `expected`.
    pub fn decode(expected: &HeapKey, bytes: &[u8]) -> Result<Self, ChunkError> {
        if !Self::is_manifest(bytes) {
            return Err(ChunkError::BadMagic);
        }
        let truncated = || ChunkError::Truncated { len: bytes.len() };
        let rest = &bytes[MANIFEST_MAGIC.len()..];
        let digest: [u8; 32] = rest
            .get(..32)
            .ok_or_else(truncated)?
            .try_into()
            .expect("32");
        let heap = HeapKey::from_digest(&digest);
        if &heap != expected {
            return Err(ChunkError::KeyMismatch { actual: heap });
        }
        let payload_len = u64::from_le_bytes(
            rest.get(32..40)
                .ok_or_else(truncated)?
                .try_into()
                .expect("8"),
        );
        let word = |at: usize| -> Result<u32, ChunkError> {
            Ok(u32::from_le_bytes(
                rest.get(at..at + 4)
                    .ok_or_else(truncated)?
                    .try_into()
                    .expect("4"),
            ))
        };
        let generation = word(40)?;
        let count = word(44)? as usize;
        let entries = &rest[48..];
        if entries.len() != count.checked_mul(ENTRY_LEN).ok_or_else(truncated)? {
            return Err(truncated());
        }
        let chunks: Vec<ChunkRef> = entries
            .chunks_exact(ENTRY_LEN)
            .map(|entry| ChunkRef {
                digest: entry[..32].try_into().expect("32"),
                len: u32::from_le_bytes(entry[32..].try_into().expect("4")),
            })
            .collect();
        let sum: u64 = chunks.iter().map(|c| u64::from(c.len)).sum();
        if sum != payload_len || chunks.iter().any(|c| c.len > MAX_CHUNK) {
            return Err(ChunkError::Inconsistent {
                sum,
                len: payload_len,
            });
        }
        Ok(Self {
            heap,
            payload_len,
            generation,
            chunks,
        })
    }

    /// Each chunk once, in first-use order: what a reader fetches.
    pub fn distinct(&self) -> Vec<&ChunkRef> {
        let mut seen = std::collections::HashSet::new();
        self.chunks
            .iter()
            .filter(|c| seen.insert(c.digest))
            .collect()
    }

    /// The raw payload from each chunk's raw bytes (already verified one by
    /// one, as [`decompress`] does), checked as a whole against the heap.
    pub fn join(&self, raw: &HashMap<[u8; 32], Vec<u8>>) -> Result<Vec<u8>, ChunkError> {
        let mut payload = Vec::with_capacity(self.payload_len as usize);
        for chunk in &self.chunks {
            let bytes = raw
                .get(&chunk.digest)
                .ok_or_else(|| ChunkError::MissingChunk { key: chunk.key() })?;
            payload.extend_from_slice(bytes);
        }
        if HeapKey::of_payload(&payload) != self.heap {
            return Err(ChunkError::PayloadMismatch {
                key: self.heap.clone(),
            });
        }
        Ok(payload)
    }

    /// The raw payload, from each chunk's stored bytes as `stored` gives
    /// them (in manifest order); every chunk and the whole are verified.
    pub fn assemble<'a>(
        &self,
        stored: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<u8>, ChunkError> {
        let mut payload = Vec::with_capacity(self.payload_len as usize);
        let mut stored = stored.into_iter();
        for chunk in &self.chunks {
            let bytes = stored.next().ok_or_else(|| ChunkError::CorruptChunk {
                key: chunk.key(),
                why: "missing".into(),
            })?;
            payload.extend_from_slice(&decompress(chunk, bytes)?);
        }
        if HeapKey::of_payload(&payload) != self.heap {
            return Err(ChunkError::PayloadMismatch {
                key: self.heap.clone(),
            });
        }
        Ok(payload)
    }
}

/// The stored form of a heap kept whole: header and zstd of the payload.
pub fn encode_whole(heap: &HeapKey, payload: &[u8]) -> Vec<u8> {
    let compressed = zstd::bulk::compress(payload, LEVEL).expect("zstd compresses any input");
    let mut out = Vec::with_capacity(WHOLE_HEADER + compressed.len());
    out.extend_from_slice(WHOLE_MAGIC);
    out.extend_from_slice(&heap.digest());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&compressed);
    out
}

/// Whether stored bytes are a heap kept whole and compressed.
pub fn is_whole(bytes: &[u8]) -> bool {
    bytes.starts_with(WHOLE_MAGIC)
}

/// The raw payload of a heap kept whole under `expected`, verified against
/// the key; decompression is bounded by the stated length, itself bounded
/// by [`WHOLE_BELOW`].
pub fn decode_whole(expected: &HeapKey, bytes: &[u8]) -> Result<Vec<u8>, ChunkError> {
    if !is_whole(bytes) {
        return Err(ChunkError::BadMagic);
    }
    if bytes.len() < WHOLE_HEADER {
        return Err(ChunkError::Truncated { len: bytes.len() });
    }
    let digest: [u8; 32] = bytes[WHOLE_MAGIC.len()..WHOLE_MAGIC.len() + 32]
        .try_into()
        .expect("32");
    let heap = HeapKey::from_digest(&digest);
    if &heap != expected {
        return Err(ChunkError::KeyMismatch { actual: heap });
    }
    let len = u64::from_le_bytes(
        bytes[WHOLE_MAGIC.len() + 32..WHOLE_HEADER]
            .try_into()
            .expect("8"),
    );
    if len >= WHOLE_BELOW as u64 {
        return Err(ChunkError::CorruptWhole {
            why: format!("it states {len} bytes, more than a heap kept whole has"),
        });
    }
    let payload = zstd::bulk::decompress(&bytes[WHOLE_HEADER..], len as usize).map_err(|e| {
        ChunkError::CorruptWhole {
            why: format!("it does not decompress ({e})"),
        }
    })?;
    if payload.len() as u64 != len {
        return Err(ChunkError::CorruptWhole {
            why: format!("{} bytes, not {len}", payload.len()),
        });
    }
    if HeapKey::of_payload(&payload) != heap {
        return Err(ChunkError::PayloadMismatch { key: heap });
    }
    Ok(payload)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that look like a heap to a chunker and a compressor: records
    /// of one shape with varied values.
    fn payload(len: usize, seed: u64) -> Vec<u8> {
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

    fn stored_of(stored: &[StoredChunk], manifest: &Manifest, payload: &[u8]) -> Vec<Bytes> {
        manifest
            .chunks
            .iter()
            .map(|c| {
                stored
                    .iter()
                    .find(|s| s.chunk == *c)
                    .unwrap()
                    .compressed(payload)
                    .clone()
            })
            .collect()
    }

    #[test]
    fn a_payload_round_trips_through_its_manifest_and_chunks() {
        let raw = payload(4_000_000, 7);
        let (manifest, stored) = split(&raw);
        assert_eq!(manifest.heap, HeapKey::of_payload(&raw));
        assert!(manifest.chunks.len() > 3, "{}", manifest.chunks.len());
        let compressed: usize = stored.iter().map(|s| s.compressed(&raw).len()).sum();
        assert!(compressed < raw.len(), "{compressed} of {}", raw.len());
        let encoded = manifest.encode();
        assert!(Manifest::is_manifest(&encoded));
        let decoded = Manifest::decode(&manifest.heap, &encoded).unwrap();
        assert_eq!(decoded, manifest);
        let chunks = stored_of(&stored, &manifest, &raw);
        let back = decoded.assemble(chunks.iter().map(|c| c.as_ref())).unwrap();
        assert_eq!(back, raw);
    }

    #[test]
    fn a_small_heap_is_kept_whole_and_refused_when_damaged() {
        let raw = payload(400_000, 5);
        let key = HeapKey::of_payload(&raw);
        let stored = encode_whole(&key, &raw);
        assert!(is_whole(&stored) && stored.len() < raw.len() / 2);
        assert_eq!(decode_whole(&key, &stored).unwrap(), raw);
        let mut flipped = stored.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xFF;
        assert!(decode_whole(&key, &flipped).is_err());
        let other = HeapKey::of_payload(b"other");
        assert!(matches!(
            decode_whole(&other, &stored),
            Err(ChunkError::KeyMismatch { .. })
        ));
        assert!(matches!(
            decode_whole(&key, &stored[..WHOLE_HEADER - 1]),
            Err(ChunkError::Truncated { .. })
        ));
        // A stated length past the bound is refused before decompressing.
        let mut huge = stored.clone();
        huge[WHOLE_MAGIC.len() + 32..WHOLE_HEADER].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            decode_whole(&key, &huge),
            Err(ChunkError::CorruptWhole { .. })
        ));
    }

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

    #[test]
    fn damaged_manifests_and_chunks_are_refused_with_what_is_wrong() {
        let raw = payload(400_000, 3);
        let (manifest, stored) = split(&raw);
        let encoded = manifest.encode();
        let other = HeapKey::of_payload(b"other");
        assert!(matches!(
            Manifest::decode(&other, &encoded),
            Err(ChunkError::KeyMismatch { .. })
        ));
        assert_eq!(
            Manifest::decode(&manifest.heap, &encoded[..encoded.len() - 1]),
            Err(ChunkError::Truncated {
                len: encoded.len() - 1
            })
        );
        assert_eq!(
            Manifest::decode(&manifest.heap, b"MCPV8SNAP\0..."),
            Err(ChunkError::BadMagic)
        );
        let mut lying = encoded.clone();
        let at = FIXED_LEN + 32;
        lying[at] ^= 1; // a chunk's length
        assert!(matches!(
            Manifest::decode(&manifest.heap, &lying),
            Err(ChunkError::Inconsistent { .. })
        ));
        // A flipped byte in a chunk, a chunk of other bytes, a missing one.
        let mut chunks = stored_of(&stored, &manifest, &raw);
        let mut flipped = chunks[0].to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xFF;
        chunks[0] = Bytes::from(flipped);
        let error = manifest
            .assemble(chunks.iter().map(|c| c.as_ref()))
            .unwrap_err();
        assert!(matches!(error, ChunkError::CorruptChunk { .. }), "{error}");
        let mut chunks = stored_of(&stored, &manifest, &raw);
        chunks.swap(0, 1);
        let error = manifest
            .assemble(chunks.iter().map(|c| c.as_ref()))
            .unwrap_err();
        assert!(error.to_string().contains("is corrupt"), "{error}");
        let chunks = stored_of(&stored, &manifest, &raw);
        let error = manifest
            .assemble(chunks[1..].iter().map(|c| c.as_ref()))
            .unwrap_err();
        assert!(
            error.to_string().contains("missing") || error.to_string().contains("corrupt"),
            "{error}"
        );
        // Other bytes of the right length, well compressed: the hash tells.
        let chunks = stored_of(&stored, &manifest, &raw);
        let mut raw0 = decompress(&manifest.chunks[0], &chunks[0]).unwrap();
        raw0[10] ^= 1;
        let mut swapped = chunks.clone();
        swapped[0] = Bytes::from(zstd::bulk::compress(&raw0, 1).unwrap());
        let error = manifest
            .assemble(swapped.iter().map(|c| c.as_ref()))
            .unwrap_err();
        assert!(
            error.to_string().contains("do not hash to its key"),
            "{error}"
        );
        // Sound chunks under a manifest that names another heap.
        let lying = Manifest {
            heap: other.clone(),
            ..manifest.clone()
        };
        assert_eq!(
            lying.assemble(chunks.iter().map(|c| c.as_ref())),
            Err(ChunkError::PayloadMismatch { key: other })
        );
        // A bomb: a chunk that decompresses past its stated length.
        let bomb = zstd::bulk::compress(&vec![0u8; 4 * MIB], 1).unwrap();
        let error = decompress(&manifest.chunks[0], &bomb).unwrap_err();
        assert!(matches!(error, ChunkError::CorruptChunk { .. }), "{error}");
    }
}
