//! mcp-v8-lambda: an MCP server that runs JavaScript and TypeScript in V8 and
//! keeps the V8 heap between calls as content-addressed snapshots.
//!
//! The modules follow the request path: `transport` takes HTTP, `session`
//! replays the state of `initialize`, `tools` dispatches calls, `engine`
//! runs code, `heap` stores snapshots and `meta` keeps the session log, tags
//! and execution registry.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod aws;
pub mod config;
pub mod embedded;
#[allow(unsafe_code)]
pub mod engine;
pub mod faults;
pub mod heap;
mod ids;
pub mod lambda;
pub mod meta;
pub mod protocol;
pub mod session;
pub mod tools;
pub mod transport;
