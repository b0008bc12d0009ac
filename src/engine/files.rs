//! The engine's side of `/work`: runs read older files' bytes from the
//! file store ([`StoreFiles`]), and the bytes a stateful run wrote are
//! stored before its heap ([`keep`]), so no stored heap names a file the
//! store lacks.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::outcome::RunError;
use super::web::FileSource;
use crate::files::FileStore;
use crate::tenant::Tenant;

/// Reads a tenant's files from the store, for a run's isolate thread.
#[derive(Debug)]
pub(super) struct StoreFiles {
    pub(super) store: Arc<dyn FileStore>,
    pub(super) tenant: Tenant,
    /// The runtime the store's futures run on (the isolate's thread has none).
    pub(super) runtime: tokio::runtime::Handle,
}

impl FileSource for StoreFiles {
    fn read(&self, key: &str, deadline: Instant) -> Result<Option<Bytes>, String> {
        let (sender, receiver) = std::sync::mpsc::channel();
        let (store, tenant, key) = (self.store.clone(), self.tenant.clone(), key.to_owned());
        let task = self.runtime.spawn(async move {
            let _ = sender.send(store.get(&tenant, &key).await);
        });
        let got = receiver.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        task.abort();
        match got {
            Ok(found) => found.map_err(|e| e.to_string()),
            Err(_) => Err("the run's time ran out while the file was read".into()),
        }
    }
}

/// Stores the bytes of the files a run left in `/work`.
pub(super) async fn keep(
    store: Option<&Arc<dyn FileStore>>,
    tenant: &Tenant,
    files: &[(String, Bytes)],
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
