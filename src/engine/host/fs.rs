//! Natives of `/work` (`node:fs`, in `fs.js`): the tree of paths lives in
//! the heap; the bytes of each file are here, by key: written ones held
//! until the run ends (then stored by the engine before the heap), older
//! ones read from the store when a run opens them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ::bytes::Bytes;
use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use crate::backends::content::ContentKey;
use crate::engine::capability::outcome::RunError;
use crate::engine::capability::section::Section;
use crate::engine::capability::{Argument, Call, Capability, RunScope};
use crate::engine::layer::bytes::{bytes_of, string, uint8_array};
use crate::engine::layer::registry::{Family, Loader, registry_key};
use crate::engine::layer::registry::{Natives, throw_error_with_code, throw_type_error};
use crate::engine::services::FileSource;
use crate::engine::services::memory::Budget;
use crate::engine::web::thrown::error_from;
use crate::units::MIB;

pub(crate) fn natives() -> Natives {
    vec![
        ("put", put.map_fn_to()),
        ("get", get.map_fn_to()),
        ("limits", limits.map_fn_to()),
    ]
}

/// Caps on a run's `/work`, from the operator's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLimits {
    /// Bytes of one file (`MCP_V8_MAX_FILE_MB`).
    pub max_file_bytes: usize,
    /// Bytes of all files of a tree (`MCP_V8_MAX_WORK_MB`).
    pub max_tree_bytes: usize,
    /// Files and directories of a tree (`MCP_V8_MAX_FILES`).
    pub max_files: usize,
}

impl Default for FileLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 4096 * MIB,
            max_tree_bytes: 8192 * MIB,
            max_files: 1000,
        }
    }
}

/// What a run asks of `/work`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct FilesAsk {
    /// Its caps.
    pub limits: FileLimits,
    /// Files the call brings (path, bytes), written to `/work` before the
    /// code runs.
    pub inputs: Vec<(String, Section)>,
}

/// A run's file bytes (an isolate slot).
pub(crate) struct FilesRun {
    source: Option<Arc<dyn FileSource>>,
    limits: FileLimits,
    /// Written in this run, by key.
    written: HashMap<ContentKey, Bytes>,
    /// The budget `written` is counted against, and how much of it.
    reserved: Option<(Arc<Budget>, usize)>,
}

impl Drop for FilesRun {
    // A plain isolate serves many runs, and one whose budget holds more
    // than a quarter of its limit is replaced: what this run held goes back.
    fn drop(&mut self) {
        if let Some((budget, len)) = self.reserved.take() {
            budget.release(len);
        }
    }
}

/// The `files` argument of `run_js`: text or base64 bytes by path.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(
    description = "Files to write under /work before the code runs, by path (relative to /work, or absolute under it): text as a string, bytes as {\"base64\": \"...\"}. A stateful run keeps them with its heap."
)]
struct FilesArgument(BTreeMap<String, FileInput>);

/// One file of the `files` argument.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum FileInput {
    /// Its text (UTF-8).
    Text(String),
    /// Its bytes.
    Bytes {
        /// The bytes, base64 (standard alphabet, padding optional).
        base64: String,
    },
}

/// The `files` argument as path and bytes; `Err` names the bad entry.
fn input_files(files: FilesArgument) -> Result<Vec<(String, Section)>, String> {
    use base64::Engine as _;
    let mut out = Vec::with_capacity(files.0.len());
    for (path, input) in files.0 {
        let bytes = match input {
            FileInput::Text(text) => Bytes::from(text),
            FileInput::Bytes { base64 } => {
                let compact: String = base64.split_whitespace().collect();
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(compact.trim_end_matches('='))
                    .map(Bytes::from)
                    .map_err(|e| format!("files[{path:?}].base64 is not base64: {e}"))?
            }
        };
        out.push((path, Section(bytes)));
    }
    Ok(out)
}

