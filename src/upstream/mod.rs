//! Code mode: the tools of other MCP servers ("upstreams"), which the
//! operator lists in `MCP_V8_MCP_SERVERS` and code in runs calls through
//! the global `mcp` (docs/engine.md, "Code mode").
//!
//! - [`client`]: one MCP client per upstream and process, over Streamable
//!   HTTP, the protocol era negotiated; the calls of a run.
//! - [`catalog`]: what the model reads about the upstreams: lines of
//!   `run_js`'s description and TypeScript declarations of their tools.
//! - [`asks`]: an upstream that asks the person during a call.
//!
//! # Contract
//! - An upstream's headers (its credentials) are added by the host's HTTP
//!   client; they never enter an isolate, a heap, a log line or a tool
//!   result: every message that leaves this module has the upstream's URL
//!   and header values scrubbed from it.
//! - An upstream URL passes the egress policy's fixed rules when it is
//!   configured (never the Lambda Runtime API, link-local or metadata
//!   addresses) and again on every connection (a name must resolve to
//!   public addresses; private ones are reached by IP literal only).

pub mod asks;
mod call;
mod cancel;
pub mod catalog;
pub(crate) mod client;
mod flight;
mod resolve;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

pub use asks::{Answers, Asks, ProgressSink, Resume, UpstreamAnswer};
pub use call::{CallError, ToolInfo};
pub use client::Upstreams;

/// `run_js`'s paragraph on the upstreams as last made ([`catalog`]), kept
/// by [`Upstreams`].
pub(crate) struct Cached {
    pub(crate) text: String,
    /// When it was made, for a paragraph that lacks a server's tools.
    pub(crate) incomplete_since: Option<std::time::Instant>,
}

/// Calls of one run, for its outcome.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct McpCount {
    /// `mcp.callTool` calls started (and the proxies' calls).
    pub count: u32,
}

/// One upstream as the operator wrote it.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamServer {
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// Added to every request to it; secrets, never shown.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// What the operator configured, as the engine hands it to each run (and
/// over the pipe to engine workers). `Debug` prints neither URLs nor
/// header values.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// `MCP_V8_MCP_SERVERS`: name → server; empty turns `mcp` off.
    pub servers: BTreeMap<String, UpstreamServer>,
    /// Calls per run (`MCP_V8_MCP_MAX_CALLS`).
    pub max_calls: u32,
    /// Calls in flight at once per run (`MCP_V8_MCP_CONCURRENCY`).
    pub concurrency: u32,
    /// Longest one call may take (`MCP_V8_MCP_CALL_TIMEOUT_MS`); a run
    /// that ends first cancels its calls.
    pub call_timeout_ms: u64,
    /// Largest answer read from an upstream, in MiB
    /// (`MCP_V8_MCP_MAX_RESPONSE_MB`).
    pub max_response_mb: u32,
    /// `AWS_LAMBDA_RUNTIME_API` (`host:port`), never reachable.
    pub runtime_api: Option<String>,
    /// How long a session-era call whose upstream asked the person is held
    /// for the answer (`MCP_V8_SUSPENDED_RUN_TTL_SECS`, as the run waits).
    #[serde(default = "default_held_secs")]
    pub held_secs: u64,
}

fn default_held_secs() -> u64 {
    UpstreamConfig::DEFAULT_HELD_SECS
}

impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamConfig")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("max_calls", &self.max_calls)
            .field("concurrency", &self.concurrency)
            .field("call_timeout_ms", &self.call_timeout_ms)
            .field("max_response_mb", &self.max_response_mb)
            .field("held_secs", &self.held_secs)
            .finish_non_exhaustive()
    }
}

/// Names `mcp` itself has, which a server cannot take (its proxy would be
/// hidden), and names promises and serializers look up.
const RESERVED: &[&str] = &[
    "servers",
    "listTools",
    "callTool",
    "then",
    "toJSON",
    "constructor",
];

impl UpstreamConfig {
    /// Calls per run when `MCP_V8_MCP_MAX_CALLS` is unset.
    pub const DEFAULT_MAX_CALLS: u32 = 50;
    /// Calls at once when `MCP_V8_MCP_CONCURRENCY` is unset.
    pub const DEFAULT_CONCURRENCY: u32 = 6;
    /// One call's longest time when `MCP_V8_MCP_CALL_TIMEOUT_MS` is unset.
    pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 30_000;
    /// The largest answer when `MCP_V8_MCP_MAX_RESPONSE_MB` is unset.
    pub const DEFAULT_MAX_RESPONSE_MB: u32 = 16;
    /// A held call's longest wait when `MCP_V8_SUSPENDED_RUN_TTL_SECS` is
    /// unset (the suspended run's default).
    pub const DEFAULT_HELD_SECS: u64 = 3_600;

