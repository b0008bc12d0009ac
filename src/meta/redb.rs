//! The embedded metadata store, in the same redb database as the sessions.

use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};
use uuid::Uuid;

mod suspensions;
mod task_records;

use super::{ExecutionRecord, LogEntry, MetaStore, MetaStoreError, NewLogEntry, PendingSave, Tags};
use crate::backends::embedded;
use crate::heap::HeapKey;
use crate::session::LogicalSession;
use crate::tenant::Tenant;

// Keys of session names, heaps and executions are scoped by tenant
// (`Tenant::scoped`): bare for the anonymous tenant, so stores made before
// tenants existed are that tenant's.

/// (session, index) → JSON [`LogEntry`].
const LOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("session_log");
/// session → next index; one row per session, so listing reads no entries.
const LOG_HEADS: TableDefinition<&str, u64> = TableDefinition::new("session_log_heads");
/// (tenant partition, session name) → (): each tenant's sessions in one
/// range, so a listing reads only its own tenant's names.
const SESSION_INDEX: TableDefinition<(&str, &str), ()> = TableDefinition::new("session_index");
/// heap → JSON tags.
const TAGS: TableDefinition<&str, &[u8]> = TableDefinition::new("heap_tags");
/// (scoped tag key, tag value, heap) → (): the inverted index for queries.
const TAG_INDEX: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new("heap_tag_index");
/// execution id → JSON [`ExecutionRecord`].
const EXECUTIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("executions");
/// Tenant-scoped session name → its [`PendingSave`] (JSON).
const PENDING_SAVES: TableDefinition<&str, &[u8]> = TableDefinition::new("pending_saves");

/// Session log, tags and executions in redb. Every call is at most one
/// transaction, committed durably before it returns.
#[derive(Debug, Clone)]
pub struct RedbMetaStore {
    db: Arc<Database>,
}

