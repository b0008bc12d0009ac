//! Configuration: one typed struct built from the environment. Every
//! variable, its default and its effect are listed in docs/configuration.md.

mod reach;
mod vars;

pub use vars::ConfigError;
use vars::{Least, Vars, default_cache_mb, default_run_disk_mb, default_tenant_disk_mb};

use std::path::PathBuf;

use crate::backends::aws::DEFAULT_TABLE_PREFIX;
use crate::transport::{JwtSettings, TokenDigest};
use crate::units::MIB;

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

/// Settings read from the environment, one part per component. Each part
/// is built from the variables in one place (`from_vars`), and
/// docs/configuration.md has a row for every variable read (checked by
/// `tests/it/protocol/configuration.rs`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Running inside Lambda (`AWS_LAMBDA_RUNTIME_API` is set).
    pub under_lambda: bool,
    /// `MCP_V8_STATELESS` under Lambda, `serve --stateless` locally: no
    /// heaps, no session tools, nothing written per run.
    pub stateless: bool,
    /// What the engine may run and where.
    pub engine: EngineSettings,
    /// The HTTP endpoint: who may call it and how it answers.
    pub transport: TransportSettings,
    /// Where heaps, sessions and metadata are kept.
    pub stores: StoreSettings,
    /// `MCP_V8_FETCH_ALLOW`, `MCP_V8_FETCH_HEADERS`, `MCP_V8_FETCH_RESOLVE`
    /// and the per-run limits: what `fetch` in runs may reach (off when
    /// the allow list is empty). Under Lambda the Runtime API's address is
    /// never reachable.
    pub fetch: crate::egress::FetchConfig,
    /// `MCP_V8_MCP_SERVERS` and the per-run limits of code mode: the
    /// upstream MCP servers `mcp` in runs calls (none when unset).
    pub mcp: crate::upstream::UpstreamConfig,
    /// How the process logs.
    pub log: LogSettings,
    /// Where packages come from and how large they may be.
    pub packages: PackageSettings,
    /// Caps on a run's `/work`.
    pub files: FileSettings,
    /// When calls become MCP tasks and how long tasks live.
    pub tasks: TaskSettings,
    /// `MCP_V8_SKILLS_DIR`: a directory whose subdirectories are the
    /// operator's Agent Skills, served beside the server's own.
    pub skills_dir: Option<std::path::PathBuf>,
}

/// MCP tasks (docs/configuration.md, "Tasks").
#[derive(Debug, Clone, Copy)]
pub struct TaskSettings {
    /// `MCP_V8_TASK_AFTER_MS`: with the tasks extension, a run still going
    /// after this long is answered with a task (not under Lambda).
    pub answer_within_ms: u64,
    /// `MCP_V8_TASK_TTL_SECS`: a task's lifetime when its client asks none.
    pub default_ttl_secs: u64,
    /// `MCP_V8_TASK_MAX_TTL_SECS`: the longest lifetime a client may ask.
    pub max_ttl_secs: u64,
    /// `MCP_V8_TASK_POLL_MS`: the polling interval clients are given.
    pub poll_interval_ms: u64,
    /// `MCP_V8_LAMBDA_TASK_ABOVE_SECS`: under Lambda, with the extension, a
    /// run asking for a longer `execution_timeout_secs` is made a task run
    /// by the function's own asynchronous invocation.
    pub lambda_task_above_secs: u64,
    /// `MCP_V8_TASK_HEARTBEAT_MS`: how often a task's runner says it is
    /// alive; a task whose runner missed six beats ended `failed`.
    pub heartbeat_ms: u64,
}

/// Caps on the files of a run's `/work`, and where runs write them.
#[derive(Debug, Clone)]
pub struct FileSettings {
    /// `MCP_V8_SCRATCH_DIR`: where runs write their files as they go (a
    /// folder each); `None`: `<data dir>/scratch` (`serve`, `stdio`), or
    /// `/tmp/mcp-v8-work` under Lambda (its ephemeral storage).
    pub scratch_dir: Option<std::path::PathBuf>,
    /// `MCP_V8_RUN_DISK_MB`: local bytes one run's files may hold at once.
    pub run_disk_mb: usize,
    /// `MCP_V8_TENANT_DISK_MB`: local bytes a tenant's runs on one process
    /// (one Lambda instance) may hold together.
    pub tenant_disk_mb: usize,
    /// `MCP_V8_MAX_FILE_MB`: largest file.
    pub max_file_mb: usize,
    /// `MCP_V8_MAX_WORK_MB`: all files of a tree together.
    pub max_work_mb: usize,
    /// `MCP_V8_MAX_FILES`: files and directories of a tree.
    pub max_files: usize,
}

