//! The composition root: the one place that turns a [`Config`] into stores,
//! an engine, tools and the HTTP [`App`]. `serve`, the Lambda entry and the
//! tests all build through here, so what they run is wired one way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::BoxError;
use crate::backends::aws::{Clients, SESSIONS};
use crate::backends::embedded::open_database_with_cache;
use crate::config::Config;
use crate::engine::{
    CapabilitySettings, DiskSettings, Engine, EngineConfig, FileLimits, FilePrelude, HostClients,
    ModuleSettings, PreludeSource, ProcessSettings,
};
use crate::files::{DirFileStore, FileStore, S3FileStore};
use crate::heap::{
    FileHeapStore, HeapStore, MemoryCacheHeapStore, S3HeapStore, WriteThroughCacheHeapStore,
};
use crate::meta::{DynamoMetaStore, MetaStore, MetaTables, RedbMetaStore};
use crate::packages::{DirPackageStore, PackageStore, Packages, S3PackageStore};
use crate::server::McpServer;
use crate::server::ToolExecutor;
use crate::server::extra::ExtraContent;
use crate::session::{DynamoSessionStore, RedbSessionStore, SessionStore};
use crate::skills::{Builtins, Skills};
use crate::tasks::{Handoff, LambdaHandoff, TaskBook, TaskSettings, TaskStore, Tasks};
use crate::tenant::Tenancy;
use crate::tools::{Lifecycle, ToolRouter, Toolbox};
use crate::transport::{App, Authenticator, JwtVerifier, OriginPolicy, TransportConfig};
use crate::units::{MIB, MIB_U64};

/// The stores an app runs on. Built from a configuration by
/// [`Stores::from_config`]; a test may wrap or replace any of them before
/// [`with_stores`].
#[derive(Debug, Clone)]
pub struct Stores {
    /// Transport sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// Session log, tags, executions.
    pub meta: Arc<dyn MetaStore>,
    /// Heaps; `None` for a stateless server.
    pub heaps: Option<Arc<dyn HeapStore>>,
    /// The deployment's packages, for `import` and `require` in runs.
    pub packages: Arc<Packages>,
    /// The operator's prelude (`MCP_V8_PRELUDE`), when there is one.
    pub prelude: Option<Arc<dyn PreludeSource>>,
    /// The bytes of `/work` files; `None` for a stateless server.
    pub files: Option<Arc<dyn FileStore>>,
    /// Runs' whole output and results, kept with their execution records
    /// (`records/` beside the files); `None` for a stateless server.
    pub records: Option<Arc<dyn FileStore>>,
    /// Where runs write their `/work` files as they go (`<data dir>/scratch`,
    /// or the configured `MCP_V8_SCRATCH_DIR`), emptied when the stores are
    /// opened; `None` keeps the engine configuration's.
    pub scratch: Option<PathBuf>,
    /// MCP tasks: in the metadata store's database or tables.
    pub tasks: Arc<dyn TaskStore>,
    /// Where a task's run goes when it cannot stay in this process: under
    /// Lambda on the AWS stores, an asynchronous invocation of the same
    /// function. `None` runs tasks here.
    pub handoff: Option<Arc<dyn Handoff>>,
    /// Whether tasks are offered at all: not under Lambda without the AWS
    /// stores, where no other invocation could read them.
    pub offers_tasks: bool,
}

