//! Heaps as S3 objects: one object per heap key, holding the framed snapshot.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::primitives::ByteStream;

use super::{HeapKey, HeapStore, HeapStoreError, Snapshot, verify_read};
use crate::tenant::Tenant;

/// Heaps in a bucket, under an optional key prefix.
#[derive(Debug, Clone)]
pub struct S3HeapStore {
    client: Client,
    bucket: String,
    prefix: String,
}

impl S3HeapStore {
    /// A store in `bucket`; object keys are `prefix` + heap key for the
    /// anonymous tenant (an empty prefix gives bare heap keys, as the
    /// original server wrote them), `prefix` + `tenants/<id>/` + heap key
    /// for any other.
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    /// The object key of `key` in `tenant`'s namespace.
    pub fn object_key(&self, tenant: &Tenant, key: &HeapKey) -> String {
        let folder = tenant.heap_folder().unwrap_or_default();
        format!("{}{folder}{}", self.prefix, key.as_str())
    }

    fn backend<E>(key: &HeapKey, error: SdkError<E, HttpResponse>) -> HeapStoreError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        HeapStoreError::Backend {
            store: "s3",
            key: key.clone(),
            // The context chain names the operation, the status and the service code.
            source: DisplayErrorContext(error).to_string().into(),
        }
    }
}

/// HTTP status of a failed call, when the service answered at all.
fn status<E>(error: &SdkError<E, HttpResponse>) -> Option<u16> {
    error
        .raw_response()
        .map(|response| response.status().as_u16())
}

#[async_trait]
impl HeapStore for S3HeapStore {
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let result = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(self.object_key(tenant, key))
            .body(ByteStream::from(snapshot.framed().clone()))
            .content_type("application/octet-stream")
            // Content addressing: an object under this key already holds these
            // bytes, so the write is only needed when there is none.
            .if_none_match("*")
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // 412: already stored. 409: a concurrent conditional write of the
            // same key is in flight, writing the same bytes.
            Err(e) if matches!(status(&e), Some(412 | 409)) => Ok(()),
            Err(e) => Err(Self::backend(key, e)),
        }
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        let result = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.object_key(tenant, key))
            .send()
            .await;
        let object = match result {
            Ok(object) => object,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(Self::backend(key, e)),
        };
        let bytes = object
            .body
            .collect()
            .await
            .map_err(|e| HeapStoreError::Backend {
                store: "s3",
                key: key.clone(),
                source: Box::new(e),
            })?;
        verify_read(key, bytes.into_bytes()).map(Some)
    }
}
