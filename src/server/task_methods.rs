//! MCP tasks on the wire, in both forms, over [`crate::tasks`]: when a
//! `tools/call` becomes a task, and what `tasks/get`, `tasks/cancel`,
//! `tasks/update` (the extension) and `tasks/result`, `tasks/list`
//! (2025-11-25) answer. docs/protocol.md, "Tasks", has the exchanges.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::answer::{MethodError, MethodResult, params_of};
use crate::engine::RunControl;
use crate::protocol::jsonrpc::{ErrorObject, code};
use crate::protocol::mcp::{CallToolParams, CallToolResult, STATELESS_VERSION, TASKS_VERSION};
use crate::protocol::tasks::{
    ExperimentalCreateTaskResult, ExperimentalTask, ExtensionTask, ImmediateResponse,
    ListTasksResult, RELATED_TASK, TaskIdParams, TaskState, UpdateTaskParams, method,
    required_extension,
};
use crate::session::LogicalSession;
use crate::tasks::policy::{self, Decision, Era, Refusal};
use crate::tasks::{
    Changed, Execute, Executed, InputAnswered, Started, TaskError, TaskOutcome, TaskRecord,
    TaskRequest, TaskStatus, Tasks,
};
use crate::tenant::Tenant;
use crate::tools::{CallContext, Called, ToolRouter, Toolbox};

/// Runs a task's call as a direct `tools/call` would: the tool's result,
/// or the JSON-RPC error the call would have answered.
#[derive(Debug)]
pub struct ToolExecutor {
    tools: Toolbox,
    router: ToolRouter,
}

impl ToolExecutor {
    /// Runs calls of `router`'s tools on `tools`.
    pub fn new(tools: Toolbox, router: ToolRouter) -> Self {
        Self { tools, router }
    }
}

#[async_trait]
impl Execute for ToolExecutor {
    async fn execute(
        &self,
        tenant: &Tenant,
        request: &TaskRequest,
        control: Arc<RunControl>,
        deadline: Option<SystemTime>,
    ) -> Executed {
        let logical_session = request
            .logical_session
            .as_deref()
            .and_then(|name| LogicalSession::parse(name).ok());
        let context = CallContext {
            protocol_version: &request.protocol_version,
            tenant,
            logical_session: logical_session.as_ref(),
            deadline,
            control: Some(&control),
            tasks_extension: false,
            ui_extension: request.ui_extension,
            elicitation: crate::elicit::Declared::of_capability(request.elicitation.as_ref()),
            client_capabilities: None,
            param_headers: None,
            retry: None,
        };
        let arguments = request
            .arguments
            .as_ref()
            .and_then(|value| serde_json::value::to_raw_value(value).ok());
        let retry = request.retry.clone().unwrap_or_default();
        let params = CallToolParams {
            name: request.tool.clone(),
            arguments,
            task: None,
            input_responses: retry.input_responses,
            request_state: retry.request_state,
        };
        match self.router.call_or_ask(&self.tools, context, params).await {
            Ok(Called::Result(result)) => Executed::Ended(TaskOutcome::Result(
                serde_json::to_value(result).expect("tool results serialize"),
            )),
            Ok(Called::InputRequired(asked)) => Executed::Asked(asked),
            Err(error) => {
                let error = MethodError::from(error);
                Executed::Ended(TaskOutcome::Error(ErrorObject {
                    code: error.code,
                    message: error.message,
                    data: error.data,
                }))
            }
        }
    }
}

fn store_failed(error: impl std::fmt::Display) -> MethodError {
    MethodError::internal(format!("task store: {error}"))
}

/// A task that could not start, as the JSON-RPC error a client that asked
/// for a task gets (2025-11-25's `params.task`, whose answer must be a task
/// or an error). A hand-off that failed says what failed and what the
/// operator sets.
fn start_failed(error: TaskError) -> MethodError {
    match error {
        TaskError::Store(error) => store_failed(error),
        TaskError::Handoff(error) => MethodError::new(code::INTERNAL_ERROR, handoff_failed(&error)),
    }
}

