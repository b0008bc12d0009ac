//! `/work` as a disk: the natives `fs.js` writes and reads files through.
//! Bytes a run writes go to local files under the scratch root as they are
//! written ([`local`]), never into the run's memory; a stored file is read
//! a chunk at a time from the file store. When the run's heap is kept, the
//! files it wrote are sealed into chunks before the snapshot (the tree in
//! the heap then names their manifests), and the host stores them before
//! the heap. docs/engine.md, "Files".

pub(crate) mod error;
pub(crate) mod local;
pub(crate) mod quota;
pub(crate) mod seal;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use crate::backends::content::ContentKey;
use crate::engine::capability::{Capability, RunScope};
use crate::engine::host::stored::fetch;
use crate::engine::layer::bytes::{bytes_of, string, uint8_array};
use crate::engine::layer::registry::{Family, Natives, throw_error_with_code, throw_type_error};
use crate::engine::services::FileSource;
use crate::engine::services::memory::Budget;
use crate::units::MIB_U64;
use local::{Disk, DiskError};
use quota::Quota;
pub use seal::{Kept, sweep_scratch};

/// Where runs' local bytes go and how many one run may hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSettings {
    /// The scratch root: each run writes in a folder of its own under it
    /// (by default a folder of the system's temporary directory, shared by
    /// processes, so never swept). `None`: no local disk; a run that
    /// writes a file gets `EROFS`.
    pub scratch: Option<PathBuf>,
    /// Local bytes one run may hold at once (`MCP_V8_RUN_DISK_MB`).
    pub run_bytes: u64,
    /// Local bytes a tenant's runs on this machine may hold together
    /// (`MCP_V8_TENANT_DISK_MB`).
    pub tenant_bytes: u64,
}

impl Default for DiskSettings {
    fn default() -> Self {
        Self {
            scratch: Some(std::env::temp_dir().join("mcp-v8-scratch")),
            run_bytes: 4096 * MIB_U64,
            tenant_bytes: 8192 * MIB_U64,
        }
    }
}

/// One run's disk: its folder, `<scratch>/<tenant's folder>/<run>`, which
/// the host removes when the run ends however it ends
/// ([`DiskAsk::run_dir`]), and its bounds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DiskAsk {
    /// The run's folder; `None`: no local disk.
    pub(crate) run_dir: Option<PathBuf>,
    /// As [`DiskSettings::run_bytes`].
    pub(crate) run_bytes: u64,
    /// As [`DiskSettings::tenant_bytes`].
    pub(crate) tenant_bytes: u64,
}

/// The folder of `tenant`'s runs under a scratch root: a digest of its
/// partition, so no tenant id becomes a path.
pub(crate) fn tenant_folder(tenant: &crate::tenant::Tenant) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(tenant.partition().as_bytes());
    format!("t-{}", &hex::encode(digest)[..32])
}

/// A run's disk (an isolate slot) and where stored bytes come from.
pub(crate) struct DiskRun {
    disk: Disk,
    source: Option<Arc<dyn FileSource>>,
}

impl Capability for DiskRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "disk",
        source: include_str!("disk.js"),
        deps: &[],
        natives,
        globals: &[],
        version: 1,
    });
    type Settings = DiskSettings;
    type Ask = DiskAsk;
    /// What the run sealed, stored before its heap.
    type Report = Kept;

    fn ask(
        settings: &DiskSettings,
        call: &mut crate::engine::capability::Call<'_>,
    ) -> Result<DiskAsk, String> {
        let run = uuid::Uuid::new_v4().simple().to_string();
        Ok(DiskAsk {
            run_dir: settings
                .scratch
                .as_ref()
                .map(|root| root.join(tenant_folder(&call.tenant)).join(run)),
            run_bytes: settings.run_bytes,
            tenant_bytes: settings.tenant_bytes,
        })
    }

    fn begin(isolate: &mut v8::Isolate, ask: &DiskAsk, run: &RunScope<'_>) {
        isolate.set_slot(Self {
            disk: Disk::new(
                ask.run_dir.clone(),
                Quota::new(ask.run_bytes, ask.tenant_bytes),
            ),
            source: run.host.files.clone(),
        });
    }

    fn end(isolate: &mut v8::Isolate) -> Kept {
        let mut kept = isolate
            .remove_slot::<Self>()
            .map(|run| run.disk.finish())
            .unwrap_or_default();
        // `fs` set what the tree names before the snapshot (files_kept),
        // for the store's record of the heap.
        if let Some(files) = isolate.get_slot_mut::<super::fs::KeptFiles>() {
            kept.names = std::mem::take(&mut files.names);
        }
        kept
    }

    fn cancelled(kept: &mut Kept) {
        kept.discard();
    }
}

fn natives() -> Natives {
    vec![
        ("create", create.map_fn_to()),
        ("derive", derive.map_fn_to()),
        ("copy", copy.map_fn_to()),
        ("remove", remove.map_fn_to()),
        ("size", size.map_fn_to()),
        ("write", write.map_fn_to()),
        ("read", read.map_fn_to()),
        ("readStored", read_stored.map_fn_to()),
        ("truncate", truncate.map_fn_to()),
        ("seal", seal.map_fn_to()),
    ]
}

