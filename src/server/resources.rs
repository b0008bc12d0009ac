//! Session logs and execution records as MCP resources: listed per logical
//! session of the caller, read by URI, scoped by tenant exactly as the
//! tools are.

use serde_json::json;
use uuid::Uuid;

use super::answer::{Freshness, MethodError};
use crate::clock::unix_now;
use crate::meta::page::{self, PageStart};
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp::{
    ListParams, ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use crate::protocol::uri;
use crate::session::LogicalSession;
use crate::tools::{CallContext, ExecutionView, HeapName, Toolbox};
use crate::upstream::catalog;

const JSON: &str = "application/json";
/// The `_meta` key of a page's place in the whole text it is part of.
const PAGE_META: &str = "mcp-v8-lambda/page";
const TYPESCRIPT: &str = "application/typescript";
/// Resources per `resources/list` page.
const PAGE: usize = 100;

/// The URI of a session's log.
fn log_uri(name: &LogicalSession) -> String {
    uri::session_log_uri(name.as_str())
}

/// The templates: a session's log, a file of a heap's /work, an execution
/// record.
pub(super) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult {
        resource_templates: vec![
            ResourceTemplate {
                uri_template: uri::SESSION_LOG_TEMPLATE,
                name: "session-log",
                title: "Session log",
                description: "The runs logged in one of your logical sessions, oldest first (the first 1000 \
entries or about 1 MiB; list_session_snapshots pages further). {name} is the session name, percent-encoded.",
                mime_type: JSON,
            },
            ResourceTemplate {
                uri_template: uri::HEAP_FILES_TEMPLATE,
                name: "heap-file",
                title: "File of a heap's /work",
                description: "A file or directory of /work as one of your heaps holds it (the heap key run_js \
returned, or the run's execution_id, which waits for a heap still being stored; the path under /work; \
segments percent-encoded). A text file reads as text, other files as a base64 blob, \
a directory as JSON listing its entries with their URIs. Files up to about 3.7 MiB fit one answer; a larger one \
reads by pages, ?page=N (from 1): the lines of a text file that start in its N-th 3.7 MiB, or those bytes of \
another file, with the page's place in _meta.",
                mime_type: "application/octet-stream",
            },
            ResourceTemplate {
                uri_template: uri::EXECUTION_TEMPLATE,
                name: "execution",
                title: "Execution record",
                description: "The recorded outcome of one of your run_js calls, by its execution_id, until it \
expires from the registry.",
                mime_type: JSON,
            },
            ResourceTemplate {
                uri_template: uri::RUN_TEXT_TEMPLATE,
                name: "run-text",
                title: "A run's whole output or result",
                description: "The console output ({part} output) or the result's text ({part} result) of one of \
your run_js calls, as its record keeps it, when its answer had no room for all of it (the answer names this URI). \
Without ?page the whole; ?page=N reads page N (from 1) in pages of the answer budget's size.",
                mime_type: "text/plain",
            },
        ],
    }
}

/// One page of the caller's session logs, by session name.
pub(super) async fn list(
    tools: &Toolbox,
    context: CallContext<'_>,
    params: ListParams,
) -> Result<ListResourcesResult, MethodError> {
    let after = match params.cursor.as_deref().map(LogicalSession::parse) {
        None => None,
        Some(Ok(name)) => Some(name),
        Some(Err(e)) => {
            return Err(MethodError::new(
                code::INVALID_PARAMS,
                format!("invalid cursor: {e}"),
            ));
        }
    };
    let mut names = tools
        .meta
        .list_sessions(context.tenant, after.as_ref(), PAGE + 1)
        .await
        .map_err(|e| MethodError::internal(format!("could not list sessions: {e}")))?;
    let next_cursor = (names.len() > PAGE).then(|| {
        names.truncate(PAGE);
        names[PAGE - 1].to_string()
    });
    // The upstream servers' declarations come first, on the first page.
    let upstreams = match (&after, tools.upstreams()) {
        (None, Some(upstreams)) => upstreams.names(),
        _ => Vec::new(),
    };
    let declarations = upstreams.into_iter().map(|server| Resource {
        uri: catalog::declarations_uri(&server),
        title: format!("TypeScript declarations of {server}'s tools"),
        description: format!(
            "The tools of the upstream MCP server {server:?} as TypeScript: what `mcp.{server}.<tool>(args)` \
and `mcp.callTool(\"{server}\", tool, args)` take and return in run_js."
        ),
        name: format!("{server}-tools.d.ts"),
        mime_type: TYPESCRIPT,
    });
    let resources = declarations
        .chain(names.into_iter().map(|name| Resource {
            uri: log_uri(&name),
            title: format!("Session log of {name}"),
            description: format!(
                "The runs logged in logical session {:?}, oldest first.",
                name.as_str()
            ),
            name: name.to_string(),
            mime_type: JSON,
        }))
        .collect();
    Ok(ListResourcesResult {
        resources,
        next_cursor,
    })
}