/// [`start_failed`] where the answer may be an ordinary result (the
/// extension's server-directed tasks): a failed hand-off is the tool's
/// error, which the model reads.
fn start_failed_as_tool(error: TaskError) -> Result<Option<MethodResult>, MethodError> {
    match error {
        TaskError::Handoff(error) => Ok(Some(MethodResult::Call(CallToolResult::error(
            handoff_failed(&error),
        )))),
        error => Err(start_failed(error)),
    }
}

/// What a task whose hand-off failed is told, and what the log gets.
fn handoff_failed(error: &crate::BoxError) -> String {
    tracing::error!(%error, "a task could not be handed to a new invocation");
    format!(
        "this call was to run as a task, in a new invocation of this Lambda function, and \
         starting that invocation failed: {error}. Nothing ran. Call again without a task \
         ({}), or ask the operator to let the \
         function invoke itself: lambda:InvokeFunction on its own ARN, and an Invoke endpoint \
         it can reach (AWS_ENDPOINT_URL_LAMBDA; under cargo lambda watch, the emulator's \
         address, which the function finds by itself) (docs/deployment.md, \"Tasks on Lambda\")",
        crate::tools::ANSWERED_DIRECTLY_IF
    )
}

fn missing_extension(what: &str) -> MethodError {
    MethodError::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "{what} needs the {} extension: declare it in _meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions",
            crate::protocol::tasks::EXTENSION
        ),
    )
    .with_data(required_extension())
}

fn not_found(id: &str) -> MethodError {
    MethodError::new(
        code::INVALID_PARAMS,
        format!(
            "Failed to retrieve task: task {id:?} not found (it never existed, belongs to another \
             caller, or expired)"
        ),
    )
}

/// The task's id, or -32602: an id this server could not have issued
/// names no task.
fn task_id(text: &str) -> Result<Uuid, MethodError> {
    Uuid::parse_str(text).map_err(|_| not_found(text))
}

fn state(tasks: &Tasks, record: &TaskRecord) -> TaskState {
    TaskState {
        task_id: record.task_id.to_string(),
        status: record.status.as_str(),
        status_message: record.status_message.clone(),
        created_at: record.created_at.clone(),
        last_updated_at: record.last_updated_at.clone(),
        ttl_ms: record.ttl_ms,
        poll_interval_ms: tasks.settings.poll_interval_ms,
    }
}

/// The extension's `DetailedTask`: the result or error inlined once ended.
fn detailed(tasks: &Tasks, record: &TaskRecord) -> ExtensionTask {
    let (result, error) = match &record.outcome {
        Some(TaskOutcome::Result(result)) if record.status == TaskStatus::Completed => {
            (Some(result.clone()), None)
        }
        Some(TaskOutcome::Error(error)) if record.status == TaskStatus::Failed => (
            None,
            Some(serde_json::to_value(error).expect("an error object serializes")),
        ),
        _ => (None, None),
    };
    let input_requests = record
        .input
        .as_ref()
        .filter(|_| record.status == TaskStatus::InputRequired)
        .map(|input| Box::new(input.pending()));
    ExtensionTask {
        state: state(tasks, record),
        result,
        error,
        input_requests,
    }
}

/// What a model is told while a 2025-11-25 task runs.
fn immediate_response(record: &TaskRecord) -> ImmediateResponse {
    ImmediateResponse {
        message: format!(
            "The call goes on as task {}; its result comes with tasks/result (or tasks/get shows how \
             far it got).",
            record.task_id
        ),
    }
}

