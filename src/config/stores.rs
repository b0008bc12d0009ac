//! The stores' part of the configuration: where heaps, metadata and
//! caches live.

use std::path::PathBuf;

use super::vars::{Least, Vars, default_cache_mb};
use super::{ConfigError, LAMBDA_CACHE_DIR};
use crate::backends::aws::DEFAULT_TABLE_PREFIX;

/// The stores' part of the configuration.
#[derive(Debug, Clone)]
pub struct StoreSettings {
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
    /// `MCP_V8_TABLE_PREFIX`: sessions and metadata in DynamoDB when set.
    pub table_prefix: Option<String>,
    /// `MCP_V8_S3_FORCE_PATH_STYLE`: for local S3 endpoints.
    pub s3_force_path_style: bool,
    /// `MCP_V8_EXECUTION_TTL_SECS`: how long an execution record is kept.
    pub execution_ttl_secs: i64,
    /// `MCP_V8_SUSPENDED_RUN_TTL_SECS`: how long a run that asked the
    /// person waits for the answer before it is dropped.
    pub suspended_run_ttl_secs: i64,
    /// `MCP_V8_SESSION_LOG_RETENTION_DAYS`: on DynamoDB, days a session's log
    /// is kept after its last run (0: for good).
    pub session_log_retention_days: u64,
    /// `MCP_V8_HEAP_RETENTION_DAYS`: on the embedded store, days a heap is
    /// kept after it was last stored (0: for good). S3 has the bucket's
    /// lifecycle rules instead.
    pub heap_retention_days: u64,
}

impl StoreSettings {
    pub(super) fn from_vars<F: Fn(&str) -> Option<String>>(
        vars: &Vars<F>,
        under_lambda: bool,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            heap_bucket: vars.non_empty("MCP_V8_HEAP_BUCKET"),
            heap_prefix: vars.get("MCP_V8_HEAP_PREFIX").unwrap_or_default(),
            heap_cache_dir: vars
                .non_empty("MCP_V8_HEAP_CACHE_DIR")
                .map(PathBuf::from)
                .or_else(|| under_lambda.then(|| PathBuf::from(LAMBDA_CACHE_DIR))),
            heap_cache_max_mb: vars.number(
                "MCP_V8_HEAP_CACHE_MAX_MB",
                default_cache_mb(vars, under_lambda)?,
                Least::One,
            )?,
            heap_memory_cache_mb: vars.number("MCP_V8_HEAP_MEMORY_CACHE_MB", 64, Least::Zero)?,
            db_cache_mb: vars.number("MCP_V8_DB_CACHE_MB", 32, Least::One)?,
            table_prefix: vars
                .non_empty("MCP_V8_TABLE_PREFIX")
                .or_else(|| under_lambda.then(|| DEFAULT_TABLE_PREFIX.to_owned())),
            s3_force_path_style: vars.flag("MCP_V8_S3_FORCE_PATH_STYLE")?,
            execution_ttl_secs: vars.number("MCP_V8_EXECUTION_TTL_SECS", 7 * 86_400, Least::One)?,
            suspended_run_ttl_secs: vars.number(
                "MCP_V8_SUSPENDED_RUN_TTL_SECS",
                3_600,
                Least::One,
            )?,
            session_log_retention_days: vars.number(
                "MCP_V8_SESSION_LOG_RETENTION_DAYS",
                0,
                Least::Zero,
            )?,
            heap_retention_days: vars.number("MCP_V8_HEAP_RETENTION_DAYS", 0, Least::Zero)?,
        })
    }

    /// Whether any store is on AWS (and AWS clients are needed).
    pub fn uses_aws(&self) -> bool {
        self.heap_bucket.is_some() || self.table_prefix.is_some()
    }
}
