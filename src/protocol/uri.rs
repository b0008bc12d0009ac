//! Pieces of this server's resource URIs.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What a name may keep unescaped in a URI path segment: RFC 3986's
/// unreserved characters; everything else (`/`, `%`, spaces, non-ASCII) is
/// percent-encoded.
pub const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one path segment.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// The prefix of the files of heaps: `mcp-v8://heaps/{heap}/files/{+path}`.
pub const HEAPS: &str = "mcp-v8://heaps/";
/// Between a heap's key and a file's path.
pub const FILES: &str = "/files/";

/// The URI of `/work` file `path` (absolute, or relative to `/work`) of
/// heap `heap`: each segment percent-encoded, the slashes kept.
pub fn file_uri(heap: &str, path: &str) -> String {
    let relative = path.strip_prefix("/work").unwrap_or(path);
    let encoded: Vec<String> = relative
        .trim_start_matches('/')
        .split('/')
        .map(segment)
        .collect();
    format!("{HEAPS}{heap}{FILES}{}", encoded.join("/"))
}
