//! The embedded session store: one redb database in the data directory.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition};

use super::{InitState, McpSessionId, SessionStore, SessionStoreError};
use crate::backends::embedded;

/// Session id → JSON of the [`InitState`].
const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");
/// (session id, request id as JSON) → Unix seconds the cancel is kept until.
const CANCELLED: TableDefinition<(&str, &str), i64> = TableDefinition::new("cancelled_requests");
/// (session id, server request id as JSON) → (Unix seconds it is kept
/// until, the client's reply as JSON).
const REPLIES: TableDefinition<(&str, &str), (i64, &str)> = TableDefinition::new("relayed_replies");

/// Init states in a redb file; every call is one transaction, committed
/// durably before it returns.
#[derive(Debug, Clone)]
pub struct RedbSessionStore {
    db: Arc<Database>,
}

impl RedbSessionStore {
    /// Opens (or creates) a database of its own at `path`.
    pub fn open(path: &Path) -> Result<Self, SessionStoreError> {
        Self::new(embedded::open_database(path).map_err(backend)?)
    }

    /// A store over an open database (shared with the metadata store: redb
    /// allows one handle per file).
    pub fn new(db: Arc<Database>) -> Result<Self, SessionStoreError> {
        let tx = db.begin_write().map_err(backend)?;
        tx.open_table(SESSIONS).map_err(backend)?;
        tx.open_table(CANCELLED).map_err(backend)?;
        tx.open_table(REPLIES).map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(Self { db })
    }

    /// Runs blocking redb work off the async executor.
    async fn blocking<T, F>(&self, work: F) -> Result<T, SessionStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, SessionStoreError> + Send + 'static,
    {
        embedded::blocking(&self.db, work, backend).await
    }
}

fn backend(source: impl Into<super::BoxError>) -> SessionStoreError {
    SessionStoreError::Backend {
        store: "redb",
        source: source.into(),
    }
}

fn decode(id: &McpSessionId, bytes: &[u8]) -> Result<InitState, SessionStoreError> {
    serde_json::from_slice(bytes).map_err(|e| SessionStoreError::Unreadable {
        id: id.clone(),
        reason: e.to_string(),
    })
}

#[async_trait]
impl SessionStore for RedbSessionStore {
    async fn get(
        &self,
        id: &McpSessionId,
        now: i64,
    ) -> Result<Option<InitState>, SessionStoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = tx.open_table(SESSIONS).map_err(backend)?;
            let Some(bytes) = table.get(id.as_str()).map_err(backend)? else {
                return Ok(None);
            };
            let state = decode(&id, bytes.value())?;
            Ok((state.expires_at > now).then_some(state))
        })
        .await
    }

    async fn put(&self, state: &InitState) -> Result<(), SessionStoreError> {
        let bytes = serde_json::to_vec(state).map_err(backend)?;
        let id = state.session_id.clone();
        self.blocking(move |db| {
            embedded::put_json(db, SESSIONS, id.as_str(), &bytes).map_err(backend)
        })
        .await
    }

    async fn touch(
        &self,
        id: &McpSessionId,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, SessionStoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let touched = {
                let mut table = tx.open_table(SESSIONS).map_err(backend)?;
                let current = match table.get(id.as_str()).map_err(backend)? {
                    Some(bytes) => Some(decode(&id, bytes.value())?),
                    None => None,
                };
                match current {
                    Some(mut state) if state.expires_at > now => {
                        state.expires_at = expires_at;
                        let bytes = serde_json::to_vec(&state).map_err(backend)?;
                        table
                            .insert(id.as_str(), bytes.as_slice())
                            .map_err(backend)?;
                        true
                    }
                    _ => false,
                }
            };
            tx.commit().map_err(backend)?;
            Ok(touched)
        })
        .await
    }

    async fn delete(&self, id: &McpSessionId) -> Result<bool, SessionStoreError> {
        let id = id.clone();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let removed = tx
                .open_table(SESSIONS)
                .map_err(backend)?
                .remove(id.as_str())
                .map_err(backend)?
                .is_some();
            tx.commit().map_err(backend)?;
            Ok(removed)
        })
        .await
    }

    async fn cancel_request(
        &self,
        id: &McpSessionId,
        request: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        let (id, request) = (id.clone(), request.to_owned());
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut table = tx.open_table(CANCELLED).map_err(backend)?;
                table
                    .insert((id.as_str(), request.as_str()), expires_at)
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn request_cancelled(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<bool, SessionStoreError> {
        let (id, request) = (id.clone(), request.to_owned());
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = tx.open_table(CANCELLED).map_err(backend)?;
            let until = table
                .get((id.as_str(), request.as_str()))
                .map_err(backend)?
                .map(|v| v.value());
            Ok(until.is_some_and(|until| until > now))
        })
        .await
    }

    async fn relay_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        reply: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        let (id, request, reply) = (id.clone(), request.to_owned(), reply.to_owned());
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut table = tx.open_table(REPLIES).map_err(backend)?;
                table
                    .insert(
                        (id.as_str(), request.as_str()),
                        (expires_at, reply.as_str()),
                    )
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn relayed_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<Option<String>, SessionStoreError> {
        let (id, request) = (id.clone(), request.to_owned());
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = tx.open_table(REPLIES).map_err(backend)?;
            let found = table
                .get((id.as_str(), request.as_str()))
                .map_err(backend)?
                .map(|v| {
                    let (until, reply) = v.value();
                    (until, reply.to_owned())
                });
            Ok(found.and_then(|(until, reply)| (until > now).then_some(reply)))
        })
        .await
    }
}
