//! This server's resource URIs (`mcp-v8://…`), built and taken apart in
//! this one place.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

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
/// A run's whole output or result, kept with its record (`?page=N` reads a
/// page of the answer budget's size).
pub const RUN_TEXT_TEMPLATE: &str = "mcp-v8://executions/{id}/{part}{?page}";
/// The prefix of an upstream server's declarations.
const MCP_SERVERS: &str = "mcp-v8://mcp-servers/";
const TOOLS_D_TS: &str = "/tools.d.ts";

/// The URI of the log of session `name`.
pub fn session_log_uri(name: &str) -> String {
    format!("{SESSIONS}{}{LOG}", segment(name))
}

/// Which text of a run a URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunText {
    /// The console output.
    Output,
    /// The completion value's text.
    Result,
}

impl RunText {
    /// The segment that names it, which is also its field in the record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Output => "output",
            Self::Result => "result",
        }
    }
}

/// The URI of run `id`'s `part`, or of one page of it.
pub fn run_text_uri(id: uuid::Uuid, part: RunText, page: Option<usize>) -> String {
    match page {
        Some(page) => format!("{EXECUTIONS}{id}/{}?page={page}", part.as_str()),
        None => format!("{EXECUTIONS}{id}/{}", part.as_str()),
    }
}

/// The name of `display()` block `index` (from 1) of an execution: not
/// readable, only `/work` files are resources.
pub fn display_uri(execution_id: &str, index: usize) -> String {
    format!("{EXECUTIONS}{execution_id}/displays/{index}")
}

/// The prefix of `display()` blocks kept apart from their answer, by the
/// key of their bytes: `mcp-v8://displays/{key}?type={mime}`.
pub const DISPLAYS: &str = "mcp-v8://displays/";

/// The URI of a kept `display()` block: the key of its bytes (in the
/// caller's file store) and its media type.
pub fn kept_display_uri(key: &str, mime_type: &str) -> String {
    format!("{DISPLAYS}{key}?type={}", segment(mime_type))
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

/// What one of this server's resource URIs names, taken apart and
/// decoded; the names in it are not yet checked (a heap key's form, a
/// session name's rules), which their own types do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// `/work` file (or directory) `path`, absolute under `/work`, of heap
    /// `heap`.
    HeapFile {
        /// The heap's key as the URI spells it.
        heap: String,
        /// `/work` or a path under it; never `.`, `..` or an empty segment.
        path: String,
        /// `?page=N` of a large file (`Some(0)` for a page that is not a
        /// positive number, which no file has).
        page: Option<usize>,
    },
    /// The log of the session of this (decoded) name.
    SessionLog(String),
    /// An execution record.
    Execution(uuid::Uuid),
    /// A run's output or result, whole (`page` `None`) or one page; a page
    /// that is not a positive number is `Some(0)`, which no text has.
    RunText {
        /// The run's execution id.
        id: uuid::Uuid,
        /// Which text.
        part: RunText,
        /// `?page=N`.
        page: Option<usize>,
    },
    /// An upstream server's declarations.
    Declarations(String),
    /// A `display()` block kept apart from its answer.
    KeptDisplay {
        /// The key of its bytes as the URI spells it.
        key: String,
        /// Its media type (`application/octet-stream` when the URI has
        /// none).
        mime_type: String,
    },
}

