//! File bytes in S3: `<prefix>work/<key>` for the anonymous tenant,
//! `<prefix>work/tenants/<id>/<key>` for the others. Runs' kept texts live
//! the same way under `<prefix>records/`, which a lifecycle rule expires
//! with the execution records that name them.
//!
//! `work/` objects are collected by age as heap chunks are (docs/storage.md,
//! "Retention"): each is written with the tag [`EXPIRES_TAG`], which the
//! template's `work/` lifecycle rule matches, and before a heap is stored
//! every object it names is made no older than its day: written that day,
//! or copied onto itself that day (a server-side copy that restarts the
//! age S3 counts). So no object outlives its last heap by more than the
//! rule's extra day, and none expires under a retained heap. Objects
//! written before collection carry no tag and never expire: heaps within
//! retention may name them and nothing refreshed them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{MetadataDirective, TaggingDirective};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};

use super::chunked::{FILE_MAGIC, FileManifest};
use super::{FileStore, FileStoreError, verified};
use crate::BoxError;
use crate::backends::content::ContentKey;
use crate::backends::s3::{failure, get_object as s3_get_object, status};
use crate::clock::{Clock, system_clock, utc_day};
use crate::tenant::Tenant;

/// The tag (`key=value`, as S3's `x-amz-tagging` takes it) every `work/`
/// object carries; the template's lifecycle rule for `work/` expires only
/// objects with it.
pub const EXPIRES_TAG: &str = "mcp-v8=expires-with-heaps";

/// Objects refreshed (or written) at once while a heap's names are kept.
const PARALLEL_REFRESHES: usize = 16;

/// Objects this instance wrote or refreshed on the UTC day `day`: their
/// age need not restart again that day.
#[derive(Debug, Default)]
struct Fresh {
    day: u32,
    keys: HashSet<String>,
}

/// The most object keys [`Fresh`] holds before it starts over (a day's
/// worth for a busy instance is far fewer; past it, refreshes repeat).
const FRESH_MAX: usize = 1 << 20;

/// File bytes in an S3 bucket, beside the heaps.
#[derive(Clone)]
pub struct S3FileStore {
    client: Client,
    bucket: String,
    prefix: String,
    area: &'static str,
    /// Every `put` writes, so an object's age (which its lifecycle rule
    /// counts) restarts when a newer record names it.
    refresh: bool,
    clock: Clock,
    fresh: Arc<Mutex<Fresh>>,
}

