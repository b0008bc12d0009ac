//! Heaps whose runs were answered before the heap was stored: the saves
//! this process still has going, so that a `latest` here waits for them
//! (this file); what a `latest` anywhere reads from the session's pending
//! save in the metadata store (`pending`); runs whose heaps a newer save
//! superseded (`coalesced`); and what a host does around its calls
//! (`lifecycle`). docs/protocol.md, "Answer first, save after".

mod coalesced;
mod lifecycle;
mod pending;

pub(super) use coalesced::HeldRun;
pub use lifecycle::Lifecycle;
pub(super) use pending::{last_entry, lost_save, pending};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::heap::HeapKey;
use crate::session::LogicalSession;
use crate::tenant::Tenant;
use crate::units::MIB_U64;

/// How soon a `latest` on another instance looks again at a save still
/// going, doubling up to [`LAST_POLL`]: a save usually ends within tens of
/// milliseconds of the answer, and each look is two consistent reads.
pub(super) const FIRST_POLL: Duration = Duration::from_millis(10);
pub(super) const LAST_POLL: Duration = Duration::from_millis(100);

/// How many times, [`FIRST_POLL`] apart, a superseded run is looked at
/// while no save of its session is going, before its effects are taken as
/// lost: a second for the save of the run that superseded it to begin.
const HELD_LOOKS: u32 = 100;

/// How a save ended: `Err` says why its heap was not stored.
type Ended = Option<Result<(), String>>;

/// A save going: its run's id, how it ended, the word that gives it up,
/// its heap's key once stored, and what the run's heap holds (for the
/// process's bound on heaps being stored).
#[derive(Debug, Clone)]
pub(super) struct GoingSave {
    pub(super) id: Uuid,
    ended: watch::Receiver<Ended>,
    abandon: Arc<watch::Sender<Option<String>>>,
    key: watch::Receiver<Option<HeapKey>>,
    bytes: u64,
    /// Whether an engine worker keeps the run's heap live, once known.
    live: watch::Receiver<Option<bool>>,
    /// Its heap was superseded: it holds nothing waiting to be stored.
    superseded: watch::Receiver<bool>,
}

impl GoingSave {
    /// Whether an engine worker keeps the run's heap live for the next
    /// call: known a few milliseconds after the answer.
    pub(super) async fn kept_live(&self) -> bool {
        let mut live = self.live.clone();
        match live.wait_for(Option::is_some).await {
            Ok(known) => known.unwrap_or(false),
            Err(_) => false,
        }
    }

    /// How the save ended, once it has: `Err` says why its heap was not
    /// stored.
    pub(super) async fn ended(&self) -> Result<(), String> {
        ended_as(self.ended.clone()).await
    }

    /// The key of the heap it stored, once stored.
    pub(super) fn key(&self) -> Option<HeapKey> {
        self.key.borrow().clone()
    }

    fn going(&self) -> bool {
        self.ended.borrow().is_none()
    }

    /// Going, and holding a heap still to be stored (not superseded).
    fn storing(&self) -> bool {
        self.going() && !*self.superseded.borrow()
    }
}

/// How many heaps may wait to be stored: per logical session, and in bytes
/// of V8 heap per process (`MCP_V8_UNSAVED_HEAPS`,
/// `MCP_V8_UNSAVED_HEAPS_MB`). A call past either waits for the oldest.
#[derive(Debug, Clone, Copy)]
pub struct UnsavedBounds {
    /// Heaps of one session answered for and not yet stored.
    pub per_session: usize,
    /// Bytes of V8 heap of every such heap of the process.
    pub process_bytes: u64,
}

impl Default for UnsavedBounds {
    fn default() -> Self {
        Self {
            per_session: 4,
            process_bytes: 1024 * MIB_U64,
        }
    }
}

/// The saves going, by tenant and session name.
type Going = HashMap<(Tenant, String), Vec<GoingSave>>;

/// How a save ended, once it has: `Err` says why its heap was not stored.
async fn ended_as(mut ended: watch::Receiver<Ended>) -> Result<(), String> {
    match ended.wait_for(Option::is_some).await.map(|e| e.clone()) {
        Ok(Some(ended)) => ended,
        Ok(None) => Ok(()),
        // The save's task ended without a word (a panic).
        Err(_) => Err("the task storing it ended".to_owned()),
    }
}

/// The saves this process has going, by tenant and session.
#[derive(Debug)]
pub struct Saves {
    /// Names this process in the pending saves it writes.
    owner: String,
    going: Mutex<Going>,
    /// Runs whose heaps were superseded, until their line's heap is stored.
    pub(super) coalesced: coalesced::Coalesced,
}

