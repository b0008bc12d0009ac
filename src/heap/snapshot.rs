//! The stored snapshot format: `MCPV8SNAP\0` + 32-byte SHA-256 + V8 payload.

use std::sync::{Arc, OnceLock};

use crate::backends::content::digest;
use bytes::Bytes;

use super::HeapKey;
use super::format::{self, Manifest, StoredChunk};

/// The ten bytes every stored snapshot starts with.
pub const MAGIC: &[u8; 10] = b"MCPV8SNAP\0";
/// Magic plus the raw SHA-256.
pub const HEADER_LEN: usize = MAGIC.len() + 32;
/// The smallest payload accepted, as in the original format: anything smaller
/// cannot be a V8 startup snapshot and is treated as corruption.
pub const MIN_PAYLOAD_LEN: usize = 100 * 1024;

/// Why stored bytes are not a usable snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Shorter than the header.
    #[error("file is {len} bytes, shorter than the {HEADER_LEN}-byte header")]
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// Does not start with `MCPV8SNAP\0`.
    #[error("file does not start with the MCPV8SNAP magic")]
    BadMagic,
    /// Payload under [`MIN_PAYLOAD_LEN`].
    #[error("payload is {len} bytes, under the {MIN_PAYLOAD_LEN}-byte minimum")]
    PayloadTooSmall {
        /// Payload bytes present.
        len: usize,
    },
    /// The payload does not hash to the checksum in the header.
    #[error("payload checksum does not match the header (file altered or damaged)")]
    ChecksumMismatch,
    /// A valid snapshot, but of another heap.
    #[error("file holds heap {actual}, not the heap asked for")]
    KeyMismatch {
        /// The key the file really holds.
        actual: HeapKey,
    },
}

/// A snapshot whose payload is known to hash to its key.
///
/// Constructed only by hashing a payload ([`Snapshot::from_payload`]) or by
/// verifying stored bytes ([`Snapshot::verify`]), so holding one means the bytes
/// are what the key says. The payload is held as it came (a run's blob, a
/// stored file's bytes), and the framed `MCPV8SNAP` form is made only when
/// asked for: a save never copies the payload to frame it.
#[derive(Clone)]
pub struct Snapshot {
    key: HeapKey,
    payload: Bytes,
    /// The `MCPV8SNAP` form: set when read framed, else made on first use.
    framed: Arc<OnceLock<Bytes>>,
    /// Its chunks, computed once however many stores (a cache and the store
    /// behind it) write them.
    split: Arc<OnceLock<Split>>,
    /// Its stored form when kept whole (a small heap), computed once.
    whole: Arc<OnceLock<Option<Bytes>>>,
}

/// A payload as the chunked format stores it.
pub(crate) type Split = (Manifest, Vec<StoredChunk>);

impl Snapshot {
    /// Computes a raw V8 payload's key (copying the payload once).
    pub fn from_payload(payload: &[u8]) -> Result<Self, SnapshotError> {
        Self::from_payload_bytes(Bytes::copy_from_slice(payload))
    }

    /// Computes the key of a raw V8 payload held in `payload`, without a
    /// copy. A payload large enough to be stored as chunks is also cut and
    /// its chunks hashed, beside the whole payload's hash, on the cores a
    /// run is not using (docs/storage.md, "Chunked heaps").
    pub fn from_payload_bytes(payload: Bytes) -> Result<Self, SnapshotError> {
        if payload.len() < MIN_PAYLOAD_LEN {
            return Err(SnapshotError::PayloadTooSmall { len: payload.len() });
        }
        if payload.len() < format::WHOLE_BELOW {
            let key = HeapKey::from_digest(&digest(&payload));
            return Ok(Self::of(key, payload));
        }
        let (key, split) = rayon::join(
            || HeapKey::from_digest(&digest(&payload)),
            || format::split_unkeyed(&payload),
        );
        let split = format::keyed(split, &key);
        Ok(Self::of(key, payload).with_split(split))
    }

    /// A payload whose hash was just checked against `key` (chunks put back
    /// together by [`Manifest::join`]), kept without hashing it again.
    pub(crate) fn from_joined(key: &HeapKey, payload: Vec<u8>) -> Result<Self, SnapshotError> {
        if payload.len() < MIN_PAYLOAD_LEN {
            return Err(SnapshotError::PayloadTooSmall { len: payload.len() });
        }
        Ok(Self::of(key.clone(), payload.into()))
    }

    fn of(key: HeapKey, payload: Bytes) -> Self {
        Self {
            key,
            payload,
            framed: Arc::default(),
            split: Arc::default(),
            whole: Arc::default(),
        }
    }

    /// The same snapshot with its split known already (chunks read from a
    /// store), so writing it to another store compresses nothing again.
    pub(crate) fn with_split(self, split: Split) -> Self {
        let _ = self.split.set(split);
        self
    }

    /// The same snapshot without its stored forms: what a memory cache
    /// holds, so that its byte bound counts all it keeps.
    pub(crate) fn bare(&self) -> Self {
        Self::of(self.key.clone(), self.payload.clone())
    }

