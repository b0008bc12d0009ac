//! The conformance suite's logging and progress fixtures and 2026-07-28
//! diagnostic tools that are not runs that ask: runs whose console lines
//! the server streams as log messages when the client asked for them (a
//! session's `logging/setLevel`, a request's `logLevel`), a run that
//! reports its progress (`reportProgress()`), a tool that needs a client
//! capability this server never uses, refused with the typed error the
//! layer gives any such call, and a tool that mirrors an argument in a
//! header (SEP-2243), which the layer checks before the tool is called.

use futures_util::future::BoxFuture;
use serde_json::json;
use serde_json::value::RawValue;

use crate::fixtures::tool;
use crate::run::{printed, run_answer};
use mcp_v8_lambda::protocol::mcp::Tool;
use mcp_v8_lambda::tools::{CallContext, ToolAnswer, ToolCallError, Toolbox};

const WITH_LOGGING: &str = "test_tool_with_logging";
const WITH_PROGRESS: &str = "test_tool_with_progress";
const LOGGING_TOOL: &str = "test_logging_tool";
const MISSING_CAPABILITY: &str = "test_missing_capability";
const CUSTOM_HEADERS: &str = "test_custom_headers";

/// Their listings.
pub(crate) fn tools() -> Vec<Tool> {
    let none = || json!({"type": "object", "properties": {}});
    vec![
        tool(
            WITH_LOGGING,
            "Conformance fixture: a run that writes three info lines 50 ms apart.",
            none(),
        ),
        tool(
            WITH_PROGRESS,
            "Conformance fixture: a run that reports 0, 50 and 100 of 100, 50 ms apart.",
            none(),
        ),
        tool(
            LOGGING_TOOL,
            "Conformance fixture (2026-07-28 diagnostics): a run that writes a line at each console level.",
            none(),
        ),
        tool(
            MISSING_CAPABILITY,
            "Conformance fixture (2026-07-28 diagnostics): needs the client's sampling capability.",
            none(),
        ),
        tool(
            CUSTOM_HEADERS,
            "Conformance fixture (SEP-2243): `region` is mirrored in the Mcp-Param-Region header.",
            json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}
                },
                "required": ["region"]
            }),
        ),
    ]
}

/// Whether `tool` is one of these.
pub(crate) fn has(tool: &str) -> bool {
    [
        WITH_LOGGING,
        WITH_PROGRESS,
        LOGGING_TOOL,
        MISSING_CAPABILITY,
        CUSTOM_HEADERS,
    ]
    .contains(&tool)
}

/// A call of `tool`, when it is one of these.
pub(crate) fn call<'a>(
    tools: &'a Toolbox,
    context: CallContext<'a>,
    tool: &'a str,
    arguments: Option<&'a RawValue>,
) -> Option<BoxFuture<'a, Result<ToolAnswer, ToolCallError>>> {
    let code = match tool {
        // Called only once the layer found the header and the body agree.
        CUSTOM_HEADERS => {
            let region = arguments
                .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok())
                .and_then(|args| args.get("region").cloned())
                .unwrap_or_default();
            let code = format!("console.log(`region: ${{{region}}}`)");
            return Some(Box::pin(async move {
                let ran = run_answer(tools, context, code, 10.0).await;
                Ok(ToolAnswer::from(printed(ran.result)))
            }));
        }
        WITH_LOGGING => {
            "const pause = () => new Promise(r => setTimeout(r, 50)); \
             console.info('Tool execution started'); await pause(); \
             console.info('Tool processing data'); await pause(); \
             console.info('Tool execution completed')"
        }
        WITH_PROGRESS => {
            "const pause = () => new Promise(r => setTimeout(r, 50)); \
             reportProgress(0, 100); await pause(); \
             reportProgress(50, 100, 'halfway'); await pause(); \
             reportProgress(100, 100, 'done'); console.log('progress reported')"
        }
        LOGGING_TOOL => {
            "console.debug('a debug line'); console.log('an info line'); \
             console.warn('a warning line'); console.error('an error line')"
        }
        MISSING_CAPABILITY => {
            let declared = context
                .client_capabilities
                .is_some_and(|capabilities| capabilities.contains_key("sampling"));
            return Some(Box::pin(async move {
                if !declared {
                    return Err(ToolCallError::MissingClientCapability("sampling".into()));
                }
                // This server sends no sampling request; a client that could
                // take one learns that the check passed.
                let ran = run_answer(
                    tools,
                    context,
                    "console.log('sampling declared')".into(),
                    10.0,
                );
                Ok(ToolAnswer::from(printed(ran.await.result)))
            }));
        }
        _ => return None,
    };
    Some(Box::pin(async move {
        let ran = run_answer(tools, context, code.to_owned(), 10.0).await;
        Ok(ToolAnswer::from(printed(ran.result)))
    }))
}
