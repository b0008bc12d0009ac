//! Node compatibility, in a room of its own beside the Web platform
//! (`web/`) and the host's capabilities (`host/`), as workerd keeps `node/`
//! beside `api/`: Node's everyday modules and `Buffer` (`builtins`),
//! `process` and `global` (`process`), Node's timers (`timers`), and Node's module system for runs,
//! `require`, static and dynamic `import` of installed packages, modules by
//! URL and the `node:` built-ins (`modules`). `node:fs` is `/work`'s
//! (`host/fs`).

pub(crate) mod builtins;
pub(crate) mod digest;
pub(crate) mod modules;
pub(crate) mod process;
pub(crate) mod timers;
