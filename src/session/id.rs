//! The two names of a session: the transport session's `Mcp-Session-Id`,
//! which this server issues, and the logical session's name, which a client
//! chooses and which keys the session log.

use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Deserializer, Serialize};

use crate::heap::is_lowercase_hex;

/// The `Mcp-Session-Id` of a transport session: 192 random bits as 48
/// lowercase hex characters (visible ASCII, as the transport requires).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct McpSessionId(String);

/// A header value that cannot be a session id of this server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed Mcp-Session-Id: expected 48 lowercase hex characters")]
pub struct InvalidMcpSessionId;

impl McpSessionId {
    const BYTES: usize = 24;

    /// A fresh random id.
    pub fn generate() -> Self {
        let mut bytes = [0u8; Self::BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(hex::encode(bytes))
    }

    /// Validates an id received in a header. Anything else cannot name a
    /// stored session, so callers answer it like an unknown session.
    pub fn parse(text: &str) -> Result<Self, InvalidMcpSessionId> {
        if is_lowercase_hex(text, Self::BYTES * 2) {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidMcpSessionId)
        }
    }

    /// The id as sent in `Mcp-Session-Id`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for McpSessionId {
    type Error = InvalidMcpSessionId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<McpSessionId> for String {
    fn from(id: McpSessionId) -> Self {
        id.0
    }
}

impl fmt::Display for McpSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for McpSessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "McpSessionId({})", self.0)
    }
}

/// The name of a logical session: the `X-MCP-Session-Id` header or a tool's
/// `session` argument. It keys the session log in every store, so it is
/// parsed once, at the edge, into this type: 1 to [`Self::MAX_LEN`] bytes,
/// no control characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LogicalSession(String);

/// Why a text cannot name a logical session; the message reads after the
/// name of what carried it ("session must not be empty").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLogicalSession {
    /// The empty string.
    #[error("must not be empty")]
    Empty,
    /// Longer than [`LogicalSession::MAX_LEN`] bytes.
    #[error("is over {} bytes", LogicalSession::MAX_LEN)]
    TooLong,
    /// A control character (tabs and newlines included).
    #[error("must not contain control characters")]
    Control,
}

impl LogicalSession {
    /// Longest name, in bytes.
    pub const MAX_LEN: usize = 256;

    /// Validates a name.
    pub fn parse(text: &str) -> Result<Self, InvalidLogicalSession> {
        if text.is_empty() {
            Err(InvalidLogicalSession::Empty)
        } else if text.len() > Self::MAX_LEN {
            Err(InvalidLogicalSession::TooLong)
        } else if text.chars().any(char::is_control) {
            Err(InvalidLogicalSession::Control)
        } else {
            Ok(Self(text.to_owned()))
        }
    }

    /// The name as the client gave it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// For a stored `InitState`: a name stored before names were validated
    /// (an empty header was kept as `""`) reads as no logical session rather
    /// than making the whole state unreadable.
    pub(crate) fn deserialize_lenient<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Self>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        Ok(text.and_then(|t| Self::parse(&t).ok()))
    }
}

/// A logical session name in a tool schema: its text form, with the bounds
/// a valid name keeps.
impl schemars::JsonSchema for LogicalSession {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LogicalSession".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "minLength": 1, "maxLength": Self::MAX_LEN })
    }
}

impl TryFrom<String> for LogicalSession {
    type Error = InvalidLogicalSession;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<LogicalSession> for String {
    fn from(name: LogicalSession) -> Self {
        name.0
    }
}

impl fmt::Display for LogicalSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for LogicalSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogicalSession({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_session_names_are_bounded_non_empty_and_free_of_control_characters() {
        assert_eq!(
            LogicalSession::parse("agent-1").unwrap().as_str(),
            "agent-1"
        );
        assert_eq!(LogicalSession::parse(""), Err(InvalidLogicalSession::Empty));
        assert!(LogicalSession::parse(&"x".repeat(LogicalSession::MAX_LEN)).is_ok());
        assert_eq!(
            LogicalSession::parse(&"x".repeat(LogicalSession::MAX_LEN + 1)),
            Err(InvalidLogicalSession::TooLong)
        );
        assert_eq!(
            LogicalSession::parse("a\nb"),
            Err(InvalidLogicalSession::Control)
        );
        assert_eq!(
            format!("session {}", InvalidLogicalSession::Empty),
            "session must not be empty"
        );
    }

    #[test]
    fn a_stored_empty_name_reads_as_no_logical_session() {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(deserialize_with = "LogicalSession::deserialize_lenient")]
            name: Option<LogicalSession>,
        }
        let read = |json: &str| serde_json::from_str::<Stored>(json).unwrap().name;
        assert_eq!(read(r#"{"name":""}"#), None);
        assert_eq!(read(r#"{"name":null}"#), None);
        assert_eq!(
            read(r#"{"name":"a"}"#),
            Some(LogicalSession::parse("a").unwrap())
        );
    }

    #[test]
    fn session_ids_are_48_lowercase_hex_characters() {
        let id = McpSessionId::generate();
        assert_eq!(McpSessionId::parse(id.as_str()), Ok(id));
        assert!(McpSessionId::parse(&"A".repeat(48)).is_err());
        assert!(McpSessionId::parse(&"a".repeat(47)).is_err());
    }
}
