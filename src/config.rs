//! Configuration: one typed struct built from the environment. Every
//! variable, its default and its effect are listed in docs/configuration.md.

use std::path::Path;
use std::sync::Arc;

use crate::embedded::open_database;
use crate::engine::{Engine, EngineConfig};
use crate::heap::{FileHeapStorage, HeapStorage};
use crate::meta::RedbMetaStore;
use crate::session::RedbSessionStore;
use crate::tools::Toolbox;
use crate::transport::{App, OriginPolicy, TransportConfig};

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (CloudWatch-friendly).
    Json,
}

/// Settings read from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `MCP_V8_SESSION_TTL_SECS`.
    pub session_ttl_secs: i64,
    /// `MCP_V8_EXECUTION_TTL_SECS`.
    pub execution_ttl_secs: i64,
    /// `MCP_V8_ALLOWED_ORIGINS`.
    pub allowed_origins: Vec<String>,
    /// `MCP_V8_MAX_BODY_BYTES`.
    pub max_body_bytes: usize,
    /// `MCP_V8_LOG_FORMAT`.
    pub log_format: LogFormat,
}

/// A variable with a value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    name: &'static str,
    value: String,
    reason: &'static str,
}

impl Config {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// From any variable source (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        fn number<T: std::str::FromStr>(
            lookup: &impl Fn(&str) -> Option<String>,
            name: &'static str,
            default: T,
            positive: impl Fn(&T) -> bool,
        ) -> Result<T, ConfigError> {
            let Some(value) = lookup(name) else {
                return Ok(default);
            };
            match value.trim().parse::<T>() {
                Ok(parsed) if positive(&parsed) => Ok(parsed),
                _ => Err(ConfigError {
                    name,
                    value,
                    reason: "expected a positive whole number",
                }),
            }
        }
        let log_format = match lookup("MCP_V8_LOG_FORMAT").as_deref().map(str::trim) {
            None | Some("") | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError {
                    name: "MCP_V8_LOG_FORMAT",
                    value: other.to_owned(),
                    reason: "expected text or json",
                });
            }
        };
        Ok(Self {
            session_ttl_secs: number(&lookup, "MCP_V8_SESSION_TTL_SECS", 86_400, |v| *v > 0)?,
            execution_ttl_secs: number(&lookup, "MCP_V8_EXECUTION_TTL_SECS", 7 * 86_400, |v| {
                *v > 0
            })?,
            allowed_origins: lookup("MCP_V8_ALLOWED_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            max_body_bytes: number(&lookup, "MCP_V8_MAX_BODY_BYTES", 1024 * 1024, |v| *v > 0)?,
            log_format,
        })
    }

    /// The app of local mode: heaps in `<data_dir>/heaps`, sessions and
    /// metadata in `<data_dir>/meta.redb`.
    pub fn local_app(
        &self,
        data_dir: &Path,
        stateless: bool,
    ) -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
        let db = open_database(&data_dir.join("meta.redb"))?;
        let sessions = Arc::new(RedbSessionStore::new(db.clone())?);
        let meta = Arc::new(RedbMetaStore::new(db)?);
        let heaps: Option<Arc<dyn HeapStorage>> = (!stateless).then(|| {
            Arc::new(FileHeapStorage::new(data_dir.join("heaps"))) as Arc<dyn HeapStorage>
        });
        let engine = Arc::new(Engine::new(EngineConfig::default(), heaps));
        let tools = Toolbox {
            engine,
            meta,
            stateless,
            execution_ttl_secs: self.execution_ttl_secs,
        };
        let transport = TransportConfig {
            session_ttl_secs: self.session_ttl_secs,
            max_body_bytes: self.max_body_bytes,
            origins: OriginPolicy {
                extra: self.allowed_origins.clone(),
            },
        };
        Ok(App::new(transport, sessions, tools))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = from(&[]).unwrap();
        assert_eq!(config.session_ttl_secs, 86_400);
        assert_eq!(config.execution_ttl_secs, 604_800);
        assert_eq!(config.max_body_bytes, 1_048_576);
        assert_eq!(config.log_format, LogFormat::Text);
        assert!(config.allowed_origins.is_empty());
    }

    #[test]
    fn variables_override_and_bad_values_are_named() {
        let config = from(&[
            ("MCP_V8_SESSION_TTL_SECS", "60"),
            (
                "MCP_V8_ALLOWED_ORIGINS",
                "https://a.example, https://b.example",
            ),
            ("MCP_V8_LOG_FORMAT", "json"),
        ])
        .unwrap();
        assert_eq!(config.session_ttl_secs, 60);
        assert_eq!(
            config.allowed_origins,
            ["https://a.example", "https://b.example"]
        );
        assert_eq!(config.log_format, LogFormat::Json);
        let err = from(&[("MCP_V8_SESSION_TTL_SECS", "-5")]).unwrap_err();
        assert!(err.to_string().contains("MCP_V8_SESSION_TTL_SECS"), "{err}");
        assert!(from(&[("MCP_V8_LOG_FORMAT", "xml")]).is_err());
    }
}
