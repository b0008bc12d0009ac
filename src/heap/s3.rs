//! Heaps as S3 objects: a manifest under each heap key, the chunks it
//! names under `chunks/<generation>/`.

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};

use super::chunk_store::{self, ChunkCache, KnownChunks, NoChunkCache, PARALLEL};
use super::format::{self, ChunkRef, Manifest, StoredChunk};
use super::{
    HeapKey, HeapStore, HeapStoreError, Snapshot, generation_at, system_clock, verify_read,
};
use crate::BoxError;
use crate::backends::s3::{get_object, put_once};
use crate::clock::Clock;
use crate::tenant::Tenant;

/// Heaps in a bucket, under an optional key prefix.
#[derive(Clone)]
pub struct S3HeapStore {
    client: Client,
    bucket: String,
    prefix: String,
    known: Arc<KnownChunks>,
    clock: Clock,
}

impl std::fmt::Debug for S3HeapStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3HeapStore")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl S3HeapStore {
    /// A store in `bucket`; object keys are `prefix` + heap key for the
    /// anonymous tenant (an empty prefix gives bare heap keys, as the
    /// original server wrote them), `prefix` + `tenants/<id>/` + heap key
    /// for any other.
    ///
    /// Chunks are objects under `prefix` + `chunks/<generation>/`, then the
    /// tenant's folder as above and the chunk's digest: one prefix a
    /// lifecycle rule can expire a day after the heaps (docs/storage.md).
    pub fn new(client: Client, bucket: impl Into<String>, prefix: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
            prefix: prefix.into(),
            known: Arc::default(),
            clock: system_clock(),
        }
    }

    /// The same store reading the time, so the generation of the chunks
    /// it writes, from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The object key of `key` in `tenant`'s namespace.
    pub fn object_key(&self, tenant: &Tenant, key: &HeapKey) -> String {
        let folder = tenant.heap_folder().unwrap_or_default();
        format!("{}{folder}{}", self.prefix, key.as_str())
    }

    /// The object key of `chunk` of `generation` in `tenant`'s namespace.
    pub fn chunk_key(&self, tenant: &Tenant, generation: u32, chunk: &ChunkRef) -> String {
        let folder = tenant.heap_folder().unwrap_or_default();
        format!("{}chunks/{generation}/{folder}{}", self.prefix, chunk.key())
    }
}

#[async_trait]
impl HeapStore for S3HeapStore {
    /// Writes the chunks this instance does not know the store holds (each
    /// a conditional write, so one that is there costs a 412, never a
    /// rewrite), then the manifest naming them.
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        let key = snapshot.key();
        if let Some(whole) = snapshot.stored_whole() {
            return put_once(
                &self.client,
                &self.bucket,
                &self.object_key(tenant, key),
                ByteStream::from(whole.clone()),
                "application/octet-stream",
            )
            .await
            .map_err(|source| backend(key, source));
        }
        let generation = generation_at((self.clock)());
        let (manifest, stored) = snapshot.split();
        let missing: Vec<StoredChunk> = stored
            .iter()
            .filter(|c| !self.known.contains(tenant, generation, &c.chunk))
            .cloned()
            .collect();
        // Compressed in parallel, off the async workers.
        let missing: Vec<(ChunkRef, Bytes)> = {
            let owned = snapshot.clone();
            tokio::task::spawn_blocking(move || {
                let refs: Vec<&StoredChunk> = missing.iter().collect();
                format::compress_all(&refs, owned.payload());
                missing
                    .iter()
                    .map(|c| (c.chunk.clone(), c.compressed(owned.payload()).clone()))
                    .collect()
            })
            .await
            .map_err(|e| {
                backend(
                    key,
                    format!("compressing the heap's chunks failed: {e}").into(),
                )
            })?
        };
        let writes: Vec<_> = missing
            .into_iter()
            .map(|(chunk, bytes)| async move {
                put_once(
                    &self.client,
                    &self.bucket,
                    &self.chunk_key(tenant, generation, &chunk),
                    ByteStream::from(bytes),
                    "application/zstd",
                )
                .await?;
                self.known.insert(tenant, generation, &chunk);
                Ok::<_, BoxError>(())
            })
            .collect();
        stream::iter(writes)
            .buffer_unordered(PARALLEL)
            .try_collect::<Vec<()>>()
            .await
            .map_err(|source| backend(key, source))?;
        let manifest = Manifest {
            generation,
            ..manifest.clone()
        };
        put_once(
            &self.client,
            &self.bucket,
            &self.object_key(tenant, key),
            ByteStream::from(manifest.encode()),
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
        self.get_using(tenant, key, &NoChunkCache).await
    }

    async fn get_using(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
        cache: &dyn ChunkCache,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        let bytes =
            match get_object(&self.client, &self.bucket, &self.object_key(tenant, key)).await {
                Ok(Some((bytes, _))) => bytes,
                Ok(None) => return Ok(None),
                Err(source) => return Err(backend(key, source)),
            };
        if format::is_whole(&bytes) {
            return chunk_store::whole(key, bytes).map(Some);
        }
        if !Manifest::is_manifest(&bytes) {
            return verify_read(key, bytes).map(Some);
        }
        let manifest = chunk_store::decode(key, &bytes)?;
        let generation = manifest.generation;
        let snapshot = chunk_store::gather("s3", tenant, &manifest, cache, |chunk| async move {
            let object = self.chunk_key(tenant, generation, &chunk);
            Ok(get_object(&self.client, &self.bucket, &object)
                .await?
                .map(|(bytes, _)| bytes))
        })
        .await?;
        for chunk in manifest.distinct() {
            self.known.insert(tenant, generation, chunk);
        }
        Ok(Some(snapshot))
    }
}

fn backend(key: &HeapKey, source: BoxError) -> HeapStoreError {
    HeapStoreError::Backend {
        store: "s3",
        key: key.clone(),
        source,
    }
}
