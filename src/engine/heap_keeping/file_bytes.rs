//! The engine's side of `/work`: runs read older files' bytes from the
//! file store ([`StoreFiles`]), and the bytes a stateful run wrote are
//! stored before its heap ([`keep`]), so no stored heap names a file the
//! store lacks.

use std::sync::Arc;

use crate::backends::content::ContentKey;
use crate::engine::capability::outcome::RunError;
use crate::engine::capability::section::Section;
use crate::engine::host::DiskKept;
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

/// Stores the bytes of the files a run left in `/work`: those an `fs`
/// from before the disk held in memory, and the chunks and manifests the
/// run sealed on its local disk (`disk`), several at once; then makes
/// every object the tree names outlive the heap about to name it (a store
/// that collects by age refreshes them: `FileStore::keep_named`).
pub(crate) async fn keep(
    store: Option<&Arc<dyn FileStore>>,
    tenant: &Tenant,
    files: &[(ContentKey, Section)],
    disk: &DiskKept,
) -> Result<(), RunError> {
    use futures_util::{StreamExt, TryStreamExt, stream};
    if files.is_empty() && disk.objects.is_empty() && disk.names.is_empty() {
        return Ok(());
    }
    let failed = |e: String| {
        RunError::new(
            "StorageError",
            format!("storing the files of /work failed; nothing was stored: {e}"),
        )
    };
    let Some(store) = store else {
        if files.is_empty() && disk.objects.is_empty() {
            return Ok(());
        }
        return Err(RunError::new(
            "StorageError",
            "this server keeps no files (no file store is configured), so a run that leaves files in /work cannot be stored; remove them before the run ends",
        ));
    };
    for (key, bytes) in files {
        let stored = store
            .put(tenant, bytes)
            .await
            .map_err(|e| failed(e.to_string()))?;
        debug_assert_eq!(&stored, key);
    }
    if !disk.objects.is_empty() {
        let Some(dir) = disk.dir.clone() else {
            return Err(failed("the run's sealed files have no folder".into()));
        };
        // Chunks before the manifests naming them, so a store that marks a
        // manifest fresh (S3) has made its chunks fresh first; readers rely
        // only on every object being stored before the heap.
        let (manifests, chunks): (Vec<_>, Vec<_>) = disk
            .objects
            .iter()
            .partition(|key| disk.names.binary_search(key).is_ok());
        for batch in [chunks, manifests] {
            // Owned values in each future: a spawned save must be `Send`
            // for any lifetime, which borrowed closures here are not.
            let puts: Vec<_> = batch
                .into_iter()
                .map(|key| {
                    let (store, tenant, key) = (store.clone(), tenant.clone(), key.clone());
                    let path = dir.join("out").join(key.as_str());
                    async move {
                        store
                            .put_file(&tenant, &key, &path)
                            .await
                            .map_err(|e| e.to_string())
                    }
                })
                .collect();
            stream::iter(puts)
                .buffer_unordered(PARALLEL_PUTS)
                .try_collect::<Vec<()>>()
                .await
                .map_err(failed)?;
        }
    }
    store
        .keep_named(tenant, &disk.names)
        .await
        .map_err(|e| match e {
            crate::files::FileStoreError::Missing { .. } => failed(format!(
                "{e}: a file in /work names bytes the store no longer has (its heap outlived \
                 the retention, or the object was deleted), and reading it fails too; remove \
                 it (fs.rmSync) and the run's heap is stored again"
            )),
            e => failed(e.to_string()),
        })
}

/// Objects of one run stored at once.
const PARALLEL_PUTS: usize = 16;