fn backend(source: impl Into<super::BoxError>) -> MetaStoreError {
    MetaStoreError::Backend {
        store: "redb",
        source: source.into(),
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    what: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<T, MetaStoreError> {
    serde_json::from_slice(bytes).map_err(|e| MetaStoreError::Unreadable {
        what: what(),
        reason: e.to_string(),
    })
}

impl RedbMetaStore {
    /// A store over an open database (shared with the session store: redb
    /// allows one handle per file).
    pub fn new(db: Arc<Database>) -> Result<Self, MetaStoreError> {
        let tx = db.begin_write().map_err(backend)?;
        tx.open_table(LOG).map_err(backend)?;
        tx.open_table(TAGS).map_err(backend)?;
        tx.open_table(TAG_INDEX).map_err(backend)?;
        tx.open_table(EXECUTIONS).map_err(backend)?;
        tx.open_table(PENDING_SAVES).map_err(backend)?;
        index_existing_sessions(&tx)?;
        tx.commit().map_err(backend)?;
        Ok(Self { db })
    }

    async fn blocking<T, F>(&self, work: F) -> Result<T, MetaStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, MetaStoreError> + Send + 'static,
    {
        embedded::blocking(&self.db, work, backend).await
    }
}

/// Fills the session index from the heads when it is empty and they are
/// not: a database written before the index existed is listed in full.
fn index_existing_sessions(tx: &redb::WriteTransaction) -> Result<(), MetaStoreError> {
    let heads = tx.open_table(LOG_HEADS).map_err(backend)?;
    let mut index = tx.open_table(SESSION_INDEX).map_err(backend)?;
    if !index.is_empty().map_err(backend)? || heads.is_empty().map_err(backend)? {
        return Ok(());
    }
    for row in heads.iter().map_err(backend)? {
        let (stored, _) = row.map_err(backend)?;
        let (tenant, name) = Tenant::unscoped(stored.value());
        index
            .insert((tenant.partition(), name), ())
            .map_err(backend)?;
    }
    Ok(())
}

/// Appends to the log of `session` inside `tx`. redb runs write transactions
/// one at a time, so reading the head and writing entry and head in one
/// transaction allocates the index without races.
fn append_in(
    tx: &redb::WriteTransaction,
    tenant: &Tenant,
    session: &LogicalSession,
    entry: NewLogEntry,
) -> Result<u64, MetaStoreError> {
    let name = session.as_str();
    let scoped = tenant.scoped(name);
    let session = scoped.as_ref();
    let mut heads = tx.open_table(LOG_HEADS).map_err(backend)?;
    let index = heads
        .get(session)
        .map_err(backend)?
        .map_or(0, |v| v.value());
    heads.insert(session, index + 1).map_err(backend)?;
    if index == 0 {
        tx.open_table(SESSION_INDEX)
            .map_err(backend)?
            .insert((tenant.partition(), name), ())
            .map_err(backend)?;
    }
    let record = LogEntry {
        index,
        input_heap: entry.input_heap,
        output_heap: entry.output_heap,
        code: entry.code,
        timestamp: entry.timestamp,
        superseded_by: entry.superseded_by,
    };
    let bytes = serde_json::to_vec(&record).map_err(backend)?;
    tx.open_table(LOG)
        .map_err(backend)?
        .insert((session, index), bytes.as_slice())
        .map_err(backend)?;
    Ok(index)
}

fn put_execution_in(
    tx: &redb::WriteTransaction,
    tenant: &Tenant,
    record: &ExecutionRecord,
) -> Result<(), MetaStoreError> {
    let bytes = serde_json::to_vec(record).map_err(backend)?;
    let id = record.execution_id.to_string();
    tx.open_table(EXECUTIONS)
        .map_err(backend)?
        .insert(tenant.scoped(&id).as_ref(), bytes.as_slice())
        .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl MetaStore for RedbMetaStore {
    fn exclusive(&self) -> bool {
        // redb locks its file for one process.
        true
    }

    async fn put_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        save: &PendingSave,
    ) -> Result<(), MetaStoreError> {
        let session = tenant.scoped(session.as_str()).into_owned();
        let json = serde_json::to_vec(save).map_err(backend)?;
        self.blocking(move |db| {
            embedded::put_json(db, PENDING_SAVES, session.as_str(), &json).map_err(backend)
        })
        .await
    }

    async fn pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<PendingSave>, MetaStoreError> {
        let scoped = tenant.scoped(session.as_str()).into_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = tx.open_table(PENDING_SAVES).map_err(backend)?;
            match table.get(scoped.as_str()).map_err(backend)? {
                Some(bytes) => {
                    decode(|| format!("pending save of {scoped:?}"), bytes.value()).map(Some)
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn clear_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
    ) -> Result<(), MetaStoreError> {
        let scoped = tenant.scoped(session.as_str()).into_owned();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut table = tx.open_table(PENDING_SAVES).map_err(backend)?;
                let current = match table.get(scoped.as_str()).map_err(backend)? {
                    Some(bytes) => Some(decode::<PendingSave>(
                        || format!("pending save of {scoped:?}"),
                        bytes.value(),
                    )?),
                    None => None,
                };
                if let Some(save) = current.filter(|save| save.execution_id == execution_id) {
                    let cleared = PendingSave {
                        cleared: true,
                        ..save
                    };
                    let json = serde_json::to_vec(&cleared).map_err(backend)?;
                    table
                        .insert(scoped.as_str(), json.as_slice())
                        .map_err(backend)?;
                }
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn append_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        entry: NewLogEntry,
    ) -> Result<u64, MetaStoreError> {
        let (tenant, session) = (tenant.clone(), session.clone());
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let index = append_in(&tx, &tenant, &session, entry)?;
            tx.commit().map_err(backend)?;
            Ok(index)
        })
        .await
    }

    async fn list_sessions(
        &self,
        tenant: &Tenant,
        after: Option<&LogicalSession>,
        limit: usize,
    ) -> Result<Vec<LogicalSession>, MetaStoreError> {
        let (tenant, after) = (tenant.clone(), after.cloned());
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let index = tx.open_table(SESSION_INDEX).map_err(backend)?;
            let partition = tenant.partition();
            let start = after.as_ref().map_or("", LogicalSession::as_str);
            let mut sessions = Vec::new();
            for row in index.range((partition, start)..).map_err(backend)? {
                let (key, _) = row.map_err(backend)?;
                let (p, name) = key.value();
                if p != partition || sessions.len() == limit {
                    break;
                }
                if Some(name) == after.as_ref().map(LogicalSession::as_str) {
                    continue;
                }
                // Only a name logged before names were validated (the empty
                // one) fails; no call can name it, so no listing shows it.
                if let Ok(name) = LogicalSession::parse(name) {
                    sessions.push(name);
                }
            }
            Ok(sessions)
        })
        .await
    }

    async fn last_log_entry(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<LogEntry>, MetaStoreError> {
        let session = tenant.scoped(session.as_str()).into_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let log = tx.open_table(LOG).map_err(backend)?;
            let mut range = log
                .range((session.as_str(), 0)..=(session.as_str(), u64::MAX))
                .map_err(backend)?;
            match range.next_back() {
                Some(row) => {
                    let (key, bytes) = row.map_err(backend)?;
                    decode(|| format!("log entry {:?}", key.value()), bytes.value()).map(Some)
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn read_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LogEntry>, MetaStoreError> {
        let session = tenant.scoped(session.as_str()).into_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let log = tx.open_table(LOG).map_err(backend)?;
            let range = log
                .range((session.as_str(), offset)..=(session.as_str(), u64::MAX))
                .map_err(backend)?;
            range
                .take(limit)
                .map(|row| {
                    let (key, bytes) = row.map_err(backend)?;
                    decode(|| format!("log entry {:?}", key.value()), bytes.value())
                })
                .collect()
        })
        .await
    }

    async fn get_tags(&self, tenant: &Tenant, heap: &HeapKey) -> Result<Tags, MetaStoreError> {
        let (heap, stored) = (heap.clone(), tenant.scoped(heap.as_str()).into_owned());
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let tags = tx.open_table(TAGS).map_err(backend)?;
            match tags.get(stored.as_str()).map_err(backend)? {
                Some(bytes) => decode(|| format!("tags of heap {heap}"), bytes.value()),
                None => Ok(Tags::new()),
            }
        })
        .await
    }

    async fn set_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
        new_tags: &Tags,
    ) -> Result<(), MetaStoreError> {
        let (tenant, heap) = (tenant.clone(), heap.clone());
        let new_tags = new_tags.clone();
        self.blocking(move |db| {
            let stored = tenant.scoped(heap.as_str());
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut tags = tx.open_table(TAGS).map_err(backend)?;
                let mut index = tx.open_table(TAG_INDEX).map_err(backend)?;
                let old: Tags = match tags.get(stored.as_ref()).map_err(backend)? {
                    Some(bytes) => decode(|| format!("tags of heap {heap}"), bytes.value())?,
                    None => Tags::new(),
                };
                for (key, value) in &old {
                    index
                        .remove((tenant.scoped(key).as_ref(), value.as_str(), heap.as_str()))
                        .map_err(backend)?;
                }
                if new_tags.is_empty() {
                    tags.remove(stored.as_ref()).map_err(backend)?;
                } else {
                    let bytes = serde_json::to_vec(&new_tags).map_err(backend)?;
                    tags.insert(stored.as_ref(), bytes.as_slice())
                        .map_err(backend)?;
                    for (key, value) in &new_tags {
                        index
                            .insert(
                                (tenant.scoped(key).as_ref(), value.as_str(), heap.as_str()),
                                (),
                            )
                            .map_err(backend)?;
                    }
                }
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn query_by_tags(
        &self,
        tenant: &Tenant,
        filter: &Tags,
    ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
        let (tenant, filter) = (tenant.clone(), filter.clone());
        self.blocking(move |db| {
            let Some((key, value)) = filter.iter().next() else {
                return Ok(Vec::new());
            };
            let key = tenant.scoped(key);
            let key = key.as_ref();
            let tx = db.begin_read().map_err(backend)?;
            let index = tx.open_table(TAG_INDEX).map_err(backend)?;
            let tags = tx.open_table(TAGS).map_err(backend)?;
            let mut found = Vec::new();
            // Candidates share the first pair; only they are read.
            for row in index.range((key, value.as_str(), "")..).map_err(backend)? {
                let (entry, _) = row.map_err(backend)?;
                let (k, v, heap) = entry.value();
                if k != key || v != value {
                    break;
                }
                let Ok(heap) = HeapKey::parse(heap) else {
                    continue;
                };
                let Some(bytes) = tags
                    .get(tenant.scoped(heap.as_str()).as_ref())
                    .map_err(backend)?
                else {
                    continue;
                };
                let heap_tags: Tags = decode(|| format!("tags of heap {heap}"), bytes.value())?;
                if filter.iter().all(|(fk, fv)| heap_tags.get(fk) == Some(fv)) {
                    found.push((heap, heap_tags));
                }
            }
            Ok(found)
        })
        .await
    }

    async fn put_execution(
        &self,
        tenant: &Tenant,
        record: &ExecutionRecord,
    ) -> Result<(), MetaStoreError> {
        self.record_run(tenant, None, record).await.map(|_| ())
    }

    async fn state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
        self.redb_state_key().await
    }

    async fn put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &crate::elicit::Suspension,
    ) -> Result<(), MetaStoreError> {
        self.redb_put_suspension(tenant, suspension).await
    }

    async fn get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<crate::elicit::Suspension>, MetaStoreError> {
        self.redb_get_suspension(tenant, id, now).await
    }

    async fn claim_suspension(&self, tenant: &Tenant, id: Uuid) -> Result<bool, MetaStoreError> {
        self.redb_claim_suspension(tenant, id).await
    }

    async fn admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
        _expires_at: i64,
    ) -> Result<bool, MetaStoreError> {
        self.redb_admit_suspension(tenant, window, limit).await
    }

    /// One write transaction: a failure leaves neither the log entry nor the
    /// execution record behind, as on DynamoDB.
    async fn record_run(
        &self,
        tenant: &Tenant,
        log: Option<(&LogicalSession, NewLogEntry)>,
        execution: &ExecutionRecord,
    ) -> Result<Option<u64>, MetaStoreError> {
        let log = log.map(|(session, entry)| (session.clone(), entry));
        let (tenant, execution) = (tenant.clone(), execution.clone());
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let index = match log {
                Some((session, entry)) => Some(append_in(&tx, &tenant, &session, entry)?),
                None => None,
            };
            put_execution_in(&tx, &tenant, &execution)?;
            tx.commit().map_err(backend)?;
            Ok(index)
        })
        .await
    }

    async fn get_execution(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<ExecutionRecord>, MetaStoreError> {
        let stored = tenant.scoped(&id.to_string()).into_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let executions = tx.open_table(EXECUTIONS).map_err(backend)?;
            let Some(bytes) = executions.get(stored.as_str()).map_err(backend)? else {
                return Ok(None);
            };
            let record: ExecutionRecord = decode(|| format!("execution {id}"), bytes.value())?;
            Ok((record.expires_at > now).then_some(record))
        })
        .await
    }
}
