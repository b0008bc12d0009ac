//! The hosts a process serves as: `serve` (HTTP), `stdio`, and the Lambda
//! entry.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::args::{StoreArgs, stdio_data_dir};
use crate::backends::aws::Clients;
use crate::compose::{self, Additions, aws_clients};
use crate::config::Config;
use crate::transport::{
    HttpLimits, StdioOptions, loopback_only, max_connections, router, serve_http, serve_stdio,
};

/// `mcp-v8-lambda serve`: the MCP endpoint at http://HOST:PORT/mcp.
pub(super) async fn http(
    mut config: Config,
    host: std::net::IpAddr,
    port: u16,
    store: StoreArgs,
    additions: Additions,
) -> anyhow::Result<()> {
    store.configure(&mut config);
    let data_dir = store.data_dir.unwrap_or_else(|| PathBuf::from(".mcp-v8"));
    let aws = aws_clients(&config).await;
    let (app, lifecycle) = compose::host(&config, &data_dir, aws.as_ref(), additions)
        .map_err(|e| anyhow::anyhow!(e))
        .context("building the server from the configuration")?;
    let app = app.with_metrics(crate::observe::prometheus::Scrape::install());
    let address = SocketAddr::new(host, port);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {address}"))?;
    tracing::info!(%address, data_dir = %data_dir.display(), stateless = config.stateless, engine_workers = config.engine.workers, metrics = %format!("http://{address}/metrics"), "serving MCP at http://{address}/mcp");
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
    let max_connections = max_connections(config.transport.max_connections, config.engine.workers);
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
    Ok(())
}

/// `mcp-v8-lambda stdio`: MCP on stdin and stdout.
pub(super) async fn stdio(
    mut config: Config,
    store: StoreArgs,
    session: Option<String>,
    additions: Additions,
) -> anyhow::Result<()> {
    store.configure(&mut config);
    let data_dir = store.data_dir.clone().unwrap_or_else(stdio_data_dir);
    if let Some(name) = &session {
        crate::session::LogicalSession::parse(name)
            .map_err(|e| anyhow::anyhow!("--session {name:?}: {e}"))?;
    }
    let aws = aws_clients(&config).await;
    let (app, lifecycle) = open_local(&config, &data_dir, aws.as_ref(), additions).await?;
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
    Ok(())
}

/// The app on `data_dir` and its lifecycle. A client that restarts its server starts the new
/// process while the old one may still hold the embedded database (one
/// process at a time): wait a little for it before saying so.
async fn open_local(
    config: &Config,
    data_dir: &std::path::Path,
    aws: Option<&Clients>,
    additions: Additions,
) -> anyhow::Result<(crate::transport::App, crate::tools::Lifecycle)> {
    let started = std::time::Instant::now();
    loop {
        match compose::host(config, data_dir, aws, additions.clone()) {
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
pub(super) async fn lambda(config: Config, additions: Additions) -> anyhow::Result<()> {
    // V8 runs only in the engine workers (one on standard Lambda).
    #[cfg(feature = "mimalloc")]
    super::allocator::return_freed_memory_promptly();
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
    let (app, lifecycle) = compose::host(
        &config,
        std::path::Path::new(LAMBDA_DATA_DIR),
        aws.as_ref(),
        additions,
    )
    .map_err(|e| anyhow::anyhow!(e))
    .context("building the server from the configuration")?;
    // Lambda Managed Instances never freeze an environment: saves go on
    // after the answer there as under `serve`, with no extension.
    let post_response =
        config.engine.answer_before_save_mb.is_some() && config.freezes_between_calls();
    let metrics = crate::observe::emf::Emf::install(&config.metrics_namespace)
        .map_err(|e| anyhow::anyhow!(e))?;
    crate::lambda::run(
        app,
        lifecycle,
        config.transport.allow_unauthenticated,
        config.transport.response_streaming,
        post_response,
        Some(metrics),
    )
    .await
    .map_err(|e| anyhow::anyhow!(e))
    .context("serving Lambda invocations")
}
