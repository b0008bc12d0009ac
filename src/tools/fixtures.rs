//! The MCP conformance suite's fixture tools for its tasks scenarios,
//! compiled only with the `conformance-fixtures` feature and listed only
//! when `MCP_V8_CONFORMANCE_FIXTURES=1`. Each runs its work as JavaScript
//! through the real engine (a fresh stateless run), so the scenarios
//! exercise the run, the task store and the wire that users get.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::calls::{TaskSupport, ToolCallError};
use super::run_js;
use super::toolbox::{CallContext, Toolbox};
use crate::protocol::mcp::{CallToolResult, Content, Tool, ToolAnnotations};

const GREET: &str = "greet";
const SLOW_COMPUTE: &str = "slow_compute";
const FAILING_JOB: &str = "failing_job";
const PROTOCOL_ERROR_JOB: &str = "protocol_error_job";

/// Whether this process lists and runs the fixtures.
pub(super) fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var("MCP_V8_CONFORMANCE_FIXTURES").is_ok_and(|v| v == "1" || v == "true")
    })
}

pub(super) fn is_fixture(tool: &str) -> bool {
    [GREET, SLOW_COMPUTE, FAILING_JOB, PROTOCOL_ERROR_JOB].contains(&tool)
}

/// As the suite registers them: `greet` sync-only, `failing_job` task
/// required, the others always a task when the client can take one.
pub(super) fn task_support(_tools: &Toolbox, tool: &str) -> Option<TaskSupport> {
    if !enabled() {
        return None;
    }
    match tool {
        GREET => Some(TaskSupport::Forbidden),
        SLOW_COMPUTE | PROTOCOL_ERROR_JOB => Some(TaskSupport::Always),
        FAILING_JOB => Some(TaskSupport::Required),
        _ => None,
    }
}

fn tool(name: &'static str, description: &'static str, input: serde_json::Value) -> Tool {
    Tool {
        name,
        title: name,
        description: description.into(),
        input_schema: input,
        output_schema: None,
        execution: None,
        meta: None,
        annotations: ToolAnnotations {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        },
    }
}

pub(super) fn describe() -> Vec<Tool> {
    vec![
        tool(
            GREET,
            "Conformance fixture: says hello to `name`.",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        ),
        tool(
            SLOW_COMPUTE,
            "Conformance fixture: waits `seconds`, then answers.",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}}),
        ),
        tool(
            FAILING_JOB,
            "Conformance fixture: a tool error after about a second.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            PROTOCOL_ERROR_JOB,
            "Conformance fixture: a protocol error after its run.",
            json!({"type": "object", "properties": {}}),
        ),
    ]
}

#[derive(Deserialize, Default)]
struct FixtureArgs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    seconds: Option<f64>,
    #[serde(default)]
    label: Option<String>,
}

/// Runs `code` as a `run_js` of this call from a fresh isolate; a run
/// that succeeds answers with what it printed, as the suite's reference
/// fixtures answer with plain text.
async fn run(
    tools: &Toolbox,
    context: CallContext<'_>,
    code: String,
    timeout: f64,
) -> CallToolResult {
    let args = serde_json::from_value(json!({
        "code": code,
        "heap": "",
        "execution_timeout_secs": timeout,
    }))
    .expect("fixture arguments decode");
    let result = run_js::call(tools, context, args, false).await.result;
    if result.is_error {
        return result;
    }
    let printed = match result.content.first() {
        Some(Content::Text { text }) => serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|outcome| outcome["output"].as_str().map(|s| s.trim_end().to_owned())),
        _ => None,
    };
    CallToolResult {
        content: vec![Content::text(printed.unwrap_or_default())],
        structured_content: None,
        is_error: false,
        meta: None,
    }
}

pub(super) async fn call(
    tools: &Toolbox,
    context: CallContext<'_>,
    tool: &str,
    raw: Option<&RawValue>,
) -> Result<CallToolResult, ToolCallError> {
    let args: FixtureArgs = raw
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    Ok(match tool {
        GREET => {
            let name = serde_json::to_string(&args.name.unwrap_or_default()).unwrap_or_default();
            run(
                tools,
                context,
                format!("console.log(`Hello, ${{{name}}}!`)"),
                10.0,
            )
            .await
        }
        SLOW_COMPUTE => {
            let seconds = args.seconds.unwrap_or(0.0).clamp(0.0, 600.0);
            let label = serde_json::to_string(&args.label.unwrap_or_default()).unwrap_or_default();
            let code = format!(
                "await new Promise(r => setTimeout(r, {ms})); console.log(`computed ${{{label}}} after {seconds} s`)",
                ms = (seconds * 1000.0) as u64
            );
            run(tools, context, code, seconds + 30.0).await
        }
        FAILING_JOB => {
            let code = "await new Promise(r => setTimeout(r, 1000)); throw new Error('failing_job always fails')";
            run(tools, context, code.to_owned(), 30.0).await
        }
        PROTOCOL_ERROR_JOB => {
            let ran = run(
                tools,
                context,
                "await new Promise(r => setTimeout(r, 500)); 1".into(),
                30.0,
            )
            .await;
            return Err(ToolCallError::Failed(format!(
                "protocol_error_job: its run ended (error: {}) and the fixture turns it into a protocol error",
                ran.is_error
            )));
        }
        other => return Err(ToolCallError::UnknownTool(other.to_owned())),
    })
}