impl Stores {
    /// The stores `config` names. Heaps: S3 when a bucket is set (behind the
    /// write-through cache when a cache directory is configured, as it is by
    /// default under Lambda), else `<data_dir>/heaps`, and a memory cache in
    /// front of either unless it is off. Sessions and metadata: DynamoDB when
    /// a table prefix is set (by default under Lambda), else
    /// `<data_dir>/meta.redb`. `aws` holds the clients, required when
    /// [`StoreSettings::uses_aws`](crate::config::StoreSettings::uses_aws).
    pub fn from_config(
        config: &Config,
        data_dir: &Path,
        aws: Option<&Clients>,
    ) -> Result<Self, BoxError> {
        let aws_clients_given = aws;
        let aws = || aws.ok_or("an AWS store is configured but no AWS clients were built");
        let heaps = if config.stateless {
            None
        } else {
            let (heaps, embedded) = heap_store(config, data_dir, aws)?;
            if let Some(store) = embedded {
                keep_retention(store, config.stores.heap_retention_days);
            }
            Some(heaps)
        };
        let (sessions, meta, tasks): (
            Arc<dyn SessionStore>,
            Arc<dyn MetaStore>,
            Arc<dyn TaskStore>,
        ) = match &config.stores.table_prefix {
            Some(prefix) => {
                let bucket = config.stores.heap_bucket.as_ref().ok_or(
                        "DynamoDB metadata needs MCP_V8_HEAP_BUCKET: items too large for DynamoDB are kept in S3",
                    )?;
                let clients = aws()?;
                let meta = DynamoMetaStore::new(
                    clients.dynamodb.clone(),
                    clients.s3.clone(),
                    bucket,
                    format!("{}overflow/", config.stores.heap_prefix),
                    MetaTables::with_prefix(prefix),
                );
                let meta = match config.stores.session_log_retention_days {
                    0 => meta,
                    days => meta.with_log_retention(Duration::from_secs(days * 86_400)),
                };
                let meta = Arc::new(meta);
                (
                    Arc::new(DynamoSessionStore::new(
                        clients.dynamodb.clone(),
                        SESSIONS.name(prefix),
                    )),
                    meta.clone(),
                    meta,
                )
            }
            None => {
                let db = open_database_with_cache(
                    &data_dir.join("meta.redb"),
                    config.stores.db_cache_mb * MIB,
                )?;
                let meta = Arc::new(RedbMetaStore::new(db.clone())?);
                (Arc::new(RedbSessionStore::new(db)?), meta.clone(), meta)
            }
        };
        let (store, local, fill) = package_store(config, data_dir, &aws)?;
        let prelude: Option<Arc<dyn PreludeSource>> = match &config.packages.prelude {
            None => None,
            Some(location) => match location.strip_prefix("s3://") {
                Some(object) => {
                    let (bucket, key) = object
                        .split_once('/')
                        .ok_or("MCP_V8_PRELUDE: an S3 prelude is s3://BUCKET/KEY")?;
                    let clients = aws().map_err(|_| {
                        "MCP_V8_PRELUDE names an S3 object, which needs the AWS stores (MCP_V8_HEAP_BUCKET)"
                    })?;
                    Some(Arc::new(S3Prelude {
                        client: clients.s3.clone(),
                        bucket: bucket.to_owned(),
                        key: key.to_owned(),
                    }))
                }
                None => Some(Arc::new(FilePrelude(PathBuf::from(location)))),
            },
        };
        // Beside the heaps: `work/` in the bucket, `<data_dir>/work` here,
        // and `records/` beside them, which expires with the execution records.
        type Both = (Option<Arc<dyn FileStore>>, Option<Arc<dyn FileStore>>);
        let (files, records): Both = match (&heaps, &config.stores.heap_bucket) {
            (None, _) => (None, None),
            (Some(_), Some(bucket)) => {
                let (s3, prefix) = (&aws()?.s3, &config.stores.heap_prefix);
                (
                    Some(Arc::new(S3FileStore::new(s3.clone(), bucket, prefix))),
                    Some(Arc::new(S3FileStore::records(s3.clone(), bucket, prefix))),
                )
            }
            (Some(_), None) => {
                let records = DirFileStore::records(data_dir.join("records"));
                keep_records_retention(records.clone(), config.stores.execution_ttl_secs);
                let work = DirFileStore::new(data_dir.join("work"));
                keep_files_collected(work.clone(), config.stores.heap_retention_days);
                (Some(Arc::new(work)), Some(Arc::new(records)))
            }
        };
        // One process owns its scratch folder (the data directory's lock,
        // or a Lambda instance's `/tmp`): what is there is left by runs of
        // a process that ended without removing it.
        let scratch = files.as_ref().map(|_| {
            let scratch = config
                .files
                .scratch_dir
                .clone()
                .unwrap_or_else(|| data_dir.join("scratch"));
            crate::engine::sweep_scratch(&scratch);
            scratch
        });
        Ok(Self {
            sessions,
            meta,
            heaps,
            packages: Arc::new(Packages::new(store, local, fill)),
            prelude,
            files,
            records,
            scratch,
            tasks,
            handoff: handoff(config, aws_clients_given)?,
            offers_tasks: !config.under_lambda || config.stores.table_prefix.is_some(),
        })
    }
}

