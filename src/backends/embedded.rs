//! The embedded metadata database of local mode: one redb file holding the
//! session, log, tag and execution tables.

use std::path::Path;
use std::sync::Arc;

use crate::units::MIB;
use redb::Database;

/// Default page cache of the embedded database (`MCP_V8_DB_CACHE_MB`).
pub const DEFAULT_CACHE_BYTES: usize = 32 * MIB;

/// Opens (or creates) the database at `path` with the default page cache,
/// creating parent directories. redb allows one handle per file and process:
/// share the returned `Arc`.
pub fn open_database(
    path: &Path,
) -> Result<Arc<Database>, Box<dyn std::error::Error + Send + Sync>> {
    open_database_with_cache(path, DEFAULT_CACHE_BYTES)
}

/// [`open_database`] with a page cache of `cache_bytes`.
pub fn open_database_with_cache(
    path: &Path,
    cache_bytes: usize,
) -> Result<Arc<Database>, Box<dyn std::error::Error + Send + Sync>> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // redb's default page cache is 1 GiB, which a long-running serve would
    // grow into as the log grows; a small bound keeps its memory flat.
    Ok(Arc::new(
        redb::Builder::new()
            .set_cache_size(cache_bytes)
            .create(path)?,
    ))
}

/// Runs blocking redb `work` on `db` off the async executor; a panic in it
/// becomes the store's error through `joined`. One helper for the session,
/// metadata and task stores that share the database.
pub(crate) async fn blocking<T, E, F>(
    db: &Arc<Database>,
    work: F,
    joined: impl FnOnce(tokio::task::JoinError) -> E,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
    F: FnOnce(&Database) -> Result<T, E> + Send + 'static,
{
    let db = db.clone();
    tokio::task::spawn_blocking(move || work(&db))
        .await
        .map_err(joined)?
}

/// Writes `json` under `key` of `table` in a transaction of its own,
/// committed: the one write-a-record path of the stores keyed by name.
pub(crate) fn put_json(
    db: &Database,
    table: redb::TableDefinition<&str, &[u8]>,
    key: &str,
    json: &[u8],
) -> Result<(), Box<redb::Error>> {
    let boxed = |e: redb::Error| Box::new(e);
    let tx = db.begin_write().map_err(|e| boxed(e.into()))?;
    tx.open_table(table)
        .map_err(|e| boxed(e.into()))?
        .insert(key, json)
        .map_err(|e| boxed(e.into()))?;
    tx.commit().map_err(|e| boxed(e.into()))
}
