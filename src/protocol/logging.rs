//! MCP logging: the levels (RFC 5424's, as the spec names them), how a
//! client asks for log messages in each era (2025-11-25's
//! `logging/setLevel` for its session, 2026-07-28's per-request
//! `_meta["io.modelcontextprotocol/logLevel"]`), and `notifications/message`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `logging/setLevel` (session era only; 2026-07-28 removed it).
pub const SET_LEVEL: &str = "logging/setLevel";
/// A log message, server to client.
pub const MESSAGE: &str = "notifications/message";
/// The 2026-07-28 request `_meta` key that opts the request in to log
/// messages from this level up; without it a request gets none.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A log message's severity, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `console.debug`.
    Debug,
    /// `console.log` and `console.info`.
    Info,
    /// Normal but significant.
    Notice,
    /// `console.warn`.
    Warning,
    /// `console.error`, `console.trace` and failed assertions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// The levels as the wire spells them, least severe first.
pub const LEVELS: &str = "debug, info, notice, warning, error, critical, alert, emergency";

impl LoggingLevel {
    /// The level a client sent, or a message saying which levels exist.
    pub fn parse(value: &Value, field: &str) -> Result<Self, String> {
        serde_json::from_value(value.clone())
            .map_err(|_| format!("{field} must be one of {LEVELS}; got {value}"))
    }
}

/// `logging/setLevel`'s params.
#[derive(Debug, Deserialize)]
pub struct SetLevelParams {
    /// Kept raw, so a bad level is named in the error.
    pub level: Value,
}

/// `notifications/message`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Its severity.
    pub level: LoggingLevel,
    /// What wrote it (`console`, for a run's console lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: a console line's text.
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_by_severity_and_a_bad_one_names_them_all() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Warning < LoggingLevel::Emergency);
        let level = LoggingLevel::parse(&Value::from("warning"), "level");
        assert_eq!(level, Ok(LoggingLevel::Warning));
        let why = LoggingLevel::parse(&Value::from("verbose"), "level").unwrap_err();
        assert!(why.contains(LEVELS) && why.contains("\"verbose\""), "{why}");
    }
}
