//! Dispatch: a job run once its tenant has a runner, in an engine worker,
//! a warm isolate or a thread of its own, with the services the host
//! lends it.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::capability::outcome::EngineError;
use super::heaps::file_bytes;
use super::run::{isolate, plain};
use super::services::HostServices;
use super::{Engine, FileSource, contract, run, worker};
use crate::tenant::Tenant;

impl Engine {
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
    pub(super) async fn dispatch(
        &self,
        job: contract::Job,
        tenant: &Tenant,
        ran: Option<worker::EarlyResult>,
        claim: Option<worker::Claim>,
    ) -> Result<worker::Executed, EngineError> {
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
                .map(worker::Executed::here)
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
                    plain::PlainIsolate::new(job.heap_limit_bytes).run(&job, &services)
                };
                let _ = done.send(result);
            })
            .map_err(|e| EngineError::Internal(format!("spawning the isolate thread: {e}")))?;
        result
            .await
            .map(worker::Executed::here)
            .map_err(|_| EngineError::Internal("the isolate thread panicked".into()))
    }

    /// Starts an engine worker ahead of the first run, when the engine has
    /// workers: its V8 starts while the process answers its first requests.
    /// Needs a Tokio runtime.
    pub fn prestart(&self) {
        if let Some(workers) = &self.workers {
            workers.prestart();
        }
    }

    /// Waits, until `by`, for the engine workers still restoring heaps
    /// kept ready for the next call; returns how many finished. For a host
    /// about to be frozen (Lambda's post-response phase), which must run
    /// nothing beside it.
    pub async fn settle_ready(&self, by: Instant) -> usize {
        match &self.workers {
            Some(workers) if workers.keeps_ready() => workers.settle(by).await,
            _ => 0,
        }
    }
}
