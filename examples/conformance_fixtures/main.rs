//! The server the MCP conformance suite runs against: the `mcp-v8-lambda`
//! binary itself (its `src/main.rs`, compiled in as a module, so `serve`,
//! the engine workers and every option are the release's), with the
//! suite's reference-server fixtures added as [`ExtraTools`] and
//! `ExtraContent` (prompts and resources). Built for the
//! tests only (`cargo build --release --examples`, as scripts/test.sh does):
//! the release artifact has none of them, and the library is compiled once
//! for both.
//!
//! [`ExtraTools`]: mcp_v8_lambda::tools::extra::ExtraTools

mod asking;
mod content;
mod diagnostics;
mod fixtures;
mod run;

#[path = "../../src/main.rs"]
mod server;

fn main() -> anyhow::Result<()> {
    // Engine workers are this binary too: they install the tools as well,
    // which costs nothing and keeps one entry point.
    mcp_v8_lambda::tools::extra::install(Box::new(fixtures::Fixtures))
        .map_err(|_| anyhow::anyhow!("the conformance fixtures were installed twice"))?;
    mcp_v8_lambda::server::extra::install(Box::new(content::ContentFixtures))
        .map_err(|_| anyhow::anyhow!("the conformance fixtures were installed twice"))?;
    server::main()
}