    /// The same snapshot with its whole stored form known already (read
    /// from a store).
    pub(crate) fn with_whole(self, stored: Bytes) -> Self {
        let _ = self.whole.set(Some(stored));
        self
    }

    /// The stored form of a heap under [`format::WHOLE_BELOW`], kept
    /// whole and compressed in one object; `None` for a larger heap, which
    /// is stored as chunks.
    pub(crate) fn stored_whole(&self) -> Option<&Bytes> {
        self.whole
            .get_or_init(|| {
                (self.payload().len() < format::WHOLE_BELOW)
                    .then(|| Bytes::from(format::encode_whole(&self.key, self.payload())))
            })
            .as_ref()
    }

    /// The manifest (generation 0) and the distinct compressed chunks of
    /// the payload, computed on first use.
    pub(crate) fn split(&self) -> &Split {
        self.split
            .get_or_init(|| format::split_keyed(self.key.clone(), self.payload()))
    }

    /// Checks stored bytes: magic, payload size, checksum, and that the
    /// checksum is the key asked for.
    pub fn verify(expected: &HeapKey, framed: Bytes) -> Result<Self, SnapshotError> {
        if framed.len() < HEADER_LEN {
            return Err(SnapshotError::Truncated { len: framed.len() });
        }
        if &framed[..MAGIC.len()] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let payload = &framed[HEADER_LEN..];
        if payload.len() < MIN_PAYLOAD_LEN {
            return Err(SnapshotError::PayloadTooSmall { len: payload.len() });
        }
        let header_sum: [u8; 32] = framed[MAGIC.len()..HEADER_LEN]
            .try_into()
            .expect("header slice is 32 bytes");
        let actual: [u8; 32] = digest(payload);
        if actual != header_sum {
            return Err(SnapshotError::ChecksumMismatch);
        }
        if actual != expected.digest() {
            return Err(SnapshotError::KeyMismatch {
                actual: HeapKey::from_digest(&actual),
            });
        }
        let snapshot = Self::of(expected.clone(), framed.slice(HEADER_LEN..));
        let _ = snapshot.framed.set(framed);
        Ok(snapshot)
    }

    /// The content address.
    pub fn key(&self) -> &HeapKey {
        &self.key
    }

    /// The whole `MCPV8SNAP` form, header included (made on first use
    /// unless the snapshot was read in that form).
    pub fn framed(&self) -> &Bytes {
        self.framed.get_or_init(|| {
            let mut framed = Vec::with_capacity(self.framed_len());
            framed.extend_from_slice(MAGIC);
            framed.extend_from_slice(&self.key.digest());
            framed.extend_from_slice(&self.payload);
            framed.into()
        })
    }

    /// The length of [`Snapshot::framed`], without making it.
    pub fn framed_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// The raw V8 payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The raw V8 payload, sharing this snapshot's buffer.
    pub fn payload_bytes(&self) -> Bytes {
        self.payload.clone()
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("key", &self.key)
            .field("len", &self.framed_len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(seed: u8) -> Vec<u8> {
        (0..MIN_PAYLOAD_LEN + 17)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn framing_round_trips() {
        let snap = Snapshot::from_payload(&payload(1)).unwrap();
        assert_eq!(&snap.framed()[..10], MAGIC);
        assert_eq!(snap.payload(), &payload(1)[..]);
        assert_eq!(snap.key(), &HeapKey::of_payload(&payload(1)));
        let again = Snapshot::verify(snap.key(), snap.framed().clone()).unwrap();
        assert_eq!(again.payload(), snap.payload());
    }

    #[test]
    fn a_flipped_payload_byte_is_a_checksum_mismatch() {
        let snap = Snapshot::from_payload(&payload(2)).unwrap();
        let mut bytes = snap.framed().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert_eq!(
            Snapshot::verify(snap.key(), bytes.into()).unwrap_err(),
            SnapshotError::ChecksumMismatch
        );
    }

    #[test]
    fn a_valid_snapshot_under_another_key_is_rejected() {
        let a = Snapshot::from_payload(&payload(3)).unwrap();
        let b = Snapshot::from_payload(&payload(4)).unwrap();
        let err = Snapshot::verify(b.key(), a.framed().clone()).unwrap_err();
        assert_eq!(
            err,
            SnapshotError::KeyMismatch {
                actual: a.key().clone()
            }
        );
    }

    #[test]
    fn bad_magic_short_files_and_small_payloads_are_rejected() {
        let snap = Snapshot::from_payload(&payload(5)).unwrap();
        let mut bytes = snap.framed().to_vec();
        bytes[0] = b'X';
        assert_eq!(
            Snapshot::verify(snap.key(), bytes.into()).unwrap_err(),
            SnapshotError::BadMagic
        );
        assert_eq!(
            Snapshot::verify(snap.key(), Bytes::from_static(b"MCPV8SNAP\0")).unwrap_err(),
            SnapshotError::Truncated { len: 10 }
        );
        let short = snap.framed().slice(..HEADER_LEN + 10);
        assert_eq!(
            Snapshot::verify(snap.key(), short).unwrap_err(),
            SnapshotError::PayloadTooSmall { len: 10 }
        );
        assert!(Snapshot::from_payload(&[0u8; 10]).is_err());
    }
}
