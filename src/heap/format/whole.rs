//! A small heap kept whole: one zstd frame behind a header naming its key
//! and length, verified against the key when read.

use super::HeapKey;
use super::{ChunkError, LEVEL};
use crate::units::MIB;

/// A payload under this is stored whole, compressed, in one object: a small
/// heap's snapshot changes in most of its chunks from one run to the next
/// (measured: 4 of 5), so chunks would cost requests and save little.
pub const WHOLE_BELOW: usize = MIB;

/// The ten bytes a heap stored whole and compressed starts with; then the
/// heap key's 32 bytes, the payload length (u64 LE) and the zstd frame.
pub const WHOLE_MAGIC: &[u8; 10] = b"MCPV8ZSTD\0";
const WHOLE_HEADER: usize = WHOLE_MAGIC.len() + 32 + 8;

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

#[cfg(test)]
mod tests {
    use super::super::sample_payload as payload;
    use super::*;

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
}
