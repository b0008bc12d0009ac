//! The session log's append: the execution record, the log entry and the
//! session's head in one transaction, tried again at the new head when
//! another writer moved it first.

use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use sha2::{Digest, Sha256};

use super::{APPEND_BUDGET, BACKOFF_CAP, BACKOFF_START, DynamoMetaStore, backend, n, s, sdk};
use crate::meta::{ExecutionRecord, LogEntry, MetaStoreError, NewLogEntry};
use crate::session::LogicalSession;
use crate::tenant::Tenant;

impl DynamoMetaStore {
    /// The execution record as a transaction item.
    pub(super) async fn execution_put(
        &self,
        tenant: &Tenant,
        record: &ExecutionRecord,
    ) -> Result<Put, MetaStoreError> {
        let id = record.execution_id;
        let json = serde_json::to_string(record).map_err(backend)?;
        let folder = tenant.heap_folder().unwrap_or_default();
        let (attribute, value) = self
            .stash(format!("executions/{folder}{id}.json"), json)
            .await?;
        Put::builder()
            .table_name(&self.tables.executions)
            .item("execution_id", s(tenant.scoped(&id.to_string())))
            .item(attribute, value)
            .item("expires_at", n(record.expires_at))
            .build()
            .map_err(backend)
    }

    /// Appends a log entry, in the same transaction as `also` when given.
    pub(super) async fn append(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        entry: NewLogEntry,
        also: Option<Put>,
    ) -> Result<u64, MetaStoreError> {
        let scoped = tenant.scoped(session.as_str());
        let scoped = scoped.as_ref();
        let session_hash = hex::encode(Sha256::digest(scoped.as_bytes()));
        let started = std::time::Instant::now();
        let mut backoff = BACKOFF_START;
        let mut attempts = 0u32;
        while started.elapsed() < APPEND_BUDGET {
            attempts += 1;
            let head = self.head(scoped).await?;
            let index = head.next;
            let record = LogEntry {
                index,
                input_heap: entry.input_heap.clone(),
                output_heap: entry.output_heap.clone(),
                code: entry.code.clone(),
                timestamp: entry.timestamp.clone(),
                superseded_by: entry.superseded_by,
            };
            let json = serde_json::to_string(&record).map_err(backend)?;
            let (attribute, value) = self
                .stash(format!("session-log/{session_hash}/{index}.json"), json)
                .await?;
            let now = crate::clock::unix_now();
            let expires = self.log_ttl_secs.map(|ttl| now + ttl);
            // With a retention, an expired item TTL has not deleted yet may
            // be written over: its index has been given up.
            let (entry_free, head_free) = match expires {
                Some(_) => (
                    "attribute_not_exists(idx) OR expires_at <= :now",
                    "attribute_not_exists(session_name) OR expires_at <= :now",
                ),
                None => (
                    "attribute_not_exists(idx)",
                    "attribute_not_exists(session_name)",
                ),
            };
            let mut put_entry = Put::builder()
                .table_name(&self.tables.log)
                .item("session_name", s(scoped))
                .item("idx", n(index))
                .item(attribute, value)
                .condition_expression(entry_free);
            if let Some(at) = expires {
                put_entry = put_entry
                    .item("expires_at", n(at))
                    .expression_attribute_values(":now", n(now));
            }
            let put_entry = put_entry.build().map_err(backend)?;
            // The entry and the head move together, and only from the head we
            // read: a concurrent append makes the whole transaction fail.
            let advance_head = if index == 0 {
                let mut put = Put::builder()
                    .table_name(&self.tables.heads)
                    .item("session_name", s(scoped))
                    .item("next_idx", n(1))
                    .item("listed", AttributeValue::Bool(true))
                    .condition_expression(head_free);
                if let Some(at) = expires {
                    put = put
                        .item("expires_at", n(at))
                        .expression_attribute_values(":now", n(now));
                }
                TransactWriteItem::builder()
                    .put(put.build().map_err(backend)?)
                    .build()
            } else {
                let mut update = Update::builder()
                    .table_name(&self.tables.heads)
                    .key("session_name", s(scoped))
                    .update_expression(match expires {
                        Some(_) => "SET next_idx = :next, listed = :listed, expires_at = :expires",
                        None => "SET next_idx = :next, listed = :listed",
                    })
                    .condition_expression("next_idx = :current")
                    .expression_attribute_values(":next", n(index + 1))
                    .expression_attribute_values(":listed", AttributeValue::Bool(true))
                    .expression_attribute_values(":current", n(index));
                if let Some(at) = expires {
                    update = update.expression_attribute_values(":expires", n(at));
                }
                TransactWriteItem::builder()
                    .update(update.build().map_err(backend)?)
                    .build()
            };
            let mut transaction = self
                .dynamodb
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(put_entry).build())
                .transact_items(advance_head);
            // The index item is written once per session, and again with
            // each append only when it must expire with the session.
            if !head.listed || expires.is_some() {
                let mut put = Put::builder()
                    .table_name(&self.tables.index)
                    .item("tenant", s(tenant.partition()))
                    .item("session_name", s(session.as_str()));
                if let Some(at) = expires {
                    put = put.item("expires_at", n(at));
                }
                transaction = transaction.transact_items(
                    TransactWriteItem::builder()
                        .put(put.build().map_err(backend)?)
                        .build(),
                );
            }
            if let Some(put) = &also {
                transaction = transaction
                    .transact_items(TransactWriteItem::builder().put(put.clone()).build());
            }
            let result = transaction.send().await;
            match result {
                Ok(_) => return Ok(index),
                Err(e) if e.as_service_error().is_some_and(lost_a_race) => {
                    let pause = rand::random_range(0..=backoff.as_millis() as u64);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    backoff = (backoff * 2).min(BACKOFF_CAP);
                }
                Err(e) => return Err(sdk(e)),
            }
        }
        Err(backend(format!(
            "could not allocate a log index for session {session:?}: {attempts} attempts in {} s all conflicted",
            APPEND_BUDGET.as_secs()
        )))
    }
}

