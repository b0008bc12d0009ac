//! What a `latest` anywhere reads of a save answered for: the session's
//! pending save in the metadata store, and whether the heap it names will
//! ever be stored.

use std::time::Duration;

use uuid::Uuid;

use super::{FIRST_POLL, LAST_POLL, Saves};
use crate::meta::{LogEntry, MetaStore, PendingSave};
use crate::session::LogicalSession;
use crate::tenant::Tenant;

/// How long a save answered for may take before a `latest` on another
/// instance takes it as lost: room for the largest heap a run may store.
pub(super) const SAVE_BOUND_SECS: i64 = 120;

/// The newest entry of `session`'s log, read for heap "latest"; `Err` is
/// the tool error.
pub(in crate::tools) async fn last_entry(
    meta: &dyn MetaStore,
    tenant: &Tenant,
    session: &LogicalSession,
) -> Result<Option<LogEntry>, String> {
    meta.last_log_entry(tenant, session)
        .await
        .map_err(|e| format!("could not read the session log for heap \"latest\": {e}"))
}

/// What a `latest` found of a save answered for and not stored.
#[derive(Debug)]
pub(in crate::tools) struct Lost {
    pub execution_id: Uuid,
    pub completed_at: String,
    /// Why it was not stored.
    pub why: String,
    /// Runs answered before it whose effects only its heap would have
    /// held ([`PendingSave::earlier`]).
    pub earlier: Vec<Uuid>,
}

/// What [`lost_save`] found: the lost save, when the heap it answered for
/// will never be stored; the session's newest entry; and how long it
/// waited for another process's save, with that process's name.
pub(in crate::tools) type Found = (Option<Lost>, Option<LogEntry>, Option<(Duration, String)>);

/// Reads `session`'s pending save and newest log entry, and waits while
/// another live process is still storing a save newer than that entry
/// ([`Found`]). A save of this process was waited for before
/// ([`Saves::wait`]).
///
/// The pending save and the entry are read at once, one round trip to the
/// store: a save marks its pending save cleared only after its entry is
/// written, and a cleared pending save keeps the time of that entry, so an
/// entry older than it was read before it was written and is read again.
pub(in crate::tools) async fn lost_save(
    meta: &dyn MetaStore,
    saves: &Saves,
    tenant: &Tenant,
    session: &LogicalSession,
) -> Result<Found, String> {
    let read = |e: crate::meta::MetaStoreError| {
        format!("could not read the session's pending save for heap \"latest\": {e}")
    };
    let mut pause = FIRST_POLL;
    let started = std::time::Instant::now();
    // The other process whose save was waited for, once one was.
    let mut other: Option<String> = None;
    let (lost, last) = loop {
        let (pending, last) = tokio::join!(
            meta.pending_save(tenant, session),
            last_entry(meta, tenant, session)
        );
        let (pending, last) = (pending.map_err(read)?, last?);
        let Some(pending) = pending else {
            break (None, last);
        };
        // The entry of the same run carries the same time; anything logged
        // since makes the pending save old news.
        if last
            .as_ref()
            .is_some_and(|entry| entry.timestamp >= pending.completed_at)
        {
            break (None, last);
        }
        if pending.cleared {
            // Its entry was written after the read of the log began.
            break (None, last_entry(meta, tenant, session).await?);
        }
        let lost = |why: String| Lost {
            execution_id: pending.execution_id,
            completed_at: pending.completed_at.clone(),
            why,
            earlier: pending.earlier.clone(),
        };
        if let Some(why) = &pending.failed {
            break (Some(lost(why.clone())), last);
        }
        if pending.owner == saves.owner() {
            // Waited for already: it ended without its entry, or its
            // clearing failed after it was logged (the entry read above).
            break (
                Some(lost("its save ended without a log entry".to_owned())),
                last,
            );
        }
        if meta.exclusive() || crate::clock::unix_now() > pending.expires_at {
            break (
                Some(lost(if meta.exclusive() {
                    "the server process storing it ended before the heap was stored".to_owned()
                } else {
                    "it was still not stored when the process storing it had to end (its Lambda \
                     invocation's deadline, or the bound on a save)"
                        .to_owned()
                })),
                last,
            );
        }
        other = Some(pending.owner.clone());
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LAST_POLL);
    };
    Ok((lost, last, other.map(|owner| (started.elapsed(), owner))))
}

