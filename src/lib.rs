//! mcp-v8-lambda: an MCP server that runs JavaScript and TypeScript in V8 and
//! keeps the V8 heap between calls as content-addressed snapshots.
//!
//! The modules follow the request path: `transport` takes HTTP, `server`
//! gives MCP methods their meaning, `session` replays the state of
//! `initialize`, `tools` runs calls, `engine` runs code, `heap` stores
//! snapshots and `meta` keeps the session log, tags and execution registry.
//! Every store is scoped by the caller's `tenant`. `skills` holds the
//! Agent Skills the server teaches with (its own and an operator's).
//! `compose` wires them from a `config`; `backends` holds what the AWS and
//! embedded stores share; `lambda` hosts the app on AWS Lambda; `cli` is
//! the command line, which the binary and the conformance fixtures call.
//! docs/architecture.md draws the layers.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod apps;
pub mod backends;
pub mod cli;
pub mod clock;
pub mod compose;
pub mod config;
pub mod egress;
pub mod elicit;
#[allow(unsafe_code)]
pub mod engine;
pub mod files;
pub mod heap;
pub mod lambda;
pub mod logs;
pub mod meta;
pub mod observe;
pub mod packages;
pub mod protocol;
pub mod server;
pub mod session;
pub mod skills;
pub mod tasks;
pub mod tenant;
pub mod tools;
pub mod transport;
pub mod units;
pub mod upstream;

/// The boxed error behind every seam's `Backend` variant and every error of
/// building the app.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
