//! `run_js`: run JavaScript or TypeScript, optionally from a saved heap.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{CallContext, Toolbox, schema, structured_result};
use crate::engine::{Language, RunOutcome, RunRequest, RunStatus};
use crate::heap::HeapKey;
use crate::meta::{ExecutionRecord, NewLogEntry, Tags};
use crate::protocol::mcp::{CallToolResult, Tool};
use crate::session::{LogicalSession, unix_now};

pub(super) const NAME: &str = "run_js";

const STATEFUL_DESCRIPTION: &str = "Run JavaScript or TypeScript in a V8 isolate and return its completion value and console output. \
Every successful run saves the whole heap and returns its key as `heap`; pass that key as `heap` in a later call to continue with \
every global, top-level declaration and object of that run. Heaps are immutable: continuing from the same key twice gives two \
independent branches. No network, filesystem, environment or modules are available.";

const STATELESS_DESCRIPTION: &str = "Run JavaScript or TypeScript in a fresh V8 isolate and return its completion value and console \
output. This server is stateless: nothing is kept between calls. No network, filesystem, environment or modules are available.";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    code: String,
    #[serde(default)]
    heap: Option<String>,
    #[serde(default)]
    tags: Option<Tags>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    execution_timeout_secs: Option<f64>,
    #[serde(default)]
    heap_memory_max_mb: Option<usize>,
    #[serde(default)]
    language: Language,
}

pub(super) fn describe(stateless: bool) -> Tool {
    let mut properties = json!({
        "code": { "type": "string", "description": "JavaScript or TypeScript source. The value of the last expression is the result; a promise is awaited; top-level await works." },
        "execution_timeout_secs": { "type": "number", "exclusiveMinimum": 0, "maximum": 300, "description": "Timeout in seconds (default 30)." },
        "heap_memory_max_mb": { "type": "integer", "minimum": 8, "maximum": 1024, "description": "Heap limit in MiB (default 64)." },
        "language": { "type": "string", "enum": ["auto", "javascript", "typescript"], "description": "Default auto: TypeScript syntax is detected and its types stripped (no type checking)." }
    });
    if !stateless {
        let object = properties.as_object_mut().expect("object literal");
        object.insert(
            "heap".into(),
            schema::heap_key("Heap to start from (a `heap` returned by an earlier run). Omit for a fresh isolate."),
        );
        object.insert(
            "tags".into(),
            schema::tags("Tags to set on the heap this run produces (replaces its tags)."),
        );
        object.insert(
            "session".into(),
            schema::session("Logical session whose log records this run. Overrides the X-MCP-Session-Id header; \
the way to keep a session log without headers (protocol 2026-07-28)."),
        );
    }
    Tool {
        name: NAME,
        description: if stateless {
            STATELESS_DESCRIPTION
        } else {
            STATEFUL_DESCRIPTION
        },
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": ["code"],
            "additionalProperties": false
        }),
        output_schema: Some(schema::run_outcome()),
    }
}

/// RFC 3339 in UTC with exactly three fractional digits, so that
/// timestamps sort as strings (the well-known format drops trailing zeros,
/// and `…05.5Z` sorts after `…05.51Z`).
fn rfc3339(unix_millis: i128) -> String {
    const MILLIS: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(unix_millis * 1_000_000)
        .ok()
        .and_then(|t| t.format(MILLIS).ok())
        .unwrap_or_default()
}

fn now_millis() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i128)
}

/// A run as the arguments ask for it, checked.
struct Planned {
    request: RunRequest,
    logical_session: Option<LogicalSession>,
    tags: Option<Tags>,
}