    /// Off: no upstream.
    pub fn off() -> Self {
        Self {
            max_calls: Self::DEFAULT_MAX_CALLS,
            concurrency: Self::DEFAULT_CONCURRENCY,
            call_timeout_ms: Self::DEFAULT_CALL_TIMEOUT_MS,
            max_response_mb: Self::DEFAULT_MAX_RESPONSE_MB,
            held_secs: Self::DEFAULT_HELD_SECS,
            ..Self::default()
        }
    }

    /// Whether any upstream is configured.
    pub fn enabled(&self) -> bool {
        !self.servers.is_empty()
    }

    /// Reads `MCP_V8_MCP_SERVERS`: a JSON object of name → `{url,
    /// headers}`, or the path of a file holding one. Each URL is checked
    /// against the egress policy's fixed rules (`runtime_api`:
    /// `AWS_LAMBDA_RUNTIME_API`). Errors name the server, never a header
    /// value.
    pub fn parse_servers(
        value: &str,
        runtime_api: Option<&str>,
    ) -> Result<BTreeMap<String, UpstreamServer>, String> {
        let text = if value.trim_start().starts_with('{') {
            value.to_owned()
        } else {
            std::fs::read_to_string(value.trim())
                .map_err(|e| format!("cannot read the servers file: {e}"))?
        };
        // serde_json's messages quote no input, so no secret is echoed.
        let servers: BTreeMap<String, UpstreamServer> =
            serde_json::from_str(&text).map_err(|e| {
                format!("not a JSON object of name to {{\"url\": …, \"headers\": {{…}}}}: {e}")
            })?;
        for (name, server) in &servers {
            check_name(name)?;
            let url = Url::parse(&server.url)
                .map_err(|e| format!("server {name:?}: the url is not a URL ({e})"))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "server {name:?}: the url must be http or https (Streamable HTTP)"
                ));
            }
            let origin = url.origin().ascii_serialization();
            crate::egress::Policy::new(std::slice::from_ref(&origin), runtime_api)
                .and_then(|policy| policy.check_url(&url))
                .map_err(|e| {
                    format!(
                        "server {name:?}: refused by the egress policy: {}",
                        e.reason()
                    )
                })?;
            for (header, value) in &server.headers {
                http::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| format!("server {name:?}: {header:?} is not a header name"))?;
                http::HeaderValue::from_str(value).map_err(|_| {
                    format!("server {name:?}: the value of {header} is not a header value")
                })?;
            }
        }
        Ok(servers)
    }
}

/// A server name is an identifier-like word, so that `mcp.<name>` and the
/// resource URI `mcp-v8://mcp-servers/<name>/tools.d.ts` need no escaping.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(format!(
            "server name {name:?}: a letter, then letters, digits, '_' or '-' (64 at most)"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!(
            "server name {name:?} is taken by `mcp` itself ({})",
            RESERVED.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_parse_with_their_headers_and_bad_entries_are_named() {
        let parsed = UpstreamConfig::parse_servers(
            r#"{"gh": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}}}"#,
            None,
        )
        .unwrap();
        assert_eq!(parsed["gh"].headers["Authorization"], "Bearer s3cret");
        let cases = [
            (r#"{"gh": {"url": "ftp://x/mcp"}}"#, "http or https"),
            (
                r#"{"gh": {"url": "http://169.254.169.254/mcp"}}"#,
                "link-local",
            ),
            (
                r#"{"gh": {"url": "http://127.0.0.1:9001/mcp"}}"#,
                "Runtime API",
            ),
            (r#"{"1x": {"url": "https://a.example/mcp"}}"#, "a letter"),
            (r#"{"servers": {"url": "https://a.example/mcp"}}"#, "taken"),
            (
                r#"{"gh": {"url": "https://a.example/mcp", "header": {}}}"#,
                "unknown field",
            ),
            (
                r#"{"gh": {"url": "https://a.example/mcp", "headers": {"X": "bad\nvalue s3cret"}}}"#,
                "not a header value",
            ),
        ];
        for (value, expected) in cases {
            let Err(error) = UpstreamConfig::parse_servers(value, Some("127.0.0.1:9001")) else {
                panic!("{value} was accepted");
            };
            assert!(error.contains(expected), "{value}: {error}");
            assert!(!error.contains("s3cret"), "{error}");
        }
    }

    #[test]
    fn debug_shows_names_only() {
        let mut config = UpstreamConfig::off();
        config.servers.insert(
            "gh".into(),
            UpstreamServer {
                url: "https://api.example.com/mcp?key=k3y".into(),
                headers: [("authorization".into(), "Bearer s3cret".into())].into(),
            },
        );
        let shown = format!("{config:?}");
        assert!(shown.contains("gh"));
        assert!(
            !shown.contains("s3cret") && !shown.contains("k3y"),
            "{shown}"
        );
    }
}