/// A `tools/call` that may become a task: `Ok(None)` when it is to be
/// answered directly, as without tasks. The decision is
/// [`policy::decide`]'s; this turns it into the wire's answer.
pub(super) async fn route_call(
    tools: &ToolRouter,
    tasks: &Tasks,
    context: CallContext<'_>,
    params: &CallToolParams,
) -> Result<Option<MethodResult>, MethodError> {
    let era = match context.protocol_version {
        STATELESS_VERSION => Era::ServerDecides {
            declared: context.tasks_extension,
        },
        TASKS_VERSION => Era::ClientAsks {
            asked: params.task.is_some(),
        },
        _ => Era::Without,
    };
    let decision = policy::decide(&policy::CallFacts {
        era,
        support: tools.task_support(&params.name),
        hands_off: tasks.hands_off(),
        estimate: tools.estimated_duration(&params.name, params.arguments.as_deref()),
        handoff_above: tasks.settings.handoff_above,
    });
    let request = || TaskRequest {
        tool: params.name.clone(),
        arguments: params
            .arguments
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok()),
        logical_session: context.logical_session.map(|s| s.as_str().to_owned()),
        protocol_version: context.protocol_version.to_owned(),
        ui_extension: context.ui_extension,
        elicitation: context.elicitation.capability(),
        retry: Some(crate::elicit::Retry {
            input_responses: params.input_responses.clone(),
            request_state: params.request_state.clone(),
        })
        .filter(crate::elicit::Retry::is_retry),
    };
    let name = &params.name;
    match decision {
        Decision::Direct => Ok(None),
        Decision::Refuse(Refusal::ExtensionNeeded) => Err(missing_extension(&format!(
            "the tool {name:?} runs only as a task and"
        ))),
        Decision::Refuse(Refusal::TaskParamNeeded) => Err(MethodError::new(
            code::METHOD_NOT_FOUND,
            format!("the tool {name:?} runs only as a task: call it with params.task"),
        )),
        Decision::Refuse(Refusal::CannotBeTask) => Err(MethodError::new(
            code::METHOD_NOT_FOUND,
            format!(
                "the tool {name:?} answers at once and cannot run as a task: call it without params.task"
            ),
        )),
        // 2025-11-25: the client asked; its own lifetime, its own form.
        Decision::TaskNow if matches!(era, Era::ClientAsks { .. }) => {
            let ttl = tasks.ttl_ms(params.task.as_ref().and_then(|task| task.ttl));
            let record = tasks
                .start(context.tenant, request(), ttl)
                .await
                .map_err(start_failed)?;
            Ok(Some(MethodResult::ExperimentalTaskCreated(
                ExperimentalCreateTaskResult {
                    task: state(tasks, &record).into(),
                    meta: immediate_response(&record),
                },
            )))
        }
        Decision::TaskNow => {
            let record = match tasks
                .start(context.tenant, request(), tasks.ttl_ms(None))
                .await
            {
                Ok(record) => record,
                Err(error) => return start_failed_as_tool(error),
            };
            Ok(Some(MethodResult::TaskCreated(detailed(tasks, &record))))
        }
        Decision::StartThenTask => match tasks
            .start_or_answer(context.tenant, request(), tasks.ttl_ms(None))
            .await
            .map_err(start_failed)?
        {
            Started::Answered(Executed::Ended(outcome)) => answer(outcome).map(Some),
            // A run that asks before it becomes a task answers as a direct
            // call does (SEP-2322); the retry may then become the task.
            Started::Answered(Executed::Asked(asked)) => {
                Ok(Some(MethodResult::InputRequired(asked)))
            }
            Started::Task(record) => Ok(Some(MethodResult::TaskCreated(detailed(tasks, &record)))),
        },
    }
}

/// A call's outcome as the direct answer it would have been.
fn answer(outcome: TaskOutcome) -> Result<MethodResult, MethodError> {
    match outcome {
        TaskOutcome::Result(result) => Ok(MethodResult::Json(result)),
        TaskOutcome::Error(ErrorObject {
            code,
            message,
            data,
        }) => {
            let error = MethodError::new(code, message);
            Err(match data {
                Some(data) => error.with_data(data),
                None => error,
            })
        }
    }
}

