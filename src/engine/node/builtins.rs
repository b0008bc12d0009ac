//! Node's everyday modules for runs: `Buffer` and `node:buffer`,
//! `node:events`, `node:util`, `node:stream`, `node:string_decoder` and
//! `node:assert`, from their well-kept npm ports bundled by
//! `scripts/node-builtins.sh` into `node_lib.js` (committed). A family
//! without natives or run state; loaded on first use, then part of the heap
//! like any package.

use crate::engine::capability::family_capability;
use crate::engine::layer::registry::{Family, Natives};

family_capability!(
    /// The family's registration (no run state).
    NodeLib,
    Family {
        name: "node",
        source: include_str!("node_lib.js"),
        natives,
        globals: &["Buffer"],
        version: 7,
    }
);

fn natives() -> Natives {
    Vec::new()
}
