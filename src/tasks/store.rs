//! The seam between tasks and where they are kept: DynamoDB on AWS, redb
//! locally. A store only keeps records and swaps them atomically; what a
//! change means (terminal states, claims, expiry) is decided once, in
//! [`super::TaskBook`].

use std::fmt;

use async_trait::async_trait;
use uuid::Uuid;

use super::record::TaskRecord;
use crate::BoxError;
use crate::tenant::Tenant;

/// A record and the version it was read at.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    /// The record.
    pub record: TaskRecord,
    /// Its version: 1 when created, one more at each replace.
    pub version: u64,
}

/// What can go wrong with a task store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The backend failed.
    #[error("{store} task store failed: {source}")]
    Backend {
        /// Backend name.
        store: &'static str,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
    /// A stored task could not be decoded.
    #[error("stored task {id} could not be read: {reason}")]
    Unreadable {
        /// The task.
        id: Uuid,
        /// Decoder message.
        reason: String,
    },
    /// `create` found the id taken.
    #[error("task {0} already exists")]
    Exists(Uuid),
}

/// Task records, each scoped by tenant.
///
/// # Contract
/// - Every method acts in the namespace of its [`Tenant`] only: a task of
///   one tenant is, to every other, exactly what one never created is
///   (`None`, absent from listings), even under the same id.
/// - `create` writes a record at version 1 and fails with
///   [`TaskStoreError::Exists`] when the id is taken; once it returns, a
///   `read` from any process sees the record (no eventual consistency).
/// - `replace` is a compare-and-swap: it writes `record` at `version + 1`
///   only if the stored version is still `version`, and returns `false`
///   (writing nothing) otherwise or when the task is absent.
/// - `read` returns what was last written, whatever its `expires_at`
///   (expiry is the caller's to judge; backends may delete expired
///   records at any later time).
/// - `list` returns the tenant's records ordered by id, a page at a time,
///   each after `after` when given, without reading other tenants'.
/// - Records of any size a tool result can have (5 MiB of result JSON)
///   are kept whole.
#[async_trait]
pub trait TaskStore: Send + Sync + fmt::Debug + 'static {
    /// Writes a new task at version 1.
    async fn create(&self, tenant: &Tenant, record: &TaskRecord) -> Result<(), TaskStoreError>;
    /// The task and its version, if it exists.
    async fn read(&self, tenant: &Tenant, id: Uuid) -> Result<Option<Versioned>, TaskStoreError>;
    /// Writes `record` if the stored version is `version`.
    async fn replace(
        &self,
        tenant: &Tenant,
        record: &TaskRecord,
        version: u64,
    ) -> Result<bool, TaskStoreError>;
    /// At most `limit` of the tenant's tasks, ordered by id, after `after`.
    async fn list(
        &self,
        tenant: &Tenant,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError>;
}