/// The task methods; `None` when `rpc_method` is not one of them in this
/// protocol version.
pub(super) async fn handle(
    tasks: &Tasks,
    context: CallContext<'_>,
    rpc_method: &str,
    params: Option<&RawValue>,
) -> Option<Result<MethodResult, MethodError>> {
    let extension = context.protocol_version == STATELESS_VERSION;
    let experimental = context.protocol_version == TASKS_VERSION;
    let known = match rpc_method {
        method::GET | method::CANCEL => extension || experimental,
        method::UPDATE => extension,
        method::RESULT | method::LIST => experimental,
        _ => false,
    };
    if !known {
        return None;
    }
    if extension && !context.tasks_extension {
        return Some(Err(missing_extension(rpc_method)));
    }
    Some(dispatch(tasks, context, rpc_method, params, extension).await)
}

async fn dispatch(
    tasks: &Tasks,
    context: CallContext<'_>,
    rpc_method: &str,
    params: Option<&RawValue>,
    extension: bool,
) -> Result<MethodResult, MethodError> {
    let tenant = context.tenant;
    if rpc_method == method::LIST {
        return list(tasks, tenant, params).await;
    }
    let (text, id, responses) = if rpc_method == method::UPDATE {
        let update: UpdateTaskParams = params_of(params)?;
        let id = task_id(&update.task_id)?;
        (update.task_id, id, Some(update.input_responses))
    } else {
        let TaskIdParams {
            task_id: text,
            input_responses,
        } = params_of(params)?;
        let id = task_id(&text)?;
        (text, id, input_responses)
    };
    match rpc_method {
        method::GET => {
            let record = tasks
                .book
                .get(tenant, id)
                .await
                .map_err(store_failed)?
                .ok_or_else(|| not_found(&text))?;
            Ok(if extension {
                MethodResult::Task(detailed(tasks, &record))
            } else {
                MethodResult::ExperimentalTask(state(tasks, &record).into())
            })
        }
        method::CANCEL => match tasks.cancel(tenant, id).await.map_err(store_failed)? {
            Changed::Missing => Err(not_found(&text)),
            // The extension's cancel is an acknowledgement, idempotent on
            // an ended task.
            Changed::Applied(_) | Changed::Ended(_) if extension => {
                Ok(MethodResult::Empty(crate::protocol::mcp::EmptyResult {}))
            }
            Changed::Applied(record) => {
                Ok(MethodResult::ExperimentalTask(state(tasks, &record).into()))
            }
            Changed::Ended(record) => Err(MethodError::new(
                code::INVALID_PARAMS,
                format!(
                    "task {text} has already ended ({}); only a working task can be cancelled",
                    record.status.as_str()
                ),
            )),
        },
        method::UPDATE => {
            let responses = responses.unwrap_or_default();
            answer_input(tasks, tenant, id, &text, &responses).await?;
            Ok(MethodResult::Empty(crate::protocol::mcp::EmptyResult {}))
        }
        method::RESULT => {
            if let Some(responses) = &responses {
                answer_input(tasks, tenant, id, &text, responses).await?;
            }
            result(tasks, context, id, &text).await
        }
        _ => unreachable!("handle admits task methods only"),
    }
}

/// Gives task `id` the `responses` to its input requests (keys it did not
/// ask are ignored, as the extension says); once every request has its
/// response, the run continues from its stored heap. A response the
/// request's schema refuses is -32602, and nothing changes.
async fn answer_input(
    tasks: &Tasks,
    tenant: &Tenant,
    id: Uuid,
    text: &str,
    responses: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), MethodError> {
    let answered = tasks
        .book
        .answer(tenant, id, responses)
        .await
        .map_err(store_failed)?
        .map_err(|refused| {
            MethodError::new(
                code::INVALID_PARAMS,
                format!(
                    "the response to {:?} was refused: {}; nothing changed, answer it again",
                    refused.key, refused.why
                ),
            )
        })?;
    match answered {
        InputAnswered::Missing => Err(not_found(text)),
        InputAnswered::NotWaiting(_) | InputAnswered::Waiting(_) => Ok(()),
        InputAnswered::Complete(record) => {
            tracing::info!(task = %id, "a task's input was answered; its run goes on");
            tasks.resume(tenant, &record).await.map_err(start_failed)
        }
    }
}

