//! Pages of a session log, bounded in entries and in bytes, read through
//! any [`MetaStore`]: `list_session_snapshots` and the session-log resource
//! page the same way because both read through here.

use serde::Serialize;

use super::{LogEntry, MetaStore, MetaStoreError};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
use crate::units::MIB;

/// Most entries one page holds.
pub const MAX_ENTRIES: usize = 1000;
/// Most JSON one page of entries holds, in bytes, unless one entry alone is
/// larger: a structured tool result carries a page twice, and with escaping
/// it stays inside one response.
pub const MAX_BYTES: usize = MIB;
/// Entries read from the store at a time, so a log of large entries is not
/// read whole.
const READ_BATCH: usize = 100;

/// Where a page starts and which way it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStart {
    /// From this index up, oldest first.
    Up(u64),
    /// From this index (default: the newest) down to 0, newest first.
    Down(Option<u64>),
}

/// One page: the entries, each shaped by the reader, and the index the
/// next page starts from when more entries follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPage<T> {
    /// The entries, in the page's order.
    pub entries: Vec<T>,
    /// Where the next page starts, when one follows.
    pub next_offset: Option<u64>,
}

/// Reads one page of `name`'s log: at most `limit` entries and
/// [`MAX_BYTES`] of their JSON as `shape` makes them.
pub async fn read_page<T: Serialize>(
    meta: &dyn MetaStore,
    tenant: &Tenant,
    name: &LogicalSession,
    start: PageStart,
    limit: usize,
    shape: impl Fn(LogEntry) -> T,
) -> Result<LogPage<T>, MetaStoreError> {
    let mut page = Builder {
        entries: Vec::new(),
        bytes: 0,
        limit,
        shape,
    };
    match start {
        PageStart::Up(offset) => {
            let mut index = offset;
            loop {
                let batch = meta.read_log(tenant, name, index, READ_BATCH).await?;
                let exhausted = batch.len() < READ_BATCH;
                for entry in batch {
                    // The entry's own index: a store may skip expired entries.
                    let at = entry.index;
                    if !page.push(entry) {
                        return Ok(page.finish(Some(at)));
                    }
                    index = at + 1;
                }
                if exhausted {
                    return Ok(page.finish(None));
                }
            }
        }
        PageStart::Down(from) => {
            let Some(last) = meta.last_log_entry(tenant, name).await? else {
                return Ok(page.finish(None));
            };
            // One past the highest index still to read.
            let mut end = from.map_or(last.index, |from| from.min(last.index)) + 1;
            while end > 0 {
                let start = end.saturating_sub(READ_BATCH as u64);
                let batch = meta
                    .read_log(tenant, name, start, (end - start) as usize)
                    .await?;
                // A store may skip expired entries and read past `end` to
                // fill the batch.
                for entry in batch.into_iter().rev().filter(|e| e.index < end) {
                    let at = entry.index;
                    if !page.push(entry) {
                        return Ok(page.finish(Some(at)));
                    }
                }
                end = start;
            }
            Ok(page.finish(None))
        }
    }
}

/// A page being filled, within its bounds.
struct Builder<T, F> {
    entries: Vec<T>,
    bytes: usize,
    limit: usize,
    shape: F,
}

impl<T: Serialize, F: Fn(LogEntry) -> T> Builder<T, F> {
    /// Adds `entry` unless the page is full; false when it is.
    fn push(&mut self, entry: LogEntry) -> bool {
        let shaped = (self.shape)(entry);
        let len = serde_json::to_vec(&shaped).map_or(usize::MAX, |json| json.len());
        if self.entries.len() == self.limit
            || (!self.entries.is_empty() && self.bytes + len > MAX_BYTES)
        {
            return false;
        }
        self.bytes += len;
        self.entries.push(shaped);
        true
    }

    fn finish(self, next_offset: Option<u64>) -> LogPage<T> {
        LogPage {
            entries: self.entries,
            next_offset,
        }
    }
}
