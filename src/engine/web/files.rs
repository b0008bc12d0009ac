//! Natives of `/work` (`node:fs`, in `files.js`): the tree of paths lives in
//! the heap; the bytes of each file are here, by key: written ones held
//! until the run ends (then stored by the engine before the heap), older
//! ones read from the store when a run opens them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ::bytes::Bytes;
use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use super::bytes::{bytes_of, string, uint8_array};
use super::registry::{Natives, throw_error_with_code, throw_type_error};
use crate::engine::memory::Budget;

pub(super) fn natives() -> Natives {
    vec![
        ("put", put.map_fn_to()),
        ("get", get.map_fn_to()),
        ("limits", limits.map_fn_to()),
    ]
}

/// Where the bytes of files written by earlier runs come from.
///
/// # Contract
/// - `read` returns the bytes stored under `key` (a SHA-256 the tree
///   holds), `Ok(None)` when the store has none, and never waits past
///   `deadline`.
/// - It never returns bytes of another tenant than the run's.
pub trait FileSource: Send + Sync + std::fmt::Debug {
    /// The bytes of `key`.
    fn read(&self, key: &str, deadline: Instant) -> Result<Option<Bytes>, String>;
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
            max_file_bytes: 10 * 1024 * 1024,
            max_tree_bytes: 100 * 1024 * 1024,
            max_files: 1000,
        }
    }
}

/// A run's file bytes (an isolate slot).
pub(crate) struct FilesRun {
    source: Option<Arc<dyn FileSource>>,
    deadline: Instant,
    limits: FileLimits,
    /// Written in this run, by key.
    written: HashMap<String, Bytes>,
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

impl FilesRun {
    pub(crate) fn new(
        source: Option<Arc<dyn FileSource>>,
        deadline: Instant,
        limits: FileLimits,
    ) -> Self {
        Self {
            source,
            deadline,
            limits,
            written: HashMap::new(),
            reserved: None,
        }
    }

    /// The bytes written in this run whose keys are in `keep` (the files
    /// of the tree as the run left it).
    pub(crate) fn take_written(&mut self, keep: &[String]) -> Vec<(String, Bytes)> {
        keep.iter()
            .filter_map(|key| self.written.remove_entry(key))
            .collect()
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
            run.limits.max_file_bytes / (1024 * 1024)
        );
        throw_error_with_code(scope, &message, "EFBIG");
        return;
    }
    let key = crate::files::file_key(&bytes);
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
    if let Some(text) = string(scope, &key) {
        rv.set(text.into());
    }
}

/// `get(key)`: the file's bytes, as a `Uint8Array`.
fn get<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let key = args.get(0).to_rust_string_lossy(scope);
    let Some(run) = scope.get_slot::<FilesRun>() else {
        throw_type_error(scope, "files are not available outside a run");
        return;
    };
    let found = match run.written.get(&key) {
        Some(bytes) => Ok(Some(bytes.clone())),
        None => match &run.source {
            Some(source) => source.read(&key, run.deadline),
            None => Ok(None),
        },
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
