//! Heaps: a stored heap loaded within the limits it needs, a run's heap
//! stored (its `/work` files first), a heap kept ready in an engine
//! worker claimed, and a heap's `/work` listed for `resources/read`.

use std::time::Instant;

use super::host::TreeEntry;
use super::outcome::{RunError, RunStatus};
use super::plan::Limits;
use super::section::Section;
use super::{Engine, MIB, contract, restore_needs_mb, worker};
use crate::heap::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;

impl Engine {
    /// The limits a heap is restored with when the call names none.
    pub(super) fn ready_limits(&self) -> contract::ReadyLimits {
        contract::ReadyLimits {
            default_mb: self.config.default_heap_limit_mb,
            max_mb: self.config.max_heap_limit_mb,
            asked_mb: None,
            settle: self.config.settle_ready_heaps,
        }
    }

    /// The worker keeping `tenant`'s heap `key` ready for a run with
    /// `limits`, when there is one.
    pub(super) fn claim(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
        limits: &Limits,
    ) -> Option<worker::Claim> {
        let workers = self.workers.as_ref().filter(|w| w.keeps_ready())?;
        workers.claim(
            tenant,
            key,
            limits.asked.then_some(limits.heap_limit_mb * MIB),
        )
    }

    /// Stores the heap a run made (its `/work` files first: a stored heap
    /// never names bytes the store lacks); `None` when it made none. Names
    /// the heap to the worker restoring it, once stored.
    pub(super) async fn keep(
        &self,
        tenant: &Tenant,
        result: &contract::JobResult,
        preparing: Option<u64>,
        ready: Option<contract::ReadyLimits>,
    ) -> Option<Result<HeapKey, RunError>> {
        let (Some(blob), Some(heaps)) = (&result.blob, &self.heaps) else {
            return None;
        };
        let stored =
            match super::files::keep(self.files.as_ref(), tenant, &result.reports.files).await {
                Ok(()) => self.store(heaps.as_ref(), tenant, blob.0.clone()).await,
                Err(error) => Err(error),
            };
        if let (Ok(key), Some(id), Some(workers), Some(limits)) =
            (&stored, preparing, &self.workers, ready)
        {
            let limit_mb = limits.heap_limit_mb(blob.0.len());
            workers.mark_ready(
                id,
                worker::ReadyHeap {
                    tenant: tenant.clone(),
                    key: key.clone(),
                    heap_limit_bytes: limit_mb * MIB,
                    cost_bytes: restore_needs_mb(blob.0.len()) * MIB,
                    made: Instant::now(),
                },
            );
        }
        Some(stored)
    }

    /// The `/work` tree of `tenant`'s heap `key`, read by restoring it;
    /// `None` when the tenant has no such heap.
    pub async fn files_of(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Vec<TreeEntry>>, String> {
        let Some(heaps) = &self.heaps else {
            return Ok(None);
        };
        let mut limits = Limits {
            timeout: self.config.default_timeout,
            heap_limit_mb: self.config.max_heap_limit_mb,
            asked: true,
        };
        let payload = match self.load(heaps.as_ref(), tenant, key, &mut limits).await {
            Ok(Some(payload)) => payload,
            Ok(None) => return Ok(None),
            Err((_, error)) => return Err(error.message),
        };
        let job = contract::Job {
            task: contract::Task::ListFiles,
            heap_limit_bytes: restore_needs_mb(payload.len())
                .max(self.config.default_heap_limit_mb)
                * MIB,
            restore: Some(Section(payload)),
            ..self.job(String::new(), self.own_asks(None)?)
        };
        let (result, _) = self
            .execute(job, tenant, None, None)
            .await
            .map_err(|e| e.to_string())?;
        match (result.status, result.listing) {
            (RunStatus::Completed, Some(tree)) => Ok(Some(tree)),
            _ => Err(result.error.map_or_else(
                || format!("listing the heap's /work ended {:?}", result.status),
                |e| e.message,
            )),
        }
    }

    /// The payload of heap `key`, `None` when it is not stored, or the
    /// status and error that end the run before it starts.
    pub(super) async fn load(
        &self,
        heaps: &dyn HeapStore,
        tenant: &Tenant,
        key: &HeapKey,
        limits: &mut Limits,
    ) -> Result<Option<bytes::Bytes>, (RunStatus, RunError)> {
        let snapshot = match heaps.get(tenant, key).await {
            Ok(Some(snapshot)) => snapshot,
            Ok(None) => return Ok(None),
            Err(err) => return Err((RunStatus::Failed, storage_error(&err))),
        };
        let len = snapshot.payload().len();
        if len > self.config.max_snapshot_bytes {
            return Err((
                RunStatus::Failed,
                self.too_large(&format!("heap {key}"), len),
            ));
        }
        let needed_mb = restore_needs_mb(len);
        // A heap grown under a larger limit than the default is restored
        // without the caller repeating it: the limit its size needs, with
        // the default's room to grow (docs/tools.md, heap_memory_max_mb).
        // The same rule makes a worker's ready heap, so a call that names no
        // limit finds it.
        if !limits.asked {
            limits.heap_limit_mb = self.ready_limits().heap_limit_mb(len);
        }
        if needed_mb > limits.heap_limit_mb {
            return Err((
                RunStatus::OutOfMemory,
                RunError::new(
                    "OutOfMemoryError",
                    format!(
                        "heap {key} needs about {needed_mb} MiB to restore, over the {} MiB heap limit; \
                         ask for a larger heap_memory_max_mb (at most {})",
                        limits.heap_limit_mb, self.config.max_heap_limit_mb
                    ),
                ),
            ));
        }
        Ok(Some(snapshot.payload_bytes()))
    }

    /// Frames and stores the payload a run produced; its key, or the error
    /// that fails the run.
    async fn store(
        &self,
        heaps: &dyn HeapStore,
        tenant: &Tenant,
        blob: bytes::Bytes,
    ) -> Result<HeapKey, RunError> {
        if blob.len() > self.config.max_snapshot_bytes {
            return Err(self.too_large("this run's heap", blob.len()));
        }
        // Hashing and cutting a large payload take tens of milliseconds of
        // CPU: off the async workers.
        let snapshot = tokio::task::spawn_blocking(move || Snapshot::from_payload_bytes(blob))
            .await
            .map_err(|err| RunError::new("SnapshotError", err.to_string()))?
            .map_err(|err| RunError::new("SnapshotError", err.to_string()))?;
        heaps
            .put(tenant, &snapshot)
            .await
            .map_err(|err| storage_error(&err))?;
        Ok(snapshot.key().clone())
    }

    /// Why a snapshot of `len` bytes is neither stored nor restored.
    fn too_large(&self, what: &str, len: usize) -> RunError {
        RunError::new(
            "SnapshotTooLarge",
            format!(
                "{what} snapshot is {} MiB, over the {} MiB limit (MCP_V8_MAX_HEAP_SNAPSHOT_MB); \
                 it was not stored or restored. Drop large globals before the run ends, or raise the limit",
                len.div_ceil(MIB),
                self.config.max_snapshot_bytes / MIB
            ),
        )
    }
}

fn storage_error(err: &HeapStoreError) -> RunError {
    let name = match err {
        HeapStoreError::Corrupt { .. } | HeapStoreError::Chunks { .. } => "HeapError",
        _ => "StorageError",
    };
    RunError::new(name, err.to_string())
}
