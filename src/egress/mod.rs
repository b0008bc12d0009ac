//! Egress for code in runs: `fetch` under the operator's policy
//! (`MCP_V8_FETCH_ALLOW`), with credentials injected outside the isolate
//! (`MCP_V8_FETCH_HEADERS`). docs/engine.md, "fetch and its security model".
//!
//! - [`policy`]: what may be reached, checked on URLs and on the addresses
//!   a name resolves to.
//! - [`client`]: one request at a time through reqwest, connecting only to
//!   checked addresses, following redirects itself so each hop is checked.

pub(crate) mod client;
mod getter;
pub mod policy;

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::units::MIB_U64;
pub use client::FetchCount;
pub(crate) use client::{
    Client, Completion, Egress, RedirectMode, Report, RequestParts, chain, resolve_checked,
};
pub(crate) use getter::Getter;
pub use policy::{Policy, PolicyError};

/// What the operator configured, as the engine hands it to each run (and
/// over the pipe to engine workers). `Debug` never prints header values.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FetchConfig {
    /// `MCP_V8_FETCH_ALLOW` entries; empty turns `fetch` off.
    pub allow: Vec<String>,
    /// `MCP_V8_FETCH_HEADERS`: origin → headers added to its requests.
    pub headers: BTreeMap<String, BTreeMap<String, String>>,
    /// `MCP_V8_FETCH_RESOLVE`: `host=address` pairs answered before DNS (for
    /// tests, and for names an operator wants pinned).
    pub resolve: BTreeMap<String, Vec<IpAddr>>,
    /// `AWS_LAMBDA_RUNTIME_API` (`host:port`), never reachable.
    pub runtime_api: Option<String>,
    /// Requests per run (`MCP_V8_FETCH_MAX_REQUESTS`).
    pub max_requests: u32,
    /// Response body bytes per run, all requests together
    /// (`MCP_V8_FETCH_MAX_RESPONSE_BYTES`).
    pub max_response_bytes: u64,
    /// Requests in flight at once per run (`MCP_V8_FETCH_CONCURRENCY`).
    pub concurrency: u32,
}

impl FetchConfig {
    /// Requests per run when `MCP_V8_FETCH_MAX_REQUESTS` is unset.
    pub const DEFAULT_MAX_REQUESTS: u32 = 50;
    /// Response bytes per run when `MCP_V8_FETCH_MAX_RESPONSE_BYTES` is unset.
    pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 * MIB_U64;
    /// Requests at once when `MCP_V8_FETCH_CONCURRENCY` is unset.
    pub const DEFAULT_CONCURRENCY: u32 = 6;

    /// Off: no origin may be reached.
    pub fn off() -> Self {
        Self {
            max_requests: Self::DEFAULT_MAX_REQUESTS,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            concurrency: Self::DEFAULT_CONCURRENCY,
            ..Self::default()
        }
    }

    /// Whether any origin may be reached.
    pub fn enabled(&self) -> bool {
        !self.allow.is_empty()
    }

    /// Reads `MCP_V8_FETCH_HEADERS`: a JSON object of origin → {name:
    /// value}, or the path of a file holding one.
    pub fn parse_headers(
        value: &str,
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, String> {
        let text = if value.trim_start().starts_with('{') {
            value.to_owned()
        } else {
            std::fs::read_to_string(value.trim())
                .map_err(|e| format!("cannot read the headers file: {e}"))?
        };
        let raw: BTreeMap<String, BTreeMap<String, String>> = serde_json::from_str(&text)
            .map_err(|e| format!("not a JSON object of origin to headers: {e}"))?;
        let mut out = BTreeMap::new();
        for (origin, headers) in raw {
            let origin =
                policy::normalize_origin(&origin).map_err(|e| format!("origin {origin:?}: {e}"))?;
            let mut clean = BTreeMap::new();
            for (name, value) in headers {
                http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("{origin}: {name:?} is not a header name"))?;
                http::HeaderValue::from_str(&value)
                    .map_err(|_| format!("{origin}: the value of {name} is not a header value"))?;
                clean.insert(name.to_ascii_lowercase(), value);
            }
            out.insert(origin, clean);
        }
        Ok(out)
    }

    /// Reads `MCP_V8_FETCH_RESOLVE`: `host=address[,host=address…]`.
    pub fn parse_resolve(value: &str) -> Result<BTreeMap<String, Vec<IpAddr>>, String> {
        let mut out: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for pair in value.split([',', ' ']).filter(|p| !p.is_empty()) {
            let (host, address) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not host=address"))?;
            let address: IpAddr = address
                .trim_matches(['[', ']'])
                .parse()
                .map_err(|_| format!("{address:?} is not an IP address"))?;
            out.entry(host.to_ascii_lowercase())
                .or_default()
                .push(address);
        }
        Ok(out)
    }
}

impl std::fmt::Debug for FetchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let injected: BTreeMap<&String, Vec<&String>> = self
            .headers
            .iter()
            .map(|(origin, headers)| (origin, headers.keys().collect()))
            .collect();
        f.debug_struct("FetchConfig")
            .field("allow", &self.allow)
            .field("injected_header_names", &injected)
            .field("resolve", &self.resolve)
            .field("runtime_api", &self.runtime_api)
            .field("max_requests", &self.max_requests)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_headers_but_never_their_values() {
        let mut config = FetchConfig::off();
        config.headers = FetchConfig::parse_headers(
            r#"{"https://api.example.com": {"Authorization": "Bearer s3cret"}}"#,
        )
        .unwrap();
        let shown = format!("{config:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn bad_header_and_resolve_settings_are_refused_with_reasons() {
        assert!(
            FetchConfig::parse_headers("{\"nope\": {}}")
                .unwrap_err()
                .contains("nope")
        );
        assert!(
            FetchConfig::parse_headers("{\"https://a.example\": {\"bad name\": \"x\"}}").is_err()
        );
        assert!(
            FetchConfig::parse_headers("/no/such/file")
                .unwrap_err()
                .contains("cannot read")
        );
        assert!(FetchConfig::parse_resolve("a.example").is_err());
        assert!(FetchConfig::parse_resolve("a.example=nope").is_err());
        let pinned = FetchConfig::parse_resolve("A.example=127.0.0.1,b.example=[::1]").unwrap();
        assert_eq!(
            pinned["a.example"],
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(pinned["b.example"], vec!["::1".parse::<IpAddr>().unwrap()]);
    }
}
