//! `get_execution`: the recorded outcome of an earlier run, from the
//! execution registry.

use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use super::schema;
use super::toolbox::{CallContext, Toolbox, structured_result};
use crate::clock::unix_now;
use crate::meta::ExecutionRecord;
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

pub(super) const GET_EXECUTION: &str = "get_execution";

pub(super) fn describe() -> Tool {
    let mut execution = schema::run_outcome();
    let properties = execution["properties"]
        .as_object_mut()
        .expect("object schema");
    properties.insert("started_at".into(), json!({ "type": "string" }));
    properties.insert("completed_at".into(), json!({ "type": "string" }));
    Tool {
        name: GET_EXECUTION,
        title: "Get a run's record",
        description: "Get the recorded outcome of one of your earlier run_js calls by its execution_id, with when it started and completed.".into(),
        input_schema: json!({
            "type": "object",
            "properties": { "execution_id": { "type": "string", "description": "The execution_id a run_js returned." } },
            "required": ["execution_id"],
            "additionalProperties": false
        }),
        output_schema: Some(execution),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecutionArgs {
    execution_id: String,
}

/// An execution record as `get_execution` and its resource show it: the
/// outcome `run_js` returned, with when it started and completed.
#[derive(Debug, Serialize)]
pub struct ExecutionView {
    execution_id: Uuid,
    #[serde(flatten)]
    outcome: serde_json::Map<String, serde_json::Value>,
    started_at: String,
    completed_at: String,
}

impl From<ExecutionRecord> for ExecutionView {
    fn from(record: ExecutionRecord) -> Self {
        Self {
            execution_id: record.execution_id,
            outcome: record.outcome,
            started_at: record.started_at,
            completed_at: record.completed_at,
        }
    }
}

pub(super) async fn get(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    a: ExecutionArgs,
    structured: bool,
) -> CallToolResult {
    let Ok(id) = a.execution_id.trim().parse::<Uuid>() else {
        return CallToolResult::error(format!("execution_id {:?} is not a UUID", a.execution_id));
    };
    match toolbox
        .meta
        .get_execution(context.tenant, id, unix_now())
        .await
    {
        Ok(Some(record)) => structured_result(&ExecutionView::from(record), false, structured),
        Ok(None) => CallToolResult::error(format!(
            "no execution {id} (unknown, or expired from the registry)"
        )),
        Err(e) => CallToolResult::error(format!("could not read the execution registry: {e}")),
    }
}
