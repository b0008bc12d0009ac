//! The host's capabilities beyond the Web platform — `/work` files,
//! packages and modules, `display()`, `mcp` — and the services a run uses
//! (a runtime, the file store, the `fetch` and upstream clients), which
//! whoever runs the engine passes in: the server through
//! [`crate::engine::Engine`] from the composition root, an engine worker
//! from its own main.

pub(crate) mod display;
pub(crate) mod files;
pub(crate) mod mcp;
pub(crate) mod modules;
pub(crate) mod node;
pub(crate) mod process;
pub(crate) mod services;
#[cfg(test)]
pub(crate) mod toy;
pub(crate) mod work;

pub use display::{Displayed, MAX_DISPLAY_BYTES, MAX_DISPLAYS};
pub use files::{FileLimits, TreeEntry};
pub use services::{FileRead, FileSource};