/// The pending save written before `execution_id`'s answer. It expires
/// [`SAVE_BOUND_SECS`] from now, or sooner at `deadline`, the end of the
/// Lambda invocation storing it, after which nothing in that invocation runs.
pub(in crate::tools) fn pending(
    saves: &Saves,
    (execution_id, earlier): (Uuid, Vec<Uuid>),
    completed_at: String,
    deadline: Option<std::time::SystemTime>,
) -> PendingSave {
    let bound = crate::clock::unix_now() + SAVE_BOUND_SECS;
    let deadline = deadline
        .and_then(|d| d.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| {
            i64::try_from(d.as_secs())
                .unwrap_or(i64::MAX)
                .saturating_add(1)
        });
    PendingSave {
        execution_id,
        owner: saves.owner().to_owned(),
        completed_at,
        expires_at: deadline.map_or(bound, |d| d.min(bound)),
        failed: None,
        cleared: false,
        earlier,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn a_pending_save_expires_with_the_invocation_that_stores_it() {
        let saves = Saves::default();
        let now = crate::clock::unix_now();
        let anywhere = pending(&saves, (Uuid::new_v4(), Vec::new()), String::new(), None);
        assert!(anywhere.expires_at >= now + SAVE_BOUND_SECS);
        let deadline = std::time::SystemTime::now() + Duration::from_secs(10);
        let lambda = pending(
            &saves,
            (Uuid::new_v4(), Vec::new()),
            String::new(),
            Some(deadline),
        );
        assert!(
            (now + 10..=now + 12).contains(&lambda.expires_at),
            "nothing of the invocation runs past its deadline: {}",
            lambda.expires_at
        );
    }

    use crate::heap::HeapKey;
    use crate::meta::{ExecutionRecord, MetaStoreError, NewLogEntry, RedbMetaStore, Tags};

    /// A store whose log read is served just before another process's save
    /// ends (its entry written, its pending save cleared), and whose read
    /// of the pending save just after: the interleaving that one round trip
    /// for both reads allows.
    #[derive(Debug)]
    struct ReadAcrossASave {
        store: RedbMetaStore,
        save: Mutex<Option<(NewLogEntry, Uuid)>>,
        ended: tokio::sync::Notify,
    }

    #[async_trait::async_trait]
    impl MetaStore for ReadAcrossASave {
        async fn last_log_entry(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
        ) -> Result<Option<LogEntry>, MetaStoreError> {
            let read = self.store.last_log_entry(tenant, session).await?;
            let save = self.save.lock().unwrap().take();
            if let Some((entry, id)) = save {
                self.store.append_log(tenant, session, entry).await?;
                self.store.clear_pending_save(tenant, session, id).await?;
                self.ended.notify_one();
            }
            Ok(read)
        }
        async fn pending_save(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
        ) -> Result<Option<PendingSave>, MetaStoreError> {
            if self.save.lock().unwrap().is_some() {
                self.ended.notified().await;
            }
            self.store.pending_save(tenant, session).await
        }
        async fn append_log(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
            entry: NewLogEntry,
        ) -> Result<u64, MetaStoreError> {
            self.store.append_log(tenant, session, entry).await
        }
        async fn list_sessions(
            &self,
            tenant: &Tenant,
            after: Option<&LogicalSession>,
            limit: usize,
        ) -> Result<Vec<LogicalSession>, MetaStoreError> {
            self.store.list_sessions(tenant, after, limit).await
        }
        async fn read_log(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
            offset: u64,
            limit: usize,
        ) -> Result<Vec<LogEntry>, MetaStoreError> {
            self.store.read_log(tenant, session, offset, limit).await
        }
        async fn get_tags(&self, tenant: &Tenant, heap: &HeapKey) -> Result<Tags, MetaStoreError> {
            self.store.get_tags(tenant, heap).await
        }
        async fn set_tags(
            &self,
            tenant: &Tenant,
            heap: &HeapKey,
            tags: &Tags,
        ) -> Result<(), MetaStoreError> {
            self.store.set_tags(tenant, heap, tags).await
        }
        async fn query_by_tags(
            &self,
            tenant: &Tenant,
            filter: &Tags,
        ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
            self.store.query_by_tags(tenant, filter).await
        }
        async fn state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
            self.store.state_key().await
        }
        async fn put_suspension(
            &self,
            tenant: &Tenant,
            suspension: &crate::elicit::Suspension,
        ) -> Result<(), MetaStoreError> {
            self.store.put_suspension(tenant, suspension).await
        }
        async fn get_suspension(
            &self,
            tenant: &Tenant,
            id: Uuid,
            now: i64,
        ) -> Result<Option<crate::elicit::Suspension>, MetaStoreError> {
            self.store.get_suspension(tenant, id, now).await
        }
        async fn claim_suspension(
            &self,
            tenant: &Tenant,
            id: Uuid,
        ) -> Result<bool, MetaStoreError> {
            self.store.claim_suspension(tenant, id).await
        }
        async fn admit_suspension(
            &self,
            tenant: &Tenant,
            window: i64,
            limit: u32,
            expires_at: i64,
        ) -> Result<bool, MetaStoreError> {
            self.store
                .admit_suspension(tenant, window, limit, expires_at)
                .await
        }
        async fn put_pending_save(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
            save: &PendingSave,
        ) -> Result<(), MetaStoreError> {
            self.store.put_pending_save(tenant, session, save).await
        }
        async fn clear_pending_save(
            &self,
            tenant: &Tenant,
            session: &LogicalSession,
            execution_id: Uuid,
        ) -> Result<(), MetaStoreError> {
            self.store
                .clear_pending_save(tenant, session, execution_id)
                .await
        }
        async fn put_execution(
            &self,
            tenant: &Tenant,
            record: &ExecutionRecord,
        ) -> Result<(), MetaStoreError> {
            self.store.put_execution(tenant, record).await
        }
        async fn get_execution(
            &self,
            tenant: &Tenant,
            id: Uuid,
            now: i64,
        ) -> Result<Option<ExecutionRecord>, MetaStoreError> {
            self.store.get_execution(tenant, id, now).await
        }
    }

    fn entry(output: char, timestamp: &str) -> NewLogEntry {
        NewLogEntry {
            input_heap: None,
            output_heap: HeapKey::parse(&output.to_string().repeat(64)).unwrap(),
            code: String::new(),
            timestamp: timestamp.into(),
            superseded_by: None,
        }
    }

    /// The pending save and the log's last entry are read at once; when
    /// the entry read is older than a save that ended between the two
    /// reads, the entry that save wrote is read again rather than the heap
    /// before it continued.
    #[tokio::test]
    async fn latest_read_across_a_save_ending_continues_the_saved_heap() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(redb::Database::create(dir.path().join("meta.redb")).unwrap());
        let tenant = Tenant::anonymous();
        let session = LogicalSession::parse("across").unwrap();
        let store = RedbMetaStore::new(db).unwrap();
        store
            .append_log(&tenant, &session, entry('a', "2026-11-27T10:00:00.000Z"))
            .await
            .unwrap();
        let id = Uuid::new_v4();
        let other = Saves::default();
        let marker = pending(
            &other,
            (id, Vec::new()),
            "2026-11-27T10:00:05.000Z".into(),
            None,
        );
        store
            .put_pending_save(&tenant, &session, &marker)
            .await
            .unwrap();
        let store = ReadAcrossASave {
            store,
            save: Mutex::new(Some((entry('b', "2026-11-27T10:00:05.000Z"), id))),
            ended: tokio::sync::Notify::new(),
        };
        let read = tokio::time::timeout(
            Duration::from_secs(10),
            lost_save(&store, &Saves::default(), &tenant, &session),
        )
        .await
        .expect("the two reads were not made at once");
        let (lost, last, _) = read.unwrap();
        assert!(lost.is_none(), "{lost:?}");
        assert_eq!(
            last.map(|e| e.index),
            Some(1),
            "the entry read before the save ended was continued"
        );
    }
}
