//! Tasks in DynamoDB: one item per task in the tasks table, partitioned by
//! tenant, its JSON inline or (a large result) in S3 under the overflow
//! prefix. `version` makes each write a compare-and-swap.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{DynamoMetaStore, conditional_failed, n, number, s};
use crate::meta::MetaStoreError;
use crate::tasks::{TaskRecord, TaskStore, TaskStoreError, Versioned};
use crate::tenant::Tenant;

#[derive(Serialize, Deserialize)]
struct Stored {
    record: TaskRecord,
}

fn backend(error: impl std::fmt::Display) -> TaskStoreError {
    TaskStoreError::Backend {
        store: "DynamoDB",
        source: error.to_string().into(),
    }
}

fn from_meta(id: Uuid, error: MetaStoreError) -> TaskStoreError {
    match error {
        MetaStoreError::Unreadable { reason, .. } => TaskStoreError::Unreadable { id, reason },
        other => backend(other),
    }
}

impl DynamoMetaStore {
    /// The item attributes of `record` at `version`.
    async fn task_item(
        &self,
        tenant: &Tenant,
        record: &TaskRecord,
        version: u64,
    ) -> Result<Vec<(&'static str, AttributeValue)>, TaskStoreError> {
        let id = record.task_id;
        let json = serde_json::to_string(&Stored {
            record: record.clone(),
        })
        .map_err(backend)?;
        let folder = tenant.heap_folder().unwrap_or_default();
        // Each version its own object: a reader holding an older item
        // never finds a newer body under its key.
        let (attribute, value) = self
            .stash(format!("tasks/{folder}{id}-v{version}.json"), json)
            .await
            .map_err(|e| from_meta(id, e))?;
        Ok(vec![
            ("tenant", s(tenant.partition())),
            ("task_id", s(id.to_string())),
            ("version", n(version)),
            ("expires_at", n(record.expires_at)),
            (attribute, value),
        ])
    }
}

#[async_trait]
impl TaskStore for DynamoMetaStore {
    async fn create(&self, tenant: &Tenant, record: &TaskRecord) -> Result<(), TaskStoreError> {
        let mut put = self
            .dynamodb
            .put_item()
            .table_name(&self.tables.tasks)
            .condition_expression("attribute_not_exists(task_id)");
        for (name, value) in self.task_item(tenant, record, 1).await? {
            put = put.item(name, value);
        }
        match put.send().await {
            Ok(_) => Ok(()),
            Err(error) if conditional_failed(&error) => Err(TaskStoreError::Exists(record.task_id)),
            Err(error) => Err(backend(aws_sdk_dynamodb::error::DisplayErrorContext(error))),
        }
    }

    async fn read(&self, tenant: &Tenant, id: Uuid) -> Result<Option<Versioned>, TaskStoreError> {
        let output = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.tasks)
            .key("tenant", s(tenant.partition()))
            .key("task_id", s(id.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| backend(aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let version = number(&item, "version").unwrap_or(1) as u64;
        let stored: Stored = self
            .unstash(&item, &format!("task {id}"))
            .await
            .map_err(|e| from_meta(id, e))?;
        Ok(Some(Versioned {
            record: stored.record,
            version,
        }))
    }

    async fn replace(
        &self,
        tenant: &Tenant,
        record: &TaskRecord,
        version: u64,
    ) -> Result<bool, TaskStoreError> {
        let mut put = self
            .dynamodb
            .put_item()
            .table_name(&self.tables.tasks)
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(version));
        for (name, value) in self.task_item(tenant, record, version + 1).await? {
            put = put.item(name, value);
        }
        match put.send().await {
            Ok(_) => Ok(true),
            Err(error) if conditional_failed(&error) => Ok(false),
            Err(error) => Err(backend(aws_sdk_dynamodb::error::DisplayErrorContext(error))),
        }
    }

    async fn list(
        &self,
        tenant: &Tenant,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let mut page = Vec::new();
        let mut start: Option<std::collections::HashMap<String, AttributeValue>> = None;
        loop {
            let mut query = self
                .dynamodb
                .query()
                .table_name(&self.tables.tasks)
                .expression_attribute_values(":t", s(tenant.partition()))
                .consistent_read(true)
                .set_exclusive_start_key(start.take());
            query = match after {
                Some(after) => query
                    .key_condition_expression("tenant = :t AND task_id > :after")
                    .expression_attribute_values(":after", s(after.to_string())),
                None => query.key_condition_expression("tenant = :t"),
            };
            if let Some(items) = self.page_items {
                query = query.limit(items);
            }
            let output = query
                .send()
                .await
                .map_err(|e| backend(aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
            for item in output.items.unwrap_or_default() {
                let id = item
                    .get("task_id")
                    .and_then(|v| v.as_s().ok())
                    .and_then(|v| Uuid::parse_str(v).ok())
                    .unwrap_or_default();
                let stored: Stored = self
                    .unstash(&item, &format!("task {id}"))
                    .await
                    .map_err(|e| from_meta(id, e))?;
                page.push(stored.record);
                if page.len() == limit {
                    return Ok(page);
                }
            }
            match output.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return Ok(page),
            }
        }
    }
}
