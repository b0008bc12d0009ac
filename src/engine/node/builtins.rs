//! Node's everyday modules for runs: `Buffer` and `node:buffer`,
//! `node:events`, `node:util`, `node:stream`, `node:string_decoder` and
//! `node:assert`, from their well-kept npm ports bundled by
//! `scripts/node-builtins/build.mjs` into `node_lib.js` (committed), and Node's own
//! `util.inspect` into `node_inspect.js`, a family of its own so a run that
//! only touches `Buffer` does not parse it, and Node 22's own lib/ files for
//! `node:path`, `node:querystring` and `node:url` into `node_core.js`. Families without natives or run
//! state; loaded on first use, then part of the heap like any package.

use crate::engine::capability::family_capability;
use crate::engine::layer::registry::{Family, Natives};

family_capability!(
    /// The family's registration (no run state).
    NodeLib,
    Family {
        name: "node",
        source: include_str!("node_lib.js"),
        deps: &["process"],
        natives,
        globals: &["Buffer"],
        version: 7,
    }
);

family_capability!(
    /// Node's `util.inspect`, `util.format` and `util.formatWithOptions`
    /// (node-inspect-extracted), loaded by `node:util`.
    NodeInspect,
    Family {
        name: "node_inspect",
        source: include_str!("node_inspect.js"),
        deps: &["process"],
        natives,
        globals: &[],
        version: 1,
    }
);

family_capability!(
    /// Node 22's own `path`, `querystring` and `url` (its lib/ files,
    /// bundled with stand-ins for the internals they require).
    NodeCore,
    Family {
        name: "node_core",
        source: include_str!("node_core.js"),
        deps: &["node", "node_inspect", "process"],
        natives,
        globals: &[],
        version: 1,
    }
);

fn natives() -> Natives {
    Vec::new()
}
