//! What a task store keeps of one task: its state machine, the request it
//! runs, and its outcome once it has one.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::protocol::jsonrpc::ErrorObject;

/// A task's lifecycle status, as both protocol forms name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The run is going (or waits for an instance to take it).
    Working,
    /// The run asked the person and is suspended as a heap: `input` holds
    /// its requests, and the answers so far.
    InputRequired,
    /// The call answered: `outcome` is its result (a tool error too).
    Completed,
    /// The call ended in a JSON-RPC error, or the run was interrupted.
    Failed,
    /// Cancelled before it ended.
    Cancelled,
}

impl TaskStatus {
    /// `completed`, `failed` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The `tools/call` a task runs, kept whole so that any instance (the
/// function's own asynchronous invocation on Lambda) can run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    /// The tool.
    pub tool: String,
    /// Its arguments, as the client sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The logical session of the call (`X-MCP-Session-Id`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_session: Option<String>,
    /// The protocol version the call came in, which shapes its result.
    pub protocol_version: String,
    /// The caller declared MCP Apps: the result carries what the View
    /// reads in `_meta`, as a direct call's does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ui_extension: bool,
    /// The caller's `elicitation` capability, when its run may ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// The responses and state the run continues its suspended heap with:
    /// the call's own (a 2026-07-28 retry), or the task's answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::elicit::Retry>,
}

/// What a task in `input_required` waits for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskInput {
    /// The run's requests, by key: `{ method, params }`, as
    /// `inputRequests` carries them.
    pub requests: serde_json::Map<String, Value>,
    /// The responses given so far, by key.
    #[serde(default)]
    pub responses: serde_json::Map<String, Value>,
    /// The signed state naming the suspended run; never sent to the
    /// client, which answers the task instead.
    pub request_state: String,
    /// Answers refused so far (a request is asked again, saying why, up to
    /// [`crate::elicit::state::MAX_REFUSALS`]).
    #[serde(default, skip_serializing_if = "crate::elicit::state::is_zero")]
    pub refused: u32,
}

impl TaskInput {
    /// The requests still waiting for a response.
    pub fn pending(&self) -> serde_json::Map<String, Value> {
        self.requests
            .iter()
            .filter(|(key, _)| !self.responses.contains_key(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect()
    }
}

/// How a task's call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// The `CallToolResult`, exactly as a direct call returns it.
    Result(Value),
    /// The JSON-RPC error a direct call would have answered.
    Error(ErrorObject),
}

impl TaskOutcome {
    /// An internal error (-32603) saying `message`: a run that could not
    /// finish, or failed inside the server.
    pub fn internal(message: String) -> Self {
        Self::Error(ErrorObject {
            code: crate::protocol::jsonrpc::code::INTERNAL_ERROR,
            message,
            data: None,
        })
    }
}

/// One task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task id: a random UUID, unguessable (it is the only name a
    /// client needs to read the task).
    pub task_id: Uuid,
    /// Where the task stands.
    pub status: TaskStatus,
    /// For the model: progress while working, why it failed or was
    /// cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// RFC 3339 UTC, milliseconds.
    pub created_at: String,
    /// RFC 3339 UTC, milliseconds.
    pub last_updated_at: String,
    /// How long the task is kept from its creation, in milliseconds.
    pub ttl_ms: u64,
    /// Unix seconds after which the task is gone (`created_at + ttl_ms`).
    pub expires_at: i64,
    /// The call it runs.
    pub request: TaskRequest,
    /// How it ended, once terminal (none when cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<TaskOutcome>,
    /// The process or invocation that took the run, once one has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// Unix milliseconds of the runner's last sign of life: a working
    /// task whose runner has been silent for longer than
    /// [`super::SILENT_BEATS`] heartbeats was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<i64>,
    /// What the task waits for while `input_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<TaskInput>,
}

/// A change to a task that has not ended; terminal tasks take none.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskChange {
    /// The runner is alive; `message` replaces the status message.
    Progress {
        /// Progress for the model.
        message: String,
        /// Unix milliseconds.
        at: i64,
    },
    /// The call ended (`Completed` with a result, or `Failed` with an
    /// error or a reason).
    Finish {
        /// `Completed` or `Failed`.
        status: TaskStatus,
        /// Its outcome.
        outcome: Option<TaskOutcome>,
        /// For the model.
        message: Option<String>,
    },
    /// The run asked the person and was suspended: the task waits for
    /// `input`, with no runner.
    Ask {
        /// The requests.
        input: TaskInput,
    },
    /// A client cancelled it.
    Cancel {
        /// Why, for the model.
        message: String,
    },
}

impl TaskChange {
    /// Ends the task `failed`, with an internal error saying `message`.
    pub fn failed(message: String) -> Self {
        Self::Finish {
            status: TaskStatus::Failed,
            outcome: Some(TaskOutcome::internal(message.clone())),
            message: Some(message),
        }
    }
}

/// How the runner id of a process that runs its own tasks (`serve`,
/// `stdio`) begins; a Lambda invocation's is its request id.
pub(crate) const PROCESS_RUNNER: &str = "process-";

/// What becomes of a run that did not end, for a task's message: where its
/// effects are.
pub(crate) const NOTHING_KEPT: &str = "nothing of the run was stored (no heap, no /work files, \
    no entry in the session log): the session goes on from the heap it had before this call; \
    what the run did outside (fetch requests, upstream MCP calls) may have happened. Start it \
    again";
