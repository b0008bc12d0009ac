//! A tool compiled only into the library's unit tests, as the engine's
//! `host/toy.rs` capability is: adding a tool is one declaration (its
//! name, description, argument and result types, which the schemas are
//! derived from) added to a router; listing, dispatch, argument errors
//! and the task policy then know it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ToolRoute;

pub(super) const NAME: &str = "toy_echo";

/// The toy's declaration.
pub(super) fn route() -> ToolRoute {
    ToolRoute::declare::<EchoArgs, Echoed, _>(
        NAME,
        "Echo (test only)",
        "Say `text` back, `times` times.",
        |_, _, args| {
            Box::pin(async move {
                Ok(Echoed {
                    said: args.text.repeat(args.times.unwrap_or(1)),
                })
            })
        },
    )
    .stateful()
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
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

#[cfg(test)]
mod tests {

    use serde_json::json;

    use crate::engine::EngineConfig;
    use crate::protocol::mcp::CallToolParams;
    use crate::protocol::tasks::TaskSupport;
    use crate::tenant::Tenant;
    use crate::tools::{CallContext, ToolCallError, ToolRouter, Toolbox};

    fn toolbox(dir: &tempfile::TempDir, stateless: bool) -> Toolbox {
        crate::tools::toolbox::for_tests(EngineConfig::in_process(), dir, stateless)
    }

    /// The server's own tools plus the toy.
    fn router() -> ToolRouter {
        ToolRouter::builtin().with(super::route())
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

    /// The toy's one declaration is all it takes: it is listed with the
    /// schemas derived from its types (field docs included), called with
    /// its own argument type, refused with the argument a mistake is in,
    /// not available where it is declared stateful, and never a task.
    #[tokio::test]
    async fn a_tool_is_one_declaration() {
        let dir = tempfile::tempdir().unwrap();
        let tools = toolbox(&dir, false);
        let router = router();
        let tenant = Tenant::anonymous();
        // The server's own router does not have it.
        let builtin = ToolRouter::builtin().list(&tools, context(&tenant)).await;
        assert!(builtin.tools.iter().all(|tool| tool.name != super::NAME));
        let listed = router.list(&tools, context(&tenant)).await;
        let toy = listed
            .tools
            .iter()
            .find(|tool| tool.name == super::NAME)
            .expect("the toy is listed");
        assert_eq!(toy.input_schema["required"], json!(["text"]));
        assert_eq!(
            toy.input_schema["properties"]["text"]["description"],
            "What to say back."
        );
        assert_eq!(
            toy.output_schema.as_ref().unwrap()["properties"]["said"]["description"],
            "`text`, `times` times."
        );

        let said = router
            .call(
                &tools,
                context(&tenant),
                params(json!({"text": "ab", "times": 3})),
            )
            .await
            .unwrap();
        assert!(!said.is_error);
        assert_eq!(said.structured_content, Some(json!({"said": "ababab"})));

        let wrong = router
            .call(
                &tools,
                context(&tenant),
                params(json!({"text": "ab", "times": "x"})),
            )
            .await
            .unwrap();
        assert!(wrong.is_error);
        let text = serde_json::to_value(&wrong.content).unwrap()[0]["text"].to_string();
        assert!(text.contains("times"), "{text}");

        assert_eq!(router.task_support(super::NAME), TaskSupport::Forbidden);
        let other = tempfile::tempdir().unwrap();
        let stateless = toolbox(&other, true);
        assert_eq!(
            router
                .call(&stateless, context(&tenant), params(json!({"text": "ab"})))
                .await
                .unwrap_err(),
            ToolCallError::NotAvailable(super::NAME.into())
        );
    }
}
