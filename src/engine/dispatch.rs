//! Dispatch: a job run once its tenant has a runner, in an engine worker,
//! a warm isolate or a thread of its own, with the services the host
//! lends it.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::capability::outcome::EngineError;
use super::heap_keeping::file_bytes;
use super::run::{isolate, plain};
use super::services::FileSource;
use super::services::{Clients, HostServices};
use super::{admission, contract, run, worker};
use crate::files::FileStore;
use crate::tenant::Tenant;

/// The runners of an engine's jobs and what it lends them: engine workers,
/// or warm isolates and threads of this process, behind one admission.
#[derive(Debug)]
pub(super) struct Runners {
    pub(super) admission: admission::Admission,
    pub(super) workers: Option<worker::WorkerPool>,
    pub(super) warm: Option<run::plain::WarmPool>,
    /// Where the bytes of `/work` files live, per tenant.
    pub(super) files: Option<Arc<dyn FileStore>>,
    /// The `fetch` client and upstream connections of runs in this process.
    pub(super) clients: Arc<Clients>,
}

impl Runners {
    /// The engine workers, when they keep heaps ready for the next call.
    pub(super) fn keeping_ready(&self) -> Option<&worker::WorkerPool> {
        self.workers.as_ref().filter(|w| w.keeps_ready())
    }

    /// What the host lends a run of `tenant`: the calling runtime, the
    /// tenant's files, this engine's clients.
    fn services(&self, tenant: &Tenant) -> HostServices {
        HostServices {
            runtime: tokio::runtime::Handle::current(),
            files: self.files.as_ref().map(|store| {
                Arc::new(file_bytes::StoreFiles {
                    store: store.clone(),
                    tenant: tenant.clone(),
                }) as Arc<dyn FileSource>
            }),
            clients: self.clients.clone(),
        }
    }

    /// Runs a job once `tenant` has a runner: in an engine worker when the
    /// engine has them (`claim`'s, when it keeps the job's heap ready);
    /// else on a thread of its own (see `run::thread_builder`), or a warm
    /// isolate when it touches no snapshot and there are some. `ran` gets a
    /// completed stateful run's answer before its heap is snapshotted. Also
    /// returns the worker now restoring the run's heap, if one is.
    pub(super) async fn run(
        &self,
        job: contract::Job,
        tenant: &Tenant,
        ran: Option<worker::EarlyResult>,
        claim: Option<worker::Claim>,
    ) -> Result<worker::WorkerOutcome, EngineError> {
        let mut job = job;
        job.answer_first = ran.is_some() && job.stateful;
        let share = tenant.id().filter(|_| !tenant.is_anonymous());
        let _pass = self.admission.enter(share).await?;
        let services = self.services(tenant);
        if let Some(workers) = &self.workers {
            return workers.run(job, &services, ran, claim).await;
        }
        if let Some(warm) = self.warm.as_ref().filter(|_| !job.touches_snapshots()) {
            return warm
                .run(job, services)
                .await
                .map(worker::WorkerOutcome::here)
                .ok_or_else(|| EngineError::Internal("the isolate thread panicked".into()));
        }
        let (done, result) = oneshot::channel();
        run::thread_builder()
            .spawn(move || {
                let result = if job.touches_snapshots() {
                    let mut ran = ran;
                    let mut early = |answer| {
                        if let Some(ran) = ran.take() {
                            let _ = ran.send(answer);
                        }
                    };
                    isolate::run(job, &services, &mut None, &mut early, None)
                } else {
                    plain::PlainIsolate::new(job.heap_limit).run(&job, &services)
                };
                let _ = done.send(result);
            })
            .map_err(|e| EngineError::Internal(format!("spawning the isolate thread: {e}")))?;
        result
            .await
            .map(worker::WorkerOutcome::here)
            .map_err(|_| EngineError::Internal("the isolate thread panicked".into()))
    }

    /// Starts an engine worker ahead of the first run, when there are
    /// workers. Needs a Tokio runtime.
    pub(super) fn prestart(&self) {
        if let Some(workers) = &self.workers {
            workers.prestart();
        }
    }

    /// Waits, until `by`, for the engine workers still restoring heaps
    /// kept ready; how many finished.
    pub(super) async fn settle_ready(&self, by: Instant) -> usize {
        match self.keeping_ready() {
            Some(workers) => workers.settle(by).await,
            None => 0,
        }
    }
}