/// The packages' part of the configuration.
#[derive(Debug, Clone)]
pub struct PackageSettings {
    /// `MCP_V8_NPM_REGISTRY`: where `packages add` resolves names (the
    /// public registry when unset; `--registry` wins).
    pub registry: Option<String>,
    /// `MCP_V8_MAX_PACKAGE_MB`: largest bundle one package may have.
    pub max_package_mb: usize,
    /// `MCP_V8_MAX_RUN_MODULES_MB`: most module source one run may load.
    pub max_run_modules_mb: usize,
    /// `MCP_V8_PRELUDE`: a file, or an `s3://bucket/key` object, evaluated
    /// once into the heap every fresh run starts from.
    pub prelude: Option<String>,
}

/// The engine's part of the configuration.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Engine worker processes, the runners every run executes in (`serve
    /// --engine-workers`, which reads `MCP_V8_ENGINE_WORKERS`; under Lambda
    /// the variable itself). The library's default is 0 (runs in the
    /// calling process, for tests and benchmarks); the binary always has at
    /// least one: one for each invocation Lambda may hand the instance at
    /// once (`AWS_LAMBDA_MAX_CONCURRENCY`, 1 on standard Lambda), two per
    /// core (at least four) under `serve`.
    pub workers: usize,
    /// `MCP_V8_ENGINE_WORKERS` as the operator set it, read here and nowhere
    /// else: `serve --engine-workers` wins over it.
    pub workers_set: Option<usize>,
    /// `MCP_V8_TENANT_RUNS`: runs of one authenticated tenant at once;
    /// `None`: half the workers, rounded up.
    pub tenant_runs: Option<usize>,
    /// `MCP_V8_QUEUE_WAIT_MS`: how long a run waits for a free worker (or
    /// its tenant's share) before it is refused as busy.
    pub queue_wait_ms: u64,
    /// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` under Lambda: the function's memory
    /// in MB, which bounds the heap limit a run may ask for.
    pub function_memory_mb: Option<usize>,
    /// `AWS_LAMBDA_MAX_CONCURRENCY`: invocations Lambda hands this instance
    /// at once (Lambda Managed Instances); 1 on standard Lambda and outside.
    pub lambda_max_concurrency: usize,
    /// `MCP_V8_RECORD_MAX_MB`: most MiB of a run's console output, and
    /// again of its result, that its record keeps (the answer shows what
    /// fits its budget and links the rest); past it, the ends of the output
    /// and the start of the result, with a marker naming the whole size.
    pub record_max_mb: usize,
    /// `MCP_V8_MAX_RESULT_BYTES`: longest `result` a run returns (by
    /// default `MCP_V8_RECORD_MAX_MB`); longer ones are cut with a marker.
    pub max_result_bytes: usize,
    /// `MCP_V8_ANSWER_BUDGET_KB`: most KiB of JSON a run's answer gives its
    /// text, and again its `structuredContent`; the rest is kept with the
    /// run and linked.
    pub answer_budget_kb: usize,
    /// `MCP_V8_READY_HEAPS_MB` as set: most memory of heaps engine workers
    /// keep restored for the next call ([`Self::ready_heaps_mb`]).
    pub ready_heaps_mb_set: Option<usize>,
    /// `MCP_V8_ANSWER_BEFORE_SAVE_MB`: a `latest` run in a logical session
    /// whose heap holds at least this much is answered before its heap is
    /// stored (4 under `serve`, 0 under Lambda, where the function's
    /// post-response phase stores it); `None` (`off`): every answer waits
    /// for its save (docs/protocol.md, "Answer first, save after").
    pub answer_before_save_mb: Option<usize>,
    /// `MCP_V8_UNSAVED_HEAPS`: most heaps of one logical session answered
    /// for and still being stored; a `latest` call past it waits for the
    /// oldest (4).
    pub unsaved_heaps: usize,
    /// `MCP_V8_UNSAVED_HEAPS_MB`: most MiB of V8 heap of every heap this
    /// process is still storing; a `latest` call past it waits (1024).
    pub unsaved_heaps_mb: usize,
    /// `MCP_V8_MAX_HEAP_SNAPSHOT_MB`: largest snapshot stored or restored.
    pub max_heap_snapshot_mb: usize,
    /// `MCP_V8_PROCESS_ENV`: `process.env` of runs, a JSON object of
    /// strings; empty by default. Code can read and print every value, so
    /// it is no place for secrets.
    pub process_env: std::collections::BTreeMap<String, String>,
}

