//! The engine's side of `/work`: runs read older files' bytes from the
//! file store ([`StoreFiles`]), and the bytes a stateful run wrote are
//! stored before its heap ([`keep`]), so no stored heap names a file the
//! store lacks.

use std::sync::Arc;

use crate::backends::content::ContentKey;
use crate::engine::capability::outcome::RunError;
use crate::engine::capability::section::Section;
use crate::engine::services::{FileRead, FileSource};
use crate::files::FileStore;
use crate::tenant::Tenant;

/// Reads a tenant's files from the store, as work of the run that opens
/// them (on the host's runtime, within the run's time).
#[derive(Debug)]
pub(crate) struct StoreFiles {
    pub(crate) store: Arc<dyn FileStore>,
    pub(crate) tenant: Tenant,
}

impl FileSource for StoreFiles {
    fn read(&self, key: &ContentKey) -> FileRead {
        let (store, tenant, key) = (self.store.clone(), self.tenant.clone(), key.clone());
        FileRead::Pending(Box::pin(async move {
            store.get(&tenant, &key).await.map_err(|e| e.to_string())
        }))
    }
}

/// Stores the bytes of the files a run left in `/work`.
pub(crate) async fn keep(
    store: Option<&Arc<dyn FileStore>>,
    tenant: &Tenant,
    files: &[(ContentKey, Section)],
) -> Result<(), RunError> {
    if files.is_empty() {
        return Ok(());
    }
    let Some(store) = store else {
        return Err(RunError::new(
            "StorageError",
            "this server keeps no files (no file store is configured), so a run that leaves files in /work cannot be stored; remove them before the run ends",
        ));
    };
    for (key, bytes) in files {
        let stored = store.put(tenant, bytes).await.map_err(|e| {
            RunError::new(
                "StorageError",
                format!("storing the files of /work failed; nothing was stored: {e}"),
            )
        })?;
        debug_assert_eq!(&stored, key);
    }
    Ok(())
}