/// What a URI names.
enum Named {
    Log(LogicalSession),
    Execution(Uuid),
    /// A `/work` path of a heap named by its key or by the execution id of
    /// the run that left it (readable as soon as the answer, which has the
    /// id and not always the key): [`Toolbox::heap_named`].
    HeapFile(HeapName, String, Option<usize>),
    /// A run's output or result as its record keeps it, whole or a page.
    RunText(Uuid, uri::RunText, Option<usize>),
    Declarations(String),
    /// A `display()` block kept apart from its answer: the key of its
    /// bytes in the caller's file store, and its media type.
    KeptDisplay(String, String),
}

/// What `uri` names, its names checked by their own types.
fn parse(uri: &str) -> Option<Named> {
    Some(match uri::parse(uri)? {
        uri::Resource::HeapFile { heap, path, page } => {
            Named::HeapFile(HeapName::parse(&heap)?, path, page)
        }
        uri::Resource::SessionLog(name) => Named::Log(LogicalSession::parse(&name).ok()?),
        uri::Resource::Execution(id) => Named::Execution(id),
        uri::Resource::RunText { id, part, page } => Named::RunText(id, part, page),
        uri::Resource::Declarations(server) => Named::Declarations(server),
        uri::Resource::KeptDisplay { key, mime_type } => Named::KeptDisplay(key, mime_type),
    })
}

/// The error of a URI that names nothing the caller has (SEP-2164): the
/// same for a malformed URI, an unknown one and another tenant's.
pub(super) fn not_found(uri: &str) -> MethodError {
    // A template read as it is listed (its variables unfilled) names
    // nothing; say what to put in their place.
    let message = if uri.contains('{') && uri.contains('}') {
        "Resource not found: this is a URI template from resources/templates/list, not a resource; \
         replace each {…} with a value: {heap} with a heap key or the execution_id of the run_js \
         answer that made it, {+path} with a /work path, {id} with an execution_id, {name} with a \
         logical session name, {part} with output or result"
    } else {
        "Resource not found"
    };
    MethodError::new(code::INVALID_PARAMS, message).with_data(json!({ "uri": uri }))
}

/// The execution record `id` of the caller, once a save its run answered
/// before has ended (the record is written then).
async fn execution(
    tools: &Toolbox,
    context: CallContext<'_>,
    id: Uuid,
    uri: &str,
) -> Result<crate::meta::ExecutionRecord, MethodError> {
    if let Some(Err(why)) = tools.saves.wait_for_run(context.tenant, id).await {
        return Err(MethodError::internal(format!(
            "execution {id} ran, but its heap was not stored, so it has no record: {why}"
        )));
    }
    tools
        .meta
        .get_execution(context.tenant, id, unix_now())
        .await
        .map_err(|e| MethodError::internal(format!("could not read the execution registry: {e}")))?
        .ok_or_else(|| not_found(uri))
}

/// Reads a session log (the first page) or an execution record.
pub(super) async fn read(
    tools: &Toolbox,
    context: CallContext<'_>,
    params: ReadResourceParams,
) -> Result<(ReadResourceResult, Freshness), MethodError> {
    let uri = params.uri;
    // MCP Apps' Views: the same document for every caller of this build.
    if let Some(view) = crate::apps::read(&uri) {
        return Ok((view, Freshness::Stable));
    }
    let (json, freshness) = match parse(&uri) {
        Some(Named::Log(name)) => {
            let page = page::read_page(
                &*tools.meta,
                context.tenant,
                &name,
                PageStart::Up(0),
                page::MAX_ENTRIES,
                crate::meta::LogEntry::shown,
            )
            .await
            .map_err(|e| MethodError::internal(format!("could not read the session log: {e}")))?;
            if page.entries.is_empty() {
                return Err(not_found(&uri));
            }
            let log = json!({ "session": name, "entries": page.entries, "next_offset": page.next_offset });
            (log, Freshness::Changing)
        }
        Some(Named::Execution(id)) => {
            let record = execution(tools, context, id, &uri).await?;
            let record = crate::tools::whole_record(tools, context.tenant, record)
                .await
                .map_err(MethodError::internal)?;
            let view = serde_json::to_value(ExecutionView::from(record))
                .expect("execution views serialize");
            (view, Freshness::Stable)
        }
        Some(Named::RunText(id, part, page)) => {
            let record = execution(tools, context, id, &uri).await?;
            let read = match page {
                None => crate::tools::run_text(tools, context.tenant, &record, part)
                    .await
                    .map_err(MethodError::internal)?
                    .map(|text| whole_text(uri.clone(), part, text)),
                Some(number) => {
                    let size = tools.answer_budget_bytes;
                    crate::tools::paged_run_text(tools, context.tenant, &record, part, size)
                        .await
                        .map_err(MethodError::internal)?
                        .map(|paged| text_page(uri.clone(), id, part, &paged, number))
                        .transpose()?
                }
            };
            return read
                .map(|read| (read, Freshness::Stable))
                .ok_or_else(|| not_found(&uri));
        }
        Some(Named::HeapFile(heap, path, page)) => {
            let heap = match tools.heap_named(context.tenant, &heap).await {
                Ok(Some(heap)) => heap,
                Ok(None) => return Err(not_found(&uri)),
                Err(why) => return Err(MethodError::internal(why)),
            };
            // A heap is immutable, so its files are.
            return match super::heap_files::read(tools, context, &uri, &heap, &path, page).await? {
                Some(result) => Ok((result, Freshness::Stable)),
                None => Err(not_found(&uri)),
            };
        }
        Some(Named::KeptDisplay(key, mime_type)) => {
            // Only the caller's own file store has it: another tenant's
            // key names nothing, as a key never stored.
            let bytes = match tools.kept_display(context.tenant, &key).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return Err(not_found(&uri)),
                Err(why) => return Err(MethodError::internal(why)),
            };
            let contents = super::heap_files::contents(uri, mime_type, &bytes);
            // Named by the key of its bytes: it never changes.
            return Ok((
                ReadResourceResult {
                    contents: vec![contents],
                },
                Freshness::Stable,
            ));
        }
        Some(Named::Declarations(server)) => {
            let Some(upstreams) = tools.upstreams().filter(|u| u.names().contains(&server)) else {
                return Err(not_found(&uri));
            };
            let listed = {
                let server = server.clone();
                upstreams
                    .runtime()
                    .clone()
                    .spawn(async move { upstreams.tools(&server).await })
                    .await
            };
            let tools = match listed {
                Ok(Ok(tools)) => tools,
                Ok(Err(error)) => return Err(MethodError::internal(error.to_string())),
                Err(error) => return Err(MethodError::internal(error.to_string())),
            };
            let text = catalog::declarations(&server, &tools);
            return Ok((text_read(uri, TYPESCRIPT, text), Freshness::Changing));
        }
        None => return Err(not_found(&uri)),
    };
    Ok((text_read(uri, JSON, json.to_string()), freshness))
}

