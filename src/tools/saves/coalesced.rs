//! Runs whose heaps were superseded (saves coalesce: a newer run that
//! continued a heap live completed before its snapshot began), held per
//! logical session until the run whose heap holds their effects is stored:
//! their records and log entries are then written before its own, so the
//! session log keeps the order of the runs and never ends in an entry
//! without a stored heap (docs/protocol.md, "Coalesced saves").

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use uuid::Uuid;

use crate::engine::RunOutcome;
use crate::heap::HeapKey;
use crate::meta::Tags;
use crate::session::LogicalSession;
use crate::tenant::Tenant;

/// A superseded run's record, as its answer left it.
#[derive(Debug)]
pub(in crate::tools) struct HeldRun {
    pub(in crate::tools) outcome: RunOutcome,
    pub(in crate::tools) times: (i128, i128),
    pub(in crate::tools) code: String,
    pub(in crate::tools) tags: Option<Tags>,
}

/// The superseded runs of each session, oldest first.
#[derive(Debug, Default)]
pub(in crate::tools) struct Coalesced {
    held: Mutex<HashMap<(Tenant, String), Vec<HeldRun>>>,
}

impl Coalesced {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<(Tenant, String), Vec<HeldRun>>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds a run of `session` whose heap was superseded.
    pub(in crate::tools) fn hold(&self, tenant: &Tenant, session: &LogicalSession, run: HeldRun) {
        self.held()
            .entry((tenant.clone(), session.as_str().to_owned()))
            .or_default()
            .push(run);
    }

    /// The runs held for `session`, oldest first, no longer held.
    pub(in crate::tools) fn take(&self, tenant: &Tenant, session: &LogicalSession) -> Vec<HeldRun> {
        self.held()
            .remove(&(tenant.clone(), session.as_str().to_owned()))
            .unwrap_or_default()
    }

    /// The nearest stored heap before the runs held for `session`, when
    /// any are held: where a run continuing the newest of them began
    /// (`Some(None)`: a fresh isolate).
    pub(in crate::tools) fn before(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Option<Option<HeapKey>> {
        self.held()
            .get(&(tenant.clone(), session.as_str().to_owned()))
            .and_then(|runs| runs.first())
            .map(|first| first.outcome.input_heap.clone())
    }

    /// The ids of the runs held for `session`.
    pub(in crate::tools) fn ids(&self, tenant: &Tenant, session: &LogicalSession) -> Vec<Uuid> {
        self.held()
            .get(&(tenant.clone(), session.as_str().to_owned()))
            .map(|runs| runs.iter().map(|r| r.outcome.execution_id).collect())
            .unwrap_or_default()
    }

    /// The session that holds run `id`, if one does.
    pub(in crate::tools) fn session_of(&self, tenant: &Tenant, id: Uuid) -> Option<LogicalSession> {
        self.held()
            .iter()
            .filter(|((owner, _), _)| owner == tenant)
            .find(|(_, runs)| runs.iter().any(|r| r.outcome.execution_id == id))
            .and_then(|((_, name), _)| LogicalSession::parse(name).ok())
    }
}
