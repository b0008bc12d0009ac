//! Session log, heap tags and executions in DynamoDB, with fields too large
//! for an item (code or output over ~300 KiB) stored in S3 beside the heaps.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::AttributeValue;
use uuid::Uuid;

mod append;
mod pending;
mod suspensions;
mod tags;
mod task_records;

use super::{ExecutionRecord, LogEntry, MetaStore, MetaStoreError, NewLogEntry, PendingSave, Tags};
use crate::backends::aws::{
    EXECUTIONS, HEAP_TAG_INDEX, HEAP_TAGS, SESSION_HEADS, SESSION_INDEX, SESSION_LOG, TASKS,
};
use crate::heap::HeapKey;
use crate::session::LogicalSession;
use crate::tenant::Tenant;

/// JSON larger than this goes to S3; DynamoDB items stop at 400 KB.
const INLINE_MAX: usize = 300 * 1024;
/// How long an append keeps retrying index conflicts before giving up. A
/// time budget, not an attempt count: how many attempts a busy log needs
/// depends on how fast the service answers. Only conflicts are retried
/// ([`lost_a_race`]); any other failure ends the append at once.
const APPEND_BUDGET: Duration = Duration::from_secs(30);
/// Backoff bounds between conflicting attempts (full jitter below the cap).
const BACKOFF_START: Duration = Duration::from_millis(2);
const BACKOFF_CAP: Duration = Duration::from_millis(200);

/// Names of the metadata tables under one prefix.
#[derive(Debug, Clone)]
pub struct MetaTables {
    log: String,
    heads: String,
    index: String,
    tags: String,
    tag_index: String,
    executions: String,
    tasks: String,
}

impl MetaTables {
    /// The tables of [`crate::backends::aws::TABLES`] under `prefix`.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            log: SESSION_LOG.name(prefix),
            heads: SESSION_HEADS.name(prefix),
            index: SESSION_INDEX.name(prefix),
            tags: HEAP_TAGS.name(prefix),
            tag_index: HEAP_TAG_INDEX.name(prefix),
            executions: EXECUTIONS.name(prefix),
            tasks: TASKS.name(prefix),
        }
    }
}

/// Metadata in DynamoDB (see docs/storage.md for the layout).
#[derive(Debug, Clone)]
pub struct DynamoMetaStore {
    dynamodb: Client,
    s3: aws_sdk_s3::Client,
    bucket: String,
    overflow_prefix: String,
    tables: MetaTables,
    /// Items per query or scan page; `None` lets DynamoDB fill 1 MB pages.
    page_items: Option<i32>,
    /// How long log entries and heads live after their last write, in
    /// seconds; `None` keeps them for good.
    log_ttl_secs: Option<i64>,
}

fn backend(error: impl std::fmt::Display) -> MetaStoreError {
    MetaStoreError::Backend {
        store: "dynamodb",
        source: error.to_string().into(),
    }
}

fn sdk(error: impl std::error::Error + Send + Sync + 'static) -> MetaStoreError {
    backend(DisplayErrorContext(error))
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// Whether a write failed on its condition (the item was not as required).
fn conditional_failed<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    error: &aws_sdk_dynamodb::error::SdkError<E>,
) -> bool {
    error
        .as_service_error()
        .and_then(aws_sdk_dynamodb::error::ProvideErrorMetadata::code)
        == Some("ConditionalCheckFailedException")
}

fn number(item: &HashMap<String, AttributeValue>, name: &str) -> Option<i64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn string<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a String> {
    item.get(name)?.as_s().ok()
}

/// An unambiguous partition key for one tag pair of `tenant`.
fn pair_key(tenant: &Tenant, key: &str, value: &str) -> String {
    tenant
        .scoped(&format!("{}:{key}={value}", key.len()))
        .into_owned()
}

/// Where a session's head stands.
struct Head {
    /// The index the next entry gets.
    next: u64,
    /// Whether the session index names the session (heads written before
    /// the index existed do not, until their next append).
    listed: bool,
}

impl DynamoMetaStore {
    /// A store over `tables`, overflowing large fields to
    /// `bucket`/`overflow_prefix`.
    pub fn new(
        dynamodb: Client,
        s3: aws_sdk_s3::Client,
        bucket: impl Into<String>,
        overflow_prefix: impl Into<String>,
        tables: MetaTables,
    ) -> Self {
        Self {
            dynamodb,
            s3,
            bucket: bucket.into(),
            overflow_prefix: overflow_prefix.into(),
            tables,
            page_items: None,
            log_ttl_secs: None,
        }
    }

    /// Log entries and session heads carry an `expires_at` of their last
    /// write plus `retention`, for DynamoDB's TTL to delete, and reads treat
    /// them as gone from then on (TTL deletes late). A session's head moves
    /// with each append, so a session disappears `retention` after its last
    /// run, its entries one by one as they age. Without it, all is kept.
    pub fn with_log_retention(mut self, retention: Duration) -> Self {
        self.log_ttl_secs = Some(retention.as_secs().max(1) as i64);
        self
    }

