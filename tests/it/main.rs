//! The integration tests, as one test binary.
//!
//! Every test binary links V8's static library and the AWS SDK; one binary
//! instead of one per file keeps a clean CI build small on disk and links
//! once. The folders sort the suites by axis (the tree's shape, the
//! protocol, the engine, the stores, Lambda, what agents meet, bounds and
//! failures); each module in them is the suite of one concern.

mod common;

mod agents;
mod clients;
mod engine;
mod lambda;
mod observability;
mod protocol;
mod reliability;
mod stores;
mod structure;
