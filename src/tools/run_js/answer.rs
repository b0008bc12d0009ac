//! run_js's answer: the outcome fitted to the answer budget with its
//! `display()` blocks, and the log entry, record and tags a run leaves.

use crate::clock::{rfc3339_millis as rfc3339, unix_now};
use crate::tools::answer::budget::{self, Kept};
use crate::tools::toolbox::{MAX_RESULT_JSON_BYTES, ToolAnswer, Toolbox, result_json_len};

use crate::engine::{RunOutcome, RunStatus};
use crate::meta::{ExecutionRecord, NewLogEntry, Tags};
use crate::protocol::mcp::{CallToolResult, Content};
use crate::session::LogicalSession;
use crate::tenant::Tenant;

/// The fields of `outcome` but its id, as the execution registry keeps
/// them.
pub(super) fn outcome_fields(outcome: &RunOutcome) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(mut fields) =
        serde_json::to_value(outcome).expect("outcomes serialize")
    else {
        unreachable!("an outcome is a JSON object")
    };
    fields.remove("execution_id");
    fields
}

/// Room kept for the warnings that blocks which do not fit add to the text.
pub(super) const DISPLAY_WARNINGS_ROOM: usize = 64 * 1024;

/// How a run is answered: the budget its text and `structuredContent`
/// each keep within, and where what does not fit is kept.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub(super) is_error: bool,
    /// The client's protocol has `structuredContent` (2025-06-18 on).
    pub(super) structured: bool,
    /// The host renders the run in an MCP Apps View.
    pub(super) view: bool,
    pub(super) budget: usize,
    pub(super) kept: Kept,
    /// `display()` blocks no `/work` file holds may be kept in the
    /// caller's file store and linked.
    pub(super) keeps_displays: bool,
}

impl Shape {
    pub(super) fn new(
        toolbox: &Toolbox,
        outcome: &RunOutcome,
        is_error: bool,
        structured: bool,
        view: bool,
    ) -> Self {
        let keeps = if toolbox.stateless {
            Err("a stateless server keeps no runs")
        } else if outcome.status == RunStatus::Cancelled {
            Err("a cancelled run keeps nothing")
        } else {
            Ok(())
        };
        Self {
            is_error,
            structured,
            view,
            budget: toolbox.answer_budget_bytes,
            keeps_displays: keeps.is_ok() && toolbox.files.is_some(),
            kept: Kept::for_run(outcome.execution_id, keeps),
        }
    }
}

/// The tool result of `outcome` followed by its `display()` blocks: text
/// blocks as many as fit the answer budget after the run's own text (the
/// rest are links to their /work files), images as many as fit one
/// response (docs/tools.md); for a host with an MCP Apps `view`, `_meta`
/// says what each block is. The answer is measured once, where the blocks
/// need the room the text leaves; its length goes with it to the
/// response limit (`ToolAnswer::json_len`).
pub(super) async fn with_displays(
    toolbox: &Toolbox,
    tenant: &Tenant,
    mut outcome: RunOutcome,
    repl: Option<String>,
    displays: Vec<crate::engine::Displayed>,
    shape: Shape,
) -> ToolAnswer {
    if displays.is_empty() {
        // Within the answer budget: the response limit's bound clears it
        // without measuring.
        let mut result = fitted(&outcome, repl.as_deref(), shape);
        if shape.view {
            result.meta = Some(crate::protocol::apps::displays_meta(&[]));
        }
        return result.into();
    }
    let text = fitted(&outcome, repl.as_deref(), shape);
    let text_json = result_json_len(&text);
    let room = MAX_RESULT_JSON_BYTES
        .saturating_sub(text_json)
        .saturating_sub(DISPLAY_WARNINGS_ROOM);
    let text_len = text.content.first().map_or(0, Content::payload_len);
    // While the heap is being stored, links name it by the run's id.
    let heap = match (&outcome.heap, &outcome.heap_saving) {
        (Some(key), _) => Some(key.as_str().to_owned()),
        (None, Some(_)) => Some(outcome.execution_id.to_string()),
        (None, None) => None,
    };
    let shown = crate::tools::answer::display::blocks(
        displays,
        &crate::tools::answer::display::Target {
            heap: heap.as_deref(),
            execution_id: outcome.execution_id,
            room,
            text_room: shape.budget.saturating_sub(text_len),
            budget: shape.budget,
            // resource_link came with structured output (2025-06-18).
            links: shape.structured,
            keep: shape.keeps_displays,
        },
    );
    let mut shown = shown;
    // A link leaves only once what it names is stored.
    if let Some(store) = toolbox.files.as_ref() {
        for bytes in std::mem::take(&mut shown.kept) {
            if let Err(e) = store.put(tenant, &bytes).await {
                shown.warnings.push(format!(
                    "a display block linked above could not be kept ({e}): its link names nothing; \
                     write the data to /work in a stateful run and display the same bytes instead"
                ));
            }
        }
    }
    let (mut result, mut json_len) = if shown.warnings.is_empty() {
        (text, text_json)
    } else {
        // Blocks that did not fit say so in the text, which is fitted again
        // (the room kept for it, DISPLAY_WARNINGS_ROOM, holds the notes).
        outcome.warnings.extend(shown.warnings);
        let text = fitted(&outcome, repl.as_deref(), shape);
        let len = result_json_len(&text);
        (text, len)
    };
    if shape.view {
        // The blocks follow the run's own text in `content`.
        let first = result.content.len();
        let entries: Vec<_> = shown
            .entries
            .into_iter()
            .map(|mut entry| {
                entry.content = entry.content.map(|index| index + first);
                entry
            })
            .collect();
        let meta = crate::protocol::apps::displays_meta(&entries);
        // `,"_meta":` and the value.
        json_len += budget::json_len(&meta) + r#","_meta":"#.len();
        result.meta = Some(meta);
    }
    json_len += shown.json_len;
    result.content.extend(shown.content);
    ToolAnswer {
        instead: None,
        result,
        json_len: Some(json_len),
    }
}

