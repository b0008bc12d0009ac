//! The embedded metadata database of local mode: one redb file holding the
//! session, log, tag and execution tables.

use std::path::Path;
use std::sync::Arc;

use redb::Database;

/// Opens (or creates) the database at `path`, creating parent directories.
/// redb allows one handle per file and process: share the returned `Arc`.
pub fn open_database(
    path: &Path,
) -> Result<Arc<Database>, Box<dyn std::error::Error + Send + Sync>> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    Ok(Arc::new(Database::create(path)?))
}
