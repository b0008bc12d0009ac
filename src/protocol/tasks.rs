//! The wire shapes of MCP tasks, in their two forms: the tasks extension
//! `io.modelcontextprotocol/tasks` (SEP-2663, protocol 2026-07-28: flat
//! `Result & Task`, `ttlMs`, results inlined in `tasks/get`) and the
//! experimental tasks of 2025-11-25 (`params.task`, a `task` wrapper,
//! `ttl`, `tasks/result`, `tasks/list`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension's identifier, in capabilities and `_meta`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The 2025-11-25 `_meta` key tying a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Task methods.
pub mod method {
    /// Read a task (both forms).
    pub const GET: &str = "tasks/get";
    /// Cancel a task (both forms).
    pub const CANCEL: &str = "tasks/cancel";
    /// Answer a task's input requests (the extension).
    pub const UPDATE: &str = "tasks/update";
    /// Wait for a task's result (2025-11-25).
    pub const RESULT: &str = "tasks/result";
    /// List tasks (2025-11-25).
    pub const LIST: &str = "tasks/list";
}

/// Whether `method` is one of the task methods, which name a task.
pub fn is_task_method(rpc_method: &str) -> bool {
    matches!(
        rpc_method,
        method::GET | method::CANCEL | method::UPDATE | method::RESULT
    )
}

/// Whether a tool's calls may become tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: it answers at once.
    Forbidden,
    /// When the client asks (2025-11-25) or, with the extension, when the
    /// run is still going after a short wait.
    Optional,
    /// Whenever the client can take a task; answered directly otherwise.
    Always,
    /// Only as a task: refused to a client that cannot take one.
    Required,
}

/// `params.task` of a 2025-11-25 task-augmented request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TaskParams {
    /// The lifetime the client asks for, in milliseconds.
    #[serde(default)]
    pub ttl: Option<u64>,
}

/// Params of `tasks/get`, `tasks/cancel`, `tasks/result`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// On 2025-11-25's `tasks/result`: the client's replies to the input
    /// requests an earlier round of the same `tasks/result` carried on its
    /// stream (the server's own retry; no client sends it).
    #[serde(default)]
    pub input_responses: Option<serde_json::Map<String, Value>>,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Responses to input requests, keyed as they were asked.
    pub input_responses: serde_json::Map<String, Value>,
}

/// A task's state, as both forms carry it: the extension's names.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskState {
    /// The task.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: &'static str,
    /// Progress, or why it ended as it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub last_updated_at: String,
    /// Lifetime from creation, in milliseconds.
    pub ttl_ms: u64,
    /// How often to poll, in milliseconds.
    pub poll_interval_ms: u64,
}

/// A task as the extension sends it (`CreateTaskResult`, and `tasks/get`'s
/// `DetailedTask` with the result or error inlined once terminal).
#[derive(Debug, Clone, Serialize)]
pub struct ExtensionTask {
    /// The state.
    #[serde(flatten)]
    pub state: TaskState,
    /// A completed task's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A failed task's JSON-RPC error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// An `input_required` task's requests still waiting for a response
    /// (SEP-2322's `inputRequests`).
    /// Boxed: an ordered map is large, and most tasks have none.
    #[serde(rename = "inputRequests", skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Box<serde_json::Map<String, Value>>>,
}

/// A task as 2025-11-25 sends it: the same state, with `ttl` and
/// `pollInterval` for the extension's `ttlMs` and `pollIntervalMs`.
#[derive(Debug, Clone)]
pub struct ExperimentalTask(pub TaskState);

impl From<TaskState> for ExperimentalTask {
    fn from(state: TaskState) -> Self {
        Self(state)
    }
}

impl Serialize for ExperimentalTask {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let state = &self.0;
        let mut task = serializer.serialize_struct("Task", 7)?;
        task.serialize_field("taskId", &state.task_id)?;
        task.serialize_field("status", state.status)?;
        match &state.status_message {
            Some(message) => task.serialize_field("statusMessage", message)?,
            None => task.skip_field("statusMessage")?,
        }
        task.serialize_field("createdAt", &state.created_at)?;
        task.serialize_field("lastUpdatedAt", &state.last_updated_at)?;
        task.serialize_field("ttl", &state.ttl_ms)?;
        task.serialize_field("pollInterval", &state.poll_interval_ms)?;
        task.end()
    }
}

/// 2025-11-25's answer to a task-augmented request.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentalCreateTaskResult {
    /// The new task.
    pub task: ExperimentalTask,
    /// What a host may hand the model while the task runs.
    #[serde(rename = "_meta")]
    pub meta: ImmediateResponse,
}

/// `_meta` of 2025-11-25's `CreateTaskResult`.
#[derive(Debug, Clone, Serialize)]
pub struct ImmediateResponse {
    /// For the model, while it waits.
    #[serde(rename = "io.modelcontextprotocol/model-immediate-response")]
    pub message: String,
}

/// `tasks/list` of 2025-11-25.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// A page of the caller's tasks.
    pub tasks: Vec<ExperimentalTask>,
    /// Where the next page starts, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Whether `_meta` client capabilities of a 2026-07-28 request declare the
/// tasks extension.
pub fn declares_extension(capabilities: Option<&serde_json::Map<String, Value>>) -> bool {
    super::declared_extension(capabilities, EXTENSION).is_some()
}

/// `error.data` of -32021 when a request needs the extension.
pub fn required_extension() -> Value {
    serde_json::json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn both_eras_carry_one_state_under_their_own_names() {
        let state = TaskState {
            task_id: "t".into(),
            status: "working",
            status_message: None,
            created_at: "2026-11-27T10:00:00.000Z".into(),
            last_updated_at: "2026-11-27T10:00:01.000Z".into(),
            ttl_ms: 60_000,
            poll_interval_ms: 500,
        };
        let common = json!({
            "taskId": "t",
            "status": "working",
            "createdAt": "2026-11-27T10:00:00.000Z",
            "lastUpdatedAt": "2026-11-27T10:00:01.000Z",
        });
        let mut extension = common.clone();
        extension["ttlMs"] = json!(60_000);
        extension["pollIntervalMs"] = json!(500);
        assert_eq!(serde_json::to_value(&state).unwrap(), extension);
        let mut experimental = common;
        experimental["ttl"] = json!(60_000);
        experimental["pollInterval"] = json!(500);
        let mut with_message = state.clone();
        assert_eq!(
            serde_json::to_value(ExperimentalTask::from(state)).unwrap(),
            experimental
        );
        with_message.status_message = Some("half way".into());
        experimental["statusMessage"] = json!("half way");
        assert_eq!(
            serde_json::to_value(ExperimentalTask::from(with_message)).unwrap(),
            experimental
        );
    }
}
