//! Configuration: one typed struct built from the environment. Every
//! variable, its default and its effect are listed in docs/configuration.md.

mod engine;
mod reach;
mod stores;
mod transport;
mod vars;

pub use engine::EngineSettings;
pub use stores::StoreSettings;
pub use transport::TransportSettings;

pub use vars::ConfigError;
use vars::{Least, Vars, default_run_disk_mb, default_tenant_disk_mb};

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
    /// `MCP_V8_METRICS_NAMESPACE`: the CloudWatch namespace of the metrics
    /// the Lambda entry writes into its log lines (default `mcp-v8-lambda`).
    pub metrics_namespace: String,
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
            metrics_namespace: vars
                .non_empty("MCP_V8_METRICS_NAMESPACE")
                .unwrap_or_else(|| "mcp-v8-lambda".to_owned()),
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

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
