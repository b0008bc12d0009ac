//! Heap tags (`get_heap_tags`, `set_heap_tags`, `delete_heap_tags`,
//! `query_heaps_by_tags`) and `get_execution`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answer::schema;
use super::args;
use super::toolbox::{CallContext, Toolbox, structured_result};
use crate::meta::Tags;
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

pub(super) const GET_HEAP_TAGS: &str = "get_heap_tags";
pub(super) const SET_HEAP_TAGS: &str = "set_heap_tags";
pub(super) const DELETE_HEAP_TAGS: &str = "delete_heap_tags";
pub(super) const QUERY_HEAPS_BY_TAGS: &str = "query_heaps_by_tags";

pub(super) fn describe_get() -> Tool {
    Tool {
        name: GET_HEAP_TAGS,
        title: "Get heap tags",
        description: "Get the tags you set on a heap ({} when you set none). Tags, like heaps, sessions and executions, belong to the caller you authenticated as.".into(),
        input_schema: schema::input::<HeapArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<TagsResult>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

pub(super) fn describe_set() -> Tool {
    Tool {
        name: SET_HEAP_TAGS,
        title: "Set heap tags",
        description:
            "Replace all your tags of a heap with the given map (an empty map clears them).".into(),
        input_schema: schema::input::<SetArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<Ack>()),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: true,
            open_world_hint: false,
        },
    }
}

pub(super) fn describe_delete() -> Tool {
    Tool {
        name: DELETE_HEAP_TAGS,
        title: "Delete heap tags",
        description:
            "Remove the named tags of one of your heaps, or all of its tags when keys is omitted."
                .into(),
        input_schema: schema::input::<DeleteArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<Ack>()),
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: true,
            open_world_hint: false,
        },
    }
}

pub(super) fn describe_query() -> Tool {
    Tool {
        name: QUERY_HEAPS_BY_TAGS,
        title: "Find heaps by tags",
        description: "Find your heaps whose tags contain every given key-value pair (heaps without tags are never returned).".into(),
        input_schema: schema::input::<QueryArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<QueryResult>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

/// What a tool that changes tags answers.
#[derive(Debug, Serialize, JsonSchema)]
struct Ack {
    /// Whether the change was made.
    ok: bool,
    /// Why not, when it was not.
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct HeapArgs {
    /// 64-character hex heap key.
    #[schemars(regex(pattern = schema::HEAP_KEY))]
    heap: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct TagsResult {
    /// The heap's tags: string keys to string values.
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SetArgs {
    /// 64-character hex heap key.
    #[schemars(regex(pattern = schema::HEAP_KEY))]
    heap: String,
    /// New tags: string keys to string values.
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteArgs {
    /// 64-character hex heap key.
    #[schemars(regex(pattern = schema::HEAP_KEY))]
    heap: String,
    /// Comma-separated tag keys to remove.
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct QueryArgs {
    /// Pairs that must all match.
    tags: Tags,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Match {
    /// The heap's key.
    heap: String,
    /// All its tags.
    tags: Tags,
}

#[derive(Debug, Serialize, JsonSchema)]
struct QueryResult {
    /// The heaps that match.
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
