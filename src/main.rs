//! The `mcp-v8-lambda` binary. The MCP server (`serve`) and the Lambda entry
//! point arrive with the transport issue; until then the binary says so and
//! exits with an error instead of pretending to serve.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "mcp-v8-lambda {}: the MCP server is not implemented yet (only the engine library is); \
         see README.md",
        env!("CARGO_PKG_VERSION")
    );
    ExitCode::FAILURE
}
