//! File bytes in S3: `<prefix>work/<key>` for the anonymous tenant,
//! `<prefix>work/tenants/<id>/<key>` for the others. The prefix matches no
//! lifecycle rule: heaps expire by the first hex digit of their key, and a
//! file may be named by heaps made long after it was written. Runs' kept
//! texts live the same way under `<prefix>records/`, which a lifecycle rule
//! expires with the execution records that name them.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{FileStore, FileStoreError, verified};
use crate::BoxError;
use crate::backends::content::ContentKey;
use crate::backends::s3::{get_object as s3_get_object, put_once as s3_put_once};
use crate::tenant::Tenant;

/// File bytes in an S3 bucket, beside the heaps.
#[derive(Debug, Clone)]
pub struct S3FileStore {
    client: Client,
    bucket: String,
    prefix: String,
    area: &'static str,
    /// Every `put` writes, so an object's age (which its lifecycle rule
    /// counts) restarts when a newer record names it.
    refresh: bool,
}

impl S3FileStore {
    /// Files under `<prefix>work/` in `bucket`.
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: prefix.into(),
            area: "work/",
            refresh: false,
        }
    }

    /// Runs' kept texts under `<prefix>records/` in `bucket`: every `put`
    /// writes, so the bucket's lifecycle rule for `records/` counts from
    /// the newest record that named the bytes.
    pub fn records(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            area: "records/",
            refresh: true,
            ..Self::new(client, bucket, prefix)
        }
    }

    /// The object key of `key` in `tenant`'s namespace.
    pub fn object_key(&self, tenant: &Tenant, key: &ContentKey) -> String {
        let folder = tenant.heap_folder().unwrap_or_default();
        format!("{}{}{folder}{key}", self.prefix, self.area)
    }

    fn backend(key: &str, source: BoxError) -> FileStoreError {
        FileStoreError::Backend {
            store: "s3",
            key: key.to_owned(),
            source,
        }
    }
}

#[async_trait]
impl FileStore for S3FileStore {
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<ContentKey, FileStoreError> {
        let key = ContentKey::of(bytes);
        let object = self.object_key(tenant, &key);
        let body = ByteStream::from(bytes.clone());
        let written = if self.refresh {
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(&object)
                .body(body)
                .content_type("application/octet-stream")
                .send()
                .await
                .map(drop)
                .map_err(|e| BoxError::from(aws_sdk_s3::error::DisplayErrorContext(e).to_string()))
        } else {
            s3_put_once(
                &self.client,
                &self.bucket,
                &object,
                body,
                "application/octet-stream",
            )
            .await
        };
        written.map_err(|source| Self::backend(key.as_str(), source))?;
        Ok(key)
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &ContentKey,
    ) -> Result<Option<Bytes>, FileStoreError> {
        match s3_get_object(&self.client, &self.bucket, &self.object_key(tenant, key)).await {
            Ok(Some((bytes, _))) => verified(key, bytes).map(Some),
            Ok(None) => Ok(None),
            Err(source) => Err(Self::backend(key.as_str(), source)),
        }
    }
}
