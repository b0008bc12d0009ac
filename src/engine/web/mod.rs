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
pub(crate) mod microtasks;
pub(crate) mod performance;
pub(crate) mod thrown;
pub(crate) mod timers;
pub(crate) mod url;

pub(crate) use fetch::FetchRun;
pub(crate) use guard::unsnapshottable;
pub(crate) use inspect::{Rendered, inspect, render_result};
pub(crate) use timers::Timers;

use crate::engine::capability::family_capability;
use crate::engine::layer::registry::{Family, Natives};

fn no_natives() -> Natives {
    Vec::new()
}

family_capability!(
    /// `Blob`, `File` and `FormData` (`blob.js`).
    Blob,
    Family {
        name: "blob",
        source: include_str!("blob.js"),
        deps: &["encoding"],
        natives: no_natives,
        globals: &["Blob", "File", "FormData"],
        version: 1,
    }
);

family_capability!(
    /// `Headers`, `Request` and `Response` (`http.js`).
    Http,
    Family {
        name: "http",
        source: include_str!("http.js"),
        deps: &["blob", "encoding", "events", "url"],
        natives: no_natives,
        globals: &["Headers", "Request", "Response"],
        version: 1,
    }
);
