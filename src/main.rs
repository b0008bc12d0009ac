//! The `mcp-v8-lambda` binary. Under Lambda (`AWS_LAMBDA_RUNTIME_API` set) it
//! serves invocations; otherwise `serve` hosts the MCP endpoint (embedded
//! store by default, AWS stores when configured) and `setup` creates the AWS
//! tables and bucket.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_v8_lambda::backends::aws::Clients;
use mcp_v8_lambda::compose::{self, aws_clients};
use mcp_v8_lambda::config::{Config, LogFormat};
use mcp_v8_lambda::engine::WORKER_ARG;
use mcp_v8_lambda::logs::{JsonLines, SpanFields};
use mcp_v8_lambda::transport::{
    HttpLimits, StdioOptions, loopback_only, max_connections, router, serve_http, serve_stdio,
};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

// With the crate's "override" feature this also serves V8's malloc calls;
// naming it here is what links it in.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A process whose engine workers run V8 gives freed memory back at once
/// rather than after mimalloc's one-second delay (why: docs/configuration.md,
/// "Allocator", and docs/performance.md, round 4). A `MIMALLOC_PURGE_DELAY`
/// in the environment still wins.
#[cfg(feature = "mimalloc")]
fn return_freed_memory_promptly() {
    // `mi_option_purge_delay` in the `mi_option_e` of the mimalloc.h that the
    // pinned crate bundles (Cargo.toml).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads it on each purge.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

#[derive(Parser)]
#[command(
    version,
    about = "MCP server that runs JavaScript in V8 and keeps the heap between calls"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the MCP endpoint at http://HOST:PORT/mcp on an embedded store.
    Serve {
        /// Address to bind; loopback by default so nothing else can reach it.
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Port to bind.
        #[arg(long, default_value_t = 3000)]
        port: u16,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Speak MCP over stdin and stdout (newline-delimited JSON-RPC), as
    /// desktop clients start local servers; logs go to stderr.
    Stdio {
        #[command(flatten)]
        store: StoreArgs,
        /// The logical session of calls that name none (what the
        /// X-MCP-Session-Id header names over HTTP): their runs are logged
        /// there and heap "latest" continues it.
        #[arg(long)]
        session: Option<String>,
    },
    /// Install, list or remove the npm packages runs may import (the
    /// deployment's; in S3 beside the heaps when MCP_V8_HEAP_BUCKET is set,
    /// else in DATA_DIR/packages).
    Packages {
        #[command(subcommand)]
        action: PackagesAction,
        /// The embedded store's directory, as `serve` takes it.
        #[arg(long, global = true)]
        data_dir: Option<PathBuf>,
    },
    /// Work with stored heaps (in S3 when MCP_V8_HEAP_BUCKET is set, else in
    /// DATA_DIR/heaps).
    Heap {
        #[command(subcommand)]
        action: HeapAction,
        /// The embedded store's directory, as `serve` takes it.
        #[arg(long, global = true)]
        data_dir: Option<PathBuf>,
    },
    /// Create the DynamoDB tables (MCP_V8_TABLE_PREFIX, default mcp-v8-) and
    /// the S3 bucket (MCP_V8_HEAP_BUCKET) if missing, on the endpoint the
    /// standard AWS configuration names (AWS_ENDPOINT_URL, region, credentials).
    Setup,
}

#[derive(Subcommand)]
enum HeapAction {
    /// Write a heap in the original format (`MCPV8SNAP\0`, its SHA-256, the
    /// V8 payload), whatever the store keeps: the seed's layout, for tools
    /// that read it.
    Export {
        /// The heap's key (64 hex digits).
        key: String,
        /// Where to write it; `-` or none for standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The tenant whose heap it is (its id, as under `tenants/`); none
        /// for the anonymous tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
}

#[derive(Subcommand)]
enum PackagesAction {
    /// Resolve, download, verify and bundle packages and their dependencies.
    Add {
        /// `name`, `name@version-or-range-or-tag`, or a path to a `.tgz`.
        #[arg(required = true)]
        specs: Vec<String>,
        /// The npm registry (default: MCP_V8_NPM_REGISTRY, else
        /// https://registry.npmjs.org/).
        #[arg(long)]
        registry: Option<String>,
    },
    /// The installed packages, and the modules runs fetched by URL.
    List,
    /// Remove packages by name (or modules fetched by URL, by URL, so they
    /// are fetched again); heaps that imported them keep them.
    Remove {
        #[arg(required = true)]
        names: Vec<String>,
    },
}

/// `mcp-v8-lambda packages …`.
async fn heap(
    config: &Config,
    action: HeapAction,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    use mcp_v8_lambda::heap::HeapKey;
    use mcp_v8_lambda::tenant::Tenant;
    let data_dir = data_dir.unwrap_or_else(|| PathBuf::from(".mcp-v8"));
    let aws = aws_clients(config).await;
    let (store, _) = compose::heap_store(config, &data_dir, || {
        aws.as_ref()
            .ok_or("an AWS store is configured but no AWS clients were built")
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    match action {
        HeapAction::Export { key, out, tenant } => {
            let key = HeapKey::parse(&key).map_err(|e| anyhow::anyhow!("{key:?}: {e}"))?;
            let tenant = match &tenant {
                None => Tenant::anonymous(),
                Some(id) => Tenant::from_id(id).with_context(|| {
                    format!(
                        "--tenant {id:?} is not a tenant id (the name of a folder under tenants/)"
                    )
                })?,
            };
            let snapshot = store
                .get(&tenant, &key)
                .await
                .with_context(|| format!("reading heap {key}"))?
                .with_context(|| format!("no heap {key} in this store (for this tenant)"))?;
            match out.filter(|p| p.as_os_str() != "-") {
                Some(path) => std::fs::write(&path, snapshot.framed())
                    .with_context(|| format!("writing {}", path.display()))?,
                None => {
                    use std::io::Write;
                    std::io::stdout()
                        .write_all(snapshot.framed())
                        .context("writing to standard output")?;
                }
            }
        }
    }
    Ok(())
}

async fn packages(
    config: &Config,
    action: PackagesAction,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    use mcp_v8_lambda::packages;
    let data_dir = data_dir.unwrap_or_else(|| PathBuf::from(".mcp-v8"));
    let aws = aws_clients(config).await;
    let (store, _, _) = compose::package_store(config, &data_dir, &|| {
        aws.as_ref()
            .ok_or("an AWS store is configured but no AWS clients were built")
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    match action {
        PackagesAction::Add { specs, registry } => {
            let options = packages::InstallOptions::new(
                registry.as_deref().or(config.packages.registry.as_deref()),
                config.packages.max_package_mb * 1024 * 1024,
            )?;
            // Each package is imported in a fresh isolate of an engine
            // configured as the server's, before anything is stored; in an
            // engine worker, as every run, so that a package whose top level
            // ends V8's process is refused with the reason.
            let mut engine_config = compose::engine_config(config);
            engine_config.engine_workers = engine_config.engine_workers.max(1);
            let engine = mcp_v8_lambda::engine::Engine::new(engine_config, None);
            let added = packages::add(store.as_ref(), &specs, &options, &engine)
                .await
                .map_err(|e| anyhow::anyhow!(e))
                .context("nothing was installed")?;
            for package in added {
                println!("added {package}");
            }
        }
        PackagesAction::List => {
            let index = store
                .index()
                .await?
                .map(|(index, _)| index)
                .unwrap_or_default();
            if index.packages.is_empty() {
                println!("no packages installed; add some with `mcp-v8-lambda packages add NAME`");
            }
            for (name, installed) in &index.packages {
                let shape = installed
                    .shape
                    .as_ref()
                    .map_or_else(|| "shape not recorded".to_owned(), ToString::to_string);
                println!(
                    "{name}@{}\t{shape}\t{} entry points\t{} KiB",
                    installed.version,
                    installed.entries.len(),
                    installed.bytes.div_ceil(1024)
                );
            }
            for url in index.urls.keys() {
                println!("{url}\tfetched by a run");
            }
        }
        PackagesAction::Remove { names } => {
            let removed = packages::remove(store.as_ref(), &names)
                .await
                .map_err(|e| anyhow::anyhow!(e))
                .context("nothing was removed")?;
            for package in removed {
                println!("removed {package}");
            }
        }
    }
    Ok(())
}

/// Where a local server keeps its state, and how it runs stateful code.
#[derive(clap::Args)]
struct StoreArgs {
    /// Where heaps (`heaps/`) and metadata (`meta.redb`) live. Default:
    /// `.mcp-v8` in the working directory for `serve`; `~/.mcp-v8` for
    /// `stdio`, which clients start in a directory of their choosing.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Keep no state: run_js without heaps, no session tools.
    #[arg(long)]
    stateless: bool,
    /// Engine worker processes: every run executes in one, one run at a
    /// time each (code that ends V8's process ends only its worker), so
    /// this many runs go at once. Default: MCP_V8_ENGINE_WORKERS, else two
    /// per core, at least four.
    #[arg(long, visible_alias = "workers", value_parser = clap::value_parser!(u16).range(1..))]
    engine_workers: Option<u16>,
}

impl StoreArgs {
    /// Applies the flags to `config`, where they win over the variables.
    fn configure(&self, config: &mut Config) {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        // More runners than cores: a short run starts while others' long
        // runs hold theirs (docs/reliability.md, "Runners").
        config.engine.workers = self
            .engine_workers
            .map(usize::from)
            .or(config.engine.workers_set)
            .unwrap_or((2 * cores).max(4));
        // The flag or the variable: either makes the server stateless.
        config.stateless |= self.stateless;
        // V8 runs only in the workers.
        #[cfg(feature = "mimalloc")]
        return_freed_memory_promptly();
    }
}

/// The data directory of `stdio` when none is given: in the home
/// directory, since a desktop client's working directory is not the user's.
fn stdio_data_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".mcp-v8")
}

/// Whether log lines may carry terminal colours: only to a terminal, and
/// not when `NO_COLOR` is set (no-color.org).
fn colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `RUST_LOG` when set, else the level Lambda's logging configuration asks
/// for, else `info`. The MCP client crate's own events stay off unless
/// `RUST_LOG` names `rmcp`: some carry an upstream's URL (in its errors) or
/// a message's arguments (at trace), which code mode keeps out of logs
/// (docs/engine.md, "Code mode"); its per-call event says what happened.
fn init_logging(format: LogFormat, level: Option<&str>) {
    let named = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("rmcp"));
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(level.unwrap_or("info")));
    let filter = if named {
        filter
    } else {
        filter.add_directive("rmcp=off".parse().expect("a valid directive"))
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour());
    match format {
        // Request fields as top-level keys (mcp_v8_lambda::logs).
        LogFormat::Json => tracing_subscriber::registry()
            .with(filter)
            .with(SpanFields)
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(JsonLines)
                    .with_writer(std::io::stderr),
            )
            .init(),
        LogFormat::Text => builder.with_env_filter(filter).init(),
    }
}

/// The app on `data_dir` and its lifecycle. A client that restarts its server starts the new
/// process while the old one may still hold the embedded database (one
/// process at a time): wait a little for it before saying so.
async fn open_local(
    config: &Config,
    data_dir: &std::path::Path,
    aws: Option<&Clients>,
) -> anyhow::Result<(
    mcp_v8_lambda::transport::App,
    mcp_v8_lambda::tools::Lifecycle,
)> {
    let started = std::time::Instant::now();
    loop {
        match compose::host(config, data_dir, aws) {
            Ok(host) => return Ok(host),
            Err(e)
                if held_by_another_process(&*e) && started.elapsed() < Duration::from_secs(5) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) if held_by_another_process(&*e) => {
                return Err(anyhow::anyhow!(
                    "the data directory {} is in use by another mcp-v8-lambda process (its database \
                     takes one process at a time): give this client its own --data-dir, or run one \
                     `serve` and point every client at its URL",
                    data_dir.display()
                ));
            }
            Err(e) => {
                return Err(anyhow::anyhow!(e))
                    .context("building the server from the configuration");
            }
        }
    }
}

