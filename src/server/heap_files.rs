//! `/work` files of a heap as resources: `mcp-v8://heaps/{heap}/files/{+path}`.
//! The tree is read from the heap itself (restored to list it), the bytes
//! from the tenant's file store; a heap, path or tenant the caller has not
//! answers the same "not found".

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::answer::MethodError;
use crate::engine::TreeEntry;
use crate::heap::HeapKey;
use crate::protocol::mcp::{ReadResourceResult, ResourceContents};
use crate::protocol::media::{essence, is_text};
use crate::protocol::uri::file_uri;
use crate::tools::{CallContext, MAX_READ_FILE_BYTES, Toolbox};

/// The media type a file is served as, by its name.
fn media_type(path: &str) -> String {
    mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream")
        .to_owned()
}

/// A file's bytes as resource contents: text when they are UTF-8 of a
/// text type, else base64.
pub(super) fn contents(uri: String, mime_type: String, bytes: &[u8]) -> ResourceContents {
    let (text, blob) = match std::str::from_utf8(bytes) {
        Ok(text) if is_text(&essence(&mime_type)) => (Some(text.to_owned()), None),
        _ => (None, Some(STANDARD.encode(bytes))),
    };
    ResourceContents {
        uri,
        mime_type,
        text,
        blob,
        meta: None,
    }
}

/// Reads the file or directory `path` of `heap`; `Ok(None)` when the
/// caller has no such heap or the heap no such path.
pub(super) async fn read(
    tools: &Toolbox,
    context: CallContext<'_>,
    uri: &str,
    heap: &HeapKey,
    path: &str,
) -> Result<Option<ReadResourceResult>, MethodError> {
    let tree = tools
        .engine
        .files_of(context.tenant, heap)
        .await
        .map_err(|e| MethodError::internal(format!("could not read the heap's /work: {e}")))?;
    let Some(tree) = tree else {
        return Ok(None);
    };
    let entry = tree.iter().find(|e| e.path == path);
    let contents = match entry {
        None if path == "/work" => listing(heap, path, &tree),
        None => return Ok(None),
        Some(entry) if entry.dir => listing(heap, path, &tree),
        Some(entry) => file(tools, context, uri, entry).await?,
    };
    Ok(Some(ReadResourceResult {
        contents: vec![contents],
    }))
}

/// A directory as JSON: its entries, each with its URI.
fn listing(heap: &HeapKey, path: &str, tree: &[TreeEntry]) -> ResourceContents {
    let prefix = format!("{path}/");
    let entries: Vec<_> = tree
        .iter()
        .filter_map(|e| {
            let name = e.path.strip_prefix(&prefix)?;
            (!name.is_empty() && !name.contains('/')).then(|| {
                json!({
                    "name": name,
                    "type": if e.dir { "directory" } else { "file" },
                    "size": e.size,
                    "mtimeMs": e.mtime_ms,
                    "uri": file_uri(heap.as_str(), &e.path),
                })
            })
        })
        .collect();
    ResourceContents {
        uri: file_uri(heap.as_str(), path),
        mime_type: "application/json".into(),
        text: Some(json!({ "path": path, "entries": entries }).to_string()),
        blob: None,
        meta: None,
    }
}

async fn file(
    tools: &Toolbox,
    context: CallContext<'_>,
    uri: &str,
    entry: &TreeEntry,
) -> Result<ResourceContents, MethodError> {
    let mime_type = media_type(&entry.path);
    if entry.size as usize > MAX_READ_FILE_BYTES {
        return Err(MethodError::new(
            crate::protocol::jsonrpc::code::INVALID_PARAMS,
            format!(
                "{} is {} bytes; resources/read answers with files of at most {MAX_READ_FILE_BYTES} bytes \
                 (one answer carries 5 MiB, base64 included). Read it in a run_js call on this heap \
                 (fs.readFileSync) and return the part you need",
                entry.path, entry.size
            ),
        ));
    }
    let bytes = tools
        .file_bytes(context.tenant, entry)
        .await
        .map_err(MethodError::internal)?;
    Ok(contents(uri.to_owned(), mime_type, &bytes))
}
