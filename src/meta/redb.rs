//! The embedded metadata store, in the same redb database as the sessions.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redb::{Database, Durability, ReadableTable, TableDefinition};
use uuid::Uuid;

use super::{ExecutionRecord, LogEntry, MetaStore, MetaStoreError, NewLogEntry, Tags};
use crate::heap::HeapKey;

/// (session, index) → JSON [`LogEntry`].
const LOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("session_log");
/// session → next index; one row per session, so listing reads no entries.
const LOG_HEADS: TableDefinition<&str, u64> = TableDefinition::new("session_log_heads");
/// heap → JSON tags.
const TAGS: TableDefinition<&str, &[u8]> = TableDefinition::new("heap_tags");
/// (tag key, tag value, heap) → (): the inverted index for queries.
const TAG_INDEX: TableDefinition<(&str, &str, &str), ()> = TableDefinition::new("heap_tag_index");
/// execution id → JSON [`ExecutionRecord`].
const EXECUTIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("executions");

/// How long an execution record written on its own may wait for the disk.
/// The original server's sled registry flushed every 500 ms, too.
pub const EXECUTION_FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// Pending records beyond which `record_run` writes before it returns, so a
/// disk that fails or falls behind slows callers instead of filling memory.
const MAX_PENDING_RECORDS: usize = 1024;

/// Session log, tags and executions in redb; every call is at most one
/// transaction. Log entries and tags are on disk when the call returns. An
/// execution record written without a log entry (every stateless run's) is
/// handed to a writer thread: the call returns before the write (the answer
/// to a stateless run waits for no transaction), readers see the record at
/// once from memory, and it reaches the disk, without an fsync of its own,
/// within [`EXECUTION_FLUSH_INTERVAL`], with the next durable commit, or
/// when the last handle to the store drops, whichever comes first.
#[derive(Debug, Clone)]
pub struct RedbMetaStore {
    db: Arc<Database>,
    flusher: Arc<Flusher>,
}

/// Execution records accepted but not yet committed, and whether committed
/// ones still wait for a durable commit. Shared by the store and its
/// writer thread.
#[derive(Debug, Default)]
struct Lazy {
    pending: Mutex<Pending>,
    /// Signalled when a record arrives or the store closes.
    arrived: Condvar,
    unflushed: AtomicBool,
}

#[derive(Debug, Default)]
struct Pending {
    /// Each record with the sequence number it was accepted under, so a
    /// writer forgets only the version it committed.
    records: HashMap<Uuid, (u64, ExecutionRecord)>,
    next: u64,
    closed: bool,
}

impl Lazy {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Every update is a single insert, remove or flag write.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Accepts a record; returns how many wait for the writer.
    fn accept(&self, record: &ExecutionRecord) -> usize {
        let mut pending = self.lock();
        let seq = pending.next;
        pending.next += 1;
        pending
            .records
            .insert(record.outcome.execution_id, (seq, record.clone()));
        let waiting = pending.records.len();
        drop(pending);
        self.arrived.notify_one();
        waiting
    }

    /// Commits what is pending now, without an fsync, then forgets what it
    /// committed. A record accepted meanwhile stays for the next call; one
    /// committed twice (by the writer and a flush on drop) is the same
    /// bytes twice.
    fn write_pending(&self, db: &Database) -> Result<usize, MetaStoreError> {
        let batch: Vec<(u64, ExecutionRecord)> = self.lock().records.values().cloned().collect();
        if batch.is_empty() {
            return Ok(0);
        }
        let mut tx = db.begin_write().map_err(backend)?;
        tx.set_durability(Durability::None);
        for (_, record) in &batch {
            put_execution_in(&tx, record)?;
        }
        tx.commit().map_err(backend)?;
        self.unflushed.store(true, Ordering::SeqCst);
        let mut pending = self.lock();
        for (seq, record) in &batch {
            let id = record.outcome.execution_id;
            if pending.records.get(&id).is_some_and(|(s, _)| s == seq) {
                pending.records.remove(&id);
            }
        }
        Ok(batch.len())
    }