/// A prelude kept as an S3 object (the function can read its own bucket).
#[derive(Debug)]
struct S3Prelude {
    client: aws_sdk_s3::Client,
    bucket: String,
    key: String,
}

#[async_trait::async_trait]
impl PreludeSource for S3Prelude {
    async fn code(&self) -> Result<String, BoxError> {
        let object = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&self.key)
            .send()
            .await
            .map_err(|e| aws_sdk_s3::error::DisplayErrorContext(e).to_string())?;
        let bytes = object.body.collect().await?.into_bytes();
        Ok(String::from_utf8(bytes.to_vec())?)
    }

    fn location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }
}

/// Where the deployment's packages are (`packages add` writes there; runs
/// read), where runs read bundles from, and whether that is a cache to
/// fill: beside the heaps in S3 when a bucket is set, with a cache next to
/// the heap cache; else `<data_dir>/packages`, read in place.
pub fn package_store<'a>(
    config: &Config,
    data_dir: &Path,
    aws: &impl Fn() -> Result<&'a Clients, &'static str>,
) -> Result<(Arc<dyn PackageStore>, PathBuf, bool), BoxError> {
    Ok(match &config.stores.heap_bucket {
        Some(bucket) => {
            let store = S3PackageStore::new(aws()?.s3.clone(), bucket, &config.stores.heap_prefix);
            let cache = match &config.stores.heap_cache_dir {
                Some(dir) => {
                    let mut name = dir.file_name().unwrap_or_default().to_owned();
                    name.push("-packages");
                    dir.with_file_name(name)
                }
                None => std::env::temp_dir().join(format!("mcp-v8-packages-{bucket}")),
            };
            (Arc::new(store), cache, true)
        }
        None => {
            let store = DirPackageStore::new(data_dir.join("packages"));
            let local = store.bundle_dir();
            (Arc::new(store), local, false)
        }
    })
}

/// Sweeps the embedded heap store by `days` (0: never) now and every hour,
/// on the blocking pool: `.mcp-v8/heaps` then stops growing without bound.
fn keep_retention(store: FileHeapStore, days: u64) {
    if days == 0 {
        return;
    }
    let max_age = std::time::Duration::from_secs(days * 86_400);
    every_hour("heap retention", move || {
        let swept = store.sweep(max_age)?;
        if swept.heaps + swept.chunks > 0 {
            tracing::info!(
                heaps = swept.heaps,
                chunks = swept.chunks,
                bytes = swept.bytes,
                days,
                "removed heaps past MCP_V8_HEAP_RETENTION_DAYS"
            );
        }
        Ok(())
    });
}

/// Collects the embedded store's `/work` objects no retained heap names,
/// now and every hour, when heaps expire at all (`days`): a record of the
/// files heaps name lives a day longer than the heaps, as chunks do. An
/// hour's grace covers the objects of a heap being stored.
fn keep_files_collected(store: DirFileStore, days: u64) {
    if days == 0 {
        return;
    }
    let max_age = std::time::Duration::from_secs((days + 1) * 86_400);
    every_hour("/work files' collection", move || {
        let removed = store.collect(max_age, std::time::Duration::from_secs(3600))?;
        if removed > 0 {
            tracing::info!(removed, "removed /work file objects no retained heap names");
        }
        Ok(())
    });
}

/// Sweeps the embedded store's kept run texts now and every hour: a text
/// last named by a record more than the records' lifetime (and a day) ago
/// belongs to no record a reader can still get.
fn keep_records_retention(store: DirFileStore, execution_ttl_secs: i64) {
    let max_age = std::time::Duration::from_secs(execution_ttl_secs.max(0) as u64 + 86_400);
    every_hour("run texts' retention", move || {
        let removed = store.sweep(max_age)?;
        if removed > 0 {
            tracing::info!(removed, "removed run texts past their records' lifetime");
        }
        Ok(())
    });
}