/// The transport's part of the configuration.
#[derive(Debug, Clone)]
pub struct TransportSettings {
    /// `MCP_V8_SESSION_TTL_SECS`: how long an idle transport session lives.
    pub session_ttl_secs: i64,
    /// `MCP_V8_ALLOWED_ORIGINS`.
    pub allowed_origins: Vec<String>,
    /// `MCP_V8_MAX_BODY_BYTES`.
    pub max_body_bytes: usize,
    /// `MCP_V8_HTTP_HEADER_TIMEOUT_MS`: under `serve`, longest a client may
    /// take to send a request's headers, and longest an idle kept-alive
    /// connection stays open.
    pub header_timeout_ms: u64,
    /// `MCP_V8_HTTP_BODY_TIMEOUT_MS`: under `serve`, longest a client may
    /// take to send a request's body.
    pub body_timeout_ms: u64,
    /// `MCP_V8_MAX_CONNECTIONS`: under `serve`, connections open at once;
    /// `None`: from the file-descriptor limit.
    pub max_connections: Option<usize>,
    /// `MCP_V8_MAX_WAITING_PER_ADDRESS`: under `serve`, connections one
    /// address may hold that have not finished sending a request; `None`:
    /// half the connection cap.
    pub max_waiting_per_address: Option<usize>,
    /// `MCP_V8_AUTH_TOKEN_SHA256`: when set, every request needs the bearer
    /// token with this SHA-256 (64 hex digits).
    pub auth_token_sha256: Option<TokenDigest>,
    /// `MCP_V8_JWKS_URL`, `MCP_V8_JWT_ISSUER`, `MCP_V8_JWT_AUDIENCE`: bearer
    /// JWTs verified against the issuer's keys.
    pub jwt: Option<JwtSettings>,
    /// `MCP_V8_ALLOW_UNAUTHENTICATED`: under Lambda, serve requests that
    /// carry no IAM caller while no bearer token or JWT is configured
    /// (refused with 401 otherwise).
    pub allow_unauthenticated: bool,
    /// `MCP_V8_SHARED_NAMESPACE`: every authenticated caller works in one
    /// namespace (the anonymous layout) instead of a tenant of its own.
    pub shared_namespace: bool,
    /// `MCP_V8_CONTINUE_SESSIONS`: a `run_js` call that names a logical
    /// session and omits `heap` continues the session (`"latest"`) instead
    /// of starting fresh, the original server's meaning; `heap: ""` still
    /// starts fresh.
    pub continue_sessions: bool,
    /// Whether responses may stream (progress before a tool result):
    /// always under `serve`; under Lambda only when
    /// `MCP_V8_INVOKE_MODE=RESPONSE_STREAM`, the function URL's invoke mode
    /// (a `BUFFERED` URL would hold the stream back whole).
    pub response_streaming: bool,
}

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

/// The log's part of the configuration.
#[derive(Debug, Clone, Copy)]
pub struct LogSettings {
    /// `MCP_V8_LOG_FORMAT`, else `AWS_LAMBDA_LOG_FORMAT`.
    pub format: LogFormat,
    /// `AWS_LAMBDA_LOG_LEVEL` as a tracing filter; `RUST_LOG` wins over it.
    pub level: Option<&'static str>,
}

/// The reads of the settings that are more than a number or a flag.
impl<F: Fn(&str) -> Option<String>> Vars<F> {
    /// `MCP_V8_ANSWER_BUDGET_KB`: 32 by default; at least 4 (the outcome's
    /// own fields and the notes of what was cut need that), at most 1024
    /// (text and `structuredContent`, escaped, must fit one response).
    pub(super) fn answer_budget_kb(&self) -> Result<usize, ConfigError> {
        let kb = self.number("MCP_V8_ANSWER_BUDGET_KB", 32usize, Least::One)?;
        if (4..=1024).contains(&kb) {
            return Ok(kb);
        }
        Err(ConfigError {
            name: "MCP_V8_ANSWER_BUDGET_KB",
            value: kb.to_string(),
            reason: "expected KiB from 4 to 1024".into(),
        })
    }

    /// `MCP_V8_INVOKE_MODE`: whether responses may stream. A local server
    /// always may; a function only when its URL streams, which the
    /// deployment says (the template sets it from its `InvokeMode`).
    pub(super) fn invoke_mode(&self, under_lambda: bool) -> Result<bool, ConfigError> {
        match self
            .non_empty("MCP_V8_INVOKE_MODE")
            .as_deref()
            .map(str::trim)
        {
            None => Ok(!under_lambda),
            Some("RESPONSE_STREAM") => Ok(true),
            Some("BUFFERED") => Ok(false),
            Some(other) => Err(ConfigError {
                name: "MCP_V8_INVOKE_MODE",
                value: other.to_owned(),
                reason: "expected RESPONSE_STREAM or BUFFERED".into(),
            }),
        }
    }

    /// `MCP_V8_LOG_FORMAT`, else Lambda's own `AWS_LAMBDA_LOG_FORMAT`
    /// (`JSON` or `Text`, from the function's logging configuration).
    pub(super) fn log_format(&self) -> Result<LogFormat, ConfigError> {
        if let Some(lambda) = self.non_empty("AWS_LAMBDA_LOG_FORMAT")
            && self.non_empty("MCP_V8_LOG_FORMAT").is_none()
        {
            return Ok(match lambda.to_ascii_lowercase().as_str() {
                "json" => LogFormat::Json,
                _ => LogFormat::Text,
            });
        }
        match self.get("MCP_V8_LOG_FORMAT").as_deref().map(str::trim) {
            None | Some("") | Some("text") => Ok(LogFormat::Text),
            Some("json") => Ok(LogFormat::Json),
            Some(other) => Err(ConfigError {
                name: "MCP_V8_LOG_FORMAT",
                value: other.to_owned(),
                reason: "expected text or json".into(),
            }),
        }
    }

