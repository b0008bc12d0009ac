//! What a method answers: its typed result with caching hints, or a
//! JSON-RPC error.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::protocol::completion::CompleteResult;
use crate::protocol::jsonrpc::{code, plain_json_error};
use crate::protocol::mcp::{
    CacheHints, CallToolResult, DiscoverResult, EmptyResult, GetPromptResult, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    ReadResourceResult,
};
use crate::protocol::skills::{GetSkillResult, ListSkillsResult, ReadDirectoryResult};
use crate::protocol::tasks::{
    ExperimentalCreateTaskResult, ExperimentalTask, ExtensionTask, ListTasksResult,
};
use crate::tools::ToolCallError;

/// The tool, template and prompt lists and the discovery answer change only
/// with a deployment, and are the same for every caller.
pub(super) const PUBLIC_CACHE: CacheHints = CacheHints {
    ttl_ms: 300_000,
    cache_scope: "public",
};

/// A caller's session list, log or prompt: changes with every run, and is
/// that caller's alone.
const PRIVATE_NO_REUSE: CacheHints = CacheHints {
    ttl_ms: 0,
    cache_scope: "private",
};

/// An execution record never changes while it exists, but is the caller's.
const PRIVATE_STABLE: CacheHints = CacheHints {
    ttl_ms: 3_600_000,
    cache_scope: "private",
};

/// A method's result, typed per method; serializes as that result's own
/// fields, so either era can wrap it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum MethodResult {
    /// `ping`.
    Empty(EmptyResult),
    /// `server/discover`.
    Discover(DiscoverResult),
    /// `tools/list`.
    Tools(ListToolsResult),
    /// `tools/call`.
    Call(CallToolResult),
    /// `tools/call` of a run that asks the person (2026-07-28).
    InputRequired(InputRequiredResult),
    /// `resources/list`.
    Resources(ListResourcesResult),
    /// `resources/templates/list`.
    ResourceTemplates(ListResourceTemplatesResult),
    /// `resources/read`.
    Read(ReadAnswer),
    /// `prompts/list`.
    Prompts(ListPromptsResult),
    /// `prompts/get`.
    Prompt(GetPromptResult),
    /// `completion/complete`.
    Complete(CompleteResult),
    /// The Skills extension's `skills/list`.
    Skills(ListSkillsResult),
    /// The Skills extension's `skills/get`.
    Skill(GetSkillResult),
    /// The Skills extension's `resources/directory/read`.
    Directory(ReadDirectoryResult),
    /// The tasks extension's `CreateTaskResult` (its `resultType` is `task`).
    TaskCreated(ExtensionTask),
    /// The tasks extension's `tasks/get`.
    Task(ExtensionTask),
    /// 2025-11-25's `CreateTaskResult`.
    ExperimentalTaskCreated(ExperimentalCreateTaskResult),
    /// 2025-11-25's `tasks/get` and `tasks/cancel`.
    ExperimentalTask(ExperimentalTask),
    /// 2025-11-25's `tasks/list`.
    Tasks(ListTasksResult),
    /// A result kept as JSON: a call's result read back from its task.
    Json(serde_json::Value),
}

/// A `resources/read` result and whether it can change (which decides its
/// caching hints; not on the wire).
#[derive(Debug, Serialize)]
pub struct ReadAnswer {
    /// The result.
    #[serde(flatten)]
    pub result: ReadResourceResult,
    /// Whether it can change.
    #[serde(skip)]
    pub freshness: Freshness,
}

/// Whether a read result can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Freshness {
    /// It changes with the caller's next run (a session log).
    Changing,
    /// It stays as it is while it exists (an execution record).
    Stable,
    /// It is the same for every caller and changes only with a deployment
    /// (a skill's file).
    Public,
}

impl MethodResult {
    /// Caching hints for a 2026-07-28 answer: every list and read result
    /// carries them, `private` where the data is the caller's.
    pub fn cache_hints(&self) -> Option<CacheHints> {
        match self {
            Self::Discover(_)
            | Self::Tools(_)
            | Self::ResourceTemplates(_)
            | Self::Prompts(_)
            | Self::Skills(_)
            | Self::Skill(_)
            | Self::Directory(_) => Some(PUBLIC_CACHE),
            Self::Resources(_) | Self::Prompt(_) | Self::Complete(_) => Some(PRIVATE_NO_REUSE),
            Self::Read(read) => Some(match read.freshness {
                Freshness::Changing => PRIVATE_NO_REUSE,
                Freshness::Stable => PRIVATE_STABLE,
                Freshness::Public => PUBLIC_CACHE,
            }),
            Self::Empty(_)
            | Self::Call(_)
            | Self::InputRequired(_)
            | Self::TaskCreated(_)
            | Self::Task(_)
            | Self::ExperimentalTaskCreated(_)
            | Self::ExperimentalTask(_)
            | Self::Tasks(_)
            | Self::Json(_) => None,
        }
    }

    /// A 2026-07-28 result's `resultType`: `task` for a created task.
    pub fn result_type(&self) -> &'static str {
        match self {
            Self::TaskCreated(_) => "task",
            Self::InputRequired(_) => "input_required",
            _ => "complete",
        }
    }
}

/// A request answered with a JSON-RPC error rather than a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct MethodError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// For the client.
    pub message: String,
    /// `error.data`, where the code defines one (a missing resource's URI).
    pub data: Option<serde_json::Value>,
}

impl MethodError {
    /// An error of `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(super) fn with_data(self, data: serde_json::Value) -> Self {
        Self {
            data: Some(data),
            ..self
        }
    }

    /// A store failure: the details are logged, the client learns only
    /// that the server failed.
    pub(super) fn internal(detail: String) -> Self {
        tracing::error!(error = %detail, "a method failed");
        Self::new(
            code::INTERNAL_ERROR,
            "internal error; the server log has the details",
        )
    }
}

impl From<ToolCallError> for MethodError {
    fn from(error: ToolCallError) -> Self {
        let code = match error {
            ToolCallError::UnknownTool(_) => code::INVALID_PARAMS,
            ToolCallError::NotAvailable(_) => code::METHOD_NOT_FOUND,
            ToolCallError::Failed(_) => code::INTERNAL_ERROR,
            ToolCallError::InvalidParams(_) => code::INVALID_PARAMS,
            ToolCallError::HeaderMismatch(_) => code::HEADER_MISMATCH,
            ToolCallError::MissingClientCapability(ref capability) => {
                // 2026-07-28's MissingRequiredClientCapabilityError: the data
                // is a ClientCapabilities object of what is missing.
                let data = serde_json::json!({"requiredCapabilities": {capability: {}}});
                return Self::new(code::MISSING_REQUIRED_CLIENT_CAPABILITY, error.to_string())
                    .with_data(data);
            }
        };
        Self::new(code, error.to_string())
    }
}

/// A method's params, or -32602 saying what is wrong with them.
pub(super) fn params_of<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, MethodError> {
    serde_json::from_str(params.map_or("null", RawValue::get)).map_err(|e| {
        MethodError::new(
            code::INVALID_PARAMS,
            format!("Invalid params: {}", plain_json_error(&e)),
        )
    })
}

/// Params of a list, which may be absent altogether.
pub(super) fn list_params(
    params: Option<&RawValue>,
) -> Result<crate::protocol::mcp::ListParams, MethodError> {
    match params {
        None => Ok(Default::default()),
        Some(_) => params_of(params),
    }
}