impl Capability for FilesRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "fs",
        source: include_str!("fs.js"),
        deps: &["disk", "node"],
        natives,
        globals: &[],
        version: 3,
    });
    const ARGUMENT: Option<Argument> = Some(Argument {
        name: "files",
        schema: |generator| generator.subschema_for::<FilesArgument>(),
    });
    type Settings = FileLimits;
    type Ask = FilesAsk;
    /// Bytes of the files a completed stateful run wrote and left in
    /// `/work`, by key: stored before its heap.
    type Report = Vec<(ContentKey, Section)>;

    fn ask(limits: &FileLimits, call: &mut Call<'_>) -> Result<FilesAsk, String> {
        let inputs = match call.take::<FilesArgument>("files")? {
            Some(files) => input_files(files)?,
            None => Vec::new(),
        };
        Ok(FilesAsk {
            limits: *limits,
            inputs,
        })
    }

    fn begin(isolate: &mut v8::Isolate, ask: &FilesAsk, run: &RunScope<'_>) {
        isolate.remove_slot::<KeptFiles>();
        isolate.set_slot(Self {
            source: run.host.files.clone(),
            limits: ask.limits,
            written: HashMap::new(),
            reserved: None,
        });
    }

    fn before_code(
        scope: &mut v8::PinScope<'_, '_>,
        ask: &FilesAsk,
        load: Loader,
    ) -> Result<(), RunError> {
        if ask.inputs.is_empty() {
            return Ok(());
        }
        v8::tc_scope!(let tc, scope);
        write_inputs(tc, &ask.inputs, load);
        match tc.exception() {
            Some(exception) => {
                let mut error = error_from(tc, exception, None);
                error.message = format!(
                    "the files argument could not be written to /work, so the code did not run: {}",
                    error.message
                );
                Err(error)
            }
            None => Ok(()),
        }
    }

    /// The bytes written in this run whose keys the tree as the run left it
    /// holds ([`files_kept`], asked before a snapshot); none otherwise.
    fn end(isolate: &mut v8::Isolate) -> Self::Report {
        let Some(mut run) = isolate.remove_slot::<FilesRun>() else {
            return Vec::new();
        };
        let Some(kept) = isolate.get_slot::<KeptFiles>() else {
            return Vec::new();
        };
        kept.keys
            .iter()
            .filter_map(|key| run.written.remove_entry(key))
            .map(|(key, bytes)| (key, Section(bytes)))
            .collect()
    }

    fn cancelled(files: &mut Self::Report) {
        files.clear();
    }
}

/// `put(bytes)`: the key of `bytes`, kept for the rest of the run.
fn put<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(bytes) = bytes_of(args.get(0)) else {
        throw_type_error(scope, "file data must be bytes");
        return;
    };
    let budget = scope.get_slot::<Arc<Budget>>().cloned();
    let Some(run) = scope.get_slot_mut::<FilesRun>() else {
        throw_type_error(scope, "files are not available outside a run");
        return;
    };
    if bytes.len() > run.limits.max_file_bytes {
        let message = format!(
            "EFBIG: file too large, write: {} bytes, over the {} MiB a file may hold (MCP_V8_MAX_FILE_MB)",
            bytes.len(),
            run.limits.max_file_bytes / MIB
        );
        throw_error_with_code(scope, &message, "EFBIG");
        return;
    }
    let key = ContentKey::of(&bytes);
    if !run.written.contains_key(&key) {
        // Held outside V8's heap until the run ends: counted like the
        // run's ArrayBuffers, so files cannot get around the memory limit.
        if let Some(budget) = budget {
            if !budget.reserve(bytes.len()) {
                let message = format!(
                    "ENOMEM: the run's memory is full, write of {} bytes: files written in a run count against heap_memory_max_mb",
                    bytes.len()
                );
                throw_error_with_code(scope, &message, "ENOMEM");
                return;
            }
            let (_, held) = run.reserved.get_or_insert((budget, 0));
            *held += bytes.len();
        }
        run.written.insert(key.clone(), Bytes::from(bytes));
    }
    if let Some(text) = string(scope, key.as_str()) {
        rv.set(text.into());
    }
}

