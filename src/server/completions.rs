//! `completion/complete`: values for what a person types in a host, scoped
//! by tenant as the tools are. `resume_session`'s `session` argument and
//! the session-log template's `{name}` complete to the caller's session
//! names that start with what was typed; the heap-files template's
//! `{heap}` to the newest heap of each of the caller's sessions; the run
//! text template's `{part}` to `output` and `result`. Other arguments of
//! known prompts and templates (execution ids, which no store lists by
//! caller) have no values to offer: an empty list, not an error.

use super::answer::MethodError;
use super::extra;
use crate::protocol::completion::{CompleteParams, CompleteReference, CompleteResult, Completion};
use crate::protocol::jsonrpc::code;
use crate::protocol::uri;
use crate::tools::{CallContext, Toolbox};

/// Values a completion gives at most, as the specification bounds them.
const MAX_VALUES: usize = 100;
/// Session names read for one completion: a bound on its cost.
const MAX_SESSIONS_READ: usize = 1000;

/// Sessions whose newest heap a heap completion offers: a bound on its
/// reads (one per session).
const MAX_SESSIONS_FOR_HEAPS: usize = 50;

/// What the completed argument names.
enum Completes {
    SessionNames,
    /// The newest heap of each of the caller's sessions: the heaps an
    /// agent continues.
    Heaps,
    /// `output` or `result`, the parts of a run's text.
    RunTextParts,
    Nothing,
}

pub(super) async fn complete(
    tools: &Toolbox,
    extra: Option<&dyn extra::ExtraContent>,
    context: CallContext<'_>,
    params: CompleteParams,
) -> Result<CompleteResult, MethodError> {
    let argument = params.argument.name.as_str();
    let completes = match &params.reference {
        CompleteReference::Prompt { name } => {
            let ours = super::prompts::list().prompts;
            let theirs = extra.map(|extra| extra.prompts()).unwrap_or_default();
            let Some(prompt) = ours
                .iter()
                .chain(&theirs)
                .find(|prompt| prompt.name == name)
            else {
                return Err(MethodError::new(
                    code::INVALID_PARAMS,
                    format!(
                        "unknown prompt {name:?}; prompts/list names this server's prompts ({})",
                        ours.iter()
                            .chain(&theirs)
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            if prompt.name == super::prompts::RESUME_SESSION && argument == "session" {
                Completes::SessionNames
            } else {
                Completes::Nothing
            }
        }
        CompleteReference::Resource { uri: template } => {
            let ours = super::resources::templates().resource_templates;
            let theirs = extra.map(|extra| extra.templates()).unwrap_or_default();
            if !ours
                .iter()
                .chain(&theirs)
                .any(|t| t.uri_template == template)
            {
                return Err(MethodError::new(
                    code::INVALID_PARAMS,
                    format!(
                        "unknown resource template {template:?}; resources/templates/list names this \
                         server's templates"
                    ),
                ));
            }
            match (template.as_str(), argument) {
                (uri::SESSION_LOG_TEMPLATE, "name") => Completes::SessionNames,
                (uri::HEAP_FILES_TEMPLATE, "heap") => Completes::Heaps,
                (uri::RUN_TEXT_TEMPLATE, "part") => Completes::RunTextParts,
                _ => Completes::Nothing,
            }
        }
    };
    let values = match completes {
        Completes::Nothing => Vec::new(),
        Completes::SessionNames => tools
            .meta
            .list_sessions(context.tenant, None, MAX_SESSIONS_READ)
            .await
            .map_err(|e| MethodError::internal(format!("could not list sessions: {e}")))?
            .into_iter()
            .map(|name| name.as_str().to_owned())
            .filter(|name| name.starts_with(&params.argument.value))
            .collect(),
        Completes::Heaps => newest_heaps(tools, context, &params.argument.value).await?,
        Completes::RunTextParts => [uri::RunText::Output, uri::RunText::Result]
            .into_iter()
            .map(|part| part.as_str().to_owned())
            .filter(|part| part.starts_with(&params.argument.value))
            .collect(),
    };
    Ok(CompleteResult {
        completion: Completion {
            total: values.len(),
            has_more: values.len() > MAX_VALUES,
            values: values.into_iter().take(MAX_VALUES).collect(),
        },
    })
}

/// The newest heap of each of the caller's sessions (the first
/// [`MAX_SESSIONS_FOR_HEAPS`] by name) that starts with `typed`, once each.
async fn newest_heaps(
    tools: &Toolbox,
    context: CallContext<'_>,
    typed: &str,
) -> Result<Vec<String>, MethodError> {
    let failed = |e: crate::meta::MetaStoreError| {
        MethodError::internal(format!("could not read the session logs: {e}"))
    };
    let sessions = tools
        .meta
        .list_sessions(context.tenant, None, MAX_SESSIONS_FOR_HEAPS)
        .await
        .map_err(failed)?;
    let mut heaps: Vec<String> = Vec::new();
    for session in &sessions {
        let newest = tools
            .meta
            .last_log_entry(context.tenant, session)
            .await
            .map_err(failed)?;
        if let Some(entry) = newest {
            let heap = entry.output_heap.as_str().to_owned();
            if heap.starts_with(typed) && !heaps.contains(&heap) {
                heaps.push(heap);
            }
        }
    }
    Ok(heaps)
}
