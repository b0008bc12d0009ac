//! `get_execution`: the recorded outcome of an earlier run, from the
//! execution registry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::answer::budget::{self, Kept};
use super::answer::schema;
use super::toolbox::{CallContext, RunRecordError, Toolbox};
use crate::meta::ExecutionRecord;
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

pub(super) const GET_EXECUTION: &str = "get_execution";

pub(super) fn describe() -> Tool {
    Tool {
        name: GET_EXECUTION,
        title: "Get a run's record",
        description: "Get the recorded outcome of one of your earlier run_js calls by its execution_id, with when it started and completed.".into(),
        input_schema: schema::input::<ExecutionArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<ExecutionView>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecutionArgs {
    /// The execution_id a run_js returned.
    execution_id: String,
}

/// An execution record as `get_execution` and its resource show it: the
/// outcome `run_js` returned, with when it started and completed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecutionView {
    /// UUID of the run.
    #[schemars(with = "String")]
    execution_id: Uuid,
    /// The outcome as run_js returned it.
    #[serde(flatten)]
    #[schemars(with = "crate::engine::RunOutcome")]
    outcome: serde_json::Map<String, serde_json::Value>,
    /// When the run started (RFC 3339, UTC).
    started_at: String,
    /// When it completed (RFC 3339, UTC).
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
    // A run answered before its heap was stored is recorded once it is:
    // wait for that, as heap "latest" does.
    match toolbox.record_of_run(context.tenant, id).await {
        Ok(Some(record)) => {
            let record =
                match super::answer::run_texts::whole(toolbox, context.tenant, record).await {
                    Ok(record) => record,
                    Err(why) => return CallToolResult::error(why),
                };
            // The same budget as the run's own answer, and the same links.
            let json = serde_json::to_value(ExecutionView::from(record))
                .expect("execution views serialize");
            let (budget, kept) = (toolbox.answer_budget_bytes, Kept::Record(id));
            budget::answer(json, None, budget, kept, false, structured)
        }
        Ok(None) => CallToolResult::error(format!(
            "no execution {id} (unknown, or expired from the registry)"
        )),
        Err(RunRecordError::NotStored(why)) => CallToolResult::error(format!(
            "execution {id} ran, but its heap was not stored, so it has no record: {why}"
        )),
        Err(RunRecordError::Unreadable(e)) => {
            CallToolResult::error(format!("could not read the execution registry: {e}"))
        }
    }
}