    /// The level Lambda's logging configuration asks for
    /// (`AWS_LAMBDA_LOG_LEVEL`), as a tracing filter; `FATAL` is `error`.
    pub(super) fn log_level(&self) -> Option<&'static str> {
        let level = self.non_empty("AWS_LAMBDA_LOG_LEVEL")?;
        Some(match level.to_ascii_uppercase().as_str() {
            "TRACE" => "trace",
            "DEBUG" => "debug",
            "WARN" => "warn",
            "ERROR" | "FATAL" => "error",
            _ => "info",
        })
    }

    /// `(AWS_LAMBDA_MAX_CONCURRENCY, engine workers)` under Lambda, where
    /// several invocations at once get workers unless `workers_set` (the
    /// variable, as the operator set it) says otherwise; `(1, 0)` elsewhere.
    pub(super) fn lambda_concurrency(
        &self,
        under_lambda: bool,
        workers_set: Option<usize>,
    ) -> Result<(usize, usize), ConfigError> {
        if !under_lambda {
            return Ok((1, 0));
        }
        let concurrency = self.number("AWS_LAMBDA_MAX_CONCURRENCY", 1, Least::One)?;
        // A runner for each invocation Lambda may hand the instance at once,
        // which the heap bound already budgets memory for (max_heap_limit_mb).
        Ok((concurrency, workers_set.unwrap_or(concurrency)))
    }

    pub(super) fn token_digest(&self) -> Result<Option<TokenDigest>, ConfigError> {
        let Some(text) = self.non_empty("MCP_V8_AUTH_TOKEN_SHA256") else {
            return Ok(None);
        };
        let mut digest = [0u8; 32];
        hex::decode_to_slice(text.to_ascii_lowercase(), &mut digest).map_err(|_| ConfigError {
            name: "MCP_V8_AUTH_TOKEN_SHA256",
            value: "(not shown)".to_owned(),
            reason: "expected the token's SHA-256 as 64 hex digits".into(),
        })?;
        Ok(Some(TokenDigest(digest)))
    }

    pub(super) fn jwt(&self) -> Result<Option<JwtSettings>, ConfigError> {
        let Some(jwks_url) = self.non_empty("MCP_V8_JWKS_URL") else {
            return Ok(None);
        };
        let required = |name: &'static str| {
            self.non_empty(name).ok_or(ConfigError {
                name,
                value: String::new(),
                reason: "required when MCP_V8_JWKS_URL is set".into(),
            })
        };
        Ok(Some(JwtSettings {
            jwks_url,
            issuer: required("MCP_V8_JWT_ISSUER")?,
            audience: required("MCP_V8_JWT_AUDIENCE")?,
        }))
    }
}

impl Config {
    /// Lambda freezes the environment between invocations: standard Lambda,
    /// not Managed Instances (`AWS_LAMBDA_MAX_CONCURRENCY` above 1).
    pub fn freezes_between_calls(&self) -> bool {
        self.under_lambda && self.engine.lambda_max_concurrency == 1
    }

    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// From any variable source (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let vars = Vars(lookup);
        let under_lambda = vars.get("AWS_LAMBDA_RUNTIME_API").is_some();
        Ok(Self {
            under_lambda,
            stateless: vars.flag("MCP_V8_STATELESS")?,
            engine: EngineSettings::from_vars(&vars, under_lambda)?,
            transport: TransportSettings::from_vars(&vars, under_lambda)?,
            stores: StoreSettings::from_vars(&vars, under_lambda)?,
            fetch: vars.fetch()?,
            mcp: vars.upstream()?,
            log: LogSettings {
                format: vars.log_format()?,
                level: vars.log_level(),
            },
            packages: PackageSettings {
                registry: vars.non_empty("MCP_V8_NPM_REGISTRY"),
                max_package_mb: vars.number("MCP_V8_MAX_PACKAGE_MB", 32, Least::One)?,
                max_run_modules_mb: vars.number("MCP_V8_MAX_RUN_MODULES_MB", 64, Least::One)?,
                prelude: vars.non_empty("MCP_V8_PRELUDE"),
            },
            files: FileSettings {
                scratch_dir: vars
                    .non_empty("MCP_V8_SCRATCH_DIR")
                    .map(std::path::PathBuf::from)
                    .or_else(|| under_lambda.then(|| "/tmp/mcp-v8-work".into())),
                // Lambda's ephemeral storage is shared with the heap cache.
                run_disk_mb: vars.number(
                    "MCP_V8_RUN_DISK_MB",
                    default_run_disk_mb(&vars, under_lambda)?,
                    Least::One,
                )?,
                tenant_disk_mb: vars.number(
                    "MCP_V8_TENANT_DISK_MB",
                    default_tenant_disk_mb(&vars, under_lambda)?,
                    Least::One,
                )?,
                max_file_mb: vars.number("MCP_V8_MAX_FILE_MB", 4096, Least::One)?,
                max_work_mb: vars.number("MCP_V8_MAX_WORK_MB", 8192, Least::One)?,
                max_files: vars.number("MCP_V8_MAX_FILES", 1000, Least::One)?,
            },
            tasks: TaskSettings {
                answer_within_ms: vars.number("MCP_V8_TASK_AFTER_MS", 3000, Least::Zero)?,
                default_ttl_secs: vars.number("MCP_V8_TASK_TTL_SECS", 3600, Least::One)?,
                max_ttl_secs: vars.number("MCP_V8_TASK_MAX_TTL_SECS", 86_400, Least::One)?,
                poll_interval_ms: vars.number("MCP_V8_TASK_POLL_MS", 1000, Least::One)?,
                lambda_task_above_secs: vars.number(
                    "MCP_V8_LAMBDA_TASK_ABOVE_SECS",
                    60,
                    Least::Zero,
                )?,
                heartbeat_ms: vars.number("MCP_V8_TASK_HEARTBEAT_MS", 5000, Least::One)?,
            },
            skills_dir: vars.directory("MCP_V8_SKILLS_DIR")?,
        })
    }
}

