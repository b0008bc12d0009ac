//! The commands that manage what a deployment keeps: `heap`, `packages`,
//! `setup`.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{HeapAction, PackagesAction};
use crate::backends::aws::Clients;
use crate::compose::{self, aws_clients};
use crate::config::Config;
use crate::units::MIB;

/// `mcp-v8-lambda heap …`.
pub(super) async fn heap(
    config: &Config,
    action: HeapAction,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    use crate::heap::HeapKey;
    use crate::tenant::Tenant;
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

/// `mcp-v8-lambda packages …`.
pub(super) async fn packages(
    config: &Config,
    action: PackagesAction,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    use crate::packages;
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
                config.packages.max_package_mb * MIB,
            )?;
            // Each package is imported in a fresh isolate of an engine
            // configured as the server's, before anything is stored; in an
            // engine worker, as every run, so that a package whose top level
            // ends V8's process is refused with the reason.
            let engine = crate::engine::Engine::new(compose::engine_config(config), None);
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

/// `mcp-v8-lambda setup`.
pub(super) async fn setup(config: &Config) -> anyhow::Result<()> {
    let bucket = config
        .stores
        .heap_bucket
        .clone()
        .context("setup needs MCP_V8_HEAP_BUCKET (the bucket for heaps)")?;
    let prefix = config
        .stores
        .table_prefix
        .clone()
        .unwrap_or_else(|| crate::backends::aws::DEFAULT_TABLE_PREFIX.to_owned());
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let clients = Clients::new(&sdk, config.stores.s3_force_path_style, None);
    let report =
        crate::backends::aws::setup(&clients.dynamodb, &clients.s3, &prefix, &bucket).await?;
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
    Ok(())
}
