//! `list_sessions` and `list_session_snapshots`: the session log.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::answer::schema;
use super::args;
use super::toolbox::{CallContext, Toolbox, structured_result};
use crate::meta::LogEntry;
use crate::meta::page::{self, LogPage, MAX_ENTRIES, PageStart};
use crate::protocol::mcp::{CallToolResult, STATELESS_VERSION, Tool, ToolAnnotations};
use crate::session::LogicalSession;

pub(super) const LIST_SESSIONS: &str = "list_sessions";
pub(super) const LIST_SESSION_SNAPSHOTS: &str = "list_session_snapshots";

const FIELDS: [&str; 5] = ["index", "input_heap", "output_heap", "code", "timestamp"];
/// Most session names one call returns (at most 256 bytes each, so a page
/// stays far inside one response).
const MAX_SESSIONS: usize = 1000;
/// The original server's words, kept exactly: clients may match on them.
const NO_SESSION: &str = "no session ID available (send X-MCP-Session-Id header)";
/// Protocol 2026-07-28 has no MCP session: a logical session is named by
/// the argument or by the X-MCP-Session-Id header, which works there too.
const NO_SESSION_STATELESS: &str = "no session ID available: pass the session argument to name a logical session, \
     or send the X-MCP-Session-Id header with every request";

pub(super) fn describe_list_sessions() -> Tool {
    Tool {
        name: LIST_SESSIONS,
        title: "List sessions",
        description: "List the names of your logical sessions that have at least one logged run, sorted. Only \
sessions of the caller you authenticated as are listed. Returns at most 1000 names per call; pass next_cursor as cursor \
for the next page."
            .into(),
        input_schema: schema::input::<SessionsArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<Sessions>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

pub(super) fn describe_list_session_snapshots() -> Tool {
    Tool {
        name: LIST_SESSION_SNAPSHOTS,
        title: "List a session's runs",
        description: "List the logged runs of one of your logical sessions in order: each entry's input and output heap, the \
code run and when. The session is the session argument, else this connection's X-MCP-Session-Id header. Returns at most \
1000 entries and about 1 MiB per call; page with offset and limit (next_offset says where the next page starts). \
order: newest_first reads from the newest end."
            .into(),
        input_schema: schema::input::<SnapshotArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(entries_schema()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionsArgs {
    /// next_cursor of the previous page (default: from the first name).
    #[serde(default)]
    cursor: Option<String>,
    /// Most names to return (default and cap 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_SESSIONS))]
    limit: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Sessions {
    /// Session names, sorted.
    sessions: Vec<LogicalSession>,
    /// Present when more names follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<LogicalSession>,
}

pub(super) async fn list_sessions(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    args: SessionsArgs,
    structured: bool,
) -> CallToolResult {
    let limit = args.limit.unwrap_or(MAX_SESSIONS);
    if !(1..=MAX_SESSIONS).contains(&limit) {
        return CallToolResult::error(format!("limit must be between 1 and {MAX_SESSIONS}"));
    }
    // The cursor is the last name of the previous page: any valid name is
    // a place to start from, so no cursor can be forged into more.
    let after = match args.cursor.as_deref().map(LogicalSession::parse) {
        Some(Ok(name)) => Some(name),
        Some(Err(e)) => return CallToolResult::error(format!("cursor {e}")),
        None => None,
    };
    // One name more than asked says whether another page follows.
    let listed = toolbox
        .meta
        .list_sessions(context.tenant, after.as_ref(), limit + 1)
        .await;
    match listed {
        Ok(mut sessions) => {
            let next_cursor = (sessions.len() > limit).then(|| {
                sessions.truncate(limit);
                sessions[limit - 1].clone()
            });
            structured_result(
                &Sessions {
                    sessions,
                    next_cursor,
                },
                false,
                structured,
            )
        }
        Err(e) => CallToolResult::error(format!("could not list sessions: {e}")),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotArgs {
    /// Logical session to list (default: this connection's X-MCP-Session-Id).
    #[serde(default)]
    #[schemars(length(min = 1, max = LogicalSession::MAX_LEN))]
    session: Option<String>,
    /// Comma-separated subset of index,input_heap,output_heap,code,timestamp (default: all).
    #[serde(default)]
    fields: Option<String>,
    /// First index to return (default: 0, or the newest with newest_first).
    #[serde(default)]
    offset: Option<u64>,
    /// Most entries to return (default and cap 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_ENTRIES))]
    limit: Option<usize>,
    /// oldest_first (default) pages up from offset; newest_first pages down from it, so {order: newest_first, limit: 1} is the last run.
    #[serde(default)]
    order: Order,
}

/// Which end of the log a page starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Order {
    #[default]
    OldestFirst,
    NewestFirst,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Entries {
    /// The entries, each with the fields asked for.
    entries: Vec<Map<String, Value>>,
    /// Present when more entries follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<u64>,
}

/// The result of `list_session_snapshots`: entries are log entries with
/// only the fields asked for, so none is required; without a session the
/// one entry is `{error}`.
fn entries_schema() -> Value {
    let mut entries = schema::output::<Entries>();
    let mut entry = schema::output::<LogEntry>();
    if let Some(entry) = entry.as_object_mut() {
        entry.remove("required");
        entry.remove("additionalProperties");
        entry["properties"]["error"] =
            json!({ "type": "string", "description": "Why there is nothing to list." });
    }
    entries["properties"]["entries"]["items"] = entry;
    entries
}

/// An entry reduced to the fields asked for (the only place log entries are
/// shaped by a runtime list).
/// A superseded run's entry keeps what says so whatever the fields.
fn project(entry: LogEntry, fields: &[&str]) -> Map<String, Value> {
    let mut all = entry.shown();
    all.retain(|key, _| fields.contains(&key.as_str()) || key == "superseded_by" || key == "note");
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
        let says = if context.protocol_version == STATELESS_VERSION {
            NO_SESSION_STATELESS
        } else {
            NO_SESSION
        };
        error.insert("error".into(), Value::String(says.into()));
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
    let start = match args.order {
        Order::OldestFirst => PageStart::Up(args.offset.unwrap_or(0)),
        Order::NewestFirst => PageStart::Down(args.offset),
    };
    let page = page::read_page(
        &*toolbox.meta,
        context.tenant,
        name,
        start,
        limit,
        |entry| project(entry, &fields),
    )
    .await;
    match page {
        Ok(LogPage {
            entries,
            next_offset,
        }) => structured_result(
            &Entries {
                entries,
                next_offset,
            },
            false,
            structured,
        ),
        Err(e) => CallToolResult::error(format!("could not read the session log: {e}")),
    }
}
