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
}

/// Whether a tool's calls may become tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: it answers at once.
    Forbidden,
    /// When the client asks (2025-11-25) or, with the extension, when the
    /// run is still going after a short wait.
    Optional,
    /// Whenever the client can take a task; answered directly otherwise.
    Always,
    /// Only as a task: refused to a client that cannot take one.
    Required,
}
