//! Session replay state: what `initialize` negotiated, persisted so that any
//! process (any Lambda instance) can rebuild the MCP server for a later
//! request from the store alone.

mod dynamodb;
mod redb;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::protocol::mcp::ClientInfo;

mod id;

pub use self::dynamodb::DynamoSessionStore;
pub use self::id::{InvalidLogicalSession, InvalidMcpSessionId, LogicalSession, McpSessionId};
pub use self::redb::RedbSessionStore;

use crate::BoxError;

/// Everything `initialize` established, replayed on every later request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitState {
    /// The transport session.
    pub session_id: McpSessionId,
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
    #[serde(default, deserialize_with = "LogicalSession::deserialize_lenient")]
    pub logical_session: Option<LogicalSession>,
    /// The authenticated caller, when there is one; another caller presenting
    /// this session id is answered as if it did not exist.
    pub principal: Option<String>,
    /// Set by `notifications/initialized`.
    pub initialized: bool,
    /// `logging/setLevel`: the session's calls stream their runs' console
    /// lines as log messages from this level up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<crate::protocol::logging::LoggingLevel>,
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
    #[error("{store} MCP session store failed: {source}")]
    Backend {
        /// Backend name.
        store: &'static str,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// A stored record could not be read back.
    #[error("MCP session {id} is stored in a form this version cannot read: {reason}")]
    Unreadable {
        /// The session.
        id: McpSessionId,
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
/// - `cancel_request` records that the client cancelled request `request`
///   (a JSON-RPC id as JSON text) of session `id`, until `expires_at`;
///   `request_cancelled` sees it, strongly consistently, from any process,
///   until then, and never sees another session's or request's.
/// - `relay_reply` records the client's reply (JSON text) to request
///   `request` that this server sent in session `id`, until `expires_at`;
///   `relayed_reply` gives it, strongly consistently, from any process,
///   until then (the latest relayed, when the client answered twice), and
///   never another session's or request's.
#[async_trait]
pub trait SessionStore: Send + Sync + fmt::Debug + 'static {
    /// The state of `id`, unless absent or expired at `now` (Unix seconds).
    async fn get(
        &self,
        id: &McpSessionId,
        now: i64,
    ) -> Result<Option<InitState>, SessionStoreError>;
    /// Creates or replaces the state of `state.session_id`.
    async fn put(&self, state: &InitState) -> Result<(), SessionStoreError>;
    /// Extends an existing, unexpired state to `expires_at`.
    async fn touch(
        &self,
        id: &McpSessionId,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, SessionStoreError>;
    /// Removes the state of `id`.
    async fn delete(&self, id: &McpSessionId) -> Result<bool, SessionStoreError>;
    /// Records a cancel of `request` of session `id` for the process that
    /// runs it, which may be another (another Lambda instance).
    async fn cancel_request(
        &self,
        id: &McpSessionId,
        request: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError>;
    /// Whether `request` of session `id` was cancelled (and the record has
    /// not expired at `now`).
    async fn request_cancelled(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<bool, SessionStoreError>;
    /// Records the client's reply to `request`, a request this server sent
    /// on a call's stream in session `id`, for the process that holds the
    /// stream, which may be another (another Lambda instance).
    async fn relay_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        reply: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError>;
    /// The reply to `request` of session `id` another process relayed, if
    /// one is there and unexpired at `now`.
    async fn relayed_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<Option<String>, SessionStoreError>;
}
