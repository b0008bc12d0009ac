//! Heap tags (`get_heap_tags`, `set_heap_tags`, `delete_heap_tags`,
//! `query_heaps_by_tags`) and `get_execution`.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::toolbox::{CallContext, Toolbox, structured_result};
use super::{args, schema};
use crate::meta::Tags;
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

pub(super) const GET_HEAP_TAGS: &str = "get_heap_tags";
pub(super) const SET_HEAP_TAGS: &str = "set_heap_tags";
pub(super) const DELETE_HEAP_TAGS: &str = "delete_heap_tags";
pub(super) const QUERY_HEAPS_BY_TAGS: &str = "query_heaps_by_tags";

fn ok_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" }, "error": { "type": "string" } },
        "required": ["ok"]
    })
}

pub(super) fn describe() -> Vec<Tool> {
    let heap = || schema::heap_key("64-character hex heap key.");
    vec![
        Tool {
            name: GET_HEAP_TAGS,
            title: "Get heap tags",
            description: "Get the tags you set on a heap ({} when you set none). Tags, like heaps, sessions and executions, belong to the caller you authenticated as.".into(),
            input_schema: json!({ "type": "object", "properties": { "heap": heap() }, "required": ["heap"], "additionalProperties": false }),
            output_schema: Some(json!({
                "type": "object",
                "properties": { "tags": { "type": "object", "additionalProperties": { "type": "string" } } },
                "required": ["tags"]
            })),
            annotations: ToolAnnotations::READ_ONLY,
        },
        Tool {
            name: SET_HEAP_TAGS,
            title: "Set heap tags",
            description: "Replace all your tags of a heap with the given map (an empty map clears them).".into(),
            input_schema: json!({
                "type": "object",
                "properties": { "heap": heap(), "tags": schema::tags("New tags: string keys to string values.") },
                "required": ["heap", "tags"],
                "additionalProperties": false
            }),
            output_schema: Some(ok_schema()),
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: true,
                idempotent_hint: true,
                open_world_hint: false,
            },
        },
        Tool {
            name: DELETE_HEAP_TAGS,
            title: "Delete heap tags",
            description: "Remove the named tags of one of your heaps, or all of its tags when keys is omitted.".into(),
            input_schema: json!({
                "type": "object",
                "properties": { "heap": heap(), "keys": { "type": "string", "description": "Comma-separated tag keys to remove." } },
                "required": ["heap"],
                "additionalProperties": false
            }),
            output_schema: Some(ok_schema()),
            annotations: ToolAnnotations {
                read_only_hint: false,
                destructive_hint: true,
                idempotent_hint: true,
                open_world_hint: false,
            },
        },
        Tool {
            name: QUERY_HEAPS_BY_TAGS,
            title: "Find heaps by tags",
            description: "Find your heaps whose tags contain every given key-value pair (heaps without tags are never returned).".into(),
            input_schema: json!({
                "type": "object",
                "properties": { "tags": schema::tags("Pairs that must all match.") },
                "required": ["tags"],
                "additionalProperties": false
            }),
            output_schema: Some(json!({
                "type": "object",
                "properties": { "results": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "heap": { "type": "string" },
                        "tags": { "type": "object", "additionalProperties": { "type": "string" } }
                    },
                    "required": ["heap", "tags"]
                }}},
                "required": ["results"]
            })),
            annotations: ToolAnnotations::READ_ONLY,
        },
    ]
}

#[derive(Debug, Serialize)]
struct Ack {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn ack(result: Result<(), String>, structured: bool) -> CallToolResult {
    match result {
        Ok(()) => structured_result(
            &Ack {
                ok: true,
                error: None,
            },
            false,
            structured,
        ),
        Err(error) => structured_result(
            &Ack {
                ok: false,
                error: Some(error),
            },
            true,
            structured,
        ),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HeapArgs {
    heap: String,
}

#[derive(Debug, Serialize)]
struct TagsResult {
    tags: Tags,
}

pub(super) async fn get(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    a: HeapArgs,
    structured: bool,
) -> CallToolResult {
    let heap = match args::heap(&a.heap) {
        Ok(heap) => heap,
        Err(e) => return CallToolResult::error(e),
    };
    match toolbox.meta.get_tags(context.tenant, &heap).await {
        Ok(tags) => structured_result(&TagsResult { tags }, false, structured),
        Err(e) => CallToolResult::error(format!("could not read the tags: {e}")),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SetArgs {
    heap: String,
    tags: Tags,
}

pub(super) async fn set(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    a: SetArgs,
    structured: bool,
) -> CallToolResult {
    let result = async {
        let heap = args::heap(&a.heap)?;
        args::tags(&a.tags)?;
        toolbox
            .meta
            .set_tags(context.tenant, &heap, &a.tags)
            .await
            .map_err(|e| e.to_string())
    };
    ack(result.await, structured)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteArgs {
    heap: String,
    #[serde(default)]
    keys: Option<String>,
}

pub(super) async fn delete(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    a: DeleteArgs,
    structured: bool,
) -> CallToolResult {
    let result = async {
        let heap = args::heap(&a.heap)?;
        let tags = match &a.keys {
            None => Tags::new(),
            Some(keys) => {
                let mut tags = toolbox
                    .meta
                    .get_tags(context.tenant, &heap)
                    .await
                    .map_err(|e| e.to_string())?;
                for key in args::list(keys) {
                    tags.remove(key);
                }
                tags
            }
        };
        toolbox
            .meta
            .set_tags(context.tenant, &heap, &tags)
            .await
            .map_err(|e| e.to_string())
    };
    ack(result.await, structured)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QueryArgs {
    tags: Tags,
}

#[derive(Debug, Serialize)]
struct Match {
    heap: String,
    tags: Tags,
}

#[derive(Debug, Serialize)]
struct QueryResult {
    results: Vec<Match>,
}

pub(super) async fn query(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    a: QueryArgs,
    structured: bool,
) -> CallToolResult {
    if a.tags.is_empty() {
        return CallToolResult::error("tags must name at least one key-value pair to match");
    }
    if let Err(e) = args::tags(&a.tags) {
        return CallToolResult::error(e);
    }
    match toolbox.meta.query_by_tags(context.tenant, &a.tags).await {
        Ok(found) => {
            let results = found
                .into_iter()
                .map(|(heap, tags)| Match {
                    heap: heap.to_string(),
                    tags,
                })
                .collect();
            structured_result(&QueryResult { results }, false, structured)
        }
        Err(e) => CallToolResult::error(format!("could not query tags: {e}")),
    }
}
