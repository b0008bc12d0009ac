//! The save of a run answered before its heap was stored: waited for after
//! the answer, then the run's record and log entry written. Saves coalesce
//! (docs/protocol.md, "Coalesced saves"): a run whose heap a newer run
//! replaced before its snapshot began is held, and written with that
//! run's once its heap is stored, so that the log keeps the runs' order.

use super::answer::record;
use crate::engine::{RunOutcome, SaveEnded, Saving, Superseded};
use crate::heap::HeapKey;
use crate::meta::{PendingSave, Tags};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
use crate::tools::saves;
use crate::tools::saves::HeldRun;
use crate::tools::toolbox::Toolbox;

/// What storing a heap answered for first needs: the run as answered, and
/// what its record and log entry carry.
pub(super) struct AfterAnswer {
    /// When the answer left: the record says how long the save took after.
    pub(super) answered: std::time::Instant,
    pub(super) toolbox: Toolbox,
    pub(super) tenant: Tenant,
    pub(super) outcome: RunOutcome,
    pub(super) times: (i128, i128),
    pub(super) code: String,
    pub(super) session: LogicalSession,
    pub(super) tags: Option<Tags>,
    pub(super) marker: PendingSave,
    /// The session's save going before this one: this one is logged after
    /// it, so a save never becomes `latest` before the one it continues.
    pub(super) previous: Option<saves::GoingSave>,
    /// The save of the heap this run continued live, not yet stored as
    /// the run began: its key is this run's `input_heap`. Kept apart from
    /// `previous`, which may have ended, and been forgotten, by the time
    /// this run's save begins.
    pub(super) continued: Option<saves::GoingSave>,
    /// Where this save says its heap's key, once stored.
    pub(super) key: tokio::sync::watch::Sender<Option<HeapKey>>,
    /// Where it says its heap was superseded, at once: no call waits on
    /// a heap that will never be stored.
    pub(super) superseded: tokio::sync::watch::Sender<bool>,
}

impl AfterAnswer {
    /// Waits for the heap to be stored, then writes what the run leaves
    /// behind; a save that failed, or that the host gave up (`abandoned`
    /// resolves with why), is written into the session's pending save, so
    /// that the next `latest` says so, with the superseded runs whose
    /// effects were in it. `Err` says why the heap was not stored.
    pub(super) async fn save(
        mut self,
        save: Saving,
        abandoned: impl std::future::Future<Output = String>,
    ) -> Result<(), String> {
        let why = tokio::select! {
            why = self.store(save) => why,
            why = abandoned => Some(why),
        };
        let Some(why) = why else {
            return Ok(());
        };
        tracing::error!(why, "a heap answered for before its save was not stored");
        self.marker.failed = Some(why.clone());
        // The superseded runs whose effects only this heap held are lost
        // with it; the next `latest` names them.
        let lost = self
            .toolbox
            .saves
            .coalesced
            .take(&self.tenant, &self.session);
        for run in lost {
            let id = run.outcome.execution_id;
            if !self.marker.earlier.contains(&id) {
                self.marker.earlier.push(id);
            }
        }
        if let Err(e) = self
            .toolbox
            .meta
            .put_pending_save(&self.tenant, &self.session, &self.marker)
            .await
        {
            tracing::error!(error = %e, "a failed save could not be recorded in the session");
        }
        Err(why)
    }

    /// Stores the heap and its records; `Some` says why it was not stored.
    async fn store(&mut self, save: Saving) -> Option<String> {
        let ended = save.ended().await;
        self.outcome.heap_saving = None;
        match &ended {
            SaveEnded::Stored(key) => drop(self.key.send_replace(Some(key.clone()))),
            SaveEnded::Superseded => drop(self.superseded.send_replace(true)),
            SaveEnded::Failed(_) => {}
        }
        if let Some(previous) = self.previous.take() {
            let _ = previous.ended().await;
        }
        let coalesced = &self.toolbox.saves.coalesced;
        if let Some(continued) = self.continued.take() {
            let ended = continued.ended().await;
            // Superseded, and held: this run began where its line did.
            let held_before = || coalesced.before(&self.tenant, &self.session);
            match (ended, continued.key()) {
                (Ok(()), Some(key)) => self.outcome.input_heap = Some(key),
                (Ok(()), None) if let Some(before) = held_before() => {
                    self.outcome.input_heap = before;
                }
                (ended, _) => self.outcome.warnings.push(format!(
                    "this run continued the heap of run {} before it was stored, and that heap \
                     was not stored ({}): this run's heap holds its state",
                    continued.id,
                    ended.err().unwrap_or_else(|| "no key".to_owned())
                )),
            }
        }
        let key = match ended {
            SaveEnded::Stored(key) => key,
            SaveEnded::Superseded => {
                tracing::debug!(
                    execution_id = %self.outcome.execution_id,
                    "a heap was superseded before its snapshot began"
                );
                coalesced.hold(
                    &self.tenant,
                    &self.session,
                    HeldRun {
                        outcome: self.outcome.clone(),
                        times: self.times,
                        code: std::mem::take(&mut self.code),
                        tags: self.tags.take(),
                    },
                );
                return None;
            }
            SaveEnded::Failed(error) => {
                return Some(format!(
                    "storing it failed ({}: {})",
                    error.name, error.message
                ));
            }
        };
        // The runs this heap superseded first, in their order.
        for held in coalesced.take(&self.tenant, &self.session) {
            let HeldRun {
                mut outcome,
                times,
                code,
                tags,
            } = held;
            outcome.superseded = Some(Superseded::new(
                self.outcome.execution_id,
                key.clone(),
                outcome.input_heap.clone(),
            ));
            let recorded = record(
                &self.toolbox,
                &self.tenant,
                &mut outcome,
                times,
                code,
                Some(&self.session),
                tags.as_ref(),
            )
            .await;
            if recorded.logged_at.is_none() {
                tracing::warn!(
                    execution_id = %outcome.execution_id,
                    "a superseded run's log entry was not written"
                );
            }
        }
        self.outcome.heap = Some(key);
        self.outcome.saved_after_ms =
            Some(u64::try_from(self.answered.elapsed().as_millis()).unwrap_or(u64::MAX));
        let meta = self.toolbox.meta.clone();
        let recorded = record(
            &self.toolbox,
            &self.tenant,
            &mut self.outcome,
            self.times,
            std::mem::take(&mut self.code),
            Some(&self.session),
            self.tags.as_ref(),
        )
        .await;
        if recorded.logged_at.is_some() {
            if let Err(e) = meta
                .clear_pending_save(&self.tenant, &self.session, self.outcome.execution_id)
                .await
            {
                // Its log entry is newer than it: `latest` reads past it.
                tracing::warn!(error = %e, "a stored heap's pending save was not cleared");
            }
            return None;
        }
        Some(format!(
            "its log entry was not written ({})",
            self.outcome.warnings.last().map_or("", String::as_str)
        ))
    }
}
