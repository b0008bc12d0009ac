//! Heap tags in DynamoDB: a heap's tags as one item, and an item per
//! tag pair that the query by tags reads.

use super::{DynamoMetaStore, backend, pair_key, s, sdk, string};
use crate::heap::HeapKey;
use crate::meta::{MetaStore, MetaStoreError, Tags};
use crate::tenant::Tenant;

impl DynamoMetaStore {
    pub(super) async fn dynamo_get_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
    ) -> Result<Tags, MetaStoreError> {
        let output = self
            .dynamodb
            .get_item()
            .table_name(&self.tables.tags)
            .key("heap_key", s(tenant.scoped(heap.as_str())))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk)?;
        match output.item {
            Some(item) => self.unstash(&item, &format!("tags of heap {heap}")).await,
            None => Ok(Tags::new()),
        }
    }

    pub(super) async fn dynamo_set_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
        tags: &Tags,
    ) -> Result<(), MetaStoreError> {
        let stored = tenant.scoped(heap.as_str());
        // The tags item is the truth; index items only propose candidates,
        // which every query checks against it. Writing new index items first
        // and removing stale ones last means the index never lacks a pair
        // the heap has, without a transaction (and its 100-item limit).
        let old = self.get_tags(tenant, heap).await?;
        for (key, value) in tags.iter().filter(|(k, v)| old.get(*k) != Some(*v)) {
            self.dynamodb
                .put_item()
                .table_name(&self.tables.tag_index)
                .item("tag_pair", s(pair_key(tenant, key, value)))
                .item("heap_key", s(heap.as_str()))
                .send()
                .await
                .map_err(sdk)?;
        }
        if tags.is_empty() {
            self.dynamodb
                .delete_item()
                .table_name(&self.tables.tags)
                .key("heap_key", s(stored.as_ref()))
                .send()
                .await
                .map_err(sdk)?;
        } else {
            let json = serde_json::to_string(tags).map_err(backend)?;
            self.dynamodb
                .put_item()
                .table_name(&self.tables.tags)
                .item("heap_key", s(stored.as_ref()))
                .item("json", s(json))
                .send()
                .await
                .map_err(sdk)?;
        }
        for (key, value) in old.iter().filter(|(k, v)| tags.get(*k) != Some(*v)) {
            self.dynamodb
                .delete_item()
                .table_name(&self.tables.tag_index)
                .key("tag_pair", s(pair_key(tenant, key, value)))
                .key("heap_key", s(heap.as_str()))
                .send()
                .await
                .map_err(sdk)?;
        }
        Ok(())
    }

    pub(super) async fn dynamo_query_by_tags(
        &self,
        tenant: &Tenant,
        filter: &Tags,
    ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
        let Some((key, value)) = filter.iter().next() else {
            return Ok(Vec::new());
        };
        let mut candidates = Vec::new();
        let mut items = self
            .dynamodb
            .query()
            .table_name(&self.tables.tag_index)
            .key_condition_expression("tag_pair = :p")
            .expression_attribute_values(":p", s(pair_key(tenant, key, value)))
            .consistent_read(true)
            .set_limit(self.page_items)
            .into_paginator()
            .items()
            .send();
        while let Some(item) = items.try_next().await.map_err(sdk)? {
            candidates.extend(string(&item, "heap_key").and_then(|k| HeapKey::parse(k).ok()));
        }
        let mut found = Vec::new();
        for heap in candidates {
            let tags = self.get_tags(tenant, &heap).await?;
            if !tags.is_empty() && filter.iter().all(|(k, v)| tags.get(k) == Some(v)) {
                found.push((heap, tags));
            }
        }
        Ok(found)
    }
}