/// Runs `sweep` now and every hour on the blocking pool, logging a failure
/// of the `what` sweep; nothing outside a Tokio runtime.
fn every_hour(
    what: &'static str,
    sweep: impl Fn() -> std::io::Result<()> + Clone + Send + 'static,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            match tokio::task::spawn_blocking(sweep.clone()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, what, "the sweep failed; it runs again in an hour")
                }
                Err(e) => tracing::warn!(error = %e, what, "the sweep task failed"),
            }
        }
    });
}

/// The heap store of a stateful server, with its caches, and the embedded
/// directory store when that is the one below them.
pub fn heap_store<'a>(
    config: &Config,
    data_dir: &Path,
    aws: impl Fn() -> Result<&'a Clients, &'static str>,
) -> Result<(Arc<dyn HeapStore>, Option<FileHeapStore>), BoxError> {
    let mut embedded = None;
    let store: Arc<dyn HeapStore> = match &config.stores.heap_bucket {
        Some(bucket) => {
            let s3 = Arc::new(S3HeapStore::new(
                aws()?.s3.clone(),
                bucket,
                &config.stores.heap_prefix,
            ));
            match &config.stores.heap_cache_dir {
                Some(dir) => Arc::new(WriteThroughCacheHeapStore::new(
                    FileHeapStore::cache(dir),
                    s3,
                    config.stores.heap_cache_max_mb * MIB_U64,
                )),
                None => s3,
            }
        }
        None => {
            let store = FileHeapStore::new(data_dir.join("heaps"));
            embedded = Some(store.clone());
            Arc::new(store)
        }
    };
    // A session's next run most often restores the heap its last run
    // stored: from memory, that is neither a read nor a second hash.
    let store = match config.stores.heap_memory_cache_mb {
        0 => store,
        mb => Arc::new(MemoryCacheHeapStore::new(store, mb * MIB)),
    };
    Ok((store, embedded))
}

/// The app `config` describes, on the stores it names.
pub fn app(config: &Config, data_dir: &Path, aws: Option<&Clients>) -> Result<App, BoxError> {
    Ok(with_stores(
        config,
        Stores::from_config(config, data_dir, aws)?,
    ))
}

/// Under Lambda on the AWS stores, tasks go to asynchronous invocations of
/// this very function (`AWS_LAMBDA_FUNCTION_NAME`), at the version that
/// runs (`AWS_LAMBDA_FUNCTION_VERSION`).
fn handoff(config: &Config, aws: Option<&Clients>) -> Result<Option<Arc<dyn Handoff>>, BoxError> {
    if !config.under_lambda || config.stores.table_prefix.is_none() {
        return Ok(None);
    }
    let (Some(clients), Ok(function)) = (aws, std::env::var("AWS_LAMBDA_FUNCTION_NAME")) else {
        return Ok(None);
    };
    let version = std::env::var("AWS_LAMBDA_FUNCTION_VERSION").ok();
    Ok(Some(Arc::new(
        LambdaHandoff::new(&clients.sdk, function)?.qualified(version),
    )))
}

/// The engine's limits and policies `config` describes.
pub fn engine_config(config: &Config) -> EngineConfig {
    let defaults = EngineConfig::default();
    let max_heap_limit_mb = config.engine.max_heap_limit_mb();
    EngineConfig {
        max_heap_limit_mb,
        default_heap_limit_mb: defaults.default_heap_limit_mb.min(max_heap_limit_mb),
        max_snapshot_bytes: config.engine.max_heap_snapshot_mb * MIB,
        max_result_bytes: config.engine.max_result_bytes,
        engine_workers: match config.engine.workers {
            0 => EngineConfig::serve_workers(),
            workers => workers,
        },
        ready_heaps_bytes: config.engine.ready_heaps_mb() * MIB,
        collect_ready_heaps: config.freezes_between_calls(),
        tenant_runs: config.engine.tenant_runs,
        queue_wait: std::time::Duration::from_millis(config.engine.queue_wait_ms),
        fetch: config.fetch.clone(),
        capabilities: CapabilitySettings {
            mcp: config.mcp.clone(),
            modules: ModuleSettings {
                max_module_bytes: config.packages.max_run_modules_mb * MIB,
            },
            process: ProcessSettings {
                env: Arc::new(config.engine.process_env.clone()),
            },
            console: crate::engine::ConsoleSettings {
                max_output_bytes: config.engine.record_max_mb * MIB,
            },
            files: FileLimits {
                max_file_bytes: config.files.max_file_mb * MIB,
                max_tree_bytes: config.files.max_work_mb * MIB,
                max_files: config.files.max_files,
            },
            // A server with a file store writes in its own scratch folder
            // (`build`); a stateless one still gives runs a throwaway disk.
            disk: DiskSettings {
                scratch: config
                    .files
                    .scratch_dir
                    .clone()
                    .or_else(|| DiskSettings::default().scratch),
                run_bytes: config.files.run_disk_mb as u64 * MIB_U64,
                tenant_bytes: config.files.tenant_disk_mb as u64 * MIB_U64,
            },
            ..defaults.capabilities
        },
        ..defaults
    }
}

