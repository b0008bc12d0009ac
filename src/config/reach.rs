//! The reads of what runs may reach: `fetch`'s allow list and injected
//! headers, and the upstream MCP servers of code mode.

use super::vars::{ConfigError, Least, Vars};

impl<F: Fn(&str) -> Option<String>> Vars<F> {
    pub(super) fn fetch(&self) -> Result<crate::egress::FetchConfig, ConfigError> {
        use crate::egress::{FetchConfig, Policy};
        let invalid = |name: &'static str, reason: String| ConfigError {
            name,
            value: self.get(name).unwrap_or_default(),
            reason: reason.into(),
        };
        let allow: Vec<String> = self
            .get("MCP_V8_FETCH_ALLOW")
            .map(|v| {
                v.split([',', ' ', '\n'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let runtime_api = self.non_empty("AWS_LAMBDA_RUNTIME_API");
        Policy::new(&allow, runtime_api.as_deref())
            .map_err(|e| invalid("MCP_V8_FETCH_ALLOW", e.to_string()))?;
        let headers = match self.non_empty("MCP_V8_FETCH_HEADERS") {
            Some(value) => FetchConfig::parse_headers(&value)
                .map_err(|reason| invalid("MCP_V8_FETCH_HEADERS", reason))?,
            None => Default::default(),
        };
        let resolve = match self.non_empty("MCP_V8_FETCH_RESOLVE") {
            Some(value) => FetchConfig::parse_resolve(&value)
                .map_err(|reason| invalid("MCP_V8_FETCH_RESOLVE", reason))?,
            None => Default::default(),
        };
        Ok(FetchConfig {
            allow,
            headers,
            resolve,
            runtime_api,
            max_requests: self.number(
                "MCP_V8_FETCH_MAX_REQUESTS",
                FetchConfig::DEFAULT_MAX_REQUESTS,
                Least::One,
            )?,
            max_response_bytes: self.number(
                "MCP_V8_FETCH_MAX_RESPONSE_BYTES",
                FetchConfig::DEFAULT_MAX_RESPONSE_BYTES,
                Least::One,
            )?,
            concurrency: self.number(
                "MCP_V8_FETCH_CONCURRENCY",
                FetchConfig::DEFAULT_CONCURRENCY,
                Least::One,
            )?,
        })
    }

    pub(super) fn upstream(&self) -> Result<crate::upstream::UpstreamConfig, ConfigError> {
        use crate::upstream::UpstreamConfig;
        let runtime_api = self.non_empty("AWS_LAMBDA_RUNTIME_API");
        let servers =
            match self.non_empty("MCP_V8_MCP_SERVERS") {
                Some(value) => UpstreamConfig::parse_servers(&value, runtime_api.as_deref())
                    .map_err(|reason| ConfigError {
                        name: "MCP_V8_MCP_SERVERS",
                        // Its value holds credentials: never echoed.
                        value: "(not shown: it holds credentials)".to_owned(),
                        reason: reason.into(),
                    })?,
                None => Default::default(),
            };
        Ok(UpstreamConfig {
            servers,
            max_calls: self.number(
                "MCP_V8_MCP_MAX_CALLS",
                UpstreamConfig::DEFAULT_MAX_CALLS,
                Least::One,
            )?,
            concurrency: self.number(
                "MCP_V8_MCP_CONCURRENCY",
                UpstreamConfig::DEFAULT_CONCURRENCY,
                Least::One,
            )?,
            call_timeout_ms: self.number(
                "MCP_V8_MCP_CALL_TIMEOUT_MS",
                UpstreamConfig::DEFAULT_CALL_TIMEOUT_MS,
                Least::One,
            )?,
            max_response_mb: self.number(
                "MCP_V8_MCP_MAX_RESPONSE_MB",
                UpstreamConfig::DEFAULT_MAX_RESPONSE_MB,
                Least::One,
            )?,
            runtime_api,
            held_secs: self.number(
                "MCP_V8_SUSPENDED_RUN_TTL_SECS",
                UpstreamConfig::DEFAULT_HELD_SECS,
                Least::One,
            )?,
        })
    }
}
