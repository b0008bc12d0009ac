//! Heaps: where a run starts (a heap an engine worker keeps ready, or a
//! stored heap loaded within the limits it needs), and a run's heap stored
//! (its `/work` files first) and kept ready for the next call.

pub(super) mod file_bytes;

use std::sync::Arc;
use std::time::Instant;

use super::capability::outcome::{EngineError, RunError, RunReport, RunStatus};
use super::config::{EngineConfig, RunRequest};
use super::contract;
use super::heap_limit::restore_needs_mb;
use super::plan::Limits;
use super::worker;
use crate::engine::heap_limit::HeapLimit;
use crate::files::FileStore;
use crate::heap::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use crate::tenant::Tenant;
use crate::units::MIB;

/// What loading, storing and keeping heaps ready works with: the engine's
/// limits, its stores, and its engine workers when they keep heaps ready.
/// The facade lends it for each step (`Engine::heaps_room`).
pub(super) struct Heaps<'a> {
    pub(super) config: &'a EngineConfig,
    pub(super) store: Option<&'a Arc<dyn HeapStore>>,
    pub(super) files: Option<&'a Arc<dyn FileStore>>,
    pub(super) workers: Option<&'a worker::WorkerPool>,
}

impl Heaps<'_> {
    /// The limits a heap is restored with when the call names none.
    pub(super) fn ready_limits(&self) -> contract::ReadyLimits {
        contract::ReadyLimits {
            rule: self.config.heap_limit_rule(),
            asked: None,
            settle: self.config.collect_ready_heaps,
        }
    }

    /// Where the run `request` asks for starts: a heap an engine worker
    /// keeps ready (neither read nor restored; one not stored yet is
    /// continued only there), a stored heap's payload, or nothing. `limits`
    /// become what the heap needs; `None` when the run ends before it
    /// starts, as `report` says.
    pub(super) async fn start(
        &self,
        request: &RunRequest,
        limits: &mut Limits,
        report: &mut RunReport,
    ) -> Result<Option<Start>, EngineError> {
        if self.store.is_none() {
            return Ok(Some(Start::Fresh));
        }
        let claim = match (&request.heap, request.continues) {
            (_, Some(run)) => match self.claim(&request.tenant, worker::Wanted::Run(run), limits) {
                Some(claim) => Some(claim),
                None => return Err(EngineError::NotLive(run)),
            },
            (Some(key), None) => self.claim(&request.tenant, worker::Wanted::Key(key), limits),
            (None, None) => None,
        };
        if let Some(claim) = claim {
            limits.heap_limit = claim.heap_limit();
            tracing::debug!(
                heap_limit_mb = limits.heap_limit.mb(),
                "the heap is ready in an engine worker"
            );
            return Ok(Some(Start::Ready(Box::new(claim))));
        }
        let Some(key) = &request.heap else {
            return Ok(Some(Start::Fresh));
        };
        match self.load(&request.tenant, key, limits).await {
            Ok(Some(payload)) => Ok(Some(Start::Stored(payload))),
            Ok(None) => {
                report.outcome.note_missing_heap(key);
                Ok(Some(Start::Fresh))
            }
            Err((status, error)) => {
                report.outcome.status = status;
                report.outcome.error = Some(error);
                Ok(None)
            }
        }
    }

    /// The worker keeping `tenant`'s heap ready for a run with `limits`
    /// (by key, or live by the run that made it), when there is one.
    pub(super) fn claim(
        &self,
        tenant: &Tenant,
        wanted: worker::Wanted<'_>,
        limits: &Limits,
    ) -> Option<worker::Claim> {
        let workers = self.workers.filter(|w| w.keeps_ready())?;
        workers.claim(
            tenant,
            wanted,
            limits.heap_limit.asked().then_some(limits.heap_limit),
        )
    }

    /// Stores the heap a run made (its `/work` files first: a stored heap
    /// never names bytes the store lacks); `None` when it made none. A
    /// heap its worker keeps live is ready for the next call at once, by
    /// the run's id, and named by its key once stored; a blob sent is
    /// named to the worker restoring it, once stored.
    pub(super) async fn keep(
        &self,
        tenant: &Tenant,
        executed: worker::WorkerOutcome,
        kept: Kept,
        live: Option<&tokio::sync::watch::Sender<Option<bool>>>,
    ) -> (contract::JobResult, Option<Result<HeapKey, RunError>>) {
        let say_live = |kept_live: bool| {
            if let Some(live) = live {
                live.send_replace(Some(kept_live));
            }
        };
        // The run's sealed files wait in its scratch folder, which `kept`
        // removes when it goes, whatever becomes of the heap.
        let mut executed = executed;
        let disk = std::mem::take(&mut executed.result.reports.disk);
        let Some(heaps) = self.store else {
            say_live(false);
            return (executed.result, None);
        };
        let named = executed.preparing.zip(self.workers);
        // A run cancelled once answered keeps nothing.
        if executed.snapshot.is_some() && executed.result.status == RunStatus::Completed {
            // The files first: the next run may read them from the live
            // heap before its snapshot is stored.
            if let Err(error) =
                self::file_bytes::keep(self.files, tenant, &executed.result.reports.files, &disk)
                    .await
            {
                say_live(false);
                return (executed.result, Some(Err(error)));
            }
            say_live(self.ready_live(tenant, &executed, &kept));
            let worker::WorkerOutcome {
                result, snapshot, ..
            } = executed;
            let stored = match snapshot.expect("checked above").await {
                Ok(Ok(blob)) => {
                    let stored = self.store(heaps.as_ref(), tenant, blob).await;
                    self.name_files(tenant, stored, &disk.names).await
                }
                Ok(Err(worker::Unwritten::Superseded)) => Err(RunError::superseded()),
                Ok(Err(worker::Unwritten::Failed(why))) => Err(RunError::new("SnapshotError", why)),
                Err(_) => Err(RunError::new(
                    "SnapshotError",
                    "the heap's snapshot never came from its engine process",
                )),
            };
            if let Some((id, workers)) = named {
                workers.name_ready(id, kept.run, stored.as_ref().ok().cloned());
            }
            return (result, Some(stored));
        }
        let result = executed.result;
        let Some(blob) = result.blob.as_ref().map(|blob| blob.0.clone()) else {
            say_live(false);
            return (result, None);
        };
        if let Err(error) =
            self::file_bytes::keep(self.files, tenant, &result.reports.files, &disk).await
        {
            say_live(false);
            return (result, Some(Err(error)));
        }
        // The worker restores the blob it made (a small heap's, made in
        // process) for the next call: ready by the run's id before it is
        // stored, as a heap kept live is.
        let ready = named.zip(kept.ready).map(|((id, workers), limits)| {
            workers.mark_ready(
                id,
                worker::ReadyHeap {
                    tenant: tenant.clone(),
                    key: None,
                    run: Some(kept.run),
                    heap_limit: limits.limit_for(blob.len()),
                    cost_bytes: restore_needs_mb(blob.len()) * MIB,
                    made: Instant::now(),
                },
            );
            (id, workers)
        });
        say_live(ready.is_some());
        let stored = self.store(heaps.as_ref(), tenant, blob).await;
        let stored = self.name_files(tenant, stored, &disk.names).await;
        if let Some((id, workers)) = ready {
            workers.name_ready(id, kept.run, stored.as_ref().ok().cloned());
        }
        (result, Some(stored))
    }

    /// Records with the file store which files the stored heap names
    /// (what collects unnamed files reads it); a heap whose record could
    /// not be written is not given to the caller, as its files could be
    /// collected under it.
    async fn name_files(
        &self,
        tenant: &Tenant,
        stored: Result<HeapKey, RunError>,
        names: &[crate::backends::content::ContentKey],
    ) -> Result<HeapKey, RunError> {
        let key = stored?;
        if let (Some(files), false) = (self.files, names.is_empty()) {
            files
                .name_heap(tenant, key.as_str(), names)
                .await
                .map_err(|e| {
                    RunError::new(
                        "StorageError",
                        format!("recording the files heap {key} names failed: {e}"),
                    )
                })?;
        }
        Ok(key)
    }

    /// Makes the heap an engine worker keeps live after `executed` ready
    /// for the next call, by the run's id, before its snapshot comes;
    /// whether there is one.
    fn ready_live(&self, tenant: &Tenant, executed: &worker::WorkerOutcome, kept: &Kept) -> bool {
        let (Some(_), Some(id), Some(workers)) =
            (&executed.snapshot, executed.preparing, self.workers)
        else {
            return false;
        };
        if executed.result.status != RunStatus::Completed {
            return false;
        }
        workers.mark_ready(
            id,
            worker::ReadyHeap {
                tenant: tenant.clone(),
                key: None,
                run: Some(kept.run),
                heap_limit: kept.heap_limit,
                cost_bytes: (executed.result.heap_used_bytes as usize).saturating_mul(2) + 8 * MIB,
                made: Instant::now(),
            },
        );
        true
    }

    /// The payload of heap `key`, `None` when it is not stored (or there
    /// is no heap store), or the status and error that end the run before
    /// it starts.
    pub(super) async fn load(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
        limits: &mut Limits,
    ) -> Result<Option<bytes::Bytes>, (RunStatus, RunError)> {
        let Some(heaps) = self.store else {
            return Ok(None);
        };
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
        // The same rule makes a worker's ready heap, so a call that names no
        // limit finds it.
        let decided = limits
            .heap_limit
            .to_restore(len, self.config.heap_limit_rule());
        limits.heap_limit = match decided {
            Ok(limit) => limit,
            Err(needed_mb) => {
                return Err((
                    RunStatus::OutOfMemory,
                    RunError::new(
                        "OutOfMemoryError",
                        format!(
                            "heap {key} needs about {needed_mb} MiB to restore, over the {} MiB heap limit; \
                         ask for a larger heap_memory_max_mb (at most {})",
                            limits.heap_limit.mb(),
                            self.config.max_heap_limit_mb
                        ),
                    ),
                ));
            }
        };
        Ok(Some(snapshot.payload_bytes()))
    }

    /// Frames and stores the payload a run produced; its key, or the error
    /// that fails the run.
    pub(super) async fn store(
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
    pub(super) fn too_large(&self, what: &str, len: usize) -> RunError {
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

/// Where a run starts ([`Heaps::start`]).
pub(super) enum Start {
    /// The heap an engine worker keeps ready.
    Ready(Box<worker::Claim>),
    /// A stored heap's payload, to restore.
    Stored(bytes::Bytes),
    /// A fresh isolate (or the prelude's heap).
    Fresh,
}

/// What [`Heaps::keep`] needs of the job besides its result: how a heap
/// restored for the next call is limited, the limit a live heap has, the
/// run that made it.
#[derive(Debug)]
pub(super) struct Kept {
    pub ready: Option<contract::ReadyLimits>,
    pub heap_limit: HeapLimit,
    pub run: uuid::Uuid,
    /// The run's local folder, removed when this goes: after its files
    /// are stored, or when the run failed, its engine worker killed
    /// included (the worker never reports a folder then).
    _scratch: Scratch,
}

impl Kept {
    /// What [`Heaps::keep`] needs of `job`, run `run`.
    pub(super) fn of(job: &contract::Job, run: uuid::Uuid) -> Self {
        Self {
            ready: job.keep_ready,
            heap_limit: job.heap_limit,
            run,
            _scratch: Scratch(job.asks.disk.run_dir.clone()),
        }
    }
}

/// A run's scratch folder, removed on drop.
#[derive(Debug)]
struct Scratch(Option<std::path::PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take()
            && let Err(e) = std::fs::remove_dir_all(&dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %dir.display(), error = %e, "could not remove a run's scratch folder");
        }
    }
}

fn storage_error(err: &HeapStoreError) -> RunError {
    let name = match err {
        HeapStoreError::Corrupt { .. } | HeapStoreError::Chunks { .. } => "HeapError",
        _ => "StorageError",
    };
    RunError::new(name, err.to_string())
}
