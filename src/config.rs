//! Configuration: one typed struct built from the environment. Every
//! variable, its default and its effect are listed in docs/configuration.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::aws::{Clients, DEFAULT_TABLE_PREFIX, SESSIONS};
use crate::embedded::open_database_with_cache;
use crate::engine::{Engine, EngineConfig};
use crate::heap::{
    FileHeapStorage, HeapStorage, MemoryCacheHeapStorage, S3HeapStorage,
    WriteThroughCacheHeapStorage,
};
use crate::meta::{DynamoMetaStore, MetaStore, MetaTables, RedbMetaStore};
use crate::session::{DynamoSessionStore, RedbSessionStore, SessionStore};
use crate::tools::Toolbox;
use crate::transport::{
    App, Authenticator, JwtSettings, JwtVerifier, OriginPolicy, TokenDigest, TransportConfig,
};

/// Boxed error of building the app.
pub type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// Where the heap cache lives under Lambda when none is configured.
pub const LAMBDA_CACHE_DIR: &str = "/tmp/mcp-v8-heaps";

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
    /// `MCP_V8_HEAP_BUCKET`: heaps in S3 when set.
    pub heap_bucket: Option<String>,
    /// `MCP_V8_HEAP_PREFIX`: object key prefix (default none: bare heap keys).
    pub heap_prefix: String,
    /// `MCP_V8_HEAP_CACHE_DIR`: local cache in front of S3.
    pub heap_cache_dir: Option<PathBuf>,
    /// `MCP_V8_HEAP_CACHE_MAX_MB`.
    pub heap_cache_max_mb: u64,
    /// `MCP_V8_HEAP_MEMORY_CACHE_MB`: recent heaps kept in memory; 0 turns
    /// the memory cache off.
    pub heap_memory_cache_mb: usize,
    /// `MCP_V8_DB_CACHE_MB`: page cache of the embedded database.
    pub db_cache_mb: usize,
    /// Engine worker processes for stateful runs (`serve --workers`, which
    /// reads `MCP_V8_ENGINE_WORKERS`; under Lambda the variable itself); 0
    /// runs them in the serving process, one at a time. The default is 0
    /// outside `serve` and on standard Lambda, and one per core (at least
    /// two) where Lambda hands an instance several invocations at once, so
    /// that one long run does not hold up the others.
    pub engine_workers: usize,
    /// `AWS_LAMBDA_MAX_CONCURRENCY`: invocations Lambda hands this instance
    /// at once (Lambda Managed Instances); 1 on standard Lambda and outside.
    pub lambda_max_concurrency: usize,
    /// Isolates kept ready for stateless runs (`EngineConfig::warm_isolates`):
    /// one per core under `serve`, one per invocation Lambda hands the
    /// instance at once (up to the cores), 0 elsewhere.
    pub warm_isolates: usize,
    /// `MCP_V8_TABLE_PREFIX`: sessions and metadata in DynamoDB when set.
    pub table_prefix: Option<String>,
    /// `MCP_V8_S3_FORCE_PATH_STYLE`: for local S3 endpoints.
    pub s3_force_path_style: bool,
    /// Running inside Lambda (`AWS_LAMBDA_RUNTIME_API` is set).
    pub under_lambda: bool,
    /// `MCP_V8_STATELESS`: under Lambda, the equivalent of `serve --stateless`.
    pub stateless: bool,
    /// `MCP_V8_MAX_HEAP_SNAPSHOT_MB`: largest snapshot stored or restored.
    pub max_heap_snapshot_mb: usize,
    /// `MCP_V8_AUTH_TOKEN_SHA256`: when set, every request needs the bearer
    /// token with this SHA-256 (64 hex digits).
    pub auth_token_sha256: Option<TokenDigest>,
    /// `MCP_V8_JWKS_URL`, `MCP_V8_JWT_ISSUER`, `MCP_V8_JWT_AUDIENCE`: bearer
    /// JWTs verified against the issuer's keys.
    pub jwt: Option<JwtSettings>,
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
        /// The smallest value a number variable accepts.
        #[derive(Clone, Copy)]
        enum Least {
            One,
            Zero,
        }
        fn number<T: std::str::FromStr + PartialOrd + Default>(
            lookup: &impl Fn(&str) -> Option<String>,
            name: &'static str,
            default: T,
            least: Least,
        ) -> Result<T, ConfigError> {
            let Some(value) = lookup(name) else {
                return Ok(default);
            };
            let (fits, reason): (fn(&T, &T) -> bool, _) = match least {
                Least::One => (T::gt, "expected a positive whole number"),
                Least::Zero => (T::ge, "expected a whole number, 0 or more"),
            };
            match value.trim().parse::<T>() {
                Ok(parsed) if fits(&parsed, &T::default()) => Ok(parsed),
                _ => Err(ConfigError {
                    name,
                    value,
                    reason,
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
        let flag = |name: &'static str| -> Result<bool, ConfigError> {
            match lookup(name).as_deref().map(str::trim) {
                None | Some("") | Some("0") | Some("false") => Ok(false),
                Some("1") | Some("true") => Ok(true),
                Some(other) => Err(ConfigError {
                    name,
                    value: other.to_owned(),
                    reason: "expected true or false",
                }),
            }
        };
        let non_empty = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let under_lambda = lookup("AWS_LAMBDA_RUNTIME_API").is_some();
        let lambda_max_concurrency = if under_lambda {
            number(&lookup, "AWS_LAMBDA_MAX_CONCURRENCY", 1, Least::One)?
        } else {
            1
        };
        let engine_workers = if under_lambda {
            let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            let default = if lambda_max_concurrency > 1 {
                cores.max(2)
            } else {
                0
            };
            number(&lookup, "MCP_V8_ENGINE_WORKERS", default, Least::Zero)?
        } else {
            0
        };
        let auth_token_sha256 = match non_empty("MCP_V8_AUTH_TOKEN_SHA256") {
            None => None,
            Some(text) => {
                let mut digest = [0u8; 32];
                hex::decode_to_slice(text.to_ascii_lowercase(), &mut digest).map_err(|_| {
                    ConfigError {
                        name: "MCP_V8_AUTH_TOKEN_SHA256",
                        value: "(not shown)".to_owned(),
                        reason: "expected the token's SHA-256 as 64 hex digits",
                    }
                })?;
                Some(TokenDigest(digest))
            }
        };
        let jwt = match non_empty("MCP_V8_JWKS_URL") {
            None => None,
            Some(jwks_url) => {
                let required = |name: &'static str| {
                    non_empty(name).ok_or(ConfigError {
                        name,
                        value: String::new(),
                        reason: "required when MCP_V8_JWKS_URL is set",
                    })
                };
                Some(JwtSettings {
                    jwks_url,
                    issuer: required("MCP_V8_JWT_ISSUER")?,
                    audience: required("MCP_V8_JWT_AUDIENCE")?,
                })
            }
        };
        Ok(Self {
            jwt,
            auth_token_sha256,
            max_heap_snapshot_mb: number(&lookup, "MCP_V8_MAX_HEAP_SNAPSHOT_MB", 256, Least::One)?,
            heap_bucket: non_empty("MCP_V8_HEAP_BUCKET"),
            heap_prefix: lookup("MCP_V8_HEAP_PREFIX").unwrap_or_default(),
            heap_cache_dir: non_empty("MCP_V8_HEAP_CACHE_DIR")
                .map(PathBuf::from)
                .or_else(|| under_lambda.then(|| PathBuf::from(LAMBDA_CACHE_DIR))),
            heap_cache_max_mb: number(&lookup, "MCP_V8_HEAP_CACHE_MAX_MB", 512, Least::One)?,
            heap_memory_cache_mb: number(&lookup, "MCP_V8_HEAP_MEMORY_CACHE_MB", 64, Least::Zero)?,
            db_cache_mb: number(&lookup, "MCP_V8_DB_CACHE_MB", 32, Least::One)?,
            engine_workers,
            lambda_max_concurrency,
            warm_isolates: 0,
            table_prefix: non_empty("MCP_V8_TABLE_PREFIX")
                .or_else(|| under_lambda.then(|| DEFAULT_TABLE_PREFIX.to_owned())),
            s3_force_path_style: flag("MCP_V8_S3_FORCE_PATH_STYLE")?,
            under_lambda,
            stateless: flag("MCP_V8_STATELESS")?,
            session_ttl_secs: number(&lookup, "MCP_V8_SESSION_TTL_SECS", 86_400, Least::One)?,
            execution_ttl_secs: number(
                &lookup,
                "MCP_V8_EXECUTION_TTL_SECS",
                7 * 86_400,
                Least::One,
            )?,
            allowed_origins: lookup("MCP_V8_ALLOWED_ORIGINS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            max_body_bytes: number(&lookup, "MCP_V8_MAX_BODY_BYTES", 1024 * 1024, Least::One)?,
            log_format,
        })
    }

    /// Whether any store is on AWS (and AWS clients are needed).
    pub fn uses_aws(&self) -> bool {
        self.heap_bucket.is_some() || self.table_prefix.is_some()
    }

    /// The app this configuration describes. Heaps: S3 when a bucket is set
    /// (behind the write-through cache when a cache directory is configured,
    /// as it is by default under Lambda), else `<data_dir>/heaps`. Sessions
    /// and metadata: DynamoDB when a table prefix is set (by default under
    /// Lambda), else `<data_dir>/meta.redb`. `aws` holds the clients,
    /// required when [`Self::uses_aws`].
    pub fn app(
        &self,
        data_dir: &Path,
        stateless: bool,
        aws: Option<&Clients>,
    ) -> Result<App, BuildError> {
        let aws = || aws.ok_or("an AWS store is configured but no AWS clients were built");
        let heaps: Option<Arc<dyn HeapStorage>> = match (&self.heap_bucket, stateless) {
            (_, true) => None,
            (Some(bucket), false) => {
                let s3 = Arc::new(S3HeapStorage::new(
                    aws()?.s3.clone(),
                    bucket,
                    &self.heap_prefix,
                ));
                Some(match &self.heap_cache_dir {
                    Some(dir) => Arc::new(WriteThroughCacheHeapStorage::new(
                        FileHeapStorage::cache(dir),
                        s3,
                        self.heap_cache_max_mb * 1024 * 1024,
                    )),
                    None => s3,
                })
            }
            (None, false) => Some(Arc::new(FileHeapStorage::new(data_dir.join("heaps")))),
        };
        // A session's next run most often restores the heap its last run
        // stored: from memory, that is neither a read nor a second hash.
        let heaps = heaps.map(|store| match self.heap_memory_cache_mb {
            0 => store,
            mb => Arc::new(MemoryCacheHeapStorage::new(store, mb * 1024 * 1024))
                as Arc<dyn HeapStorage>,
        });
        let (sessions, meta): (Arc<dyn SessionStore>, Arc<dyn MetaStore>) = match &self.table_prefix
        {
            Some(prefix) => {
                let bucket = self
                    .heap_bucket
                    .as_ref()
                    .ok_or("DynamoDB metadata needs MCP_V8_HEAP_BUCKET: items too large for DynamoDB are kept in S3")?;
                let clients = aws()?;
                (
                    Arc::new(DynamoSessionStore::new(
                        clients.dynamodb.clone(),
                        SESSIONS.name(prefix),
                    )),
                    Arc::new(DynamoMetaStore::new(
                        clients.dynamodb.clone(),
                        clients.s3.clone(),
                        bucket,
                        format!("{}overflow/", self.heap_prefix),
                        MetaTables::with_prefix(prefix),
                    )),
                )
            }
            None => {
                let db = open_database_with_cache(
                    &data_dir.join("meta.redb"),
                    self.db_cache_mb * 1024 * 1024,
                )?;
                (
                    Arc::new(RedbSessionStore::new(db.clone())?),
                    Arc::new(RedbMetaStore::new(db)?),
                )
            }
        };
        let engine_config = EngineConfig {
            max_snapshot_bytes: self.max_heap_snapshot_mb * 1024 * 1024,
            worker_processes: self.engine_workers,
            warm_isolates: self.warm_isolates,
            ..EngineConfig::default()
        };
        let engine = Arc::new(Engine::new(engine_config, heaps));
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
            auth: Authenticator {
                token: self.auth_token_sha256.clone(),
                jwt: self.jwt.clone().map(JwtVerifier::new),
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
        assert!(!config.uses_aws(), "locally nothing needs AWS");
        assert_eq!(config.heap_cache_dir, None);
        assert_eq!(config.db_cache_mb, 32);
        assert_eq!(config.heap_memory_cache_mb, 64);
        let off = from(&[("MCP_V8_HEAP_MEMORY_CACHE_MB", "0")]).unwrap();
        assert_eq!(off.heap_memory_cache_mb, 0);
        let lots = from(&[("MCP_V8_HEAP_MEMORY_CACHE_MB", "lots")]).unwrap_err();
        assert!(lots.to_string().contains("0 or more"), "{lots}");
        assert_eq!(from(&[("MCP_V8_DB_CACHE_MB", "4")]).unwrap().db_cache_mb, 4);
        let err = from(&[("MCP_V8_DB_CACHE_MB", "0")]).unwrap_err();
        assert!(err.to_string().contains("MCP_V8_DB_CACHE_MB"), "{err}");
        assert!(err.to_string().contains("positive"), "{err}");
    }

    #[test]
    fn lambda_defaults_to_dynamodb_tables_and_a_tmp_cache() {
        let config = from(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("MCP_V8_HEAP_BUCKET", "b"),
        ])
        .unwrap();
        assert_eq!(config.table_prefix.as_deref(), Some("mcp-v8-"));
        assert_eq!(
            config.heap_cache_dir,
            Some(PathBuf::from("/tmp/mcp-v8-heaps"))
        );
        assert_eq!(config.heap_cache_max_mb, 512);
        assert_eq!(config.heap_prefix, "");
        assert!(!config.stateless);
        assert!(from(&[("MCP_V8_STATELESS", "true")]).unwrap().stateless);
        assert!(from(&[("MCP_V8_STATELESS", "maybe")]).is_err());
        assert_eq!(config.lambda_max_concurrency, 1);
        assert_eq!(
            config.engine_workers, 0,
            "standard Lambda: one run at a time"
        );
    }

    #[test]
    fn lambda_managed_instances_get_engine_workers_unless_told_otherwise() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let managed = from(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "8")]).unwrap();
        assert_eq!(managed.lambda_max_concurrency, 8);
        assert!(managed.engine_workers >= 2, "{}", managed.engine_workers);
        let told = from(&[
            lambda,
            ("AWS_LAMBDA_MAX_CONCURRENCY", "8"),
            ("MCP_V8_ENGINE_WORKERS", "0"),
        ])
        .unwrap();
        assert_eq!(told.engine_workers, 0);
        let standard = from(&[lambda, ("MCP_V8_ENGINE_WORKERS", "3")]).unwrap();
        assert_eq!(standard.engine_workers, 3);
        let bad = from(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "0")]).unwrap_err();
        assert!(
            bad.to_string().contains("AWS_LAMBDA_MAX_CONCURRENCY"),
            "{bad}"
        );
        // Outside Lambda the variables belong to `serve --workers` and to
        // no one.
        let local = from(&[("AWS_LAMBDA_MAX_CONCURRENCY", "8")]).unwrap();
        assert_eq!((local.lambda_max_concurrency, local.engine_workers), (1, 0));
    }

    #[test]
    fn dynamodb_metadata_without_a_bucket_is_refused() {
        let config = from(&[("MCP_V8_TABLE_PREFIX", "x-")]).unwrap();
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let clients = Clients::new(&sdk, false, None);
        let dir = std::env::temp_dir();
        let err = config.app(&dir, false, Some(&clients)).unwrap_err();
        assert!(err.to_string().contains("MCP_V8_HEAP_BUCKET"), "{err}");
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
