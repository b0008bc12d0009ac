//! The prelude's heap: made by the first fresh run that needs it, once per
//! process, and restored by every fresh run after it.

use std::sync::Arc;

use crate::engine::Engine;
use crate::engine::capability::outcome::RunStatus;
use crate::engine::prelude::Prelude;
use crate::engine::run::typescript::{self, Language};
use crate::packages::PackageView;
use crate::tenant::Tenant;

impl Engine {
    /// The heap the prelude leaves, made by the first fresh run that needs
    /// it (once per process; a failure is kept too, and logged).
    pub(crate) async fn base(
        &self,
        prelude: &Prelude,
        packages: Option<Arc<PackageView>>,
    ) -> Result<bytes::Bytes, String> {
        prelude
            .base
            .get_or_init(|| async {
                let location = prelude.source.location();
                let made = self.make_base(prelude, packages).await;
                match &made {
                    Ok(base) => tracing::info!(prelude = %location, bytes = base.len(), "the prelude's heap is ready"),
                    Err(why) => tracing::error!(prelude = %location, error = %why, "the prelude failed; fresh runs start without it"),
                }
                made
            })
            .await
            .clone()
    }

    async fn make_base(
        &self,
        prelude: &Prelude,
        packages: Option<Arc<PackageView>>,
    ) -> Result<bytes::Bytes, String> {
        let location = prelude.source.location();
        let code = prelude
            .source
            .code()
            .await
            .map_err(|e| format!("reading {location}: {e}"))?;
        let prepared = typescript::prepare(&code, Language::Auto)
            .map_err(|e| format!("{location}: SyntaxError: {e}"))?;
        let asks = self.own_asks(packages.as_ref())?;
        let job = crate::engine::contract::Job {
            stateful: true,
            timeout: self.config.max_timeout,
            ..self.job(prepared.js, asks)
        };
        // Made once for every tenant's fresh runs, it counts as anonymous.
        let result = self
            .dispatch(job, &Tenant::default(), None, None)
            .await
            .map(|executed| executed.result)
            .map_err(|e| e.to_string())?;
        if !result.reports.files.is_empty() {
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
