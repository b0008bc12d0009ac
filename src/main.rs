//! The `mcp-v8-lambda` binary: `serve` hosts the MCP endpoint locally on the
//! embedded store.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_v8_lambda::config::{Config, LogFormat};
use mcp_v8_lambda::transport::router;
use tracing_subscriber::EnvFilter;

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
        /// Where heaps (`heaps/`) and metadata (`meta.redb`) live.
        #[arg(long, default_value = ".mcp-v8")]
        data_dir: PathBuf,
        /// Keep no state: run_js without heaps, no session tools.
        #[arg(long)]
        stateless: bool,
    },
}

fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::from_env().context("reading configuration from the environment")?;
    init_logging(config.log_format);
    match cli.command {
        Command::Serve {
            host,
            port,
            data_dir,
            stateless,
        } => {
            let app = config
                .local_app(&data_dir, stateless)
                .map_err(|e| anyhow::anyhow!(e))
                .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
            let address = SocketAddr::new(host, port);
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("binding {address}"))?;
            tracing::info!(%address, data_dir = %data_dir.display(), stateless, "serving MCP at http://{address}/mcp");
            axum::serve(listener, router(app))
                .with_graceful_shutdown(shutdown_signal())
                .await
                .context("serving")?;
        }
    }
    Ok(())
}