/// What a build adds to the server's own tools, prompts and resources (the
/// conformance fixtures' server adds the suite's): given to the
/// composition root, which merges it into the server it builds.
#[derive(Debug, Clone)]
pub struct Additions {
    /// Tools listed after the server's own, before the View's.
    pub tools: ToolRouter,
    /// Prompts and resources listed after the server's own.
    pub content: Option<Arc<dyn ExtraContent>>,
}

impl Default for Additions {
    fn default() -> Self {
        Self {
            tools: ToolRouter::empty(),
            content: None,
        }
    }
}

/// The app `config` describes, on `stores`.
pub fn with_stores(config: &Config, stores: Stores) -> App {
    with_engine(config, engine_config(config), stores)
}

/// The app `config` describes, on `stores`, with an engine configured as
/// `engine_config` says rather than as `config` does (tests name the worker
/// program, which a server finds as its own executable).
pub fn with_engine(config: &Config, engine_config: EngineConfig, stores: Stores) -> App {
    build(config, engine_config, stores, Additions::default()).0
}

/// The app `config` describes on its stores (see [`app`]), and what the
/// process does around its calls: a host's entry (`serve`, `stdio`, the
/// Lambda entry) waits for its saves and settles its ready heaps through
/// the [`Lifecycle`], not through the app.
/// `additions` are what the build adds to the server's own tools and
/// content.
pub fn host(
    config: &Config,
    data_dir: &Path,
    aws: Option<&Clients>,
    additions: Additions,
) -> Result<(App, Lifecycle), BoxError> {
    Ok(build(
        config,
        engine_config(config),
        Stores::from_config(config, data_dir, aws)?,
        additions,
    ))
}

fn build(
    config: &Config,
    engine_config: EngineConfig,
    stores: Stores,
    additions: Additions,
) -> (App, Lifecycle) {
    let mut engine_config = engine_config;
    if let Some(scratch) = &stores.scratch {
        engine_config.capabilities.disk.scratch = Some(scratch.clone());
    }
    // The host's clients (fetch, upstream connections) are one value, shared
    // by the engine's runs and the tools that list upstream servers.
    let clients = Arc::new(HostClients::default());
    let router = ToolRouter::builtin().merge(additions.tools);
    let tools = Toolbox {
        engine: Arc::new({
            let engine = Engine::new(engine_config, stores.heaps)
                .with_packages(stores.packages.clone())
                .with_clients(clients.clone());
            let engine = match stores.files.clone() {
                Some(files) => engine.with_files(files),
                None => engine,
            };
            let engine = match stores.prelude {
                Some(prelude) => engine.with_prelude(prelude),
                None => engine,
            };
            // The first run's worker starts now, beside the first requests.
            if tokio::runtime::Handle::try_current().is_ok() {
                engine.prestart();
            }
            engine
        }),
        meta: stores.meta,
        packages: Some(stores.packages),
        files: stores.files,
        records: stores.records,
        mcp: config.mcp.enabled().then(|| Arc::new(config.mcp.clone())),
        clients,
        stateless: config.stateless,
        execution_ttl_secs: config.stores.execution_ttl_secs,
        suspended_run_ttl_secs: config.stores.suspended_run_ttl_secs,
        continue_sessions: config.transport.continue_sessions,
        answer_before_save_bytes: config
            .engine
            .answer_before_save_mb
            .map(|mb| mb as u64 * MIB_U64),
        saves: Default::default(),
        state_key: Default::default(),
        unsaved: crate::tools::UnsavedBounds {
            per_session: config.engine.unsaved_heaps,
            process_bytes: config.engine.unsaved_heaps_mb as u64 * MIB_U64,
        },
        answer_budget_bytes: config.engine.answer_budget_kb * 1024,
    };
    let transport = TransportConfig {
        session_ttl_secs: config.transport.session_ttl_secs,
        max_body_bytes: config.transport.max_body_bytes,
        origins: OriginPolicy {
            extra: config.transport.allowed_origins.clone(),
        },
        auth: Authenticator {
            token: config.transport.auth_token_sha256.clone(),
            jwt: config.transport.jwt.clone().map(JwtVerifier::new),
        },
        tenancy: Tenancy {
            shared_namespace: config.transport.shared_namespace,
        },
        streaming: config.transport.response_streaming,
    };
    let lifecycle = Lifecycle::new(tools.saves.clone(), tools.engine.clone());
    let server = McpServer::new(tools.clone(), router.clone()).with_skills(skills(config));
    let server = match additions.content {
        Some(content) => server.with_content(content),
        None => server,
    };
    let server = if stores.offers_tasks {
        server.with_tasks(Tasks::new(
            TaskBook::new(stores.tasks),
            Arc::new(ToolExecutor::new(tools, router)),
            stores.handoff,
            task_settings(config),
        ))
    } else {
        server
    };
    (App::new(transport, stores.sessions, server), lifecycle)
}

