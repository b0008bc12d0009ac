//! The command line's arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::engine::EngineConfig;

#[derive(Parser)]
#[command(
    version,
    about = "MCP server that runs JavaScript in V8 and keeps the heap between calls"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
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
pub(super) enum HeapAction {
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
pub(super) enum PackagesAction {
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

/// Where a local server keeps its state, and how it runs stateful code.
#[derive(clap::Args)]
pub(super) struct StoreArgs {
    /// Where heaps (`heaps/`) and metadata (`meta.redb`) live. Default:
    /// `.mcp-v8` in the working directory for `serve`; `~/.mcp-v8` for
    /// `stdio`, which clients start in a directory of their choosing.
    #[arg(long)]
    pub(super) data_dir: Option<PathBuf>,
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
    pub(super) fn configure(&self, config: &mut Config) {
        config.engine.workers = self
            .engine_workers
            .map(usize::from)
            .or(config.engine.workers_set)
            .unwrap_or_else(EngineConfig::serve_workers);
        // The flag or the variable: either makes the server stateless.
        config.stateless |= self.stateless;
        // V8 runs only in the workers.
        #[cfg(feature = "mimalloc")]
        super::allocator::return_freed_memory_promptly();
    }
}

/// The data directory of `stdio` when none is given: in the home
/// directory, since a desktop client's working directory is not the user's.
pub(super) fn stdio_data_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".mcp-v8")
}
