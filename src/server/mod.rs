//! MCP method semantics, once for both protocol eras: what `initialize` and
//! `server/discover` answer, which methods exist in which era, and how a
//! tool call's protocol failure becomes a JSON-RPC error. The transport
//! decodes HTTP and envelopes and calls in here; a new method is added
//! here and nowhere else (`resources` and `prompts` hold those families).

mod answer;
mod completions;
pub mod extra;
mod heap_files;
mod prompts;
mod resources;
mod skill_methods;
mod task_methods;

pub use answer::{Freshness, MethodError, MethodResult, ReadAnswer};
use answer::{list_params, params_of};
pub use task_methods::ToolExecutor;

use serde_json::value::RawValue;

use crate::meta::MetaStoreError;
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp::{
    ALL_VERSIONS, CallToolParams, DiscoverResult, EmptyResult, InitializeMeta, InitializeResult,
    PromptsCapability, ResourcesCapability, STATELESS_VERSION, ServerCapabilities, ServerInfo,
    TASKS_VERSION, ToolsCapability, method,
};
use crate::protocol::skills;
use crate::session::LogicalSession;
use crate::skills::Skills;
use crate::tenant::Tenant;
use crate::tools::{CallContext, ToolRouter, Toolbox};

/// For the model, returned by `initialize` and `server/discover`: heaps in
/// two sentences, then continuity.
pub const INSTRUCTIONS: &str = "Run JavaScript or TypeScript with the run_js tool; every successful run saves the whole V8 heap and \
returns its key as `heap`. Pass that key back as `heap` to continue from exactly that state, in this or any later session. \
When a client initializes with an X-MCP-Session-Id that has logged runs, this result's _meta \"mcp-v8/continuity\" gives the \
number of runs and the last output heap, so the agent can resume where it left off.";

/// This server's `serverInfo`.
pub const SERVER_INFO: ServerInfo = ServerInfo {
    name: "mcp-v8-lambda",
    version: env!("CARGO_PKG_VERSION"),
};

/// The MCP server behind either transport: its tools and what it says of
/// itself. Cheap to share; holds no per-request state.
#[derive(Debug, Clone)]
pub struct McpServer {
    tools: Toolbox,
    /// The tools it lists and calls, on `tools`.
    router: ToolRouter,
    /// MCP tasks, when the server keeps them.
    tasks: Option<std::sync::Arc<crate::tasks::Tasks>>,
    /// The Agent Skills it serves (the Skills extension), when any.
    skills: std::sync::Arc<Skills>,
    /// Prompts and resources a build adds, when any.
    extra: Option<std::sync::Arc<dyn extra::ExtraContent>>,
}

impl McpServer {
    /// A server offering the tools of `router`, on `tools`.
    pub fn new(tools: Toolbox, router: ToolRouter) -> Self {
        Self {
            tools,
            router,
            tasks: None,
            skills: Default::default(),
            extra: None,
        }
    }

    /// The same server, with the prompts and resources `content` adds.
    pub fn with_content(self, content: std::sync::Arc<dyn extra::ExtraContent>) -> Self {
        Self {
            extra: Some(content),
            ..self
        }
    }

    /// The same server, serving `skills`.
    pub fn with_skills(self, skills: Skills) -> Self {
        Self {
            skills: std::sync::Arc::new(skills),
            ..self
        }
    }

    /// The same server, offering tasks kept by `tasks`.
    pub fn with_tasks(self, tasks: crate::tasks::Tasks) -> Self {
        Self {
            tasks: Some(std::sync::Arc::new(tasks)),
            ..self
        }
    }

    /// Its tasks, when it has them (a Lambda invocation runs handed ones).
    pub fn tasks(&self) -> Option<&crate::tasks::Tasks> {
        self.tasks.as_deref()
    }

    /// How long a suspended run waits for the person, in seconds.
    pub fn suspended_run_ttl_secs(&self) -> i64 {
        self.tools.suspended_run_ttl_secs
    }

    /// What this server offers, in `initialize` and `server/discover` alike:
    /// resources where there are session logs or skills, prompts only where
    /// there are session logs; tasks in the form of `version` (the
    /// experimental form in 2025-11-25, the extension in 2026-07-28); the
    /// Skills extension in every era where there are skills.
    fn capabilities(&self, version: &str) -> ServerCapabilities {
        let stateful = !self.tools.stateless;
        let tasks = self.tasks.is_some();
        let serves_skills = !self.skills.is_empty();
        let mut extensions = serde_json::Map::new();
        if tasks && version == STATELESS_VERSION {
            extensions.insert(
                crate::protocol::tasks::EXTENSION.into(),
                serde_json::json!({}),
            );
        }
        if serves_skills {
            extensions.insert(
                skills::EXTENSION.into(),
                serde_json::json!({"directoryRead": true}),
            );
        }
        ServerCapabilities {
            tools: ToolsCapability {
                list_changed: false,
            },
            resources: (stateful || serves_skills).then_some(ResourcesCapability {
                subscribe: false,
                list_changed: false,
            }),
            prompts: stateful.then_some(PromptsCapability {
                list_changed: false,
            }),
            logging: Some(serde_json::json!({})),
            completions: stateful.then(|| serde_json::json!({})),
            tasks: (tasks && version == TASKS_VERSION).then(|| {
                serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
            }),
            extensions: (!extensions.is_empty()).then_some(serde_json::Value::Object(extensions)),
        }
    }

