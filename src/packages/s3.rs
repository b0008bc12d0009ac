//! Packages in the heap bucket: `<prefix>packages/index.json` and
//! `<prefix>packages/bundles/<sha256>`, outside every tenant's heaps and
//! every lifecycle rule that expires heaps.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{PackageIndex, PackageStore, PackageStoreError, Revision, verified};
use crate::backends::content::ContentKey;
use crate::backends::s3::{
    get_object as s3_get_object, put_once as s3_put_once, status as s3_status,
};

const STORE: &str = "s3";

/// Packages in a bucket.
#[derive(Debug, Clone)]
pub struct S3PackageStore {
    client: Client,
    bucket: String,
    prefix: String,
}

impl S3PackageStore {
    /// Packages in `bucket` under `prefix` + `packages/`.
    pub fn new(client: Client, bucket: impl Into<String>, prefix: &str) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: format!("{prefix}packages/"),
        }
    }

    fn backend<E>(what: impl Into<String>, error: SdkError<E, HttpResponse>) -> PackageStoreError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        PackageStoreError::Backend {
            store: STORE,
            what: what.into(),
            source: DisplayErrorContext(error).to_string().into(),
        }
    }

    /// The object's bytes and ETag; `None` when there is no such object.
    async fn read_object(
        &self,
        object: &str,
    ) -> Result<Option<(Bytes, Option<String>)>, PackageStoreError> {
        s3_get_object(&self.client, &self.bucket, object)
            .await
            .map_err(|source| PackageStoreError::Backend {
                store: STORE,
                what: object.to_owned(),
                source,
            })
    }
}

#[async_trait]
impl PackageStore for S3PackageStore {
    async fn index(&self) -> Result<Option<(PackageIndex, Revision)>, PackageStoreError> {
        let Some((bytes, etag)) = self
            .read_object(&format!("{}index.json", self.prefix))
            .await?
        else {
            return Ok(None);
        };
        let index =
            serde_json::from_slice(&bytes).map_err(|source| PackageStoreError::BadIndex {
                store: STORE,
                source,
            })?;
        Ok(Some((index, Revision(etag.unwrap_or_default()))))
    }

    async fn put_index(
        &self,
        index: &PackageIndex,
        expected: Option<&Revision>,
    ) -> Result<(), PackageStoreError> {
        let key = format!("{}index.json", self.prefix);
        let body = serde_json::to_vec_pretty(index).expect("an index serializes");
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .body(ByteStream::from(body))
            .content_type("application/json");
        // S3's conditional writes make the update a compare-and-swap.
        let request = match expected {
            Some(revision) => request.if_match(&revision.0),
            None => request.if_none_match("*"),
        };
        match request.send().await {
            Ok(_) => Ok(()),
            Err(e) if matches!(s3_status(&e), Some(412 | 409)) => Err(PackageStoreError::Conflict),
            Err(e) => Err(Self::backend(key, e)),
        }
    }

    async fn get_bundle(&self, key: &ContentKey) -> Result<Option<Bytes>, PackageStoreError> {
        match self
            .read_object(&format!("{}bundles/{key}", self.prefix))
            .await?
        {
            Some((bytes, _)) => verified(key, bytes).map(Some),
            None => Ok(None),
        }
    }

    async fn put_bundle(&self, bytes: &Bytes) -> Result<ContentKey, PackageStoreError> {
        let key = ContentKey::of(bytes);
        let object = format!("{}bundles/{key}", self.prefix);
        let body = ByteStream::from(bytes.clone());
        s3_put_once(
            &self.client,
            &self.bucket,
            &object,
            body,
            "application/json",
        )
        .await
        .map_err(|source| PackageStoreError::Backend {
            store: STORE,
            what: object,
            source,
        })?;
        Ok(key)
    }
}
