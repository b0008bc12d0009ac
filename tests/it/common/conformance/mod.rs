//! One conformance suite per store seam: the behaviour every backend of the
//! trait must show, written once and run by each backend's tests. Functions
//! panic on a contract violation.

pub mod files;
pub mod heap;
pub mod meta;
pub mod packages;
pub mod session;
pub mod tasks;
