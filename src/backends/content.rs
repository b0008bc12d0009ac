//! Content-addressed storage plumbing, shared by every store whose keys
//! are the SHA-256 of the bytes they name (heaps and their chunks, `/work`
//! files, package bundles): the digest, a key's text form, the check of
//! bytes read against their key, and S3's write-once and read
//! ([`super::s3`]).

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Whether `text` is exactly `len` lowercase hex digits: the form of keys
/// and session ids, safe as file names, object keys and header values.
pub fn is_lowercase_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A SHA-256 as 64 lowercase hex digits: the key of a file's or a bundle's
/// bytes. Made only by hashing bytes or by checking text, so one in hand
/// is safe as a file or object name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ContentKey(String);

impl ContentKey {
    /// Length of a key in characters.
    pub const LEN: usize = 64;

    /// The key of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(digest(bytes)))
    }

    /// `text` as a key, when it is one.
    pub fn parse(text: &str) -> Option<Self> {
        is_lowercase_hex(text, Self::LEN).then(|| Self(text.to_owned()))
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `bytes` if they hash to this key; otherwise the key they hash to.
    pub fn verify(&self, bytes: Bytes) -> Result<Bytes, ContentKey> {
        let actual = Self::of(&bytes);
        if actual == *self {
            Ok(bytes)
        } else {
            Err(actual)
        }
    }
}

impl fmt::Display for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentKey({})", self.0)
    }
}

impl From<ContentKey> for String {
    fn from(key: ContentKey) -> String {
        key.0
    }
}

impl TryFrom<String> for ContentKey {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        if is_lowercase_hex(&text, Self::LEN) {
            Ok(Self(text))
        } else {
            Err(format!("{text:?} is not 64 lowercase hex digits"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_lowercase_hex_sha256_and_bytes_are_checked_against_them() {
        let key = ContentKey::of(b"abc");
        assert_eq!(
            key.as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(ContentKey::parse(key.as_str()), Some(key.clone()));
        assert_eq!(ContentKey::parse("ABC"), None);
        assert_eq!(ContentKey::parse("../../etc/passwd"), None);
        assert_eq!(ContentKey::parse(&"A".repeat(64)), None);
        assert!(key.verify(Bytes::from_static(b"abc")).is_ok());
        assert_eq!(
            key.verify(Bytes::from_static(b"abd")).unwrap_err(),
            ContentKey::of(b"abd")
        );
    }
}