/// A read whose one content is `text`.
fn text_read(uri: String, mime_type: &str, text: String) -> ReadResourceResult {
    ReadResourceResult {
        contents: vec![ResourceContents {
            uri,
            mime_type: mime_type.into(),
            text: Some(text),
            blob: None,
            meta: None,
        }],
    }
}

/// A run's whole `part`: JSON when it parses (a result), else text.
fn whole_text(uri: String, part: uri::RunText, text: String) -> ReadResourceResult {
    let mime_type = match part {
        uri::RunText::Result if serde_json::from_str::<serde_json::Value>(&text).is_ok() => JSON,
        _ => "text/plain",
    };
    text_read(uri, mime_type, text)
}

/// Page `number` of a run's `part` (pages that each parse: docs/tools.md,
/// "The answer budget"), with its place in the whole in `_meta`.
fn text_page(
    uri: String,
    id: Uuid,
    part: uri::RunText,
    paged: &crate::tools::Paged,
    number: usize,
) -> Result<ReadResourceResult, MethodError> {
    let (pages, shape) = (paged.count(), paged.shape());
    let page = paged.page(number).ok_or_else(|| {
        MethodError::new(
            code::INVALID_PARAMS,
            format!(
                "{uri} names no page: the {} of execution {id} has {pages} pages, each {}: \
                 ?page=1 to ?page={pages}",
                part.as_str(),
                shape.each_page()
            ),
        )
        .with_data(json!({ "uri": uri }))
    })?;
    let mut meta = json!({ "page": page.number, "pages": page.pages });
    if let Some((from, to, of)) = page.items {
        meta["items"] = json!({ "from": from, "to": to, "of": of });
    }
    Ok(ReadResourceResult {
        contents: vec![ResourceContents {
            uri,
            mime_type: shape.mime_type().into(),
            text: Some(page.text),
            blob: None,
            meta: Some(json!({ PAGE_META: meta })),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_round_trip_through_their_uri() {
        for name in [
            "plain",
            "with/slash",
            "spaces and %",
            "ünïcode",
            "a.b-c_d~e",
        ] {
            let name = LogicalSession::parse(name).unwrap();
            let uri = log_uri(&name);
            assert_eq!(uri.matches('/').count(), 4, "{uri}");
            assert!(
                matches!(parse(&uri), Some(Named::Log(n)) if n == name),
                "{uri}"
            );
        }
        assert_eq!(
            log_uri(&LogicalSession::parse("a/b c").unwrap()),
            "mcp-v8://sessions/a%2Fb%20c/log"
        );
    }

    #[test]
    fn other_uris_name_nothing() {
        for uri in [
            "mcp-v8://sessions//log",
            "mcp-v8://sessions/a/b/log",
            "mcp-v8://sessions/a",
            "mcp-v8://sessions/%FF/log",
            "mcp-v8://executions/not-a-uuid",
            "mcp-v8://heaps/nothex/files/a",
            "test://nonexistent",
            "",
        ] {
            assert!(parse(uri).is_none(), "{uri}");
        }
        let id = Uuid::new_v4();
        assert!(
            matches!(parse(&format!("mcp-v8://executions/{id}")), Some(Named::Execution(x)) if x == id)
        );
    }
}
