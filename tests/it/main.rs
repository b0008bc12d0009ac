//! The integration tests, as one test binary.
//!
//! Every test binary links V8's static library and the AWS SDK; one binary
//! instead of one per file keeps a clean CI build small on disk and links
//! once. Each module is the suite of one concern.

mod common;

mod allocator;
mod answers;
mod apps;
mod auth;
mod aws_backends;
mod aws_calls;
mod code_mode;
mod configuration;
mod connections;
mod deployment;
mod display;
mod e2e;
mod engine;
mod faults;
mod fetch;
mod files;
mod fuzz_seeds;
mod heap_store;
mod hostile;
mod http;
mod iam;
mod jwt;
mod lambda;
mod layers;
mod limits;
mod logs;
mod memory;
mod meta_store;
mod mistakes;
mod newcomer;
mod packages;
mod parity;
mod post_response;
mod progress;
mod properties;
mod repl;
mod resources;
mod session_store;
mod sessionless;
mod stdio;
mod tasks;
mod tenancy;
mod think_time;
mod tools;
mod tree;
mod url_modules;
mod warm;
mod web;
mod workers;
