//! Tasks in the embedded store: one row per task, keyed by the tenant's
//! partition and the task id, so a tenant's tasks are one range. The table
//! is made by the first task written; reads before then find none.

use async_trait::async_trait;
use redb::{ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::RedbMetaStore;
use crate::tasks::{TaskRecord, TaskStore, TaskStoreError, Versioned};
use crate::tenant::Tenant;

/// (tenant partition, task id) → JSON [`Row`].
const TASKS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("tasks");

#[derive(Serialize, Deserialize)]
struct Row {
    version: u64,
    record: TaskRecord,
}

fn backend(source: impl Into<crate::BoxError>) -> TaskStoreError {
    TaskStoreError::Backend {
        store: "redb",
        source: source.into(),
    }
}

fn decode(id: Uuid, bytes: &[u8]) -> Result<Row, TaskStoreError> {
    serde_json::from_slice(bytes).map_err(|e| TaskStoreError::Unreadable {
        id,
        reason: e.to_string(),
    })
}

impl RedbMetaStore {
    async fn tasks_blocking<T, F>(&self, work: F) -> Result<T, TaskStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&redb::Database) -> Result<T, TaskStoreError> + Send + 'static,
    {
        crate::backends::embedded::blocking(&self.db, work, backend).await
    }
}

#[async_trait]
impl TaskStore for RedbMetaStore {
    async fn create(&self, tenant: &Tenant, record: &TaskRecord) -> Result<(), TaskStoreError> {
        let (tenant, record) = (tenant.clone(), record.clone());
        self.tasks_blocking(move |db| {
            let id = record.task_id;
            let bytes = serde_json::to_vec(&Row { version: 1, record }).map_err(backend)?;
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut table = tx.open_table(TASKS).map_err(backend)?;
                let key = id.to_string();
                if table
                    .get((tenant.partition(), key.as_str()))
                    .map_err(backend)?
                    .is_some()
                {
                    return Err(TaskStoreError::Exists(id));
                }
                table
                    .insert((tenant.partition(), key.as_str()), bytes.as_slice())
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn read(&self, tenant: &Tenant, id: Uuid) -> Result<Option<Versioned>, TaskStoreError> {
        let tenant = tenant.clone();
        self.tasks_blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = match tx.open_table(TASKS) {
                Ok(table) => table,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(error) => return Err(backend(error)),
            };
            let key = id.to_string();
            let Some(bytes) = table
                .get((tenant.partition(), key.as_str()))
                .map_err(backend)?
            else {
                return Ok(None);
            };
            let row = decode(id, bytes.value())?;
            Ok(Some(Versioned {
                record: row.record,
                version: row.version,
            }))
        })
        .await
    }

    async fn replace(
        &self,
        tenant: &Tenant,
        record: &TaskRecord,
        version: u64,
    ) -> Result<bool, TaskStoreError> {
        let (tenant, record) = (tenant.clone(), record.clone());
        self.tasks_blocking(move |db| {
            let id = record.task_id;
            let key = id.to_string();
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut table = tx.open_table(TASKS).map_err(backend)?;
                let stored = match table
                    .get((tenant.partition(), key.as_str()))
                    .map_err(backend)?
                {
                    Some(bytes) => decode(id, bytes.value())?.version,
                    None => return Ok(false),
                };
                if stored != version {
                    return Ok(false);
                }
                let bytes = serde_json::to_vec(&Row {
                    version: version + 1,
                    record,
                })
                .map_err(backend)?;
                table
                    .insert((tenant.partition(), key.as_str()), bytes.as_slice())
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)?;
            Ok(true)
        })
        .await
    }

    async fn list(
        &self,
        tenant: &Tenant,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let tenant = tenant.clone();
        self.tasks_blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = match tx.open_table(TASKS) {
                Ok(table) => table,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(error) => return Err(backend(error)),
            };
            let partition = tenant.partition();
            let after = after.map(|id| id.to_string());
            let range = match &after {
                Some(after) => table.range((partition, after.as_str())..),
                None => table.range((partition, "")..),
            }
            .map_err(backend)?;
            let mut page = Vec::new();
            for row in range {
                let (key, bytes) = row.map_err(backend)?;
                let (stored_partition, id) = key.value();
                if stored_partition != partition {
                    break;
                }
                if after.as_deref() == Some(id) {
                    continue;
                }
                let id = Uuid::parse_str(id).map_err(|e| TaskStoreError::Unreadable {
                    id: Uuid::nil(),
                    reason: e.to_string(),
                })?;
                page.push(decode(id, bytes.value())?.record);
                if page.len() == limit {
                    break;
                }
            }
            Ok(page)
        })
        .await
    }
}
