//! A tool compiled only into the library's unit tests, as the engine's
//! `host/toy.rs` capability is: adding a tool is its module (a listing, an
//! argument type and a handler) and one route in `routes.rs`; listing,
//! dispatch, argument errors and the task policy then know it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema;
use super::toolbox::{CallContext, Toolbox, structured_result};
use crate::protocol::mcp::{CallToolResult, Tool, ToolAnnotations};

pub(super) const NAME: &str = "toy_echo";

pub(super) fn describe() -> Tool {
    Tool {
        name: NAME,
        title: "Echo (test only)",
        description: "Say `text` back, `times` times.".into(),
        input_schema: schema::input::<EchoArgs>(),
        execution: None,
        meta: None,
        output_schema: Some(schema::output::<Echoed>()),
        annotations: ToolAnnotations::READ_ONLY,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EchoArgs {
    /// What to say back.
    text: String,
    /// How many times (default 1).
    #[serde(default)]
    times: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Echoed {
    /// `text`, `times` times.
    said: String,
}

pub(super) async fn call(
    _: &Toolbox,
    _: CallContext<'_>,
    args: EchoArgs,
    structured: bool,
) -> CallToolResult {
    let said = args.text.repeat(args.times.unwrap_or(1));
    structured_result(&Echoed { said }, false, structured)
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use crate::engine::EngineConfig;
    use crate::protocol::mcp::CallToolParams;
    use crate::protocol::tasks::TaskSupport;
    use crate::tenant::Tenant;
    use crate::tools::{CallContext, ToolCallError, Toolbox};

    fn toolbox(dir: &tempfile::TempDir, stateless: bool) -> Toolbox {
        crate::tools::toolbox::for_tests(EngineConfig::default(), dir, stateless)
    }

    fn context(tenant: &Tenant) -> CallContext<'_> {
        crate::tools::toolbox::context_for_tests(tenant, "2025-11-25")
    }

    fn params(arguments: serde_json::Value) -> CallToolParams {
        CallToolParams {
            name: super::NAME.into(),
            arguments: Some(serde_json::value::to_raw_value(&arguments).unwrap()),
            task: None,
            input_responses: None,
            request_state: None,
        }
    }

    /// The toy's one route is all it takes: it is listed with its
    /// schemas, called with its own argument type, refused with the
    /// argument a mistake is in, not available where its route says
    /// stateful, and never a task.
    #[tokio::test]
    async fn a_tool_is_one_route_and_its_module() {
        let dir = tempfile::tempdir().unwrap();
        let tools = toolbox(&dir, false);
        let tenant = Tenant::anonymous();
        let listed = tools.list(context(&tenant)).await;
        let toy = listed
            .tools
            .iter()
            .find(|tool| tool.name == super::NAME)
            .expect("the toy is listed");
        assert_eq!(toy.input_schema["required"], json!(["text"]));
        assert!(toy.output_schema.is_some());

        let said = tools
            .call(context(&tenant), params(json!({"text": "ab", "times": 3})))
            .await
            .unwrap();
        assert!(!said.is_error);
        assert_eq!(said.structured_content, Some(json!({"said": "ababab"})));

        let wrong = tools
            .call(
                context(&tenant),
                params(json!({"text": "ab", "times": "x"})),
            )
            .await
            .unwrap();
        assert!(wrong.is_error);
        let text = serde_json::to_value(&wrong.content).unwrap()[0]["text"].to_string();
        assert!(text.contains("times"), "{text}");

        assert_eq!(tools.task_support(super::NAME), TaskSupport::Forbidden);
        let other = tempfile::tempdir().unwrap();
        let stateless = toolbox(&other, true);
        assert_eq!(
            stateless
                .call(context(&tenant), params(json!({"text": "ab"})))
                .await
                .unwrap_err(),
            ToolCallError::NotAvailable(super::NAME.into())
        );
    }
}
