//! Node's everyday modules for runs: `Buffer` and `node:buffer`,
//! `node:events`, `node:util`, `node:stream`, `node:string_decoder` and
//! `node:assert`, from their well-kept npm ports bundled by
//! `scripts/node-builtins.sh` into `node_lib.js` (committed). A family
//! without natives or run state; loaded on first use, then part of the heap
//! like any package.

use crate::engine::capability::{Capability, RunScope};
use crate::engine::layer::registry::{Family, Natives};

/// The family's registration (no run state).
pub(crate) struct NodeLib;

impl Capability for NodeLib {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "node",
        source: include_str!("node_lib.js"),
        natives,
        globals: &["Buffer"],
    });
    type Settings = ();
    type Ask = ();
    type Report = ();

    fn begin(_: &mut v8::Isolate, _: &(), _: &RunScope<'_>) {}

    fn end(_: &mut v8::Isolate) {}
}

fn natives() -> Natives {
    Vec::new()
}