/// The skills `config` serves: the built-in ones that apply (none on a
/// stateless server, which keeps none of the state they teach; code mode
/// only with upstream servers), then the operator's from
/// `MCP_V8_SKILLS_DIR`. A subdirectory that is no valid skill is left out
/// with a warning naming it and why.
pub fn skills(config: &Config) -> Skills {
    let mut skills = if config.stateless {
        Vec::new()
    } else {
        Builtins {
            code_mode: config.mcp.enabled(),
        }
        .skills()
    };
    if let Some(dir) = &config.skills_dir {
        match crate::skills::load_dir(dir) {
            Ok((operators, rejected)) => {
                for left_out in rejected {
                    tracing::warn!(
                        directory = %left_out.directory.display(),
                        reason = %left_out.reason,
                        "a skill in MCP_V8_SKILLS_DIR is not served: {}",
                        left_out.reason
                    );
                }
                tracing::info!(
                    count = operators.len(),
                    directory = %dir.display(),
                    "serving the skills of MCP_V8_SKILLS_DIR"
                );
                skills.extend(operators);
            }
            Err(e) => tracing::error!(
                directory = %dir.display(),
                error = %e,
                "MCP_V8_SKILLS_DIR cannot be read; its skills are not served"
            ),
        }
    }
    Skills::new(skills)
}

/// When calls become tasks and how long tasks live, as `config` says.
pub fn task_settings(config: &Config) -> TaskSettings {
    TaskSettings {
        answer_within: std::time::Duration::from_millis(config.tasks.answer_within_ms),
        default_ttl_ms: config.tasks.default_ttl_secs * 1000,
        max_ttl_ms: config.tasks.max_ttl_secs * 1000,
        poll_interval_ms: config.tasks.poll_interval_ms,
        handoff_above: std::time::Duration::from_secs(config.tasks.lambda_task_above_secs),
        heartbeat: std::time::Duration::from_millis(config.tasks.heartbeat_ms),
        cancel_poll: crate::tasks::CANCEL_POLL,
    }
}

/// AWS clients from the standard configuration (`AWS_ENDPOINT_URL`, region,
/// credentials chain), built once, only when a store needs them.
pub async fn aws_clients(config: &Config) -> Option<Clients> {
    if !config.stores.uses_aws() {
        return None;
    }
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    Some(Clients::new(&sdk, config.stores.s3_force_path_style, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamodb_metadata_without_a_bucket_is_refused() {
        let config =
            Config::from_lookup(|name| (name == "MCP_V8_TABLE_PREFIX").then(|| "x-".into()))
                .unwrap();
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let clients = Clients::new(&sdk, false, None);
        let dir = std::env::temp_dir();
        let err = app(&config, &dir, Some(&clients)).unwrap_err();
        assert!(err.to_string().contains("MCP_V8_HEAP_BUCKET"), "{err}");
    }
}