/// `get(key)`: the file's bytes, as a `Uint8Array`.
fn get<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let text = args.get(0).to_rust_string_lossy(scope);
    let Some(key) = ContentKey::parse(&text) else {
        let message = format!("EIO: {text:?} is not a file's key (64 lowercase hex digits)");
        throw_error_with_code(scope, &message, "EIO");
        return;
    };
    let Some(run) = scope.get_slot::<FilesRun>() else {
        throw_type_error(scope, "files are not available outside a run");
        return;
    };
    let found = match run.written.get(&key) {
        Some(bytes) => Ok(Some(bytes.clone())),
        None => {
            let source = run.source.clone();
            super::stored::fetch(scope, source.as_ref(), &key)
        }
    };
    let bytes = match found {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            throw_error_with_code(
                scope,
                "EIO: the file's contents are missing from the store (it may have expired with its heap)",
                "EIO",
            );
            return;
        }
        Err(why) => {
            throw_error_with_code(
                scope,
                &format!("EIO: reading the file failed: {why}"),
                "EIO",
            );
            return;
        }
    };
    if let Some(array) = uint8_array(scope, &bytes) {
        rv.set(array.into());
    }
}

/// `limits()`: `[max file bytes, max tree bytes, max files]`.
fn limits<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let limits = scope
        .get_slot::<FilesRun>()
        .map(|run| run.limits)
        .unwrap_or_default();
    let values: Vec<v8::Local<v8::Value>> = [
        limits.max_file_bytes,
        limits.max_tree_bytes,
        limits.max_files,
    ]
    .iter()
    .map(|n| v8::Number::new(scope, *n as f64).into())
    .collect();
    rv.set(v8::Array::new_with_elements(scope, &values).into());
}

/// A function `fs` exports, when the context has loaded `fs` (never loads
/// it: a run that did not use `/work` has none).
fn fs_export<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::Local<'s, v8::Function>> {
    let global = scope.get_current_context().global(scope);
    let key = registry_key(scope);
    let registry = v8::Local::<v8::Object>::try_from(global.get_private(scope, key)?).ok()?;
    let fs = v8::String::new(scope, "fs")?;
    let exports = v8::Local::<v8::Object>::try_from(registry.get(scope, fs.into())?).ok()?;
    let name = v8::String::new(scope, name)?;
    v8::Local::<v8::Function>::try_from(exports.get(scope, name.into())?).ok()
}

/// One entry of a heap's `/work`, as `fs`'s `entries()` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// Absolute, under `/work`.
    pub path: String,
    /// `None` for a directory; the bytes' key otherwise (`None` too for an
    /// empty file, which has no stored bytes).
    pub key: Option<ContentKey>,
    /// A directory.
    pub dir: bool,
    /// Bytes of a file; 0 for a directory.
    pub size: u64,
    /// Last modified, Unix milliseconds.
    pub mtime_ms: f64,
    /// `key` names a manifest of chunks (`crate::files::chunked`), not the
    /// bytes stored whole (files of heaps made before chunking).
    #[serde(default)]
    pub chunked: bool,
    /// The SHA-256 of the whole bytes, where known (a chunked file sealed
    /// small enough; `key` itself for one stored whole).
    #[serde(default)]
    pub whole: Option<ContentKey>,
}