/// Whether opening the embedded database failed because another process
/// holds it.
fn held_by_another_process(error: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        error.downcast_ref::<redb::DatabaseError>(),
        Some(redb::DatabaseError::DatabaseAlreadyOpen)
    )
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = interrupt => {},
        _ = terminate.recv() => {},
    }
}

/// Where local state goes under Lambda when no AWS store is configured.
const LAMBDA_DATA_DIR: &str = "/tmp/mcp-v8";

/// Cold start does only what every invocation needs: configuration, the V8
/// platform (inside the engine), AWS clients. Sessions, heaps and metadata
/// are loaded per request.
async fn run_lambda(config: Config) -> anyhow::Result<()> {
    // V8 runs only in the engine workers (one on standard Lambda).
    #[cfg(feature = "mimalloc")]
    return_freed_memory_promptly();
    if config.transport.allow_unauthenticated {
        tracing::warn!(
            "MCP_V8_ALLOW_UNAUTHENTICATED=true: requests without an IAM caller are served when no bearer token or JWT is configured"
        );
    }
    tracing::info!(
        max_concurrency = config.engine.lambda_max_concurrency,
        engine_workers = config.engine.workers,
        "serving Lambda invocations"
    );
    let aws = aws_clients(&config).await;
    let (app, lifecycle) =
        compose::host(&config, std::path::Path::new(LAMBDA_DATA_DIR), aws.as_ref())
            .map_err(|e| anyhow::anyhow!(e))
            .context("building the server from the configuration")?;
    // Lambda Managed Instances never freeze an environment: saves go on
    // after the answer there as under `serve`, with no extension.
    let post_response =
        config.engine.answer_before_save_mb.is_some() && config.freezes_between_calls();
    mcp_v8_lambda::lambda::run(
        app,
        lifecycle,
        config.transport.allow_unauthenticated,
        config.transport.response_streaming,
        post_response,
    )
    .await
    .map_err(|e| anyhow::anyhow!(e))
    .context("serving Lambda invocations")
}

