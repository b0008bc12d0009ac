//! mcp-v8-lambda: an MCP server that runs JavaScript and TypeScript in V8 and
//! keeps the V8 heap between calls as content-addressed snapshots.
//!
//! The modules follow the request path: `session` replays the state of
//! `initialize`, `engine` runs code, `heap` stores snapshots.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod engine;
pub mod heap;
mod ids;
pub mod session;