/// The key a tree row's field holds, if it holds one.
fn content_key(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Option<ContentKey> {
    value
        .is_string()
        .then(|| value.to_rust_string_lossy(scope))
        .and_then(|text| ContentKey::parse(&text))
}

/// The tree of `/work` in the current context; empty when the heap never
/// used `/work`, `None` when its `fs` predates `entries()` (layer 3).
pub(crate) fn tree(scope: &mut v8::PinScope<'_, '_>) -> Option<Vec<TreeEntry>> {
    let Some(entries) = fs_export(scope, "entries") else {
        return fs_export(scope, "keys").is_none().then(Vec::new);
    };
    let receiver = v8::undefined(scope).into();
    let list = v8::Local::<v8::Array>::try_from(entries.call(scope, receiver, &[])?).ok()?;
    let mut tree = Vec::with_capacity(list.length() as usize);
    for i in 0..list.length() {
        let row = v8::Local::<v8::Array>::try_from(list.get_index(scope, i)?).ok()?;
        let field = |n: u32| row.get_index(scope, n);
        let (path, dir, key, size, mtime) = (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        // Rows of an `fs` before chunking have five fields.
        let chunked = row.length() > 5 && field(5)?.is_true();
        let whole = match row.length() > 6 {
            true => field(6)?,
            false => v8::undefined(scope).into(),
        };
        let key_text = content_key(scope, key);
        let whole = match chunked {
            true => content_key(scope, whole),
            false => key_text.clone(),
        };
        tree.push(TreeEntry {
            path: path.to_rust_string_lossy(scope),
            dir: dir.is_true(),
            key: key_text,
            size: size.number_value(scope).unwrap_or(0.0) as u64,
            mtime_ms: mtime.number_value(scope).unwrap_or(0.0),
            chunked,
            whole,
        });
    }
    Some(tree)
}

/// Seals the files the run wrote (their chunks and manifests made, for
/// the host to store before the heap: `super::disk`), then gathers the
/// keys of the files `/work` has as the run leaves it, when the run used
/// `/work` at all (bytes held in memory by an `fs` before the disk go into
/// the run's result), and the path of each, for `display()`'s links.
pub(crate) fn files_kept(scope: &mut v8::PinScope<'_, '_>) -> Result<(), String> {
    let mut kept = KeptFiles::default();
    if let Some(seal) = fs_export(scope, "seal") {
        let receiver = v8::undefined(scope).into();
        v8::tc_scope!(let tc, scope);
        seal.call(tc, receiver, &[]);
        if let Some(exception) = tc.exception() {
            return Err(error_from(tc, exception, None).message);
        }
    }
    if let Some(entries) = tree(scope) {
        for entry in entries {
            if entry.dir || entry.size == 0 {
                continue;
            }
            if let Some(whole) = entry.whole {
                kept.paths
                    .entry(whole)
                    .or_insert_with(|| entry.path.clone());
            }
            if let Some(key) = entry.key {
                kept.names.push(key.clone());
                if !entry.chunked {
                    kept.keys.push(key);
                }
            }
        }
    } else if let Some(keys) = fs_export(scope, "keys") {
        // A heap whose `fs` was loaded by layer 3 lists only keys.
        let receiver = v8::undefined(scope).into();
        if let Some(list) = keys
            .call(scope, receiver, &[])
            .and_then(|l| v8::Local::<v8::Array>::try_from(l).ok())
        {
            for i in 0..list.length() {
                if let Some(value) = list.get_index(scope, i)
                    && let Some(key) = ContentKey::parse(&value.to_rust_string_lossy(scope))
                {
                    kept.names.push(key.clone());
                    kept.keys.push(key);
                }
            }
        }
    }
    kept.keys.sort_unstable();
    kept.keys.dedup();
    kept.names.sort_unstable();
    kept.names.dedup();
    scope.set_slot(kept);
    Ok(())
}

/// Writes the call's input files into `/work`; an exception (a path
/// outside `/work`, a cap) is left in `scope` for the caller's try-catch.
fn write_inputs(scope: &mut v8::PinScope<'_, '_>, inputs: &[(String, Section)], load: Loader) {
    let Some(exports) = load(scope, "fs") else {
        return;
    };
    let Some(write) = v8::String::new(scope, "writeInputs")
        .and_then(|k| exports.get(scope, k.into()))
        .and_then(|f| v8::Local::<v8::Function>::try_from(f).ok())
    else {
        return;
    };
    let mut pairs = Vec::with_capacity(inputs.len());
    for (path, bytes) in inputs {
        let (Some(path), Some(bytes)) = (v8::String::new(scope, path), uint8_array(scope, bytes))
        else {
            return;
        };
        pairs.push(v8::Array::new_with_elements(scope, &[path.into(), bytes.into()]).into());
    }
    let list = v8::Array::new_with_elements(scope, &pairs);
    let receiver = v8::undefined(scope).into();
    write.call(scope, receiver, &[list.into()]);
}

/// What [`files_kept`] found.
#[derive(Default)]
pub(crate) struct KeptFiles {
    keys: Vec<ContentKey>,
    /// Every file's key the tree names (manifests, bytes stored whole).
    pub(crate) names: Vec<ContentKey>,
    /// Key → a path holding it.
    pub(crate) paths: HashMap<ContentKey, String>,
}