    /// The `initialize` result for a negotiated `version`, with the logical
    /// session's continuity (in `tenant`'s namespace) when the client named
    /// one.
    pub async fn initialize(
        &self,
        version: &'static str,
        tenant: &Tenant,
        logical_session: Option<&LogicalSession>,
    ) -> Result<InitializeResult, MetaStoreError> {
        let continuity = match logical_session {
            Some(name) => self.tools.continuity(tenant, name).await?,
            None => None,
        };
        Ok(InitializeResult {
            protocol_version: version,
            capabilities: self.capabilities(version),
            server_info: SERVER_INFO,
            instructions: INSTRUCTIONS,
            meta: continuity.map(|continuity| InitializeMeta { continuity }),
        })
    }

    /// One request after `initialize` (session era) or any 2026-07-28
    /// request: the era is the context's protocol version.
    pub async fn handle(
        &self,
        context: CallContext<'_>,
        rpc_method: &str,
        params: Option<&RawValue>,
    ) -> Result<MethodResult, MethodError> {
        let sessionless = context.protocol_version == STATELESS_VERSION;
        let stateful = !self.tools.stateless;
        let has_skills = !self.skills.is_empty();
        if let Some(tasks) = &self.tasks
            && let Some(answer) = task_methods::handle(tasks, context, rpc_method, params).await
        {
            return answer;
        }
        match rpc_method {
            method::PING if !sessionless => Ok(MethodResult::Empty(EmptyResult {})),
            method::SERVER_DISCOVER if sessionless => Ok(MethodResult::Discover(DiscoverResult {
                supported_versions: &ALL_VERSIONS,
                capabilities: self.capabilities(STATELESS_VERSION),
                instructions: INSTRUCTIONS,
            })),
            method::TOOLS_LIST => Ok(MethodResult::Tools(
                self.router.list(&self.tools, context).await,
            )),
            method::TOOLS_CALL => {
                let params: CallToolParams = params_of(params)?;
                if let Some(tasks) = &self.tasks
                    && let Some(answer) =
                        task_methods::route_call(&self.router, tasks, context, &params).await?
                {
                    return Ok(answer);
                }
                Ok(
                    match self
                        .router
                        .call_or_ask(&self.tools, context, params)
                        .await?
                    {
                        crate::tools::Called::Result(result) => MethodResult::Call(result),
                        crate::tools::Called::InputRequired(asked) => {
                            MethodResult::InputRequired(asked)
                        }
                    },
                )
            }
            method::RESOURCES_LIST if stateful || has_skills => {
                let params = list_params(params)?;
                let first = params.cursor.is_none();
                let mut listed = if stateful {
                    resources::list(&self.tools, context, params).await?
                } else {
                    crate::protocol::mcp::ListResourcesResult {
                        resources: Vec::new(),
                        next_cursor: None,
                    }
                };
                // Each skill's SKILL.md, and the resources this build adds
                // (the conformance fixtures' server), on the first page.
                if first {
                    listed.resources.splice(0..0, self.skills.resources());
                    if let Some(extra) = &self.extra {
                        listed.resources.splice(0..0, extra.resources());
                    }
                }
                Ok(MethodResult::Resources(listed))
            }
            method::RESOURCE_TEMPLATES_LIST if stateful => {
                list_params(params)?;
                let mut templates = resources::templates();
                if let Some(extra) = &self.extra {
                    templates.resource_templates.extend(extra.templates());
                }
                Ok(MethodResult::ResourceTemplates(templates))
            }
            method::RESOURCES_READ if stateful || has_skills => {
                let read: crate::protocol::mcp::ReadResourceParams = params_of(params)?;
                if let Some(contents) = self.skills.read(&read.uri) {
                    return Ok(MethodResult::Read(ReadAnswer {
                        result: crate::protocol::mcp::ReadResourceResult {
                            contents: vec![contents],
                        },
                        freshness: Freshness::Public,
                    }));
                }
                if !stateful {
                    return Err(resources::not_found(&read.uri));
                }
                if let Some(result) = self.extra.as_ref().and_then(|extra| extra.read(&read.uri)) {
                    return Ok(MethodResult::Read(ReadAnswer {
                        result,
                        freshness: answer::Freshness::Stable,
                    }));
                }
                let (result, freshness) = resources::read(&self.tools, context, read).await?;
                Ok(MethodResult::Read(ReadAnswer { result, freshness }))
            }
            method::PROMPTS_LIST if stateful => {
                list_params(params)?;
                let mut listed = prompts::list();
                if let Some(extra) = &self.extra {
                    listed.prompts.extend(extra.prompts());
                }
                Ok(MethodResult::Prompts(listed))
            }
            method::PROMPTS_GET if stateful => {
                let get: crate::protocol::mcp::GetPromptParams = params_of(params)?;
                if let Some(answer) = self.extra.as_ref().and_then(|extra| extra.get_prompt(&get)) {
                    return answer
                        .map(MethodResult::Prompt)
                        .map_err(|message| MethodError::new(code::INVALID_PARAMS, message));
                }
                Ok(MethodResult::Prompt(
                    prompts::get(&self.tools, context, get).await?,
                ))
            }
            other if has_skills && skills::is_skills_method(other) => {
                skill_methods::handle(&self.skills, other, params, !sessionless)
            }
            method::COMPLETION_COMPLETE if stateful => Ok(MethodResult::Complete(
                completions::complete(
                    &self.tools,
                    self.extra.as_deref(),
                    context,
                    params_of(params)?,
                )
                .await?,
            )),
            method::INITIALIZE if !sessionless => Err(MethodError::new(
                code::INVALID_REQUEST,
                "this session is already initialized",
            )),
            other if sessionless => Err(MethodError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {other} (protocol {STATELESS_VERSION})"),
            )),
            other => Err(MethodError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        }
    }
}
