//! What a run reports to its caller while it runs: its console lines, for
//! a caller that asked for them as MCP log messages (docs/protocol.md,
//! "Logging"), and its own progress (`reportProgress()`, `host/progress.rs`).
//! The tool result still holds the whole output; the lines copied here are
//! bounded, so a loop that prints cannot flood the client, and the bound is
//! said once when hit.

use serde::{Deserialize, Serialize};

/// A log line's severity, least severe first: MCP's levels (RFC 5424's),
/// which the transport maps from and to the wire's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// One progress report of a run, as the caller sends it on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProgress {
    /// How far, in the run's own units; increases with each report.
    pub progress: f64,
    /// Of how much, when the run knows.
    pub total: Option<f64>,
    /// What it is doing.
    pub message: Option<String>,
}

/// Most lines forwarded per run.
pub(crate) const MAX_LINES: usize = 1000;
/// Most bytes forwarded per run.
pub(crate) const MAX_BYTES: usize = 256 * 1024;
/// A longer line is forwarded cut, with a marker.
const MAX_LINE_BYTES: usize = 8 * 1024;

/// One console line as a log message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// From the console method: `debug`, `info` (`log`), `warning`, `error`.
    pub level: LogLevel,
    /// The line, without the method's `[WARN] `-style prefix.
    pub text: String,
}

/// The lines waiting to be sent, from `min` up.
#[derive(Debug)]
pub(crate) struct ConsoleLog {
    min: LogLevel,
    pending: Vec<LogEntry>,
    lines: usize,
    bytes: usize,
    /// The bound was hit and said.
    full: bool,
}

impl ConsoleLog {
    pub(crate) fn new(min: LogLevel) -> Self {
        Self {
            min,
            pending: Vec::new(),
            lines: 0,
            bytes: 0,
            full: false,
        }
    }

    pub(crate) fn min(&self) -> LogLevel {
        self.min
    }

    /// Queues `line` as the console wrote it; says whether anything was
    /// queued.
    pub(crate) fn push_line(&mut self, line: &str) -> bool {
        let (level, text) = level_of(line);
        if level < self.min || self.full {
            return false;
        }
        if self.lines >= MAX_LINES || self.bytes + text.len() > MAX_BYTES {
            self.full = true;
            self.pending.push(LogEntry {
                level: LogLevel::Warning,
                text: format!(
                    "console output past {MAX_LINES} lines or {} KiB is not sent as log messages; the tool result holds it",
                    MAX_BYTES / 1024
                ),
            });
            return true;
        }
        let text = cut(text);
        self.lines += 1;
        self.bytes += text.len();
        self.pending.push(LogEntry { level, text });
        true
    }

    /// Queues entries another process already filtered and bounded (an
    /// engine worker's).
    pub(crate) fn push_entries(&mut self, entries: Vec<LogEntry>) {
        self.pending.extend(entries);
    }

    pub(crate) fn take(&mut self) -> Vec<LogEntry> {
        std::mem::take(&mut self.pending)
    }
}

/// A console line's level, from the prefix its method wrote
/// (`web/console.rs`), and its text without that prefix.
fn level_of(line: &str) -> (LogLevel, &str) {
    const PREFIXES: [(&str, LogLevel); 4] = [
        ("[DEBUG] ", LogLevel::Debug),
        ("[INFO] ", LogLevel::Info),
        ("[WARN] ", LogLevel::Warning),
        ("[ERROR] ", LogLevel::Error),
    ];
    PREFIXES
        .iter()
        .find_map(|(prefix, level)| line.strip_prefix(prefix).map(|text| (*level, text)))
        .unwrap_or((LogLevel::Info, line))
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_LINE_BYTES {
        return text.to_owned();
    }
    let end = text.floor_char_boundary(MAX_LINE_BYTES);
    format!(
        "{}… [{} more bytes in the tool result]",
        &text[..end],
        text.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_their_method_level_and_lower_ones_are_not_sent() {
        let mut log = ConsoleLog::new(LogLevel::Info);
        assert!(!log.push_line("[DEBUG] detail"));
        assert!(log.push_line("plain"));
        assert!(log.push_line("[WARN] careful"));
        assert!(log.push_line("[ERROR] Trace: here"));
        let levels: Vec<_> = log.take().into_iter().map(|e| (e.level, e.text)).collect();
        assert_eq!(
            levels,
            [
                (LogLevel::Info, "plain".to_owned()),
                (LogLevel::Warning, "careful".to_owned()),
                (LogLevel::Error, "Trace: here".to_owned()),
            ]
        );
        assert!(log.take().is_empty());
    }

    #[test]
    fn a_printing_loop_is_bounded_and_the_bound_is_said_once() {
        let mut log = ConsoleLog::new(LogLevel::Debug);
        for i in 0..MAX_LINES + 50 {
            log.push_line(&format!("line {i}"));
        }
        let sent = log.take();
        assert_eq!(sent.len(), MAX_LINES + 1);
        let last = sent.last().expect("lines");
        assert_eq!(last.level, LogLevel::Warning);
        assert!(
            last.text.contains("the tool result holds it"),
            "{}",
            last.text
        );
        let long = "é".repeat(MAX_LINE_BYTES);
        let mut log = ConsoleLog::new(LogLevel::Debug);
        log.push_line(&long);
        let text = &log.take()[0].text;
        assert!(text.ends_with("more bytes in the tool result]"), "{text}");
    }
}
