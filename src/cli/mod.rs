//! The `mcp-v8-lambda` command line, as a library entry: the binary's
//! `main` and the conformance fixtures' server both call [`main`], the
//! latter with the tools and content it adds, so the fixtures run the
//! release's `serve`, engine workers and options without including its
//! source. Under Lambda (`AWS_LAMBDA_RUNTIME_API` set) it serves
//! invocations; otherwise `serve` hosts the MCP endpoint (embedded store by
//! default, AWS stores when configured) and `setup` creates the AWS tables
//! and bucket.

#[allow(unsafe_code)]
mod allocator;
mod args;
mod commands;
mod hosts;
mod logging;

use anyhow::Context;
use clap::Parser;

use self::args::{Cli, Command};
use crate::compose::Additions;
use crate::config::Config;
use crate::engine::WORKER_ARG;

/// Runs the command line of this process with `additions` merged into the
/// server it builds (none for the release binary).
pub fn main(additions: Additions) -> anyhow::Result<()> {
    // A worker of a serving process (engine::worker): before anything else,
    // since its stdout carries frames and it needs no configuration.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_ARG)
    {
        // Its log lines (a run's fetch events) go to stderr, which it shares
        // with the serving process, in the serving process's format.
        if let Ok(config) = Config::from_env() {
            logging::init(config.log.format, config.log.level);
        }
        return crate::engine::serve_worker(std::env::args().skip(2)).context("engine worker");
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the Tokio runtime")?
        .block_on(serve_main(additions))
}

async fn serve_main(additions: Additions) -> anyhow::Result<()> {
    let config = Config::from_env().context("reading configuration from the environment")?;
    logging::init(config.log.format, config.log.level);
    // Lambda starts the binary without arguments.
    if config.under_lambda {
        return hosts::lambda(config, additions).await;
    }
    match Cli::parse().command {
        Command::Serve { host, port, store } => {
            hosts::http(config, host, port, store, additions).await
        }
        Command::Stdio { store, session } => hosts::stdio(config, store, session, additions).await,
        Command::Packages { action, data_dir } => {
            commands::packages(&config, action, data_dir).await
        }
        Command::Heap { action, data_dir } => commands::heap(&config, action, data_dir).await,
        Command::Setup => commands::setup(&config).await,
    }
}
