//! This server's resource URIs (`mcp-v8://…`), built and taken apart in
//! this one place.

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
/// The template of a heap's files.
pub const HEAP_FILES_TEMPLATE: &str = "mcp-v8://heaps/{heap}/files/{+path}";
/// The prefix of session logs: `mcp-v8://sessions/{name}/log`.
pub const SESSIONS: &str = "mcp-v8://sessions/";
/// After a session's name.
pub const LOG: &str = "/log";
/// The template of a session's log.
pub const SESSION_LOG_TEMPLATE: &str = "mcp-v8://sessions/{name}/log";
/// The prefix of execution records: `mcp-v8://executions/{id}`.
pub const EXECUTIONS: &str = "mcp-v8://executions/";
/// The template of an execution record.
pub const EXECUTION_TEMPLATE: &str = "mcp-v8://executions/{id}";
/// The prefix of an upstream server's declarations.
const MCP_SERVERS: &str = "mcp-v8://mcp-servers/";
const TOOLS_D_TS: &str = "/tools.d.ts";

/// The URI of the log of session `name`.
pub fn session_log_uri(name: &str) -> String {
    format!("{SESSIONS}{}{LOG}", segment(name))
}

/// The name of `display()` block `index` (from 1) of an execution: not
/// readable, only `/work` files are resources.
pub fn display_uri(execution_id: &str, index: usize) -> String {
    format!("{EXECUTIONS}{execution_id}/displays/{index}")
}

/// The resource URI of upstream `server`'s declarations.
pub fn declarations_uri(server: &str) -> String {
    format!("{MCP_SERVERS}{server}{TOOLS_D_TS}")
}

/// The server a declarations URI names, when it is one.
pub fn server_of_declarations_uri(uri: &str) -> Option<&str> {
    uri.strip_prefix(MCP_SERVERS)?
        .strip_suffix(TOOLS_D_TS)
        .filter(|name| !name.is_empty() && !name.contains('/'))
}
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
