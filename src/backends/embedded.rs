//! The embedded metadata database of local mode: one redb file holding the
//! session, log, tag and execution tables.

use std::path::Path;
use std::sync::Arc;

use redb::Database;

/// Default page cache of the embedded database (`MCP_V8_DB_CACHE_MB`).
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

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