impl EngineSettings {
    fn from_vars<F: Fn(&str) -> Option<String>>(
        vars: &Vars<F>,
        under_lambda: bool,
    ) -> Result<Self, ConfigError> {
        let workers_set = vars
            .get("MCP_V8_ENGINE_WORKERS")
            .is_some()
            .then(|| vars.number("MCP_V8_ENGINE_WORKERS", 1, Least::One))
            .transpose()
            .map_err(|e| ConfigError {
                reason: format!(
                    "{}: every run executes in an engine worker process, so that code that ends \
                     V8's process ends only its worker",
                    e.reason
                )
                .into(),
                ..e
            })?;
        let (lambda_max_concurrency, workers) =
            vars.lambda_concurrency(under_lambda, workers_set)?;
        Ok(Self {
            workers,
            workers_set,
            tenant_runs: vars
                .get("MCP_V8_TENANT_RUNS")
                .is_some()
                .then(|| vars.number("MCP_V8_TENANT_RUNS", 1, Least::One))
                .transpose()?,
            queue_wait_ms: vars.number("MCP_V8_QUEUE_WAIT_MS", 10_000, Least::One)?,
            function_memory_mb: if under_lambda {
                Some(vars.number("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 0, Least::Zero)?)
                    .filter(|&mb| mb > 0)
            } else {
                None
            },
            lambda_max_concurrency,
            record_max_mb: vars.number("MCP_V8_RECORD_MAX_MB", 32, Least::One)?,
            max_result_bytes: vars.number(
                "MCP_V8_MAX_RESULT_BYTES",
                vars.number("MCP_V8_RECORD_MAX_MB", 32, Least::One)? * MIB,
                Least::One,
            )?,
            answer_budget_kb: vars.answer_budget_kb()?,
            ready_heaps_mb_set: vars
                .get("MCP_V8_READY_HEAPS_MB")
                .is_some()
                .then(|| vars.number("MCP_V8_READY_HEAPS_MB", 0, Least::Zero))
                .transpose()?,
            answer_before_save_mb: match vars.non_empty("MCP_V8_ANSWER_BEFORE_SAVE_MB") {
                Some(off) if off.eq_ignore_ascii_case("off") => None,
                // Under Lambda the save is as costly as anywhere but the
                // answer waits for S3 and DynamoDB, so every `latest` run
                // answers first (docs/protocol.md, "Answer first, save after").
                _ => Some(vars.number(
                    "MCP_V8_ANSWER_BEFORE_SAVE_MB",
                    if under_lambda { 0 } else { 4 },
                    Least::Zero,
                )?),
            },
            unsaved_heaps: vars.number("MCP_V8_UNSAVED_HEAPS", 4, Least::One)?,
            unsaved_heaps_mb: vars.number("MCP_V8_UNSAVED_HEAPS_MB", 1024, Least::One)?,
            max_heap_snapshot_mb: vars.number("MCP_V8_MAX_HEAP_SNAPSHOT_MB", 256, Least::One)?,
            process_env: match vars.non_empty("MCP_V8_PROCESS_ENV") {
                None => Default::default(),
                Some(json) => serde_json::from_str(&json).map_err(|e| ConfigError {
                    name: "MCP_V8_PROCESS_ENV",
                    value: "(not shown)".into(),
                    // serde's message may quote a value: only where it failed.
                    reason: format!(
                        "not a JSON object of strings (line {}, column {}), like {{\"STAGE\": \"dev\"}}",
                        e.line(),
                        e.column()
                    )
                    .into(),
                })?,
            },
        })
    }

    /// Most memory of heaps engine workers keep restored for the call that
    /// continues them, in MiB: `MCP_V8_READY_HEAPS_MB`, else 512 under
    /// `serve` and, under Lambda, the function's memory less the process's
    /// own (200 MB, as in [`Self::max_heap_limit_mb`]) and what the runs it
    /// serves at once may take besides (a full heap and as much in
    /// `ArrayBuffer`s each): 550 MiB in a 1024 MB function. A worker drops
    /// its ready heap before it runs another session's code, so a ready heap
    /// and a run of another session never hold memory at once in a worker.
    pub fn ready_heaps_mb(&self) -> usize {
        match (self.ready_heaps_mb_set, self.function_memory_mb) {
            (Some(mb), _) => mb,
            (None, Some(memory)) => memory.saturating_sub(
                200 + 2 * self.max_heap_limit_mb() * self.lambda_max_concurrency.max(1),
            ),
            (None, None) => 512,
        }
    }

    /// The largest heap limit a run may ask for, in MiB: the engine's
    /// [`MAX_HEAP_LIMIT_MB`](crate::engine::MAX_HEAP_LIMIT_MB),
    /// or less where the function's memory must also hold the rest of the
    /// process (about 200 MB: V8, the allocator's caches, the runtime) and,
    /// for each run the instance serves at once, a full heap and as much in
    /// `ArrayBuffer`s (the run's budget outside the heap), the snapshot V8
    /// serialises from both and the copy that is framed, hashed and stored:
    /// (memory − 200) / (6 × concurrent runs), at least 16.
    pub fn max_heap_limit_mb(&self) -> usize {
        const ENGINE_MAX_MB: usize = crate::engine::MAX_HEAP_LIMIT_MB;
        const PER_HEAP_MB: usize = 6;
        match self.function_memory_mb {
            Some(memory) => (memory.saturating_sub(200)
                / (PER_HEAP_MB * self.lambda_max_concurrency.max(1)))
            .clamp(16, ENGINE_MAX_MB),
            None => ENGINE_MAX_MB,
        }
    }
}

impl TransportSettings {
    fn from_vars<F: Fn(&str) -> Option<String>>(
        vars: &Vars<F>,
        under_lambda: bool,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            session_ttl_secs: vars.number("MCP_V8_SESSION_TTL_SECS", 86_400, Least::One)?,
            allowed_origins: vars.list("MCP_V8_ALLOWED_ORIGINS"),
            max_body_bytes: vars.number("MCP_V8_MAX_BODY_BYTES", MIB, Least::One)?,
            header_timeout_ms: vars.number("MCP_V8_HTTP_HEADER_TIMEOUT_MS", 10_000, Least::One)?,
            body_timeout_ms: vars.number("MCP_V8_HTTP_BODY_TIMEOUT_MS", 30_000, Least::One)?,
            max_connections: vars
                .get("MCP_V8_MAX_CONNECTIONS")
                .is_some()
                .then(|| vars.number("MCP_V8_MAX_CONNECTIONS", 1, Least::One))
                .transpose()?,
            max_waiting_per_address: vars
                .get("MCP_V8_MAX_WAITING_PER_ADDRESS")
                .is_some()
                .then(|| vars.number("MCP_V8_MAX_WAITING_PER_ADDRESS", 1, Least::One))
                .transpose()?,
            auth_token_sha256: vars.token_digest()?,
            jwt: vars.jwt()?,
            allow_unauthenticated: vars.flag("MCP_V8_ALLOW_UNAUTHENTICATED")?,
            shared_namespace: vars.flag("MCP_V8_SHARED_NAMESPACE")?,
            continue_sessions: vars.flag("MCP_V8_CONTINUE_SESSIONS")?,
            response_streaming: vars.invoke_mode(under_lambda)?,
        })
    }
}

