//! A `tools/call` to an upstream in progress ([`Flight`]): what it does
//! next (answers, or asks the person first), and its answer read as a tool
//! result.

use serde_json::Value;

use super::asks::{Listening, Question};
use super::cancel::Abandoned;

/// A `tools/call` in progress: its answer to come, the questions the
/// upstream may ask first, and the cancel it sends when dropped unanswered.
pub(super) struct Flight {
    pub(super) response: std::pin::Pin<
        Box<dyn Future<Output = Result<rmcp::model::ServerResult, rmcp::ServiceError>> + Send>,
    >,
    pub(super) questions: tokio::sync::mpsc::UnboundedReceiver<Question>,
    pub(super) _listening: Listening,
    pub(super) in_flight: Option<Abandoned>,
    /// Where the answer to the question asked last goes.
    pub(super) reply: Option<tokio::sync::oneshot::Sender<Value>>,
    /// A task's `tasks/result`, not a plain `tools/call`.
    pub(super) task: bool,
}

/// What a [`Flight`] did next.
pub(super) enum Step {
    Answered(Box<Result<rmcp::model::ServerResult, rmcp::ServiceError>>),
    Asked(Value),
}

impl Flight {
    pub(super) async fn next(&mut self) -> Step {
        tokio::select! {
            answer = &mut self.response => {
                if let Some(in_flight) = self.in_flight.take() {
                    in_flight.answered();
                }
                Step::Answered(Box::new(answer))
            }
            Some(question) = self.questions.recv() => {
                self.reply = Some(question.reply);
                Step::Asked(question.params)
            }
        }
    }
}

/// A result as rmcp's `call_tool` accepts it, contentless ones too; a
/// custom result is read as a tool result whatever fields it has
/// (rmcp's own accepts one with only `_meta`).
pub(super) fn tool_result(
    answer: rmcp::model::ServerResult,
) -> Result<rmcp::model::CallToolResult, rmcp::ServiceError> {
    use rmcp::model::{CallToolResult, ServerResult};
    match answer {
        ServerResult::CallToolResult(result) => Ok(result),
        ServerResult::EmptyResult(_) => Ok(CallToolResult::default()),
        ServerResult::TaskAckResult(ack) => {
            let mut result = CallToolResult::default();
            result.result_type = Some(ack.result_type);
            result.meta = ack.meta;
            Ok(result)
        }
        ServerResult::CustomResult(custom) => {
            serde_json::from_value(custom.0).map_err(|_| rmcp::ServiceError::UnexpectedResponse)
        }
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// Whether a `tools/call` was refused because the tool runs only as a
/// task: the TypeScript SDK's -32601 "… requires task augmentation", as a
/// JSON-RPC error or (its servers' way) as the text of an `isError` result.
pub(super) fn requires_task(
    answer: &Result<rmcp::model::ServerResult, rmcp::ServiceError>,
) -> bool {
    const SAID: &str = "requires task augmentation";
    match answer {
        Err(rmcp::ServiceError::McpError(refusal)) => {
            refusal.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND
                && refusal.message.contains(SAID)
        }
        Ok(rmcp::model::ServerResult::CallToolResult(result)) => {
            result.is_error == Some(true)
                && serde_json::to_string(&result.content)
                    .is_ok_and(|text| text.contains(SAID) && text.contains("-32601"))
        }
        _ => false,
    }
}
