//! Heaps as S3 objects: one object per heap key, holding the framed snapshot.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{HeapKey, HeapStore, HeapStoreError, Snapshot, verify_read};
use crate::BoxError;
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
}

/// HTTP status of a failed call, when the service answered at all.
pub(crate) fn status<E>(error: &SdkError<E, HttpResponse>) -> Option<u16> {
    error
        .raw_response()
        .map(|response| response.status().as_u16())
}

/// A failed call as the stores report it: the context chain names the
/// operation, the status and the service code.
fn failure<E>(error: SdkError<E, HttpResponse>) -> BoxError
where
    E: std::error::Error + Send + Sync + 'static,
{
    DisplayErrorContext(error).to_string().into()
}

/// Writes `body` under `key` unless an object is there already: keys of
/// the content-addressed stores (heaps, bundles, files) name their bytes,
/// so an object under one already holds them.
pub(crate) async fn put_once(
    client: &Client,
    bucket: &str,
    key: &str,
    body: ByteStream,
    content_type: &str,
) -> Result<(), BoxError> {
    let result = client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(body)
        .content_type(content_type)
        .if_none_match("*")
        .send()
        .await;
    match result {
        Ok(_) => Ok(()),
        // 412: already stored. 409: a concurrent conditional write of the
        // same key is in flight, writing the same bytes.
        Err(e) if matches!(status(&e), Some(412 | 409)) => Ok(()),
        Err(e) => Err(failure(e)),
    }
}

/// The bytes and ETag of the object under `key`; `None` when there is none.
pub(crate) async fn get_object(
    client: &Client,
    bucket: &str,
    key: &str,
) -> Result<Option<(Bytes, Option<String>)>, BoxError> {
    let object = match client.get_object().bucket(bucket).key(key).send().await {
        Ok(object) => object,
        Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
        Err(e) => return Err(failure(e)),
    };
    let etag = object.e_tag().map(str::to_owned);
    let bytes = object.body.collect().await?;
    Ok(Some((bytes.into_bytes(), etag)))
}

#[async_trait]
impl HeapStore for S3HeapStore {
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        let body = ByteStream::from(snapshot.framed().clone());
        put_once(
            &self.client,
            &self.bucket,
            &self.object_key(tenant, key),
            body,
            "application/octet-stream",
        )
        .await
        .map_err(|source| backend(key, source))
    }

    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        match get_object(&self.client, &self.bucket, &self.object_key(tenant, key)).await {
            Ok(Some((bytes, _))) => verify_read(key, bytes).map(Some),
            Ok(None) => Ok(None),
            Err(source) => Err(backend(key, source)),
        }
    }
}

fn backend(key: &HeapKey, source: BoxError) -> HeapStoreError {
    HeapStoreError::Backend {
        store: "s3",
        key: key.clone(),
        source,
    }
}
