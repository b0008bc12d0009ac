//! The `mcp-v8-lambda` binary: the library's command line
//! ([`mcp_v8_lambda::cli`]) with nothing added.

// With the crate's "override" feature this also serves V8's malloc calls;
// naming it here is what links it in.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    mcp_v8_lambda::cli::main(Default::default())
}