    /// `query` with the filter that hides log items past their
    /// `expires_at`, when a retention is set.
    fn live_only(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        if self.log_ttl_secs.is_none() {
            return query;
        }
        query
            .filter_expression("attribute_not_exists(expires_at) OR expires_at > :now")
            .expression_attribute_values(":now", n(crate::clock::unix_now()))
    }

    /// Asks DynamoDB for at most `items` items per page. It ends a page at
    /// 1 MB of items, which a test's few small items never reach; small
    /// pages let the tests show that every listing follows them to the end.
    pub fn with_page_items(mut self, items: u16) -> Self {
        self.page_items = Some(i32::from(items.max(1)));
        self
    }

    /// The JSON as an attribute: inline when it fits, else an S3 object key.
    async fn stash(
        &self,
        object: String,
        json: String,
    ) -> Result<(&'static str, AttributeValue), MetaStoreError> {
        if json.len() <= INLINE_MAX {
            return Ok(("json", s(json)));
        }
        let key = format!("{}{object}", self.overflow_prefix);
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/json")
            .body(json.into_bytes().into())
            .send()
            .await
            .map_err(|e| backend(aws_sdk_s3::error::DisplayErrorContext(e)))?;
        Ok(("json_s3_key", s(key)))
    }

    /// The JSON of an item written by [`Self::stash`].
    async fn unstash<T: serde::de::DeserializeOwned>(
        &self,
        item: &HashMap<String, AttributeValue>,
        what: &str,
    ) -> Result<T, MetaStoreError> {
        let unreadable = |reason: String| MetaStoreError::Unreadable {
            what: what.to_owned(),
            reason,
        };
        let json = if let Some(inline) = string(item, "json") {
            inline.clone()
        } else if let Some(key) = string(item, "json_s3_key") {
            let object = self
                .s3
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| backend(aws_sdk_s3::error::DisplayErrorContext(e)))?;
            let bytes = object.body.collect().await.map_err(backend)?.into_bytes();
            String::from_utf8(bytes.to_vec()).map_err(|e| unreadable(e.to_string()))?
        } else {
            return Err(unreadable("neither json nor json_s3_key is present".into()));
        };
        serde_json::from_str(&json).map_err(|e| unreadable(e.to_string()))
    }

    async fn head(&self, scoped: &str) -> Result<Head, MetaStoreError> {
        let fresh = Head {
            next: 0,
            listed: false,
        };
        let output = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.heads)
            .key("session_name", s(scoped))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk)?;
        let Some(item) = output.item.as_ref() else {
            return Ok(fresh);
        };
        // An expired head that TTL has not deleted yet starts the log anew.
        if self.log_ttl_secs.is_some()
            && number(item, "expires_at").is_some_and(|at| at <= crate::clock::unix_now())
        {
            return Ok(fresh);
        }
        Ok(Head {
            next: number(item, "next_idx").unwrap_or(0) as u64,
            listed: item
                .get("listed")
                .and_then(|v| v.as_bool().ok())
                .is_some_and(|b| *b),
        })
    }

    /// The stashed JSON of the executions table's item `key` (a record, or
    /// a suspended run), unless absent or expired at `now`.
    async fn unexpired<T: serde::de::DeserializeOwned>(
        &self,
        key: AttributeValue,
        now: i64,
        what: &str,
    ) -> Result<Option<T>, MetaStoreError> {
        let output = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.executions)
            .key("execution_id", key)
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        // TTL deletes late: an expired item may still be there.
        if number(&item, "expires_at").is_none_or(|expires| expires <= now) {
            return Ok(None);
        }
        self.unstash(&item, what).await.map(Some)
    }
}

/// The key of a session's pending save in the executions table: no
/// execution id (a UUID) has this form.
fn pending_key(tenant: &Tenant, session: &LogicalSession) -> AttributeValue {
    s(tenant.scoped(&format!("pending-save:{}", session.as_str())))
}

/// How long after it stops mattering a pending save's item is kept, for
/// the table's TTL to remove it.
const PENDING_KEPT_SECS: i64 = 86_400;