/// The tool result of `outcome` within the answer budget: the text the
/// model reads is the outcome's JSON with `result` as a REPL displays the
/// value (`[ NaN, Infinity, -0 ]`, `10n`, `Map(1) {…}`, `undefined`), which
/// JSON cannot tell apart; `structuredContent` is the outcome as it is.
/// Each is fitted to the budget on its own ([`budget::answer`]); the
/// execution record keeps them whole. docs/tools.md says what each holds.
pub(super) fn fitted(outcome: &RunOutcome, repl: Option<&str>, shape: Shape) -> CallToolResult {
    let json = serde_json::to_value(outcome).expect("outcomes serialize");
    let shown = repl.filter(|_| outcome.status == RunStatus::Completed);
    budget::answer(
        json,
        shown,
        shape.budget,
        shape.kept,
        shape.is_error,
        shape.structured,
    )
}

/// Writes what a stateful run leaves behind: the log entry (with a logical
/// session), the execution record, the tags. The heap is stored already;
/// metadata that fails to follow is reported in `outcome.warnings`, never
/// hidden, and the heap stays usable by its key.
pub(super) async fn record(
    toolbox: &Toolbox,
    tenant: &Tenant,
    outcome: &mut RunOutcome,
    (started, completed_at): (i128, i128),
    executed_code: String,
    logical_session: Option<&LogicalSession>,
    tags: Option<&Tags>,
) -> Recorded {
    let mut written = true;
    let mut logged_at = None;
    let completed_heap = match (outcome.status, &outcome.heap) {
        (RunStatus::Completed, Some(heap)) => Some(heap.clone()),
        _ => None,
    };
    // The heap holding the run's effects: a superseded run's is the
    // stored heap after it, which its log entry names and its tags go to
    // (the run that holds them sets its own after, as a newer run's tags
    // replace).
    let superseded = outcome.superseded.as_ref();
    let effects_heap = completed_heap.or_else(|| superseded.map(|s| s.heap_after.clone()));
    let log = match (&effects_heap, logical_session) {
        (Some(output_heap), Some(name)) => Some((
            name,
            NewLogEntry {
                input_heap: outcome.input_heap.clone(),
                output_heap: output_heap.clone(),
                code: executed_code,
                timestamp: rfc3339(completed_at),
                superseded_by: superseded.map(|s| s.by_execution_id),
            },
        )),
        _ => None,
    };
    let mut execution = ExecutionRecord {
        execution_id: outcome.execution_id,
        outcome: outcome_fields(outcome),
        started_at: rfc3339(started),
        completed_at: rfc3339(completed_at),
        expires_at: unix_now() + toolbox.execution_ttl_secs,
        kept: None,
    };
    execution.kept =
        crate::tools::answer::run_texts::keep_apart(toolbox, tenant, &mut execution.outcome).await;
    match toolbox.meta.record_run(tenant, log, &execution).await {
        Ok(index) => logged_at = index,
        Err(e) => {
            outcome.warnings.push(format!(
                "the session log entry and execution record were not written: {e}"
            ));
            written = false;
        }
    }
    if let (Some(output_heap), Some(tags)) = (&effects_heap, tags)
        && let Err(e) = toolbox.meta.set_tags(tenant, output_heap, tags).await
    {
        outcome.warnings.push(format!("the tags were not set: {e}"));
        written = false;
    }
    Recorded { written, logged_at }
}

/// What [`record`] wrote.
pub(super) struct Recorded {
    /// All of it.
    pub(super) written: bool,
    /// The index of the run's log entry, when it has one.
    pub(super) logged_at: Option<u64>,
}