/// Whether an append's transaction was cancelled only because another
/// writer moved the session's head first: a condition failed or a
/// concurrent transaction touched the same item, and nothing else went
/// wrong. Such an append is tried again at the new head; any other
/// cancellation (validation, throttling, size limits) is an error at once.
fn lost_a_race(error: &TransactWriteItemsError) -> bool {
    let TransactWriteItemsError::TransactionCanceledException(cancelled) = error else {
        return false;
    };
    let mut conflict = false;
    for reason in cancelled.cancellation_reasons() {
        match reason.code() {
            Some("ConditionalCheckFailed" | "TransactionConflict") => conflict = true,
            None | Some("None") => {}
            Some(_) => return false,
        }
    }
    conflict
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::CancellationReason;
    use aws_sdk_dynamodb::types::error::TransactionCanceledException;

    use super::*;

    fn cancelled(codes: &[&str]) -> TransactWriteItemsError {
        let reasons = codes
            .iter()
            .map(|code| CancellationReason::builder().code(*code).build())
            .collect();
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(reasons))
                .build(),
        )
    }

    #[test]
    fn only_a_lost_race_for_the_head_is_retried() {
        assert!(lost_a_race(&cancelled(&["ConditionalCheckFailed", "None"])));
        assert!(lost_a_race(&cancelled(&["None", "TransactionConflict"])));
        assert!(!lost_a_race(&cancelled(&["ValidationError", "None"])));
        assert!(!lost_a_race(&cancelled(&[
            "ConditionalCheckFailed",
            "ThrottlingError"
        ])));
        assert!(!lost_a_race(&cancelled(&["None", "None"])));
        assert!(!lost_a_race(&cancelled(&[])));
    }
}
