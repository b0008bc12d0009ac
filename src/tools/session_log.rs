//! `list_sessions` and `list_session_snapshots`: the session log.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{CallContext, Toolbox, args, schema, structured_result};
use crate::meta::LogEntry;
use crate::protocol::mcp::{CallToolResult, Tool};
use crate::session::LogicalSession;

pub(super) const LIST_SESSIONS: &str = "list_sessions";
pub(super) const LIST_SESSION_SNAPSHOTS: &str = "list_session_snapshots";

const FIELDS: [&str; 5] = ["index", "input_heap", "output_heap", "code", "timestamp"];
/// Most entries one call returns.
const MAX_ENTRIES: usize = 1000;
/// The original server's words, kept exactly: clients may match on them.
const NO_SESSION: &str = "no session ID available (send X-MCP-Session-Id header)";

pub(super) fn describe() -> Vec<Tool> {
    vec![
        Tool {
            name: LIST_SESSIONS,
            description: "List the names of all logical sessions that have at least one logged run.",
            input_schema: json!({ "type": "object", "properties": {}, "additionalProperties": false }),
            output_schema: Some(json!({
                "type": "object",
                "properties": { "sessions": { "type": "array", "items": { "type": "string" } } },
                "required": ["sessions"]
            })),
        },
        Tool {
            name: LIST_SESSION_SNAPSHOTS,
            description: "List the logged runs of a logical session in order: each entry's input and output heap, the \
code run and when. The session is the session argument, else this connection's X-MCP-Session-Id header. Returns at most \
1000 entries per call; page with offset and limit.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "session": schema::session("Logical session to list (default: this connection's X-MCP-Session-Id)."),
                    "fields": { "type": "string", "description": "Comma-separated subset of index,input_heap,output_heap,code,timestamp (default: all)." },
                    "offset": { "type": "integer", "minimum": 0, "description": "First index to return (default 0)." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "description": "Most entries to return (default and cap 1000)." }
                },
                "additionalProperties": false
            }),
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "entries": { "type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "index": { "type": "integer" },
                            "input_heap": { "type": ["string", "null"] },
                            "output_heap": { "type": "string" },
                            "code": { "type": "string" },
                            "timestamp": { "type": "string" },
                            "error": { "type": "string" }
                        }
                    }},
                    "next_offset": { "type": "integer", "description": "Present when more entries follow." }
                },
                "required": ["entries"]
            })),
        },
    ]
}

#[derive(Debug, Serialize)]
struct Sessions {
    sessions: Vec<LogicalSession>,
}

pub(super) async fn list_sessions(toolbox: &Toolbox, structured: bool) -> CallToolResult {
    match toolbox.meta.list_sessions().await {
        Ok(sessions) => structured_result(&Sessions { sessions }, false, structured),
        Err(e) => CallToolResult::error(format!("could not list sessions: {e}")),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotArgs {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    fields: Option<String>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Entries {
    entries: Vec<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<u64>,
}

/// An entry reduced to the fields asked for (the only place log entries are
/// shaped by a runtime list).
fn project(entry: LogEntry, fields: &[&str]) -> Map<String, Value> {
    let Value::Object(mut all) = serde_json::to_value(entry).expect("log entries serialize") else {
        unreachable!("a struct serializes to an object")
    };
    all.retain(|key, _| fields.contains(&key.as_str()));
    all
}

pub(super) async fn list_session_snapshots(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    args: SnapshotArgs,
    structured: bool,
) -> CallToolResult {
    let fields = match args.fields.as_deref().map(args::list) {
        None => FIELDS.to_vec(),
        Some(asked) if asked.is_empty() => FIELDS.to_vec(),
        Some(asked) => {
            if let Some(bad) = asked.iter().find(|f| !FIELDS.contains(f)) {
                return CallToolResult::error(format!(
                    "unknown field {bad:?}; valid fields are {}",
                    FIELDS.join(", ")
                ));
            }
            asked
        }
    };
    let named = match args.session.as_deref().map(args::session) {
        Some(Ok(name)) => Some(name),
        Some(Err(e)) => return CallToolResult::error(e),
        None => None,
    };
    let Some(name) = named.as_ref().or(context.logical_session) else {
        let mut error = Map::new();
        error.insert("error".into(), Value::String(NO_SESSION.into()));
        return structured_result(
            &Entries {
                entries: vec![error],
                next_offset: None,
            },
            false,
            structured,
        );
    };
    let limit = args.limit.unwrap_or(MAX_ENTRIES);
    if !(1..=MAX_ENTRIES).contains(&limit) {
        return CallToolResult::error(format!("limit must be between 1 and {MAX_ENTRIES}"));
    }
    let offset = args.offset.unwrap_or(0);
    // One more than asked tells whether a next page exists.
    match toolbox.meta.read_log(name, offset, limit + 1).await {
        Ok(mut entries) => {
            let next_offset = (entries.len() > limit).then(|| {
                entries.truncate(limit);
                offset + limit as u64
            });
            let entries = entries.into_iter().map(|e| project(e, &fields)).collect();
            structured_result(
                &Entries {
                    entries,
                    next_offset,
                },
                false,
                structured,
            )
        }
        Err(e) => CallToolResult::error(format!("could not read the session log: {e}")),
    }
}