/// 2025-11-25 `tasks/result`: blocks until the task ends (within the
/// request's own deadline, on Lambda), then answers exactly what the call
/// would have, with the task named in `_meta`. A task whose run asks the
/// person answers its requests instead, each naming the task in `_meta`:
/// the transport carries them on this request's stream and calls again
/// with the replies (a session's asking, docs/protocol.md).
async fn result(
    tasks: &Tasks,
    context: CallContext<'_>,
    id: Uuid,
    text: &str,
) -> Result<MethodResult, MethodError> {
    let record = tasks
        .wait(context.tenant, id, context.deadline)
        .await
        .map_err(store_failed)?
        .ok_or_else(|| not_found(text))?;
    match (record.status, record.outcome) {
        (TaskStatus::Completed, Some(TaskOutcome::Result(mut result))) => {
            if let Some(object) = result.as_object_mut() {
                let meta = object
                    .entry("_meta")
                    .or_insert_with(|| serde_json::json!({}));
                meta[RELATED_TASK] = serde_json::json!({ "taskId": text });
            }
            Ok(MethodResult::Json(result))
        }
        (TaskStatus::Failed, Some(outcome @ TaskOutcome::Error(_))) => answer(outcome),
        (TaskStatus::Cancelled, _) => Err(MethodError::new(
            code::INVALID_PARAMS,
            format!("task {text} was cancelled; it has no result"),
        )),
        (TaskStatus::InputRequired, _) => {
            if let Some(why) = context.elicitation.refused {
                return Err(MethodError::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "task {text} waits for the person's answers, which cannot reach it: {why}"
                    ),
                ));
            }
            let pending = record.input.as_ref().map(crate::tasks::TaskInput::pending);
            let related = serde_json::json!({ "taskId": text });
            let input_requests = pending
                .unwrap_or_default()
                .into_iter()
                .map(|(key, mut request)| {
                    if let Some(params) = request.get_mut("params").and_then(|p| p.as_object_mut())
                    {
                        let meta = params
                            .entry("_meta")
                            .or_insert_with(|| serde_json::json!({}));
                        meta[RELATED_TASK] = related.clone();
                    }
                    (key, request)
                })
                .collect();
            Ok(MethodResult::InputRequired(
                crate::protocol::mcp::InputRequiredResult {
                    input_requests,
                    request_state: String::new(),
                },
            ))
        }
        (status, _) => Err(MethodError::new(
            code::INTERNAL_ERROR,
            format!(
                "task {text} is still {} and this request's time is up; call tasks/result again \
                 (or poll tasks/get)",
                status.as_str()
            ),
        )),
    }
}

/// Tasks listed a page at a time; the cursor is the last id of a page.
const LIST_PAGE: usize = 50;

async fn list(
    tasks: &Tasks,
    tenant: &Tenant,
    params: Option<&RawValue>,
) -> Result<MethodResult, MethodError> {
    let params: crate::protocol::mcp::ListParams = match params {
        None => Default::default(),
        Some(_) => params_of(params)?,
    };
    let after = match params.cursor.as_deref() {
        None => None,
        Some(cursor) => Some(Uuid::parse_str(cursor).map_err(|_| {
            MethodError::new(
                code::INVALID_PARAMS,
                format!("invalid cursor {cursor:?}: pass a nextCursor this server returned"),
            )
        })?),
    };
    let page = tasks
        .book
        .list(tenant, after, LIST_PAGE)
        .await
        .map_err(store_failed)?;
    let next_cursor = (page.len() == LIST_PAGE)
        .then(|| page.last().map(|r| r.task_id.to_string()))
        .flatten();
    let listed: Vec<ExperimentalTask> = page
        .iter()
        .map(|record| state(tasks, record).into())
        .collect();
    Ok(MethodResult::Tasks(ListTasksResult {
        tasks: listed,
        next_cursor,
    }))
}