impl Default for Saves {
    fn default() -> Self {
        Self {
            owner: Uuid::new_v4().to_string(),
            going: Mutex::default(),
            coalesced: Default::default(),
        }
    }
}

/// A save going in this process; [`Ticket::end`] says how it ended.
#[derive(Debug)]
pub(super) struct Ticket {
    sender: watch::Sender<Ended>,
    abandoned: watch::Receiver<Option<String>>,
    key: watch::Sender<Option<HeapKey>>,
    superseded: watch::Sender<bool>,
}

impl Ticket {
    pub(super) fn end(self, ended: Result<(), String>) {
        self.sender.send_replace(Some(ended));
    }

    /// Where the save says its heap's key, once stored.
    pub(super) fn key_sender(&self) -> watch::Sender<Option<HeapKey>> {
        self.key.clone()
    }

    /// Where the save says its heap was superseded, as soon as it knows.
    pub(super) fn superseded_sender(&self) -> watch::Sender<bool> {
        self.superseded.clone()
    }

    /// Resolves with why, once the host gives the save up ([`Saves::abandon`]).
    pub(super) async fn abandoned(&mut self) -> String {
        let why = match self.abandoned.wait_for(Option::is_some).await {
            Ok(why) => why.clone(),
            // Never given up: the sender lives as long as `Saves`.
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }
}

impl Saves {
    /// This process's name in pending saves.
    pub(super) fn owner(&self) -> &str {
        &self.owner
    }

    fn going(&self) -> std::sync::MutexGuard<'_, Going> {
        self.going.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the save of `execution_id`'s heap in `session`, whose V8
    /// heap holds `bytes`; also returns the save going before it in the
    /// session, which it is logged after.
    pub(super) fn begin(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
        (bytes, live): (u64, watch::Receiver<Option<bool>>),
    ) -> (Ticket, Option<GoingSave>) {
        let (sender, receiver) = watch::channel(None);
        let (abandon, abandoned) = watch::channel(None);
        let (key, keyed) = watch::channel(None);
        let (superseded, replaced) = watch::channel(false);
        let mut going = self.going();
        let list = going
            .entry((tenant.clone(), session.as_str().to_owned()))
            .or_default();
        // Ended saves are forgotten as new ones begin.
        list.retain(GoingSave::going);
        let previous = list.last().cloned();
        list.push(GoingSave {
            id: execution_id,
            ended: receiver,
            abandon: Arc::new(abandon),
            key: keyed,
            bytes,
            live,
            superseded: replaced,
        });
        (
            Ticket {
                sender,
                abandoned,
                key,
                superseded,
            },
            previous,
        )
    }

    /// The newest save of `session` still going in this process: the heap
    /// a `latest` there continues.
    pub(super) fn newest(&self, tenant: &Tenant, session: &LogicalSession) -> Option<GoingSave> {
        self.going()
            .get(&(tenant.clone(), session.as_str().to_owned()))?
            .iter()
            .rev()
            .find(|save| save.going())
            .cloned()
    }

    /// Waits while `session` has `bounds.per_session` heaps or more being
    /// stored, or the process more than `bounds.process_bytes` of them, for
    /// the oldest to be stored; how long it waited, and why, when it did.
    pub(super) async fn within(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        bounds: UnsavedBounds,
    ) -> Option<(std::time::Duration, String)> {
        let started = std::time::Instant::now();
        let mut why = None;
        loop {
            let oldest = {
                let going = self.going();
                let key = (tenant.clone(), session.as_str().to_owned());
                let mine: Vec<&GoingSave> = going
                    .get(&key)
                    .map(|list| list.iter().filter(|save| save.storing()).collect())
                    .unwrap_or_default();
                let all: Vec<&GoingSave> = going
                    .values()
                    .flatten()
                    .filter(|save| save.storing())
                    .collect();
                let bytes: u64 = all.iter().map(|save| save.bytes).sum();
                // Words for the model, which can change neither bound; the
                // operator's log names them.
                if mine.len() >= bounds.per_session.max(1) {
                    tracing::info!(
                        session = session.as_str(),
                        waiting = mine.len(),
                        bound = bounds.per_session,
                        "a call waits for earlier heaps of its session to be stored (MCP_V8_UNSAVED_HEAPS)"
                    );
                    why = Some(format!(
                        "{} earlier heaps of this session were still being stored, the most this \
                         server lets one session have waiting; calls spaced a little further apart \
                         do not wait",
                        mine.len(),
                    ));
                    mine.first().map(|save| (*save).clone())
                } else if bytes > bounds.process_bytes && !all.is_empty() {
                    tracing::info!(
                        mib = bytes.div_ceil(MIB_U64),
                        bound_mib = bounds.process_bytes / MIB_U64,
                        "a call waits for heaps being stored (MCP_V8_UNSAVED_HEAPS_MB)"
                    );
                    why = Some(format!(
                        "this server was still storing {} MiB of heaps, the most it holds waiting",
                        bytes.div_ceil(MIB_U64),
                    ));
                    all.first().map(|save| (*save).clone())
                } else {
                    None
                }
            };
            let Some(oldest) = oldest else {
                return why.map(|why| (started.elapsed(), why));
            };
            let _ = oldest.ended().await;
        }
    }

