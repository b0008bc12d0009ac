//! The process's log lines: JSON or text, to stderr.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::LogFormat;
use crate::logs::{JsonLines, SpanFields};

/// Whether log lines may carry terminal colours: only to a terminal, and
/// not when `NO_COLOR` is set (no-color.org).
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `RUST_LOG` when set, else the level Lambda's logging configuration asks
/// for, else `info`. The MCP client crate's own events stay off unless
/// `RUST_LOG` names `rmcp`: some carry an upstream's URL (in its errors) or
/// a message's arguments (at trace), which code mode keeps out of logs
/// (docs/engine.md, "Code mode"); its per-call event says what happened.
pub(super) fn init(format: LogFormat, level: Option<&str>) {
    let named = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("rmcp"));
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(level.unwrap_or("info")));
    let filter = if named {
        filter
    } else {
        filter.add_directive("rmcp=off".parse().expect("a valid directive"))
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    match format {
        // Request fields as top-level keys (mcp_v8_lambda::logs).
        LogFormat::Json => tracing_subscriber::registry()
            .with(filter)
            .with(SpanFields)
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(JsonLines)
                    .with_writer(std::io::stderr),
            )
            .init(),
        LogFormat::Text => builder.with_env_filter(filter).init(),
    }
}