impl StoreSettings {
    fn from_vars<F: Fn(&str) -> Option<String>>(
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
    fn the_process_env_of_runs_is_a_json_object_of_strings_and_never_echoed() {
        assert!(from(&[]).unwrap().engine.process_env.is_empty());
        let set = from(&[("MCP_V8_PROCESS_ENV", r#"{"STAGE": "dev"}"#)]).unwrap();
        assert_eq!(set.engine.process_env["STAGE"], "dev");
        for bad in [r#"{"TOKEN": 271828}"#, "STAGE=dev", r#"["sk-secret"]"#] {
            let err = from(&[("MCP_V8_PROCESS_ENV", bad)])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("MCP_V8_PROCESS_ENV") && err.contains("JSON object"),
                "{err}"
            );
            for secret in ["271828", "sk-secret", "STAGE=dev"] {
                assert!(!err.contains(secret), "{err}");
            }
        }
    }

    /// Only standard Lambda freezes between calls: the post-response
    /// extension and the settled ready heaps follow from it.
    #[test]
    fn only_standard_lambda_freezes_between_calls() {
        let api = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert!(!from(&[]).unwrap().freezes_between_calls());
        assert!(from(&[api]).unwrap().freezes_between_calls());
        let managed = from(&[api, ("AWS_LAMBDA_MAX_CONCURRENCY", "8")]).unwrap();
        assert!(!managed.freezes_between_calls());
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = from(&[]).unwrap();
        assert_eq!(config.transport.session_ttl_secs, 86_400);
        assert_eq!(config.stores.execution_ttl_secs, 604_800);
        assert_eq!(config.transport.max_body_bytes, 1_048_576);
        assert_eq!(config.log.format, LogFormat::Text);
        assert!(config.transport.allowed_origins.is_empty());
        assert!(!config.stores.uses_aws(), "locally nothing needs AWS");
        assert_eq!(config.stores.heap_cache_dir, None);
        assert_eq!(config.stores.db_cache_mb, 32);
        assert_eq!(config.stores.heap_memory_cache_mb, 64);
        let off = from(&[("MCP_V8_HEAP_MEMORY_CACHE_MB", "0")]).unwrap();
        assert_eq!(off.stores.heap_memory_cache_mb, 0);
        let lots = from(&[("MCP_V8_HEAP_MEMORY_CACHE_MB", "lots")]).unwrap_err();
        assert!(lots.to_string().contains("0 or more"), "{lots}");
        assert_eq!(
            from(&[("MCP_V8_DB_CACHE_MB", "4")])
                .unwrap()
                .stores
                .db_cache_mb,
            4
        );
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
        assert_eq!(config.stores.table_prefix.as_deref(), Some("mcp-v8-"));
        assert_eq!(
            config.stores.heap_cache_dir,
            Some(PathBuf::from("/tmp/mcp-v8-heaps"))
        );
        assert_eq!(
            config.stores.heap_cache_max_mb, 256,
            "half of Lambda's default /tmp"
        );
        let larger = from(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("MCP_V8_EPHEMERAL_STORAGE_MB", "2048"),
        ])
        .unwrap();
        assert_eq!(larger.stores.heap_cache_max_mb, 1024);
        // The other half of /tmp is the runs' local disk for /work.
        assert_eq!(larger.files.run_disk_mb, 1024);
        assert_eq!(larger.files.tenant_disk_mb, 1024, "all of the runs' half");
        assert_eq!(from(&[]).unwrap().files.run_disk_mb, 4096, "serve");
        assert_eq!(from(&[]).unwrap().files.tenant_disk_mb, 8192, "serve");
        assert_eq!(from(&[]).unwrap().stores.heap_cache_max_mb, 512, "serve");
        assert_eq!(config.stores.heap_prefix, "");
        assert!(!config.stateless);
        assert!(from(&[("MCP_V8_STATELESS", "true")]).unwrap().stateless);
        assert!(from(&[("MCP_V8_STATELESS", "maybe")]).is_err());
        assert_eq!(config.engine.lambda_max_concurrency, 1);
        assert_eq!(
            config.engine.workers, 1,
            "standard Lambda: one run at a time, in a worker"
        );
    }

    #[test]
    fn responses_stream_locally_and_under_lambda_only_when_the_url_does() {
        let with = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Config::from_lookup(move |name| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
        };
        assert!(with(&[]).unwrap().transport.response_streaming);
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert!(!with(&[lambda]).unwrap().transport.response_streaming);
        assert!(
            with(&[lambda, ("MCP_V8_INVOKE_MODE", "RESPONSE_STREAM")])
                .unwrap()
                .transport
                .response_streaming
        );
        assert!(
            !with(&[lambda, ("MCP_V8_INVOKE_MODE", "BUFFERED")])
                .unwrap()
                .transport
                .response_streaming
        );
        let err = with(&[("MCP_V8_INVOKE_MODE", "STREAM")]).unwrap_err();
        assert!(
            err.to_string().contains("RESPONSE_STREAM or BUFFERED"),
            "{err}"
        );
    }

    #[test]
    fn answers_go_before_saves_outside_lambda_only_and_ready_heaps_have_a_bound() {
        let local = from(&[]).unwrap();
        assert_eq!(local.engine.answer_before_save_mb, Some(4));
        assert_eq!(local.engine.ready_heaps_mb(), 512);
        let set = from(&[
            ("MCP_V8_ANSWER_BEFORE_SAVE_MB", "0"),
            ("MCP_V8_READY_HEAPS_MB", "0"),
        ])
        .unwrap();
        assert_eq!(set.engine.answer_before_save_mb, Some(0));
        assert_eq!(set.engine.ready_heaps_mb(), 0, "0 keeps no heap ready");
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let memory = ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048");
        let function = from(&[lambda, memory]).unwrap();
        assert_eq!(
            function.engine.answer_before_save_mb,
            Some(0),
            "every latest run answers first under Lambda"
        );
        let off = from(&[lambda, memory, ("MCP_V8_ANSWER_BEFORE_SAVE_MB", "off")]).unwrap();
        assert_eq!(off.engine.answer_before_save_mb, None);
        let refused = from(&[("MCP_V8_ANSWER_BEFORE_SAVE_MB", "soon")]).unwrap_err();
        assert!(refused.to_string().contains("0 or more"), "{refused}");
    }

    #[test]
    fn lambda_managed_instances_get_engine_workers_unless_told_otherwise() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let managed = from(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "8")]).unwrap();
        assert_eq!(managed.engine.lambda_max_concurrency, 8);
        assert_eq!(managed.engine.workers, 8, "a runner per invocation at once");
        let told = from(&[
            lambda,
            ("AWS_LAMBDA_MAX_CONCURRENCY", "8"),
            ("MCP_V8_ENGINE_WORKERS", "3"),
        ])
        .unwrap();
        assert_eq!(told.engine.workers, 3);
        let standard = from(&[lambda]).unwrap();
        assert_eq!(standard.engine.workers, 1, "one invocation at a time");
        let in_process = from(&[lambda, ("MCP_V8_ENGINE_WORKERS", "0")]).unwrap_err();
        assert!(
            in_process.to_string().contains("engine worker process"),
            "{in_process}"
        );
        let bad = from(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "0")]).unwrap_err();
        assert!(
            bad.to_string().contains("AWS_LAMBDA_MAX_CONCURRENCY"),
            "{bad}"
        );
        // Outside Lambda the variables belong to `serve --workers` and to
        // no one.
        let local = from(&[("AWS_LAMBDA_MAX_CONCURRENCY", "8")]).unwrap();
        assert_eq!(
            (local.engine.lambda_max_concurrency, local.engine.workers),
            (1, 0)
        );
    }

    #[test]
    fn the_engine_workers_variable_is_read_once_for_serve_and_lambda_alike() {
        let local = from(&[("MCP_V8_ENGINE_WORKERS", "3")]).unwrap();
        assert_eq!(
            local.engine.workers_set,
            Some(3),
            "serve takes it from here"
        );
        assert_eq!(local.engine.workers, 0, "the library's default stays");
        assert_eq!(from(&[]).unwrap().engine.workers_set, None);
        let bad = from(&[("MCP_V8_ENGINE_WORKERS", "many")]).unwrap_err();
        assert!(bad.to_string().contains("MCP_V8_ENGINE_WORKERS"), "{bad}");
        let lambda = from(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("MCP_V8_ENGINE_WORKERS", "2"),
        ])
        .unwrap();
        assert_eq!(lambda.engine.workers, 2);
    }

    #[test]
    fn the_function_memory_bounds_the_heap_limit_under_lambda_only() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        let with = |mb: &str| {
            from(&[lambda, ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", mb)])
                .unwrap()
                .engine
                .max_heap_limit_mb()
        };
        assert_eq!(with("1024"), 137);
        assert_eq!(with("512"), 52);
        assert_eq!(with("128"), 16);
        assert_eq!(with("10240"), 1024);
        let managed = from(&[
            lambda,
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "4096"),
            ("AWS_LAMBDA_MAX_CONCURRENCY", "4"),
        ])
        .unwrap();
        assert_eq!(
            managed.engine.max_heap_limit_mb(),
            162,
            "(4096 - 200) / (6 * 4)"
        );
        assert_eq!(from(&[lambda]).unwrap().engine.max_heap_limit_mb(), 1024);
        let local = from(&[("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")]).unwrap();
        assert_eq!(
            local.engine.max_heap_limit_mb(),
            1024,
            "serve is not bound by it"
        );
    }

    #[test]
    fn lambdas_logging_configuration_is_honoured_unless_overridden() {
        let json = from(&[
            ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
            ("AWS_LAMBDA_LOG_LEVEL", "WARN"),
        ])
        .unwrap();
        assert_eq!(
            (json.log.format, json.log.level),
            (LogFormat::Json, Some("warn"))
        );
        let text = from(&[("AWS_LAMBDA_LOG_FORMAT", "Text")]).unwrap();
        assert_eq!((text.log.format, text.log.level), (LogFormat::Text, None));
        let ours = from(&[
            ("AWS_LAMBDA_LOG_FORMAT", "Text"),
            ("MCP_V8_LOG_FORMAT", "json"),
        ])
        .unwrap();
        assert_eq!(ours.log.format, LogFormat::Json, "MCP_V8_LOG_FORMAT wins");
        let fatal = from(&[("AWS_LAMBDA_LOG_LEVEL", "FATAL")]).unwrap();
        assert_eq!(fatal.log.level, Some("error"));
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
        assert_eq!(config.transport.session_ttl_secs, 60);
        assert_eq!(
            config.transport.allowed_origins,
            ["https://a.example", "https://b.example"]
        );
        assert_eq!(config.log.format, LogFormat::Json);
        let err = from(&[("MCP_V8_SESSION_TTL_SECS", "-5")]).unwrap_err();
        assert!(err.to_string().contains("MCP_V8_SESSION_TTL_SECS"), "{err}");
        assert!(from(&[("MCP_V8_LOG_FORMAT", "xml")]).is_err());
    }
}
