//! The content address of a heap snapshot.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::backends::content::{digest, is_lowercase_hex};

/// Lowercase hex SHA-256 of a raw V8 snapshot payload: always 64 characters.
///
/// The only ways to get one are [`HeapKey::parse`] (validates the text) and
/// [`HeapKey::of_payload`] (hashes the bytes), so a `HeapKey` in hand is always
/// well-formed and safe to use as a file or object name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HeapKey(String);

/// A heap argument that is not 64 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid heap key {shown:?}: a heap key is exactly 64 lowercase hex characters (the SHA-256 of the snapshot)"
)]
pub struct InvalidHeapKey {
    shown: String,
}

impl HeapKey {
    /// Length of a key in characters.
    pub const LEN: usize = 64;

    /// Validates `text` as a heap key.
    pub fn parse(text: &str) -> Result<Self, InvalidHeapKey> {
        if is_lowercase_hex(text, Self::LEN) {
            Ok(Self(text.to_owned()))
        } else {
            // Echo at most a short prefix: the argument may be huge or hostile.
            let shown: String = text.chars().take(80).collect();
            Err(InvalidHeapKey { shown })
        }
    }

    /// The key of a raw V8 payload.
    pub fn of_payload(payload: &[u8]) -> Self {
        Self::from_digest(&digest(payload))
    }

    pub(crate) fn from_digest(digest: &[u8; 32]) -> Self {
        Self(hex::encode(digest))
    }

    /// The raw 32 digest bytes.
    pub fn digest(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        hex::decode_to_slice(&self.0, &mut out).expect("a HeapKey is always 64 hex characters");
        out
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A heap key in a tool schema: its text form, with the pattern a valid key
/// matches.
impl schemars::JsonSchema for HeapKey {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HeapKey".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9a-f]{64}$" })
    }
}

impl TryFrom<String> for HeapKey {
    type Error = InvalidHeapKey;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<HeapKey> for String {
    fn from(key: HeapKey) -> Self {
        key.0
    }
}

impl fmt::Display for HeapKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for HeapKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HeapKey({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_of_payload_is_lowercase_hex_sha256() {
        let key = HeapKey::of_payload(b"abc");
        assert_eq!(
            key.as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(HeapKey::parse(key.as_str()).unwrap(), key);
        assert_eq!(HeapKey::from_digest(&key.digest()), key);
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let upper = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        for bad in [
            "",
            "abc",
            upper,
            &"g".repeat(64),
            &"a".repeat(63),
            &"a".repeat(65),
            "../etc/passwd",
        ] {
            let err = HeapKey::parse(bad).unwrap_err();
            assert!(err.to_string().contains("64 lowercase hex"), "{err}");
        }
    }

    #[test]
    fn deserializing_a_bad_key_fails() {
        assert!(serde_json::from_str::<HeapKey>("\"xyz\"").is_err());
        let ok: HeapKey = serde_json::from_str(&format!("\"{}\"", "0".repeat(64))).unwrap();
        assert_eq!(ok.as_str(), "0".repeat(64));
    }
}