/// Runs `op` on the run's disk, with a reader of stored objects; the
/// disk leaves its slot meanwhile, so reading may use the scope.
fn with_disk<T>(
    scope: &mut v8::PinScope<'_, '_>,
    op: impl FnOnce(&mut Disk, local::Fetch) -> Result<T, DiskError>,
) -> Option<T> {
    let Some(mut run) = scope.remove_slot::<DiskRun>() else {
        throw_type_error(scope, "files are not available outside a run");
        return None;
    };
    let source = run.source.clone();
    let done = op(&mut run.disk, &mut |key| fetch(scope, source.as_ref(), key));
    scope.set_slot(run);
    match done {
        Ok(value) => Some(value),
        Err(error) => {
            throw_error_with_code(
                scope,
                &format!("{}: {}", error.code, error.hint),
                error.code,
            );
            None
        }
    }
}

/// What the run's ArrayBuffer budget holds at most: a read larger than
/// that could never fit and is refused before it is made, saying how to
/// read less at once. A smaller one is left to V8, which collects garbage
/// buffers (a stream's earlier pieces) before it gives up on an allocation.
fn room(scope: &mut v8::PinScope<'_, '_>) -> u64 {
    scope
        .get_slot::<Arc<Budget>>()
        .map_or(u64::MAX, |budget| budget.limit() as u64)
}

fn id_of(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> u32 {
    value.uint32_value(scope).unwrap_or(0)
}

/// A byte offset or length: a non-negative number, `None` otherwise.
fn offset(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Option<u64> {
    let n = value.number_value(scope)?;
    (n.is_finite() && n >= 0.0).then_some(n as u64)
}

fn key_of(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Option<ContentKey> {
    let text = value.to_rust_string_lossy(scope);
    let key = ContentKey::parse(&text);
    if key.is_none() {
        let message = format!("EIO: {text:?} is not a file's key (64 lowercase hex digits)");
        throw_error_with_code(scope, &message, "EIO");
    }
    key
}

/// `create()`: a new empty file's id.
fn create<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    if let Some(id) = with_disk(scope, |disk, _| disk.create()) {
        rv.set_uint32(id);
    }
}

/// `derive(key, chunked)`: a file continuing the stored file `key`.
fn derive<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(key) = key_of(scope, args.get(0)) else {
        return;
    };
    let chunked = args.get(1).is_true();
    if let Some(id) = with_disk(scope, |disk, fetch| disk.derive(&key, chunked, fetch)) {
        rv.set_uint32(id);
    }
}

/// `copy(id)`: a copy of file `id`.
fn copy<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    if let Some(copy) = with_disk(scope, |disk, _| disk.copy(id)) {
        rv.set_uint32(copy);
    }
}

/// `remove(id)`: forgets file `id`, freeing its local bytes.
fn remove<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    with_disk(scope, |disk, _| {
        disk.remove(id);
        Ok(())
    });
}

/// `size(id)`.
fn size<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    if let Some(size) = with_disk(scope, |disk, _| disk.size(id)) {
        rv.set_double(size as f64);
    }
}

/// `write(id, bytes, position)`: writes at `position` (the end when it is
/// negative or not a number); the file's new size.
fn write<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    let Some(bytes) = bytes_of(args.get(1)) else {
        throw_type_error(scope, "file data must be bytes");
        return;
    };
    let at = offset(scope, args.get(2));
    if let Some(size) = with_disk(scope, |disk, fetch| disk.write(id, at, &bytes, fetch)) {
        rv.set_double(size as f64);
    }
}

/// `read(id, position, length)`: a `Uint8Array` of at most `length` bytes.
fn read<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    let at = offset(scope, args.get(1)).unwrap_or(0);
    let len = offset(scope, args.get(2)).unwrap_or(u64::MAX);
    let room = room(scope);
    if let Some(bytes) = with_disk(scope, |disk, fetch| disk.read(id, at, len, room, fetch))
        && let Some(array) = uint8_array(scope, &bytes)
    {
        rv.set(array.into());
    }
}

/// `readStored(key, chunked, position, length)`: bytes of a stored file.
fn read_stored<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(key) = key_of(scope, args.get(0)) else {
        return;
    };
    let chunked = args.get(1).is_true();
    let at = offset(scope, args.get(2)).unwrap_or(0);
    let len = offset(scope, args.get(3)).unwrap_or(u64::MAX);
    let room = room(scope);
    if let Some(bytes) = with_disk(scope, |disk, fetch| {
        disk.read_stored(&key, chunked, at, len, room, fetch)
    }) && let Some(array) = uint8_array(scope, &bytes)
    {
        rv.set(array.into());
    }
}

/// `truncate(id, length)`.
fn truncate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    let len = offset(scope, args.get(1)).unwrap_or(0);
    with_disk(scope, |disk, fetch| disk.truncate(id, len, fetch));
}

/// `seal(id)`: `[manifest key or null, whole-bytes key or null]`; the file's
/// local bytes are gone after it.
fn seal<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let id = id_of(scope, args.get(0));
    let Some(sealed) = with_disk(scope, |disk, fetch| disk.seal(id, fetch)) else {
        return;
    };
    let mut pair: Vec<v8::Local<v8::Value>> = Vec::with_capacity(2);
    for key in [sealed.manifest, sealed.whole] {
        pair.push(match key.and_then(|key| string(scope, key.as_str())) {
            Some(text) => text.into(),
            None => v8::null(scope).into(),
        });
    }
    rv.set(v8::Array::new_with_elements(scope, &pair).into());
}
