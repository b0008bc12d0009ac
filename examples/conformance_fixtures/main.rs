//! The server the MCP conformance suite runs against: the `mcp-v8-lambda`
//! command line itself (`mcp_v8_lambda::cli`, so `serve`, the engine
//! workers and every option are the release's), with the suite's
//! reference-server fixtures merged into its tool router and its prompts
//! and resources (`compose::Additions`). Built for the tests only (`cargo
//! build --release --examples`, as scripts/test.sh does): the release
//! artifact has none of them, and the library is compiled once for both.

mod asking;
mod content;
mod diagnostics;
mod fixtures;
mod run;

// As the release binary's: the engine workers are this binary too.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    mcp_v8_lambda::cli::main(mcp_v8_lambda::compose::Additions {
        tools: fixtures::router(),
        content: Some(std::sync::Arc::new(content::ContentFixtures)),
    })
}
