//! File bytes in S3: `<prefix>work/<key>` for the anonymous tenant,
//! `<prefix>work/tenants/<id>/<key>` for the others. The prefix matches no
//! lifecycle rule: heaps expire by the first hex digit of their key, and a
//! file may be named by heaps made long after it was written.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{FileStore, FileStoreError, checked, file_key, verified};
use crate::tenant::Tenant;

/// File bytes in an S3 bucket, beside the heaps.
#[derive(Debug, Clone)]
pub struct S3FileStore {
    client: Client,
    bucket: String,
    prefix: String,
}

impl S3FileStore {
    /// Files under `<prefix>work/` in `bucket`.
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    /// The object key of `key` in `tenant`'s namespace.
    pub fn object_key(&self, tenant: &Tenant, key: &str) -> String {
        let folder = tenant.heap_folder().unwrap_or_default();
        format!("{}work/{folder}{key}", self.prefix)
    }

    fn backend<E>(key: &str, error: SdkError<E, HttpResponse>) -> FileStoreError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        FileStoreError::Backend {
            store: "s3",
            key: key.to_owned(),
            source: DisplayErrorContext(error).to_string().into(),
        }
    }
}

fn status<E>(error: &SdkError<E, HttpResponse>) -> Option<u16> {
    error
        .raw_response()
        .map(|response| response.status().as_u16())
}

#[async_trait]
impl FileStore for S3FileStore {
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<String, FileStoreError> {
        let key = file_key(bytes);
        let result = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(self.object_key(tenant, &key))
            .body(ByteStream::from(bytes.clone()))
            .content_type("application/octet-stream")
            .if_none_match("*")
            .send()
            .await;
        match result {
            Ok(_) => Ok(key),
            // Already stored (412), or the same bytes being written (409).
            Err(e) if matches!(status(&e), Some(412 | 409)) => Ok(key),
            Err(e) => Err(Self::backend(&key, e)),
        }
    }

    async fn get(&self, tenant: &Tenant, key: &str) -> Result<Option<Bytes>, FileStoreError> {
        let key = checked(key)?;
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
            .map_err(|e| FileStoreError::Backend {
                store: "s3",
                key: key.to_owned(),
                source: Box::new(e),
            })?;
        verified(key, bytes.into_bytes()).map(Some)
    }
}
