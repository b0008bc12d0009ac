//! Reading a stored `/work` object from inside a run: through the run's
//! file source, at once (an engine worker asks its server) or as host work
//! the run waits for within its time and cancel. `fs` (files of heaps from
//! before the disk) and the disk (chunks and manifests) both read this way.

use std::sync::Arc;

use crate::backends::content::ContentKey;
use crate::engine::services::work::{HostWork, Interrupted};
use crate::engine::services::{FileRead, FileSource};

/// The stored object `key`, or why it could not be read.
pub(crate) fn fetch(
    scope: &mut v8::PinScope<'_, '_>,
    source: Option<&Arc<dyn FileSource>>,
    key: &ContentKey,
) -> Result<Option<bytes::Bytes>, String> {
    let read = match source {
        Some(source) => source.read(key),
        None => return Ok(None),
    };
    match read {
        FileRead::Ready(found) => found,
        FileRead::Pending(work) => match scope.get_slot_mut::<HostWork>() {
            Some(host) => host.block_on(work).unwrap_or_else(|why| {
                Err(match why {
                    Interrupted::Deadline => "the run's time ran out while the file was read",
                    Interrupted::Cancelled => "the run was cancelled while the file was read",
                }
                .to_owned())
            }),
            None => Err("files are not available outside a run".to_owned()),
        },
    }
}
