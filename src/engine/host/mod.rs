//! The host's capabilities beyond the Web platform and Node: `/work` files
//! (`node:fs`), `display()`, `elicit()`, `reportProgress()` and `mcp`. The services they use (a runtime,
//! the file store, the clients) are lent to each run (`super::services`).

pub(crate) mod disk;
pub(crate) mod display;
pub(crate) mod elicit;
pub(crate) mod fs;
pub(crate) mod mcp;
pub(crate) mod progress;
pub(crate) mod stored;
#[cfg(test)]
pub(crate) mod toy;

pub use crate::engine::services::{FileRead, FileSource};
pub use disk::{DiskSettings, Kept as DiskKept, sweep_scratch};
pub use display::{MAX_DISPLAY_BYTES, MAX_DISPLAYS};
pub use fs::{FileLimits, TreeEntry};
