//! Tables `read_display_page` parsed, kept by what never changes (the
//! tenant, the heap's key, the path): a heap is immutable, so a View
//! paging through 100k rows parses the file once, not once a page. Bounded
//! by the bytes of the files held; the least recently read goes first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Map, Value};

use crate::heap::HeapKey;
use crate::tenant::Tenant;
use crate::units::MIB_U64;

/// Bytes of table files held parsed in one process (parsed, they take a
/// few times this).
const HELD_FILE_BYTES: u64 = 32 * MIB_U64;

/// Row orders of a table by (column, from the largest).
type Orders = HashMap<(String, bool), Arc<Vec<usize>>>;

/// A parsed table: its rows, its columns, and its row orders by column.
pub(super) struct Table {
    pub(super) rows: Vec<Map<String, Value>>,
    /// Every row's keys, in the order they first appear.
    pub(super) columns: Vec<String>,
    /// Row indices sorted by a column, and whether from the largest, made
    /// once per order.
    sorted: Mutex<Orders>,
}

impl Table {
    pub(super) fn new(rows: Vec<Map<String, Value>>) -> Self {
        // A set beside the list: a wide table of 100k rows would otherwise
        // compare every key of every row with every column found so far.
        let mut columns: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for row in &rows {
            for key in row.keys() {
                if seen.insert(key.as_str()) {
                    columns.push(key.clone());
                }
            }
        }
        Self {
            rows,
            columns,
            sorted: Mutex::default(),
        }
    }

    /// The rows' indices in `column`'s order by `compare`, from the
    /// largest when `descending` (stable both ways: equal cells keep the
    /// file's order).
    pub(super) fn sorted_by(
        &self,
        column: &str,
        descending: bool,
        compare: impl Fn(Option<&Value>, Option<&Value>) -> std::cmp::Ordering,
    ) -> Arc<Vec<usize>> {
        let key = (column.to_owned(), descending);
        if let Some(order) = self.sorted.lock().expect("table orders").get(&key) {
            return order.clone();
        }
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_by(|&a, &b| {
            let order = compare(self.rows[a].get(column), self.rows[b].get(column));
            if descending { order.reverse() } else { order }
        });
        let order = Arc::new(order);
        self.sorted
            .lock()
            .expect("table orders")
            .insert(key, order.clone());
        order
    }
}

type Key = (Tenant, HeapKey, String);

#[derive(Default)]
struct Held {
    tables: HashMap<Key, (Arc<Table>, u64)>,
    /// Least recently read first.
    order: VecDeque<Key>,
    bytes: u64,
}

static HELD: LazyLock<Mutex<Held>> = LazyLock::new(Mutex::default);

/// Times a table file was parsed, by heap key and path: what the cache
/// saved is counted by tests (a heap key is unique to its test).
static PARSES: LazyLock<Mutex<HashMap<(String, String), u64>>> = LazyLock::new(Mutex::default);

/// Most tables counted: a long-running server starts counting afresh past
/// it, so the counts never grow with the tables it has served.
const MAX_COUNTED: usize = 4096;

/// How many times `path` of heap `heap` was parsed in this process.
#[doc(hidden)]
pub fn parses_of(heap: &str, path: &str) -> u64 {
    PARSES
        .lock()
        .expect("parse counts")
        .get(&(heap.to_owned(), path.to_owned()))
        .copied()
        .unwrap_or(0)
}

/// The table of `tenant`'s heap `heap` at `path`: the one held, else what
/// `load` parses (with the file's size in bytes).
pub(super) async fn table<F, Fut>(
    tenant: &Tenant,
    heap: &HeapKey,
    path: &str,
    load: F,
) -> Result<Arc<Table>, String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(Table, u64), String>>,
{
    let key = (tenant.clone(), heap.clone(), path.to_owned());
    {
        let mut held = HELD.lock().expect("held tables");
        if let Some((table, _)) = held.tables.get(&key) {
            let table = table.clone();
            held.order.retain(|k| k != &key);
            held.order.push_back(key);
            return Ok(table);
        }
    }
    let (table, bytes) = load().await?;
    {
        let mut counts = PARSES.lock().expect("parse counts");
        let counted = (heap.as_str().to_owned(), path.to_owned());
        if counts.len() >= MAX_COUNTED && !counts.contains_key(&counted) {
            counts.clear();
        }
        *counts.entry(counted).or_default() += 1;
    }
    let table = Arc::new(table);
    if bytes <= HELD_FILE_BYTES {
        let mut held = HELD.lock().expect("held tables");
        while held.bytes + bytes > HELD_FILE_BYTES {
            let Some(oldest) = held.order.pop_front() else {
                break;
            };
            if let Some((_, size)) = held.tables.remove(&oldest) {
                held.bytes -= size;
            }
        }
        if held
            .tables
            .insert(key.clone(), (table.clone(), bytes))
            .is_none()
        {
            held.bytes += bytes;
            held.order.push_back(key);
        }
    }
    Ok(table)
}