/// Checks the arguments; `Err` is the tool error the model reads.
fn plan(toolbox: &Toolbox, context: CallContext<'_>, args: Args) -> Result<Planned, String> {
    let heap = match args.heap.as_deref() {
        None | Some("") => None,
        Some(text) => Some(HeapKey::parse(text).map_err(|e| e.to_string())?),
    };
    if let Some(tags) = &args.tags {
        super::args::tags(tags)?;
    }
    if toolbox.stateless && (heap.is_some() || args.tags.is_some() || args.session.is_some()) {
        return Err("this server is stateless: run_js takes no heap, tags or session".into());
    }
    let logical_session = match args.session.as_deref() {
        Some(name) => Some(super::args::session(name)?),
        None => context.logical_session.cloned(),
    };
    let timeout = match args.execution_timeout_secs {
        None => None,
        Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Some(Duration::from_secs_f64(secs))
        }
        Some(secs) => {
            return Err(format!(
                "execution_timeout_secs must be a positive number of seconds, got {secs}"
            ));
        }
    };
    Ok(Planned {
        request: RunRequest {
            code: args.code,
            heap,
            stateful: !toolbox.stateless,
            language: args.language,
            timeout,
            heap_limit_mb: args.heap_memory_max_mb,
        },
        logical_session,
        tags: args.tags,
    })
}

pub(super) async fn call(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    args: Args,
    structured: bool,
) -> CallToolResult {
    let planned = match plan(toolbox, context, args) {
        Ok(planned) => planned,
        Err(message) => return CallToolResult::error(message),
    };
    let heap = planned.request.heap.as_ref().map(HeapKey::as_str);
    tracing::Span::current().record("heap", heap);
    let started = now_millis();
    let report = match toolbox.engine.run(planned.request).await {
        Ok(report) => report,
        Err(e) => return CallToolResult::error(e.to_string()),
    };
    let completed_at = now_millis();
    let mut outcome = report.outcome;
    // A stateless server keeps nothing: no tool could read a record.
    let metadata_failed = !toolbox.stateless
        && !record(
            toolbox,
            &mut outcome,
            (started, completed_at),
            report.executed_code,
            planned.logical_session.as_ref(),
            planned.tags.as_ref(),
        )
        .await;
    let is_error = outcome.status != RunStatus::Completed || metadata_failed;
    structured_result(&outcome, is_error, structured)
}

/// Writes what a stateful run leaves behind: the log entry (with a logical
/// session), the execution record, the tags. The heap is stored already;
/// metadata that fails to follow is reported in `outcome.warnings`, never
/// hidden, and the heap stays usable by its key. Returns whether all of it
/// was written.
async fn record(
    toolbox: &Toolbox,
    outcome: &mut RunOutcome,
    (started, completed_at): (i128, i128),
    executed_code: String,
    logical_session: Option<&LogicalSession>,
    tags: Option<&Tags>,
) -> bool {
    let mut written = true;
    let completed_heap = match (outcome.status, &outcome.heap) {
        (RunStatus::Completed, Some(heap)) => Some(heap.clone()),
        _ => None,
    };
    let log = match (&completed_heap, logical_session) {
        (Some(output_heap), Some(name)) => Some((
            name,
            NewLogEntry {
                input_heap: outcome.input_heap.clone(),
                output_heap: output_heap.clone(),
                code: executed_code,
                timestamp: rfc3339(completed_at),
            },
        )),
        _ => None,
    };
    let execution = ExecutionRecord {
        outcome: outcome.clone(),
        started_at: rfc3339(started),
        completed_at: rfc3339(completed_at),
        expires_at: unix_now() + toolbox.execution_ttl_secs,
    };
    if let Err(e) = toolbox.meta.record_run(log, &execution).await {
        outcome.warnings.push(format!(
            "the session log entry and execution record were not written: {e}"
        ));
        written = false;
    }
    if let (Some(output_heap), Some(tags)) = (&completed_heap, tags)
        && let Err(e) = toolbox.meta.set_tags(output_heap, tags).await
    {
        outcome.warnings.push(format!("the tags were not set: {e}"));
        written = false;
    }
    written
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn timestamps_have_three_fractional_digits_and_sort_as_strings() {
        let half = rfc3339(1_764_000_005_500);
        let later = rfc3339(1_764_000_005_510);
        assert_eq!(half, "2025-11-24T16:00:05.500Z");
        assert!(half < later, "{half} < {later}");
        assert_eq!(rfc3339(1_764_000_006_000), "2025-11-24T16:00:06.000Z");
    }
}
