//! Suspended runs and the request-state key in the embedded store: one
//! table of (tenant partition, suspension id) → JSON, one of claims, one
//! row for the key. The tables are made by the first write; reads before
//! then find none.

use redb::{ReadableTable, TableDefinition};
use uuid::Uuid;

use super::{RedbMetaStore, backend, decode};
use crate::elicit::{StateKey, Suspension};
use crate::meta::MetaStoreError;
use crate::tenant::Tenant;

/// (tenant partition, suspension id) → JSON [`Suspension`].
const SUSPENSIONS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("suspensions");
/// (tenant partition, suspension id) → (): present once claimed.
const CLAIMS: TableDefinition<(&str, &str), ()> = TableDefinition::new("suspension_claims");
/// (tenant partition, window) → suspensions counted in it.
const WINDOWS: TableDefinition<(&str, i64), u32> = TableDefinition::new("suspension_windows");
/// "request-state" → the deployment's key.
const KEYS: TableDefinition<&str, &[u8]> = TableDefinition::new("deployment_keys");

impl RedbMetaStore {
    pub(super) async fn redb_state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
        self.blocking(|db| {
            let tx = db.begin_write().map_err(backend)?;
            let key = {
                let mut keys = tx.open_table(KEYS).map_err(backend)?;
                let kept = keys
                    .get("request-state")
                    .map_err(backend)?
                    .map(|k| k.value().to_vec());
                match kept {
                    Some(key) => key,
                    None => {
                        let key = StateKey::generate();
                        keys.insert("request-state", key.as_slice())
                            .map_err(backend)?;
                        key
                    }
                }
            };
            tx.commit().map_err(backend)?;
            Ok(key)
        })
        .await
    }

    pub(super) async fn redb_put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &Suspension,
    ) -> Result<(), MetaStoreError> {
        let tenant = tenant.clone();
        let id = suspension.id.to_string();
        let json = serde_json::to_vec(suspension).map_err(backend)?;
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            tx.open_table(SUSPENSIONS)
                .map_err(backend)?
                .insert((tenant.partition(), id.as_str()), json.as_slice())
                .map_err(backend)?;
            tx.commit().map_err(backend)
        })
        .await
    }

    pub(super) async fn redb_get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<Suspension>, MetaStoreError> {
        let tenant = tenant.clone();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let table = match tx.open_table(SUSPENSIONS) {
                Ok(table) => table,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(e) => return Err(backend(e)),
            };
            let key = id.to_string();
            let Some(row) = table
                .get((tenant.partition(), key.as_str()))
                .map_err(backend)?
            else {
                return Ok(None);
            };
            let suspension: Suspension = decode(|| format!("suspended run {id}"), row.value())?;
            Ok((suspension.expires_at > now).then_some(suspension))
        })
        .await
    }

    pub(super) async fn redb_claim_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
    ) -> Result<bool, MetaStoreError> {
        let tenant = tenant.clone();
        self.blocking(move |db| {
            let key = id.to_string();
            let tx = db.begin_write().map_err(backend)?;
            let claimed = {
                let exists = tx
                    .open_table(SUSPENSIONS)
                    .map_err(backend)?
                    .get((tenant.partition(), key.as_str()))
                    .map_err(backend)?
                    .is_some();
                let mut claims = tx.open_table(CLAIMS).map_err(backend)?;
                exists
                    && claims
                        .insert((tenant.partition(), key.as_str()), ())
                        .map_err(backend)?
                        .is_none()
            };
            tx.commit().map_err(backend)?;
            Ok(claimed)
        })
        .await
    }

    pub(super) async fn redb_admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
    ) -> Result<bool, MetaStoreError> {
        let tenant = tenant.clone();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let admitted = {
                let mut windows = tx.open_table(WINDOWS).map_err(backend)?;
                let key = (tenant.partition(), window);
                let counted = windows.get(key).map_err(backend)?.map_or(0, |c| c.value());
                let admitted = counted < limit;
                if admitted {
                    windows.insert(key, counted + 1).map_err(backend)?;
                }
                // Earlier windows count for nothing any more.
                let stale: Vec<i64> = windows
                    .range((tenant.partition(), i64::MIN)..(tenant.partition(), window - 1))
                    .map_err(backend)?
                    .filter_map(Result::ok)
                    .map(|(key, _)| key.value().1)
                    .collect();
                for old in stale {
                    windows.remove((tenant.partition(), old)).map_err(backend)?;
                }
                admitted
            };
            tx.commit().map_err(backend)?;
            Ok(admitted)
        })
        .await
    }
}
