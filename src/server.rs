//! MCP method semantics, once for both protocol eras: what `initialize` and
//! `server/discover` answer, which methods exist in which era, and how a
//! tool call's protocol failure becomes a JSON-RPC error. The transport
//! decodes HTTP and envelopes and calls in here; a new method (resources,
//! prompts) is added here and nowhere else.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::meta::MetaStoreError;
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp::{
    ALL_VERSIONS, CacheHints, CallToolParams, CallToolResult, DiscoverResult, EmptyResult,
    INSTRUCTIONS, InitializeMeta, InitializeResult, ListToolsResult, SERVER_INFO,
    STATELESS_VERSION, ServerCapabilities, ToolsCapability, method,
};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
use crate::tools::{CallContext, ToolCallError, Toolbox};

/// The tool list and discovery answer change only with a deployment, and are
/// the same for every caller.
const PUBLIC_CACHE: CacheHints = CacheHints {
    ttl_ms: 300_000,
    cache_scope: "public",
};

/// The MCP server behind either transport: its tools and what it says of
/// itself. Cheap to share; holds no per-request state.
#[derive(Debug, Clone)]
pub struct McpServer {
    tools: Toolbox,
}

/// A method's result, typed per method; serializes as that result's own
/// fields, so either era can wrap it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum MethodResult {
    /// `ping`.
    Empty(EmptyResult),
    /// `server/discover`.
    Discover(DiscoverResult),
    /// `tools/list`.
    Tools(ListToolsResult),
    /// `tools/call`.
    Call(CallToolResult),
}

impl MethodResult {
    /// Caching hints for a 2026-07-28 answer: only results that are the same
    /// for every caller carry them.
    pub fn cache_hints(&self) -> Option<CacheHints> {
        match self {
            Self::Discover(_) | Self::Tools(_) => Some(PUBLIC_CACHE),
            Self::Empty(_) | Self::Call(_) => None,
        }
    }
}

/// A request answered with a JSON-RPC error rather than a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct MethodError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// For the client.
    pub message: String,
}

impl MethodError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<ToolCallError> for MethodError {
    fn from(error: ToolCallError) -> Self {
        let code = match error {
            ToolCallError::UnknownTool(_) => code::INVALID_PARAMS,
            ToolCallError::NotAvailable(_) => code::METHOD_NOT_FOUND,
        };
        Self::new(code, error.to_string())
    }
}

impl McpServer {
    /// A server offering `tools`.
    pub fn new(tools: Toolbox) -> Self {
        Self { tools }
    }

    /// What this server offers, in `initialize` and `server/discover` alike.
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: ToolsCapability {
                list_changed: false,
            },
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
            capabilities: self.capabilities(),
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
        match rpc_method {
            method::PING if !sessionless => Ok(MethodResult::Empty(EmptyResult {})),
            method::SERVER_DISCOVER if sessionless => Ok(MethodResult::Discover(DiscoverResult {
                supported_versions: &ALL_VERSIONS,
                capabilities: self.capabilities(),
                instructions: INSTRUCTIONS,
            })),
            method::TOOLS_LIST => Ok(MethodResult::Tools(self.tools.list(context))),
            method::TOOLS_CALL => {
                let params: CallToolParams =
                    serde_json::from_str(params.map_or("null", RawValue::get)).map_err(|e| {
                        MethodError::new(code::INVALID_PARAMS, format!("Invalid params: {e}"))
                    })?;
                Ok(MethodResult::Call(self.tools.call(context, params).await?))
            }
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
