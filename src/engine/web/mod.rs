//! The Web platform inside a run: `URL`, `TextEncoder`, `structuredClone`,
//! `crypto`, events, `Blob`, `Headers`/`Request`/`Response`, `fetch`,
//! timers, `performance`, `console`, and the guards on built-ins that hold
//! memory outside the heap. Each family is a JavaScript file beside the
//! natives it calls; [`super::layer`] makes them lazy globals.

pub(crate) mod clone;
pub(crate) mod console;
pub(crate) mod crypto;
pub(crate) mod encoding;
pub(crate) mod fetch;
pub(crate) mod guard;
pub(crate) mod inspect;
pub(crate) mod performance;
pub(crate) mod timers;
pub(crate) mod url;

pub(crate) use fetch::FetchRun;
pub(crate) use guard::unsnapshottable;
pub(crate) use inspect::{Rendered, inspect, render_result};
pub(crate) use timers::Timers;
