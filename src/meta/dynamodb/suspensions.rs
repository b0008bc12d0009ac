//! Suspended runs and the request-state key in DynamoDB, as items of the
//! executions table under keys no execution id can take
//! (`suspended/<id>` in the tenant's namespace, `deployment/…` in none):
//! its TTL drops expired suspensions, and no new table is needed.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use uuid::Uuid;

use super::{DynamoMetaStore, conditional_failed, n, s, sdk};
use crate::elicit::{StateKey, Suspension};
use crate::meta::MetaStoreError;
use crate::tenant::Tenant;

/// The item of the deployment's request-state key.
const STATE_KEY_ITEM: &str = "deployment/request-state-key";

fn suspension_item(tenant: &Tenant, id: Uuid) -> AttributeValue {
    s(tenant.scoped(&format!("suspended/{id}")))
}

impl DynamoMetaStore {
    pub(super) async fn dynamo_state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
        let read = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.executions)
            .key("execution_id", s(STATE_KEY_ITEM))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk)?;
        if let Some(key) = read
            .item
            .as_ref()
            .and_then(|item| item.get("key")?.as_b().ok())
        {
            return Ok(key.as_ref().to_vec());
        }
        let made = StateKey::generate();
        let put = self
            .dynamodb
            .put_item()
            .table_name(&self.tables.executions)
            .item("execution_id", s(STATE_KEY_ITEM))
            .item("key", AttributeValue::B(Blob::new(made.clone())))
            .condition_expression("attribute_not_exists(execution_id)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(made),
            // Another process made it first: theirs is the key.
            Err(e) if conditional_failed(&e) => Box::pin(self.dynamo_state_key()).await,
            Err(e) => Err(sdk(e)),
        }
    }

    pub(super) async fn dynamo_put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &Suspension,
    ) -> Result<(), MetaStoreError> {
        let json = serde_json::to_string(suspension).map_err(super::backend)?;
        let folder = tenant.heap_folder().unwrap_or_default();
        let (attribute, value) = self
            .stash(format!("suspensions/{folder}{}.json", suspension.id), json)
            .await?;
        self.dynamodb
            .put_item()
            .table_name(&self.tables.executions)
            .item("execution_id", suspension_item(tenant, suspension.id))
            .item(attribute, value)
            .item("expires_at", n(suspension.expires_at))
            .send()
            .await
            .map_err(sdk)?;
        Ok(())
    }

    pub(super) async fn dynamo_get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<Suspension>, MetaStoreError> {
        self.unexpired(
            suspension_item(tenant, id),
            now,
            &format!("suspended run {id}"),
        )
        .await
    }

    pub(super) async fn dynamo_claim_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
    ) -> Result<bool, MetaStoreError> {
        let claimed = self
            .dynamodb
            .update_item()
            .table_name(&self.tables.executions)
            .key("execution_id", suspension_item(tenant, id))
            .update_expression("SET claimed = :yes")
            .condition_expression(
                "attribute_exists(execution_id) AND attribute_not_exists(claimed)",
            )
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await;
        match claimed {
            Ok(_) => Ok(true),
            Err(e) if conditional_failed(&e) => Ok(false),
            Err(e) => Err(sdk(e)),
        }
    }

    pub(super) async fn dynamo_admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
        expires_at: i64,
    ) -> Result<bool, MetaStoreError> {
        let admitted = self
            .dynamodb
            .update_item()
            .table_name(&self.tables.executions)
            .key(
                "execution_id",
                s(tenant.scoped(&format!("suspensions-in/{window}"))),
            )
            .update_expression("ADD suspended :one SET expires_at = :expires")
            .condition_expression("attribute_not_exists(suspended) OR suspended < :limit")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(i64::from(limit)))
            .expression_attribute_values(":expires", n(expires_at))
            .send()
            .await;
        match admitted {
            Ok(_) => Ok(true),
            Err(e) if conditional_failed(&e) => Ok(false),
            Err(e) => Err(sdk(e)),
        }
    }
}