/// What `uri` names, when it is one of this server's resource URIs.
pub fn parse(uri: &str) -> Option<Resource> {
    if let Some(rest) = uri.strip_prefix(HEAPS) {
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let page = match query {
            "" => None,
            query => Some(query.strip_prefix("page=")?.parse().unwrap_or(0)),
        };
        let (heap, path) = rest.split_once(FILES).or_else(|| {
            // `…/files` names /work itself.
            rest.strip_suffix("/files").map(|heap| (heap, ""))
        })?;
        let mut absolute = String::from("/work");
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            let segment = percent_decode_str(segment).decode_utf8().ok()?;
            if segment == "." || segment == ".." || segment.contains(['/', '\0']) {
                return None;
            }
            absolute.push('/');
            absolute.push_str(&segment);
        }
        return Some(Resource::HeapFile {
            heap: heap.to_owned(),
            path: absolute,
            page,
        });
    }
    if let Some(rest) = uri.strip_prefix(DISPLAYS) {
        let (key, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mime_type = match query.strip_prefix("type=") {
            Some(mime) => percent_decode_str(mime).decode_utf8().ok()?.into_owned(),
            None if query.is_empty() => "application/octet-stream".to_owned(),
            None => return None,
        };
        return Some(Resource::KeptDisplay {
            key: key.to_owned(),
            mime_type,
        });
    }
    if let Some(server) = server_of_declarations_uri(uri) {
        return Some(Resource::Declarations(server.to_owned()));
    }
    if let Some(rest) = uri.strip_prefix(SESSIONS) {
        let encoded = rest.strip_suffix(LOG)?;
        if encoded.contains('/') {
            return None;
        }
        let name = percent_decode_str(encoded).decode_utf8().ok()?;
        return Some(Resource::SessionLog(name.into_owned()));
    }
    let rest = uri.strip_prefix(EXECUTIONS)?;
    if let Some((id, rest)) = rest.split_once('/') {
        let (part, query) = rest.split_once('?').unwrap_or((rest, ""));
        let part = match part {
            "output" => RunText::Output,
            "result" => RunText::Result,
            _ => return None,
        };
        let page = match query {
            "" => None,
            query => Some(query.strip_prefix("page=")?.parse().unwrap_or(0)),
        };
        return Some(Resource::RunText {
            id: id.parse().ok()?,
            part,
            page,
        });
    }
    rest.parse().ok().map(Resource::Execution)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_display_uris_round_trip_their_key_and_type() {
        let key = "cd".repeat(32);
        let uri = kept_display_uri(&key, "text/csv; charset=utf-8");
        assert_eq!(
            uri,
            format!("{DISPLAYS}{key}?type=text%2Fcsv%3B%20charset%3Dutf-8")
        );
        assert_eq!(
            parse(&uri),
            Some(Resource::KeptDisplay {
                key: key.clone(),
                mime_type: "text/csv; charset=utf-8".into()
            })
        );
        assert_eq!(parse(&format!("{DISPLAYS}{key}?page=2")), None);
    }

    #[test]
    fn heap_file_uris_name_a_path_under_work_and_round_trip() {
        let key = "ab".repeat(32);
        let at = |path: &str| parse(&format!("{HEAPS}{key}/files/{path}"));
        let file = |path: &str| {
            Some(Resource::HeapFile {
                heap: key.clone(),
                path: path.into(),
                page: None,
            })
        };
        assert_eq!(at("data.csv"), file("/work/data.csv"));
        assert_eq!(at("out/chart%201.png"), file("/work/out/chart 1.png"));
        assert_eq!(at(""), file("/work"));
        assert_eq!(parse(&format!("{HEAPS}{key}/files")), file("/work"));
        for bad in ["../etc/passwd", "a/../../x", "%2E%2E/x", "a%2Fb", "%00"] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(
            file_uri(&key, "/work/out/chart 1.png"),
            format!("{HEAPS}{key}/files/out/chart%201.png")
        );
        assert_eq!(
            parse(&file_uri(&key, "/work/ü n/%.txt")),
            file("/work/ü n/%.txt")
        );
        // A large file reads by pages.
        assert_eq!(
            at("big.csv?page=3"),
            Some(Resource::HeapFile {
                heap: key.clone(),
                path: "/work/big.csv".into(),
                page: Some(3),
            })
        );
        assert_eq!(at("big.csv?offset=3"), None);
    }

    #[test]
    fn logs_executions_and_declarations_are_told_apart() {
        assert_eq!(
            parse(&session_log_uri("a/b c")),
            Some(Resource::SessionLog("a/b c".into()))
        );
        assert_eq!(parse("mcp-v8://sessions/a/b/log"), None);
        let id = uuid::Uuid::new_v4();
        assert_eq!(
            parse(&format!("{EXECUTIONS}{id}")),
            Some(Resource::Execution(id))
        );
        assert_eq!(parse(&format!("{EXECUTIONS}not-a-uuid")), None);
        assert_eq!(
            parse(&declarations_uri("gh")),
            Some(Resource::Declarations("gh".into()))
        );
        assert_eq!(parse("https://example.com/"), None);
    }

    #[test]
    fn a_runs_text_is_named_whole_or_by_page() {
        let id = uuid::Uuid::new_v4();
        for (part, page) in [(RunText::Output, None), (RunText::Result, Some(3))] {
            let uri = run_text_uri(id, part, page);
            assert_eq!(
                parse(&uri),
                Some(Resource::RunText { id, part, page }),
                "{uri}"
            );
        }
        let page = |query: &str| parse(&format!("{EXECUTIONS}{id}/output?{query}"));
        assert_eq!(
            page("page=x"),
            Some(Resource::RunText {
                id,
                part: RunText::Output,
                page: Some(0)
            })
        );
        assert_eq!(page("offset=1"), None);
        assert_eq!(parse(&format!("{EXECUTIONS}{id}/displays/1")), None);
    }
}
