//! Session replay state: what `initialize` negotiated, persisted so that any
//! process (any Lambda instance) can rebuild the MCP server for a later
//! request from the store alone.

#[doc(hidden)]
pub mod conformance;
mod dynamodb;
mod redb;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use rand::RngCore;
use serde::{Deserialize, Serialize};

pub use self::dynamodb::DynamoSessionStore;
pub use self::redb::RedbSessionStore;

/// Boxed source error of a backend.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The `Mcp-Session-Id` of a transport session: 192 random bits as 48
/// lowercase hex characters (visible ASCII, as the transport requires).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

/// A header value that cannot be a session id of this server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed session id: expected 48 lowercase hex characters")]
pub struct InvalidSessionId;

impl SessionId {
    const BYTES: usize = 24;

    /// A fresh random id.
    pub fn generate() -> Self {
        let mut bytes = [0u8; Self::BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(hex::encode(bytes))
    }

    /// Validates an id received in a header. Anything else cannot name a
    /// stored session, so callers answer it like an unknown session.
    pub fn parse(text: &str) -> Result<Self, InvalidSessionId> {
        let ok = text.len() == Self::BYTES * 2
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidSessionId)
        }
    }

    /// The id as sent in `Mcp-Session-Id`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = InvalidSessionId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({})", self.0)
    }
}

/// `clientInfo` of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Client name.
    pub name: String,
    /// Client version.
    pub version: String,
    /// Display title (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Everything `initialize` established, replayed on every later request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitState {
    /// The transport session.
    pub session_id: SessionId,
    /// Negotiated protocol version.
    pub protocol_version: String,
    /// The client's capabilities, kept verbatim: the server only echoes
    /// them back to features that ask, and clients add fields freely.
    pub client_capabilities: serde_json::Map<String, serde_json::Value>,
    /// Who the client said it is.
    pub client_info: ClientInfo,
    /// Every `X-MCP-*` request header of `initialize`, prefix stripped, lowercased.
    pub mcp_headers: BTreeMap<String, String>,
    /// The logical session (`X-MCP-Session-Id`), naming the session log.
    pub logical_session: Option<String>,
    /// The authenticated caller, when there is one; another caller presenting
    /// this session id is answered as if it did not exist.
    pub principal: Option<String>,
    /// Set by `notifications/initialized`.
    pub initialized: bool,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; the state is gone from this moment on.
    pub expires_at: i64,
}

/// What can go wrong with the session store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionStoreError {
    /// The backend failed; the request is answered 500 and nothing is assumed.
    #[error("{store} session store failed: {source}")]
    Backend {
        /// Backend name.
        store: &'static str,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// A stored record could not be read back.
    #[error("session {id} is stored in a form this version cannot read: {reason}")]
    Unreadable {
        /// The session.
        id: SessionId,
        /// Decoder message.
        reason: String,
    },
}

/// Where init states live.
///
/// # Contract
/// - `get` is strongly consistent: a `put` that returned is visible to every
///   later `get`, from any process.
/// - `get` treats a state whose `expires_at <= now` as absent (`None`), even
///   while the backend still holds it (DynamoDB deletes expired items late).
/// - `put` replaces the whole state of its id.
/// - `touch` moves `expires_at` of an existing, unexpired state and says
///   whether there was one; it never creates a state.
/// - `delete` says whether a state (expired or not) was removed.
#[async_trait]
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// The state of `id`, unless absent or expired at `now` (Unix seconds).
    async fn get(&self, id: &SessionId, now: i64) -> Result<Option<InitState>, SessionStoreError>;
    /// Creates or replaces the state of `state.session_id`.
    async fn put(&self, state: &InitState) -> Result<(), SessionStoreError>;
    /// Extends an existing, unexpired state to `expires_at`.
    async fn touch(
        &self,
        id: &SessionId,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, SessionStoreError>;
    /// Removes the state of `id`.
    async fn delete(&self, id: &SessionId) -> Result<bool, SessionStoreError>;
}

/// Current Unix time in seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
