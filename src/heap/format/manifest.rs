//! The manifest: a heap named by its chunks, encoded in the layout the
//! module doc gives, and put back together from them with every chunk and
//! the whole verified.

use std::collections::HashMap;

use super::HeapKey;
use super::cut::MAX_CHUNK;
use super::{ChunkError, ChunkRef, decompress};

/// The ten bytes every manifest starts with.
pub const MANIFEST_MAGIC: &[u8; 10] = b"MCPV8CHNK\0";
const FIXED_LEN: usize = MANIFEST_MAGIC.len() + 32 + 8 + 4 + 4;
const ENTRY_LEN: usize = 32 + 4;

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

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::super::sample_payload as payload;
    use super::super::{StoredChunk, split};
    use super::*;
    use crate::units::MIB;

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