// `pub(crate)`: the conformance fixtures' server (examples/) compiles this
// file as a module and calls it.
pub(crate) fn main() -> anyhow::Result<()> {
    // A worker of a serving process (engine::worker): before anything else,
    // since its stdout carries frames and it needs no configuration.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_ARG)
    {
        // Its log lines (a run's fetch events) go to stderr, which it shares
        // with the serving process, in the serving process's format.
        if let Ok(config) = Config::from_env() {
            init_logging(config.log.format, config.log.level);
        }
        return mcp_v8_lambda::engine::serve_worker(std::env::args().skip(2))
            .context("engine worker");
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the Tokio runtime")?
        .block_on(serve_main())
}

async fn serve_main() -> anyhow::Result<()> {
    let mut config = Config::from_env().context("reading configuration from the environment")?;
    init_logging(config.log.format, config.log.level);
    // Lambda starts the binary without arguments.
    if config.under_lambda {
        return run_lambda(config).await;
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { host, port, store } => {
            store.configure(&mut config);
            let data_dir = store.data_dir.unwrap_or_else(|| PathBuf::from(".mcp-v8"));
            let aws = aws_clients(&config).await;
            let (app, lifecycle) = compose::host(&config, &data_dir, aws.as_ref())
                .map_err(|e| anyhow::anyhow!(e))
                .context("building the server from the configuration")?;
            let address = SocketAddr::new(host, port);
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("binding {address}"))?;
            tracing::info!(%address, data_dir = %data_dir.display(), stateless = config.stateless, engine_workers = config.engine.workers, "serving MCP at http://{address}/mcp");
            // Bound to loopback, only loopback names may be asked for: a web
            // page cannot reach this server by rebinding its own name to 127.0.0.1.
            let tasks = app.server().tasks().cloned();
            let shutdown = async move {
                shutdown_signal().await;
                // Tasks running here end now and say why, rather than read
                // `working` until their runner's silence shows.
                if let Some(tasks) = tasks {
                    let stopped = tasks.stop_running().await;
                    if stopped > 0 {
                        tracing::info!(
                            stopped,
                            "tasks running in this server were ended: it stopped"
                        );
                    }
                }
            };
            let service = if host.is_loopback() {
                loopback_only(router(app))
            } else {
                router(app)
            };
            let max_connections =
                max_connections(config.transport.max_connections, config.engine.workers);
            let limits = HttpLimits {
                header_timeout: Duration::from_millis(config.transport.header_timeout_ms),
                body_timeout: Duration::from_millis(config.transport.body_timeout_ms),
                max_connections,
                // Half the cap: one address flooding half-sent requests
                // leaves the other half to everyone else.
                max_waiting_per_address: config
                    .transport
                    .max_waiting_per_address
                    .unwrap_or(max_connections.div_ceil(2)),
            };
            tracing::debug!(?limits, "connection limits");
            serve_http(listener, service, limits, shutdown)
                .await
                .context("serving")?;
            lifecycle.saves().drain().await;
        }
        Command::Stdio { store, session } => {
            store.configure(&mut config);
            let data_dir = store.data_dir.clone().unwrap_or_else(stdio_data_dir);
            if let Some(name) = &session {
                mcp_v8_lambda::session::LogicalSession::parse(name)
                    .map_err(|e| anyhow::anyhow!("--session {name:?}: {e}"))?;
            }
            let aws = aws_clients(&config).await;
            let (app, lifecycle) = open_local(&config, &data_dir, aws.as_ref()).await?;
            tracing::info!(data_dir = %data_dir.display(), stateless = config.stateless, engine_workers = config.engine.workers, session = session.as_deref(), "serving MCP on stdin and stdout");
            let options = StdioOptions {
                logical_session: session,
            };
            let input = tokio::io::BufReader::new(tokio::io::stdin());
            serve_stdio(app, options, input, tokio::io::stdout())
                .await
                .context("serving stdio")?;
            // The client is gone; heaps it was answered for are stored first.
            lifecycle.saves().drain().await;
        }
        Command::Packages { action, data_dir } => packages(&config, action, data_dir).await?,
        Command::Heap { action, data_dir } => heap(&config, action, data_dir).await?,
        Command::Setup => {
            let bucket = config
                .stores
                .heap_bucket
                .clone()
                .context("setup needs MCP_V8_HEAP_BUCKET (the bucket for heaps)")?;
            let prefix =
                config.stores.table_prefix.clone().unwrap_or_else(|| {
                    mcp_v8_lambda::backends::aws::DEFAULT_TABLE_PREFIX.to_owned()
                });
            let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            let clients = Clients::new(&sdk, config.stores.s3_force_path_style, None);
            let report = mcp_v8_lambda::backends::aws::setup(
                &clients.dynamodb,
                &clients.s3,
                &prefix,
                &bucket,
            )
            .await?;
            for table in &report.created_tables {
                println!("created table {table}");
            }
            for table in &report.existing_tables {
                println!("table {table} already exists");
            }
            println!(
                "bucket {bucket} {}",
                if report.created_bucket {
                    "created"
                } else {
                    "already exists"
                }
            );
        }
    }
    Ok(())
}
