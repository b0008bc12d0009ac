//! Metadata beside the heaps: the session log, heap tags and the execution
//! registry. The layout mirrors the original sled schema (one log per
//! session name keyed by a growing index; tags keyed by heap; executions
//! keyed by id) so the DynamoDB tables can mirror it one to one.

mod dynamodb;
pub mod page;
mod redb;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::elicit::Suspension;
use crate::heap::HeapKey;
use crate::session::LogicalSession;
use crate::tenant::Tenant;

pub use self::dynamodb::{DynamoMetaStore, MetaTables};
pub use self::redb::RedbMetaStore;

use crate::BoxError;

/// Heap tags: string keys to string values.
pub type Tags = BTreeMap<String, String>;

/// A session-log entry as written by a stateful run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LogEntry {
    /// Position in the session's log, from 0, without gaps.
    pub index: u64,
    /// The heap the run started from (null: a fresh isolate).
    pub input_heap: Option<HeapKey>,
    /// The heap the run produced.
    pub output_heap: HeapKey,
    /// The JavaScript executed (after TypeScript stripping).
    pub code: String,
    /// RFC 3339 UTC time of the write.
    pub timestamp: String,
    /// Only when the run's own heap was never stored (saves coalesce):
    /// the run whose stored heap, `output_heap`, holds its effects;
    /// `input_heap` is then the nearest stored heap before it. Out of the
    /// tools' schema, whose size is bounded: readers get a `note` in words
    /// beside it ([`LogEntry::shown`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub superseded_by: Option<Uuid>,
}

impl LogEntry {
    /// The entry as a reader gets it: with a superseded run's entry, what
    /// its heaps mean in words (`note`).
    pub fn shown(self) -> serde_json::Map<String, serde_json::Value> {
        let note = self.superseded_by.map(|by| {
            format!(
                "this run's heap was never stored on its own (saves coalesce: run {by}, which \
                 continued it, completed first); output_heap, that run's, holds its effects, and \
                 input_heap is the stored heap before it"
            )
        });
        let serde_json::Value::Object(mut shown) =
            serde_json::to_value(self).expect("log entries serialize")
        else {
            unreachable!("a struct serializes to an object")
        };
        if let Some(note) = note {
            shown.insert("note".into(), note.into());
        }
        shown
    }
}

/// A heap whose run was answered before the heap was stored: written
/// before the answer goes, marked `cleared` once the run's log entry is
/// written, or rewritten with `failed`. A `latest` that finds one newer than the
/// session's last entry waits for it, or says the heap was lost
/// (docs/protocol.md, "Answer first, save after").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSave {
    /// The run.
    pub execution_id: Uuid,
    /// The process storing it (an id it draws when it starts).
    pub owner: String,
    /// RFC 3339 UTC time the run's code ended: the `timestamp` its log
    /// entry gets, so an entry at least as new makes this old news.
    pub completed_at: String,
    /// Unix seconds after which a save still pending is taken as lost.
    pub expires_at: i64,
    /// Why storing the heap failed, once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The heap is stored and its log entry written: what remains tells a
    /// reader that an entry older than `completed_at`, read at the same
    /// time, was read before that entry was written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleared: bool,
    /// Runs of the session answered before it whose effects only its heap
    /// would hold (their own were superseded, or were still being
    /// stored): lost with it when it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<Uuid>,
}

/// A log entry before it has an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLogEntry {
    /// See [`LogEntry::input_heap`].
    pub input_heap: Option<HeapKey>,
    /// See [`LogEntry::output_heap`].
    pub output_heap: HeapKey,
    /// See [`LogEntry::code`].
    pub code: String,
    /// See [`LogEntry::timestamp`].
    pub timestamp: String,
    /// See [`LogEntry::superseded_by`].
    pub superseded_by: Option<Uuid>,
}

/// A run as the execution registry keeps it: the store needs only its id
/// and expiry, and keeps the rest of the outcome as the tool returned it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    /// The run's `execution_id`.
    pub execution_id: uuid::Uuid,
    /// The other fields of the outcome `run_js` returned, as its JSON.
    #[serde(flatten)]
    pub outcome: serde_json::Map<String, serde_json::Value>,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC.
    pub completed_at: String,
    /// Unix seconds after which the record is gone.
    pub expires_at: i64,
    /// The run's output and result kept apart from the record (the
    /// outcome then holds them empty), in the records store beside its
    /// files; absent from records of short texts and of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<KeptTexts>,
}

/// A run's texts kept apart from its [`ExecutionRecord`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptTexts {
    /// Its console output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<KeptText>,
    /// Its result's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<KeptText>,
}

/// One text kept apart: the key of its bytes and their length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptText {
    /// The key of its UTF-8 bytes in the records store.
    pub key: crate::backends::content::ContentKey,
    /// Their length.
    pub bytes: u64,
}

/// What can go wrong with the metadata store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaStoreError {
    /// The backend failed.
    #[error("{store} metadata store failed: {source}")]
    Backend {
        /// Backend name.
        store: &'static str,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// A stored record could not be decoded.
    #[error("stored {what} could not be read: {reason}")]
    Unreadable {
        /// Which record.
        what: String,
        /// Decoder message.
        reason: String,
    },
}

