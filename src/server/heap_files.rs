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
    page: Option<usize>,
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
        Some(entry) => match page {
            Some(number) => file_page(tools, context, uri, entry, number).await?,
            None => file(tools, context, uri, entry).await?,
        },
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
        let pages = entry.size.div_ceil(PAGE_BYTES);
        return Err(MethodError::new(
            crate::protocol::jsonrpc::code::INVALID_PARAMS,
            format!(
                "{} is {} bytes; resources/read answers with files of at most {MAX_READ_FILE_BYTES} bytes \
                 (one answer carries 5 MiB, base64 included). Read it by pages, {uri}?page=1 to \
                 ?page={pages} (each the lines that start in its {PAGE_BYTES} bytes), or in a run_js \
                 call on this heap (fs.createReadStream) and return the part you need",
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

/// A page of a large file: what one answer carries, base64 included.
const PAGE_BYTES: u64 = MAX_READ_FILE_BYTES as u64;

/// How far past a page's end its last line may run; a longer line is cut
/// where the page ends (and the next page starts there).
const LINE_SLACK: u64 = 64 * 1024;

/// Page `number` (from 1) of a large file: the lines of a text file that
/// start in its `number`-th [`PAGE_BYTES`], or those bytes of another
/// file, so every page of a text file holds whole lines and is found
/// without reading the pages before it.
async fn file_page(
    tools: &Toolbox,
    context: CallContext<'_>,
    uri: &str,
    entry: &TreeEntry,
    number: usize,
) -> Result<ResourceContents, MethodError> {
    let pages = entry.size.div_ceil(PAGE_BYTES).max(1);
    let base = uri.split_once('?').map_or(uri, |(base, _)| base);
    if number == 0 || number as u64 > pages {
        return Err(MethodError::new(
            crate::protocol::jsonrpc::code::INVALID_PARAMS,
            format!(
                "{uri} names no page: {} is {} bytes, {pages} pages of {PAGE_BYTES} bytes: \
                 {base}?page=1 to ?page={pages}",
                entry.path, entry.size
            ),
        ));
    }
    let mime_type = media_type(&entry.path);
    let text = is_text(&essence(&mime_type));
    let (from, to) = ((number as u64 - 1) * PAGE_BYTES, number as u64 * PAGE_BYTES);
    // One read covers the page and, for text, the byte before each end and
    // the slack after it, where the ends move to the start of their line.
    let (lo, hi) = match text {
        true => (from.saturating_sub(1), to.saturating_sub(1) + LINE_SLACK),
        false => (from, to),
    };
    let read = tools
        .file_range(context.tenant, entry, lo, hi)
        .await
        .map_err(MethodError::internal)?;
    let edge = |at: u64| -> u64 {
        if !text || at == 0 || at >= entry.size {
            return at.min(entry.size);
        }
        let window = (at - 1 - lo) as usize;
        let found = read[window..read.len().min(window + LINE_SLACK as usize)]
            .iter()
            .position(|b| *b == b'\n');
        found.map_or(at, |newline| at + newline as u64)
    };
    let (start, end) = (edge(from), edge(to));
    let bytes = read.slice((start - lo) as usize..(end - lo) as usize);
    let mut contents = contents(uri.to_owned(), mime_type, &bytes);
    contents.meta = Some(json!({
        "mcp-v8-lambda/page": { "page": number, "pages": pages, "bytes": [start, end], "of": entry.size }
    }));
    Ok(contents)
}
