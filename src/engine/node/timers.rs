//! Node's timer model for runs (the family in `timers.js`): `Timeout` and
//! `Immediate` objects over the run's native timers (`web/timers.rs`), and
//! the `timers` and `timers/promises` modules. The family owns the timer
//! globals of contexts made since it came; heaps made before keep the first
//! release's native `setTimeout` and kin, and get `setImmediate` from here.

use crate::engine::capability::family_capability;
use crate::engine::layer::registry::Family;

family_capability!(
    /// `setTimeout`, `setInterval`, `setImmediate` and their clears.
    NodeTimers,
    Family {
        name: "node_timers",
        source: include_str!("timers.js"),
        deps: &["process"],
        natives: crate::engine::web::timers::node_natives,
        globals: &[
            "setTimeout",
            "setInterval",
            "clearTimeout",
            "clearInterval",
            "setImmediate",
            "clearImmediate",
        ],
        version: 10,
    }
);