impl std::fmt::Debug for S3FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3FileStore")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("area", &self.area)
            .finish_non_exhaustive()
    }
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
            clock: system_clock(),
            fresh: Arc::default(),
        }
    }

    /// The same store reading the day from `clock` (tests move it).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
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

    fn today(&self) -> u32 {
        utc_day((self.clock)())
    }

    fn is_fresh(&self, object: &str, day: u32) -> bool {
        let fresh = self.fresh.lock().expect("fresh keys");
        fresh.day == day && fresh.keys.contains(object)
    }

    fn mark(&self, object: String, day: u32) {
        let mut fresh = self.fresh.lock().expect("fresh keys");
        if fresh.day != day || fresh.keys.len() >= FRESH_MAX {
            fresh.day = day;
            fresh.keys.clear();
        }
        fresh.keys.insert(object);
    }

    /// Copies `object` onto itself, so S3 dates it now (its lifecycle age
    /// restarts), unless this instance did so on `day` already; the tag
    /// goes on objects written before collection that a new heap names.
    async fn refresh_object(
        &self,
        key: &ContentKey,
        object: String,
        day: u32,
    ) -> Result<(), FileStoreError> {
        if self.is_fresh(&object, day) {
            return Ok(());
        }
        let source = format!(
            "{}/{}",
            self.bucket,
            percent_encoding::utf8_percent_encode(&object, COPY_SOURCE)
        );
        let copied = self
            .client
            .copy_object()
            .bucket(&self.bucket)
            .key(&object)
            .copy_source(source)
            .metadata_directive(MetadataDirective::Replace)
            .content_type("application/octet-stream")
            .tagging_directive(TaggingDirective::Replace)
            .tagging(EXPIRES_TAG)
            .send()
            .await;
        match copied {
            Ok(_) => {
                self.mark(object, day);
                Ok(())
            }
            Err(e) if status(&e) == Some(404) => Err(FileStoreError::Missing {
                key: key.to_string(),
            }),
            Err(e) => Err(Self::backend(key.as_str(), failure(e))),
        }
    }

    /// Refreshes `key` and, when it is a file manifest, every chunk it
    /// names first (a manifest marked fresh has fresh chunks).
    async fn keep_one(
        &self,
        tenant: &Tenant,
        key: ContentKey,
        day: u32,
    ) -> Result<(), FileStoreError> {
        let object = self.object_key(tenant, &key);
        if self.is_fresh(&object, day) {
            return Ok(());
        }
        // Its first bytes say whether it is a manifest: bytes stored whole
        // (files from before chunks, up to the file limit) are not read.
        let probe = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&object)
            .range(format!("bytes=0-{}", FILE_MAGIC.len() - 1))
            .send()
            .await;
        let head = match probe {
            Ok(output) => output
                .body
                .collect()
                .await
                .map_err(|e| Self::backend(key.as_str(), e.into()))?
                .into_bytes(),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                return Err(FileStoreError::Missing {
                    key: key.to_string(),
                });
            }
            Err(e) => return Err(Self::backend(key.as_str(), failure(e))),
        };
        if head.as_ref() != FILE_MAGIC.as_slice() {
            return self.refresh_object(&key, object, day).await;
        }
        let bytes = match s3_get_object(&self.client, &self.bucket, &object).await {
            Ok(Some((bytes, _))) => verified(&key, bytes)?,
            Ok(None) => {
                return Err(FileStoreError::Missing {
                    key: key.to_string(),
                });
            }
            Err(source) => return Err(Self::backend(key.as_str(), source)),
        };
        let manifest = FileManifest::decode(&bytes).map_err(|why| {
            Self::backend(
                key.as_str(),
                format!("its manifest does not decode: {why}").into(),
            )
        })?;
        stream::iter(manifest.chunks.into_iter().map(|chunk| {
            let object = self.object_key(tenant, &chunk.key);
            async move { self.refresh_object(&chunk.key, object, day).await }
        }))
        .buffer_unordered(PARALLEL_REFRESHES)
        .try_collect::<Vec<()>>()
        .await?;
        self.refresh_object(&key, object, day).await
    }

    fn backend(key: &str, source: BoxError) -> FileStoreError {
        FileStoreError::Backend {
            store: "s3",
            key: key.to_owned(),
            source,
        }
    }
}

/// What a copy source's key escapes: everything but the characters of
/// object keys this store makes (hex, tenant ids' safe set, `/`).
const COPY_SOURCE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.');

#[async_trait]
impl FileStore for S3FileStore {
    async fn put(&self, tenant: &Tenant, bytes: &Bytes) -> Result<ContentKey, FileStoreError> {
        let key = ContentKey::of(bytes);
        let object = self.object_key(tenant, &key);
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&object)
            .body(ByteStream::from(bytes.clone()))
            .content_type("application/octet-stream");
        if self.refresh {
            request
                .send()
                .await
                .map_err(|e| Self::backend(key.as_str(), failure(e)))?;
            return Ok(key);
        }
        let day = self.today();
        if self.is_fresh(&object, day) {
            return Ok(key);
        }
        match request.tagging(EXPIRES_TAG).if_none_match("*").send().await {
            Ok(_) => self.mark(object, day),
            // 412: stored already, maybe long ago: its age restarts. 409: a
            // concurrent conditional write of the same bytes is in flight.
            Err(e) if matches!(status(&e), Some(412 | 409)) => {
                self.refresh_object(&key, object, day).await?
            }
            Err(e) => return Err(Self::backend(key.as_str(), failure(e))),
        }
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

    async fn keep_named(&self, tenant: &Tenant, keys: &[ContentKey]) -> Result<(), FileStoreError> {
        if self.refresh {
            return Ok(());
        }
        let day = self.today();
        stream::iter(
            keys.iter()
                .cloned()
                .map(|key| self.keep_one(tenant, key, day)),
        )
        .buffer_unordered(PARALLEL_REFRESHES)
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
    }
}
