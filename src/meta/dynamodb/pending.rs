//! A session's pending save in DynamoDB: written before an answer that
//! comes before its heap is stored, cleared once it is, read by a
//! `latest` on any instance.

use aws_sdk_dynamodb::types::AttributeValue;
use uuid::Uuid;

use super::{DynamoMetaStore, PENDING_KEPT_SECS, backend, n, pending_key, s, sdk};
use crate::meta::{MetaStoreError, PendingSave};
use crate::session::LogicalSession;
use crate::tenant::Tenant;

impl DynamoMetaStore {
    pub(super) async fn dynamo_put_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        save: &PendingSave,
    ) -> Result<(), MetaStoreError> {
        let json = serde_json::to_string(save).map_err(backend)?;
        self.dynamodb
            .put_item()
            .table_name(&self.tables.executions)
            .item("execution_id", pending_key(tenant, session))
            .item("pending_save", s(json))
            .item("expires_at", n(save.expires_at + PENDING_KEPT_SECS))
            .send()
            .await
            .map_err(sdk)?;
        Ok(())
    }

    pub(super) async fn dynamo_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<PendingSave>, MetaStoreError> {
        let output = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.executions)
            .key("execution_id", pending_key(tenant, session))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk)?;
        let Some(json) = output
            .item
            .as_ref()
            .and_then(|item| item.get("pending_save"))
            .and_then(|value| value.as_s().ok())
        else {
            return Ok(None);
        };
        let cleared = output
            .item
            .as_ref()
            .and_then(|item| item.get("cleared"))
            .is_some_and(|value| value.as_bool().is_ok_and(|yes| *yes));
        serde_json::from_str(json)
            .map(|save: PendingSave| {
                Some(PendingSave {
                    cleared: save.cleared || cleared,
                    ..save
                })
            })
            .map_err(|e| MetaStoreError::Unreadable {
                what: format!("pending save of {session:?}"),
                reason: e.to_string(),
            })
    }

    pub(super) async fn dynamo_clear_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
    ) -> Result<(), MetaStoreError> {
        // An attribute beside the record, so that marking it is one
        // conditional write that never touches a later run's.
        let json = |id: Uuid| format!("\"execution_id\":\"{id}\"");
        let result = self
            .dynamodb
            .update_item()
            .table_name(&self.tables.executions)
            .key("execution_id", pending_key(tenant, session))
            .update_expression("SET cleared = :yes")
            .condition_expression("contains(pending_save, :id)")
            .expression_attribute_values(":id", s(json(execution_id)))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Another run's save, or none: nothing to clear.
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(error) => Err(sdk(error)),
        }
    }
}