/// Session log, heap tags and execution registry, each scoped by tenant.
///
/// # Contract
/// - Every method acts in the namespace of its [`Tenant`] only: a session,
///   tag or execution written by one tenant is, to every other, exactly
///   what one never written is (an empty log, no tags, `None`), and no
///   listing or query of one tenant names another's. The anonymous tenant
///   keeps the original layout.
/// - `append_log` allocates the next index of its session atomically:
///   concurrent appends to one session get distinct indexes with no gaps,
///   from 0.
/// - `list_sessions` names the tenant's sessions with at least one entry,
///   sorted, a page at a time, without reading entries or any other
///   tenant's sessions (no table scan).
/// - `set_tags` replaces all tags of a heap; an empty map removes them.
///   `query_by_tags` returns heaps whose tags contain every pair of the
///   filter, never untagged heaps, reading only candidates of one pair.
/// - `get_execution` treats a record whose `expires_at <= now` as absent.
/// - A session has at most one [`PendingSave`]: `put_pending_save`
///   replaces it, `pending_save` reads it (consistently: after a write
///   returns, every read sees it), and `clear_pending_save` marks it
///   `cleared`, only while it is the named run's, leaving the rest of it
///   for readers ([`PendingSave::cleared`]).
/// - `exclusive` is true only for a store no other process can open at
///   the same time (the embedded one): a pending save another process
///   wrote there was left by a process that ended.
/// - `state_key` returns the same bytes to every caller in every process
///   of the deployment, made by the first that asks (a conditional
///   write: two first callers still agree).
/// - `get_suspension` treats a record whose `expires_at <= now` as
///   absent. `claim_suspension` is true for exactly one caller per
///   suspension, however many ask at once, and false for an absent one.
/// - `admit_suspension` counts one suspension of `tenant` in `window` and
///   is true while fewer than `limit` were counted there, false (counting
///   nothing) once `limit` were; tenants and windows count apart, and the
///   count is atomic across processes. A window's count may be dropped
///   after `expires_at`.
#[async_trait]
pub trait MetaStore: Send + Sync + fmt::Debug + 'static {
    /// Appends to the log of `session` and returns the entry's index.
    async fn append_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        entry: NewLogEntry,
    ) -> Result<u64, MetaStoreError>;
    /// At most `limit` names of sessions with at least one entry, sorted,
    /// each after `after` when given (the last name of the previous page).
    async fn list_sessions(
        &self,
        tenant: &Tenant,
        after: Option<&LogicalSession>,
        limit: usize,
    ) -> Result<Vec<LogicalSession>, MetaStoreError>;
    /// The newest entry of `session` (its `index + 1` is the log's length).
    async fn last_log_entry(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<LogEntry>, MetaStoreError>;
    /// Entries `offset..offset + limit` of `session`, in index order.
    async fn read_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LogEntry>, MetaStoreError>;
    /// Tags of `heap` (empty when none).
    async fn get_tags(&self, tenant: &Tenant, heap: &HeapKey) -> Result<Tags, MetaStoreError>;
    /// Replaces the tags of `heap`.
    async fn set_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
        tags: &Tags,
    ) -> Result<(), MetaStoreError>;
    /// Heaps whose tags contain every pair of `filter` (non-empty).
    async fn query_by_tags(
        &self,
        tenant: &Tenant,
        filter: &Tags,
    ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError>;
    /// Writes the pending save of `session`, replacing any.
    async fn put_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        save: &PendingSave,
    ) -> Result<(), MetaStoreError>;
    /// The pending save of `session`, if any.
    async fn pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<PendingSave>, MetaStoreError>;
    /// Marks the pending save of `session` cleared if it is
    /// `execution_id`'s.
    async fn clear_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
    ) -> Result<(), MetaStoreError>;
    /// Whether this process alone has the store open (see the contract).
    fn exclusive(&self) -> bool {
        false
    }
    /// The deployment's key for request states (see the contract).
    async fn state_key(&self) -> Result<Vec<u8>, MetaStoreError>;
    /// Writes a suspended run.
    async fn put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &Suspension,
    ) -> Result<(), MetaStoreError>;
    /// A suspended run, unless absent or expired at `now` (Unix seconds).
    async fn get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<Suspension>, MetaStoreError>;
    /// Takes the suspended run `id` for the one retry that continues it.
    async fn claim_suspension(&self, tenant: &Tenant, id: Uuid) -> Result<bool, MetaStoreError>;
    /// Counts a new suspension of `tenant` in `window`, unless `limit`
    /// were counted there already (see the contract).
    async fn admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
        expires_at: i64,
    ) -> Result<bool, MetaStoreError>;
    /// Records a run.
    async fn put_execution(
        &self,
        tenant: &Tenant,
        record: &ExecutionRecord,
    ) -> Result<(), MetaStoreError>;
    /// A recorded run, unless absent or expired at `now` (Unix seconds).
    async fn get_execution(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<ExecutionRecord>, MetaStoreError>;

    /// What a run leaves behind: its log entry (when it has a logical
    /// session) and its execution record, together. Backends that can make
    /// it one write do (DynamoDB: one transaction); the default makes two.
    /// Returns the log index.
    async fn record_run(
        &self,
        tenant: &Tenant,
        log: Option<(&LogicalSession, NewLogEntry)>,
        execution: &ExecutionRecord,
    ) -> Result<Option<u64>, MetaStoreError> {
        let index = match log {
            Some((session, entry)) => Some(self.append_log(tenant, session, entry).await?),
            None => None,
        };
        self.put_execution(tenant, execution).await?;
        Ok(index)
    }
}
