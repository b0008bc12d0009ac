//! S3 calls the content-addressed stores share: a write that happens once
//! per key, a read that tells a missing object from a failure, and the
//! status of a failed call.

use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use crate::BoxError;

/// HTTP status of a failed call, when the service answered at all.
pub(crate) fn status<E>(error: &SdkError<E, HttpResponse>) -> Option<u16> {
    error
        .raw_response()
        .map(|response| response.status().as_u16())
}

/// A failed call as the stores report it: the context chain names the
/// operation, the status and the service code.
pub(crate) fn failure<E>(error: SdkError<E, HttpResponse>) -> BoxError
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
