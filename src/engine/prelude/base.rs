//! The prelude's heap: made by the first fresh run that needs it, once per
//! process, and restored by every fresh run after it.

use crate::engine::capability::outcome::RunStatus;
use crate::engine::contract::{Job, JobResult};
use crate::engine::prelude::Prelude;
use crate::engine::run::typescript::{self, Language};

impl Prelude {
    /// The heap the prelude leaves, made by the first fresh run that needs
    /// it (once per process; a failure is kept too, and logged): `job`
    /// plans the stateful run of the prelude's JavaScript, which `run`
    /// runs.
    pub(crate) async fn base<J, R, F>(&self, job: J, run: R) -> Result<bytes::Bytes, String>
    where
        J: FnOnce(String) -> Result<Job, String>,
        R: FnOnce(Job) -> F,
        F: Future<Output = Result<JobResult, String>>,
    {
        self.base
            .get_or_init(|| async {
                let location = self.source.location();
                let made = self.make(job, run).await;
                match &made {
                    Ok(base) => tracing::info!(prelude = %location, bytes = base.len(), "the prelude's heap is ready"),
                    Err(why) => tracing::error!(prelude = %location, error = %why, "the prelude failed; fresh runs start without it"),
                }
                made
            })
            .await
            .clone()
    }

    async fn make<J, R, F>(&self, job: J, run: R) -> Result<bytes::Bytes, String>
    where
        J: FnOnce(String) -> Result<Job, String>,
        R: FnOnce(Job) -> F,
        F: Future<Output = Result<JobResult, String>>,
    {
        let location = self.source.location();
        let code = self
            .source
            .code()
            .await
            .map_err(|e| format!("reading {location}: {e}"))?;
        let prepared = typescript::prepare(&code, Language::Auto)
            .map_err(|e| format!("{location}: SyntaxError: {e}"))?;
        let mut result = run(job(prepared.js)?).await?;
        let sealed = !result.reports.disk.objects.is_empty();
        result.reports.disk.discard();
        if !result.reports.files.is_empty() || sealed {
            // The prelude's heap is kept in memory, not stored: bytes of its
            // files would have nowhere to live.
            return Err(format!(
                "{location} left files in /work; a prelude may not (runs bring their own files)"
            ));
        }
        match (result.status, result.blob) {
            (RunStatus::Completed, Some(blob)) => Ok(blob.0),
            (status, _) => Err(match result.error {
                Some(error) => format!(
                    "{location} ended {status:?}: {}: {}",
                    error.name, error.message
                ),
                None => format!("{location} ended {status:?}"),
            }),
        }
    }
}
