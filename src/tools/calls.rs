//! What a `tools/call` can be besides a result: a protocol error, or a
//! run that may become an MCP task.

/// A `tools/call` that is a protocol error rather than a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// No tool of that name here.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// A stateful tool called on a stateless server.
    #[error("{0} is not available: this server is stateless")]
    NotAvailable(String),
    /// The call failed inside the server (an internal error).
    #[error("{0}")]
    Failed(String),
    /// The call's protocol fields are wrong; the message says how.
    #[error("{0}")]
    InvalidParams(String),
    /// The call needs a capability the client did not declare (its name,
    /// as in `ClientCapabilities`: `sampling`, `elicitation`, `roots`).
    #[error("this call needs the client capability {0:?}, which the request did not declare")]
    MissingClientCapability(String),
    /// An argument mirrored in an `Mcp-Param-*` header disagrees with it
    /// (SEP-2243); the message says which.
    #[error("{0}")]
    HeaderMismatch(String),
}

pub use crate::protocol::tasks::TaskSupport;
