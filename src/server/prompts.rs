//! The one prompt, `resume_session`: a user message that names a logical
//! session's latest heap and shows its last code, so an agent picks up
//! where it stopped.

use super::answer::MethodError;
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp::{
    Content, GetPromptParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
use crate::session::LogicalSession;
use crate::tools::{CallContext, Toolbox};

pub(super) const RESUME_SESSION: &str = "resume_session";
/// Longest code the prompt quotes, in bytes; longer code is cut with a note.
const MAX_QUOTED_CODE: usize = 16 * 1024;

pub(super) fn list() -> ListPromptsResult {
    ListPromptsResult {
        prompts: vec![Prompt {
            name: RESUME_SESSION,
            title: "Resume a session",
            description: "Continue one of your logical sessions where it stopped: names its latest heap and \
shows the code of its last run.",
            arguments: vec![PromptArgument {
                name: "session",
                description: "The logical session to resume (as list_sessions names it).",
                required: true,
            }],
        }],
    }
}

fn invalid(message: impl Into<String>) -> MethodError {
    MethodError::new(code::INVALID_PARAMS, message)
}

pub(super) async fn get(
    tools: &Toolbox,
    context: CallContext<'_>,
    params: GetPromptParams,
) -> Result<GetPromptResult, MethodError> {
    if params.name != RESUME_SESSION {
        return Err(invalid(format!(
            "unknown prompt {:?}; this server has {RESUME_SESSION}",
            params.name
        )));
    }
    let name = params
        .arguments
        .get("session")
        .ok_or_else(|| invalid("resume_session needs the session argument"))?;
    let session = LogicalSession::parse(name).map_err(|e| invalid(format!("session {e}")))?;
    let quoted = format!("{:?}", session.as_str());
    let last = tools
        .meta
        .last_log_entry(context.tenant, &session)
        .await
        .map_err(|e| MethodError::internal(format!("could not read the session log: {e}")))?;
    let text = match last {
        None => format!(
            "Logical session {quoted} has no runs yet. Start it with run_js, passing \
             session: {quoted}; each run's heap is logged there, and heap: \"latest\" continues \
             from the newest."
        ),
        Some(entry) => {
            let mut code = entry.code;
            let mut note = "";
            if code.len() > MAX_QUOTED_CODE {
                code.truncate(code.floor_char_boundary(MAX_QUOTED_CODE));
                note = "\n(cut: the code is longer; list_session_snapshots has it whole)";
            }
            format!(
                "Resume logical session {quoted}. It has {count} logged run(s); the last, at {at}, \
                 stored heap {heap}. Its code was:\n\n```js\n{code}\n```{note}\n\nContinue with run_js, \
                 passing session: {quoted} and heap: \"latest\" (or heap: \"{heap}\"): every global \
                 of that run is still there. list_session_snapshots with order: \"newest_first\" shows \
                 earlier runs.",
                count = entry.index + 1,
                at = entry.timestamp,
                heap = entry.output_heap,
            )
        }
    };
    Ok(GetPromptResult {
        description: format!("Resume logical session {quoted}"),
        messages: vec![PromptMessage {
            role: "user",
            content: Content::text(text),
        }],
    })
}
