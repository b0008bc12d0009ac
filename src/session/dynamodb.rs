//! Init states in DynamoDB: one item per transport session, read with strong
//! consistency, expiring by TTL and, because TTL deletes late, by the reader.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::{InitState, McpSessionId, SessionStore, SessionStoreError};

const ID: &str = "session_id";
const STATE: &str = "init_state";
const EXPIRES: &str = "expires_at";
/// A relayed reply's JSON.
const REPLY: &str = "reply";

/// Init states in the sessions table.
#[derive(Debug, Clone)]
pub struct DynamoSessionStore {
    client: Client,
    table: String,
}

impl DynamoSessionStore {
    /// A store over `table` (see [`crate::backends::aws::SESSIONS`]).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn backend(error: impl std::error::Error + Send + Sync + 'static) -> SessionStoreError {
    SessionStoreError::Backend {
        store: "dynamodb",
        source: DisplayErrorContext(error).to_string().into(),
    }
}

fn number(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The key of a cancel record, beside the session's own item: no session id
/// (48 hex digits) contains a `#`, so no record can pass for a session.
fn cancel_key(id: &McpSessionId, request: &str) -> String {
    format!("{id}#cancelled#{request}")
}

/// The key of a relayed reply to a request this server sent, beside the
/// session's item as a cancel record is.
fn reply_key(id: &McpSessionId, request: &str) -> String {
    format!("{id}#reply#{request}")
}

impl DynamoSessionStore {
    /// The side item `key` (a cancel, a relayed reply), read strongly
    /// consistently, unless absent or expired at `now`: TTL deletes late.
    async fn unexpired(
        &self,
        key: String,
        now: i64,
    ) -> Result<Option<HashMap<String, AttributeValue>>, SessionStoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(ID, AttributeValue::S(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        Ok(output.item.filter(|item| {
            item.get(EXPIRES)
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|until| until > now)
        }))
    }
}

#[async_trait]
impl SessionStore for DynamoSessionStore {
    async fn get(
        &self,
        id: &McpSessionId,
        now: i64,
    ) -> Result<Option<InitState>, SessionStoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(ID, AttributeValue::S(id.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let unreadable = |reason: String| SessionStoreError::Unreadable {
            id: id.clone(),
            reason,
        };
        let json = item
            .get(STATE)
            .and_then(|v| v.as_s().ok())
            .ok_or_else(|| unreadable(format!("no {STATE} attribute")))?;
        let mut state: InitState =
            serde_json::from_str(json).map_err(|e| unreadable(e.to_string()))?;
        // `touch` moves only the attribute; it is the authority on expiry.
        state.expires_at = item
            .get(EXPIRES)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| unreadable(format!("no {EXPIRES} attribute")))?;
        Ok((state.expires_at > now).then_some(state))
    }

    async fn put(&self, state: &InitState) -> Result<(), SessionStoreError> {
        let json = serde_json::to_string(state).map_err(backend)?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item(ID, AttributeValue::S(state.session_id.to_string()))
            .item(STATE, AttributeValue::S(json))
            .item(EXPIRES, number(state.expires_at))
            .send()
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn touch(
        &self,
        id: &McpSessionId,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, SessionStoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(ID, AttributeValue::S(id.to_string()))
            .update_expression("SET #e = :new")
            .condition_expression("attribute_exists(#id) AND #e > :now")
            .expression_attribute_names("#e", EXPIRES)
            .expression_attribute_names("#id", ID)
            .expression_attribute_values(":new", number(expires_at))
            .expression_attribute_values(":now", number(now))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(backend(e)),
        }
    }

    async fn delete(&self, id: &McpSessionId) -> Result<bool, SessionStoreError> {
        let output = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(ID, AttributeValue::S(id.to_string()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(backend)?;
        Ok(output.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn cancel_request(
        &self,
        id: &McpSessionId,
        request: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(ID, AttributeValue::S(cancel_key(id, request)))
            .item(EXPIRES, number(expires_at))
            .send()
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn request_cancelled(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<bool, SessionStoreError> {
        let item = self.unexpired(cancel_key(id, request), now).await?;
        Ok(item.is_some())
    }

    async fn relay_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        reply: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(ID, AttributeValue::S(reply_key(id, request)))
            .item(EXPIRES, number(expires_at))
            .item(REPLY, AttributeValue::S(reply.to_owned()))
            .send()
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn relayed_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<Option<String>, SessionStoreError> {
        let item = self.unexpired(reply_key(id, request), now).await?;
        Ok(item.and_then(|item| item.get(REPLY)?.as_s().ok().cloned()))
    }
}