    /// Gives up every save still going, saying `why`: each records itself
    /// as lost in its session's pending save and ends. Under Lambda, when
    /// the invocation that answered is about to reach its deadline.
    pub fn abandon(&self, why: &str) {
        for save in self.going().values().flatten() {
            if save.ended.borrow().is_none() {
                save.abandon.send_replace(Some(why.to_owned()));
            }
        }
    }

    /// Waits for the saves of `session` going in this process; the ones
    /// that failed, with why.
    pub(super) async fn wait(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Vec<(Uuid, String)> {
        let waiting: Vec<_> = self
            .going()
            .get(&(tenant.clone(), session.as_str().to_owned()))
            .cloned()
            .unwrap_or_default();
        let mut failed = Vec::new();
        for GoingSave { id, ended, .. } in waiting {
            if let Err(why) = ended_as(ended).await {
                failed.push((id, why));
            }
        }
        failed
    }

    /// Waits for the save of run `execution_id`'s heap when this process
    /// has it going (or had it, among the ones not yet forgotten): `None`
    /// when it has none, else how it ended (`Err` says why the heap was not
    /// stored). A superseded run is waited for until its record is written
    /// with that of the run whose heap holds its effects.
    pub async fn wait_for_run(
        &self,
        tenant: &Tenant,
        execution_id: Uuid,
    ) -> Option<Result<(), String>> {
        let save = self
            .going()
            .iter()
            .filter(|((owner, _), _)| owner == tenant)
            .flat_map(|(_, saves)| saves)
            .find(|save| save.id == execution_id)
            .cloned()?;
        let ended = ended_as(save.ended).await;
        // The save of the run that superseded it may begin a moment after
        // it was held (that run's answer is being shaped meanwhile).
        let mut looks = 0;
        while let Some(session) = self.coalesced.session_of(tenant, execution_id) {
            // Held until its line's newest save ends, which takes it.
            let failed = self.wait(tenant, &session).await;
            if self.coalesced.session_of(tenant, execution_id).is_some()
                && self.newest(tenant, &session).is_none()
            {
                looks += 1;
                if looks > HELD_LOOKS {
                    return Some(Err(failed.first().map_or_else(
                        || "the heap holding its effects was not stored".to_owned(),
                        |(_, why)| why.clone(),
                    )));
                }
                tokio::time::sleep(FIRST_POLL).await;
            }
        }
        Some(ended)
    }

    /// The runs of `session` answered before their heaps were stored whose
    /// effects no stored heap holds yet: the saves going and the runs
    /// superseded (for a pending save, so that a lost one names them all).
    pub(super) fn unstored(&self, tenant: &Tenant, session: &LogicalSession) -> Vec<Uuid> {
        let mut ids: Vec<Uuid> = self.coalesced.ids(tenant, session);
        if let Some(list) = self
            .going()
            .get(&(tenant.clone(), session.as_str().to_owned()))
        {
            ids.extend(list.iter().filter(|save| save.going()).map(|save| save.id));
        }
        ids
    }

    /// Waits for every save going in this process (before it exits).
    pub async fn drain(&self) {
        let all: Vec<_> = self.going().values().flatten().cloned().collect();
        for GoingSave { mut ended, .. } in all {
            let _ = ended.wait_for(Option::is_some).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_save_given_up_hears_why() {
        let saves = Saves::default();
        let tenant = Tenant::anonymous();
        let session = LogicalSession::parse("s").unwrap();
        let live = watch::channel(None).1;
        let (mut going, _) = saves.begin(&tenant, &session, Uuid::new_v4(), (0, live));
        saves.abandon("the deadline");
        assert_eq!(going.abandoned().await, "the deadline");
    }
}