    /// Commits pending records, then a durable empty commit makes every
    /// earlier commit durable.
    fn flush(&self, db: &Database) -> Result<(), MetaStoreError> {
        // Earlier commits are made durable even if this write fails.
        let written = self.write_pending(db).map(drop);
        if !self.unflushed.swap(false, Ordering::SeqCst) {
            return written;
        }
        let flushed = db
            .begin_write()
            .map_err(backend)
            .and_then(|tx| tx.commit().map_err(backend));
        if flushed.is_err() {
            self.unflushed.store(true, Ordering::SeqCst);
        }
        written.and(flushed)
    }

    /// Waits until the store closes, `deadline` passes or, if `for_records`,
    /// a record is pending; true unless the store closed.
    fn wait(&self, deadline: Instant, for_records: bool) -> bool {
        let mut pending = self.lock();
        loop {
            if pending.closed {
                return false;
            }
            let now = Instant::now();
            if (for_records && !pending.records.is_empty()) || now >= deadline {
                return true;
            }
            pending = self
                .arrived
                .wait_timeout(pending, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The writer thread: commits records as they arrive and makes them
    /// durable every [`EXECUTION_FLUSH_INTERVAL`], until the store closes.
    fn write_until_closed(&self, db: &Database) {
        let mut next_flush = Instant::now() + EXECUTION_FLUSH_INTERVAL;
        while self.wait(next_flush, true) {
            let result = if Instant::now() >= next_flush {
                next_flush = Instant::now() + EXECUTION_FLUSH_INTERVAL;
                self.flush(db)
            } else {
                self.write_pending(db).map(drop)
            };
            if let Err(e) = result {
                tracing::warn!(error = %e, "writing execution records to disk failed; retrying");
                // A failing disk is retried at the flush interval, not in a
                // busy loop.
                if !self.wait(Instant::now() + EXECUTION_FLUSH_INTERVAL, false) {
                    return;
                }
            }
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.arrived.notify_all();
    }
}

/// Owns the writer thread; its drop is the store's last flush.
#[derive(Debug)]
struct Flusher {
    db: Arc<Database>,
    lazy: Arc<Lazy>,
    writer: Option<thread::JoinHandle<()>>,
}

impl Flusher {
    /// Starts the writer thread. One long-lived thread rather than a task
    /// per batch: nothing is dropped unrun when a runtime shuts down, and
    /// the drop joins it, so no straggler writes or keeps the database file
    /// open after the store is gone.
    fn start(db: Arc<Database>) -> std::io::Result<Self> {
        let lazy = Arc::<Lazy>::default();
        let writer = {
            let (db, lazy) = (db.clone(), lazy.clone());
            thread::Builder::new()
                .name("redb-flush".into())
                .spawn(move || lazy.write_until_closed(&db))?
        };
        Ok(Self {
            db,
            lazy,
            writer: Some(writer),
        })
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.lazy.close();
        if let Some(writer) = self.writer.take() {
            // It only writes records, so a panic there loses none that the
            // flush below cannot still write.
            let _ = writer.join();
        }
        if let Err(e) = self.lazy.flush(&self.db) {
            tracing::error!(
                error = %e,
                within = ?EXECUTION_FLUSH_INTERVAL,
                "the latest execution records may be lost"
            );
        }
    }
}

fn backend(source: impl Into<super::BoxError>) -> MetaStoreError {
    MetaStoreError::Backend {
        store: "redb",
        source: source.into(),
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    what: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<T, MetaStoreError> {
    serde_json::from_slice(bytes).map_err(|e| MetaStoreError::Unreadable {
        what: what(),
        reason: e.to_string(),
    })
}

impl RedbMetaStore {
    /// A store over an open database (shared with the session store: redb
    /// allows one handle per file).
    pub fn new(db: Arc<Database>) -> Result<Self, MetaStoreError> {
        let tx = db.begin_write().map_err(backend)?;
        tx.open_table(LOG).map_err(backend)?;
        tx.open_table(LOG_HEADS).map_err(backend)?;
        tx.open_table(TAGS).map_err(backend)?;
        tx.open_table(TAG_INDEX).map_err(backend)?;
        tx.open_table(EXECUTIONS).map_err(backend)?;
        tx.commit().map_err(backend)?;
        let flusher = Arc::new(Flusher::start(db.clone()).map_err(backend)?);
        Ok(Self { db, flusher })
    }

    /// Accepts a record for the writer thread. Past [`MAX_PENDING_RECORDS`]
    /// the caller waits for the write and gets its error.
    async fn record_later(&self, execution: &ExecutionRecord) -> Result<(), MetaStoreError> {
        if self.flusher.lazy.accept(execution) <= MAX_PENDING_RECORDS {
            return Ok(());
        }
        let lazy = self.flusher.lazy.clone();
        self.blocking(move |db| lazy.write_pending(db).map(drop))
            .await
    }

    async fn blocking<T, F>(&self, work: F) -> Result<T, MetaStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T, MetaStoreError> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || work(&db))
            .await
            .map_err(backend)?
    }
}

/// Appends to the log of `session` inside `tx`. redb runs write transactions
/// one at a time, so reading the head and writing entry and head in one
/// transaction allocates the index without races.
fn append_in(
    tx: &redb::WriteTransaction,
    session: &str,
    entry: NewLogEntry,
) -> Result<u64, MetaStoreError> {
    let mut heads = tx.open_table(LOG_HEADS).map_err(backend)?;
    let index = heads
        .get(session)
        .map_err(backend)?
        .map_or(0, |v| v.value());
    heads.insert(session, index + 1).map_err(backend)?;
    let record = LogEntry {
        index,
        input_heap: entry.input_heap,
        output_heap: entry.output_heap,
        code: entry.code,
        timestamp: entry.timestamp,
    };
    let bytes = serde_json::to_vec(&record).map_err(backend)?;
    tx.open_table(LOG)
        .map_err(backend)?
        .insert((session, index), bytes.as_slice())
        .map_err(backend)?;
    Ok(index)
}

fn put_execution_in(
    tx: &redb::WriteTransaction,
    record: &ExecutionRecord,
) -> Result<(), MetaStoreError> {
    let bytes = serde_json::to_vec(record).map_err(backend)?;
    tx.open_table(EXECUTIONS)
        .map_err(backend)?
        .insert(
            record.outcome.execution_id.to_string().as_str(),
            bytes.as_slice(),
        )
        .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl MetaStore for RedbMetaStore {
    async fn append_log(&self, session: &str, entry: NewLogEntry) -> Result<u64, MetaStoreError> {
        let session = session.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let index = append_in(&tx, &session, entry)?;
            tx.commit().map_err(backend)?;
            Ok(index)
        })
        .await
    }

    async fn list_sessions(&self) -> Result<Vec<String>, MetaStoreError> {
        self.blocking(|db| {
            let tx = db.begin_read().map_err(backend)?;
            let heads = tx.open_table(LOG_HEADS).map_err(backend)?;
            heads
                .iter()
                .map_err(backend)?
                .map(|row| {
                    row.map(|(name, _)| name.value().to_owned())
                        .map_err(backend)
                })
                .collect()
        })
        .await
    }

    async fn last_log_entry(&self, session: &str) -> Result<Option<LogEntry>, MetaStoreError> {
        let session = session.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let log = tx.open_table(LOG).map_err(backend)?;
            let mut range = log
                .range((session.as_str(), 0)..=(session.as_str(), u64::MAX))
                .map_err(backend)?;
            match range.next_back() {
                Some(row) => {
                    let (key, bytes) = row.map_err(backend)?;
                    decode(|| format!("log entry {:?}", key.value()), bytes.value()).map(Some)
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn read_log(
        &self,
        session: &str,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LogEntry>, MetaStoreError> {
        let session = session.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let log = tx.open_table(LOG).map_err(backend)?;
            let range = log
                .range((session.as_str(), offset)..=(session.as_str(), u64::MAX))
                .map_err(backend)?;
            range
                .take(limit)
                .map(|row| {
                    let (key, bytes) = row.map_err(backend)?;
                    decode(|| format!("log entry {:?}", key.value()), bytes.value())
                })
                .collect()
        })
        .await
    }

    async fn get_tags(&self, heap: &HeapKey) -> Result<Tags, MetaStoreError> {
        let heap = heap.clone();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let tags = tx.open_table(TAGS).map_err(backend)?;
            match tags.get(heap.as_str()).map_err(backend)? {
                Some(bytes) => decode(|| format!("tags of heap {heap}"), bytes.value()),
                None => Ok(Tags::new()),
            }
        })
        .await
    }

    async fn set_tags(&self, heap: &HeapKey, new_tags: &Tags) -> Result<(), MetaStoreError> {
        let heap = heap.clone();
        let new_tags = new_tags.clone();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            {
                let mut tags = tx.open_table(TAGS).map_err(backend)?;
                let mut index = tx.open_table(TAG_INDEX).map_err(backend)?;
                let old: Tags = match tags.get(heap.as_str()).map_err(backend)? {
                    Some(bytes) => decode(|| format!("tags of heap {heap}"), bytes.value())?,
                    None => Tags::new(),
                };
                for (key, value) in &old {
                    index
                        .remove((key.as_str(), value.as_str(), heap.as_str()))
                        .map_err(backend)?;
                }
                if new_tags.is_empty() {
                    tags.remove(heap.as_str()).map_err(backend)?;
                } else {
                    let bytes = serde_json::to_vec(&new_tags).map_err(backend)?;
                    tags.insert(heap.as_str(), bytes.as_slice())
                        .map_err(backend)?;
                    for (key, value) in &new_tags {
                        index
                            .insert((key.as_str(), value.as_str(), heap.as_str()), ())
                            .map_err(backend)?;
                    }
                }
            }
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn query_by_tags(&self, filter: &Tags) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
        let filter = filter.clone();
        self.blocking(move |db| {
            let Some((key, value)) = filter.iter().next() else {
                return Ok(Vec::new());
            };
            let tx = db.begin_read().map_err(backend)?;
            let index = tx.open_table(TAG_INDEX).map_err(backend)?;
            let tags = tx.open_table(TAGS).map_err(backend)?;
            let mut found = Vec::new();
            // Candidates share the first pair; only they are read.
            for row in index
                .range((key.as_str(), value.as_str(), "")..)
                .map_err(backend)?
            {
                let (entry, _) = row.map_err(backend)?;
                let (k, v, heap) = entry.value();
                if k != key || v != value {
                    break;
                }
                let Ok(heap) = HeapKey::parse(heap) else {
                    continue;
                };
                let Some(bytes) = tags.get(heap.as_str()).map_err(backend)? else {
                    continue;
                };
                let heap_tags: Tags = decode(|| format!("tags of heap {heap}"), bytes.value())?;
                if filter.iter().all(|(fk, fv)| heap_tags.get(fk) == Some(fv)) {
                    found.push((heap, heap_tags));
                }
            }
            Ok(found)
        })
        .await
    }

    async fn put_execution(&self, record: &ExecutionRecord) -> Result<(), MetaStoreError> {
        self.record_run(None, record).await.map(|_| ())
    }

    /// One write transaction: a failure leaves neither the log entry nor the
    /// execution record behind, as on DynamoDB.
    async fn record_run(
        &self,
        log: Option<(&str, NewLogEntry)>,
        execution: &ExecutionRecord,
    ) -> Result<Option<u64>, MetaStoreError> {
        let Some((session, entry)) = log else {
            return self.record_later(execution).await.map(|()| None);
        };
        let session = session.to_owned();
        let execution = execution.clone();
        self.blocking(move |db| {
            let tx = db.begin_write().map_err(backend)?;
            let index = append_in(&tx, &session, entry)?;
            put_execution_in(&tx, &execution)?;
            tx.commit().map_err(backend)?;
            Ok(Some(index))
        })
        .await
    }

    async fn get_execution(
        &self,
        id: Uuid,
        now: i64,
    ) -> Result<Option<ExecutionRecord>, MetaStoreError> {
        if let Some((_, record)) = self.flusher.lazy.lock().records.get(&id) {
            return Ok((record.expires_at > now).then(|| record.clone()));
        }
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let executions = tx.open_table(EXECUTIONS).map_err(backend)?;
            let Some(bytes) = executions.get(id.to_string().as_str()).map_err(backend)? else {
                return Ok(None);
            };
            let record: ExecutionRecord = decode(|| format!("execution {id}"), bytes.value())?;
            Ok((record.expires_at > now).then_some(record))
        })
        .await
    }
}