#[async_trait]
impl MetaStore for DynamoMetaStore {
    async fn put_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        save: &PendingSave,
    ) -> Result<(), MetaStoreError> {
        self.dynamo_put_pending_save(tenant, session, save).await
    }

    async fn pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<PendingSave>, MetaStoreError> {
        self.dynamo_pending_save(tenant, session).await
    }

    async fn clear_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
    ) -> Result<(), MetaStoreError> {
        self.dynamo_clear_pending_save(tenant, session, execution_id)
            .await
    }

    async fn append_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        entry: NewLogEntry,
    ) -> Result<u64, MetaStoreError> {
        self.append(tenant, session, entry, None).await
    }

    async fn record_run(
        &self,
        tenant: &Tenant,
        log: Option<(&LogicalSession, NewLogEntry)>,
        execution: &ExecutionRecord,
    ) -> Result<Option<u64>, MetaStoreError> {
        let put = self.execution_put(tenant, execution).await?;
        match log {
            Some((session, entry)) => self
                .append(tenant, session, entry, Some(put))
                .await
                .map(Some),
            None => {
                self.dynamodb
                    .put_item()
                    .table_name(&self.tables.executions)
                    .set_item(Some(put.item))
                    .send()
                    .await
                    .map_err(sdk)?;
                Ok(None)
            }
        }
    }

    async fn list_sessions(
        &self,
        tenant: &Tenant,
        after: Option<&LogicalSession>,
        limit: usize,
    ) -> Result<Vec<LogicalSession>, MetaStoreError> {
        let mut sessions = Vec::new();
        if limit == 0 {
            return Ok(sessions);
        }
        let page = limit.min(1000) as i32;
        let mut query = self
            .dynamodb
            .query()
            .table_name(&self.tables.index)
            .projection_expression("session_name")
            .expression_attribute_values(":t", s(tenant.partition()))
            .consistent_read(true)
            .limit(self.page_items.map_or(page, |items| items.min(page)));
        query = match after {
            Some(after) => query
                .key_condition_expression("tenant = :t AND session_name > :after")
                .expression_attribute_values(":after", s(after.as_str())),
            None => query.key_condition_expression("tenant = :t"),
        };
        query = self.live_only(query);
        let mut items = query.into_paginator().items().send();
        // Pages are fetched as the stream is read, so none past `limit`.
        while let Some(item) = items.try_next().await.map_err(sdk)? {
            // Only a name logged before names were validated (the empty
            // one) fails; no call can name it, so no listing shows it.
            sessions.extend(
                string(&item, "session_name").and_then(|name| LogicalSession::parse(name).ok()),
            );
            if sessions.len() == limit {
                break;
            }
        }
        Ok(sessions)
    }

    async fn last_log_entry(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<LogEntry>, MetaStoreError> {
        let mut query = self
            .dynamodb
            .query()
            .table_name(&self.tables.log)
            .key_condition_expression("session_name = :s")
            .expression_attribute_values(":s", s(tenant.scoped(session.as_str())))
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true);
        query = self.live_only(query);
        // With a filter a page may hold nothing and still not be the end.
        let mut items = query.into_paginator().items().send();
        match items.try_next().await.map_err(sdk)? {
            Some(item) => self
                .unstash(&item, &format!("log entry of {session:?}"))
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    async fn read_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LogEntry>, MetaStoreError> {
        let mut entries = Vec::new();
        if limit == 0 {
            return Ok(entries);
        }
        // No page holds more than the caller wants (nor over 1000 items).
        let page = limit.min(1000) as i32;
        let mut query = self
            .dynamodb
            .query()
            .table_name(&self.tables.log)
            .key_condition_expression("session_name = :s AND idx >= :o")
            .expression_attribute_values(":s", s(tenant.scoped(session.as_str())))
            .expression_attribute_values(":o", n(offset))
            .consistent_read(true)
            .limit(self.page_items.map_or(page, |items| items.min(page)));
        query = self.live_only(query);
        let mut items = query.into_paginator().items().send();
        // Pages are fetched as the stream is read, so none past `limit`.
        while let Some(item) = items.try_next().await.map_err(sdk)? {
            entries.push(
                self.unstash(&item, &format!("log entry of {session:?}"))
                    .await?,
            );
            if entries.len() == limit {
                break;
            }
        }
        Ok(entries)
    }

    async fn get_tags(&self, tenant: &Tenant, heap: &HeapKey) -> Result<Tags, MetaStoreError> {
        self.dynamo_get_tags(tenant, heap).await
    }

    async fn set_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
        tags: &Tags,
    ) -> Result<(), MetaStoreError> {
        self.dynamo_set_tags(tenant, heap, tags).await
    }

    async fn query_by_tags(
        &self,
        tenant: &Tenant,
        filter: &Tags,
    ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
        self.dynamo_query_by_tags(tenant, filter).await
    }

    async fn put_execution(
        &self,
        tenant: &Tenant,
        record: &ExecutionRecord,
    ) -> Result<(), MetaStoreError> {
        self.record_run(tenant, None, record).await.map(drop)
    }

    async fn state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
        self.dynamo_state_key().await
    }

    async fn put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &crate::elicit::Suspension,
    ) -> Result<(), MetaStoreError> {
        self.dynamo_put_suspension(tenant, suspension).await
    }

    async fn get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<crate::elicit::Suspension>, MetaStoreError> {
        self.dynamo_get_suspension(tenant, id, now).await
    }

    async fn claim_suspension(&self, tenant: &Tenant, id: Uuid) -> Result<bool, MetaStoreError> {
        self.dynamo_claim_suspension(tenant, id).await
    }

    async fn admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
        expires_at: i64,
    ) -> Result<bool, MetaStoreError> {
        self.dynamo_admit_suspension(tenant, window, limit, expires_at)
            .await
    }

    async fn get_execution(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<ExecutionRecord>, MetaStoreError> {
        let key = s(tenant.scoped(&id.to_string()));
        self.unexpired(key, now, &format!("execution {id}")).await
    }
}
