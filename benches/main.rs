//! Every benchmark of the project in one binary:
//! `cargo bench --bench benches -- NAME [ARGS…]`, NAME one of [`BENCHES`]
//! (docs/performance.md gives each figure's command). One binary links V8
//! and the dependencies' generic code once, where a binary per benchmark
//! cost CI about two minutes more to build (docs/performance.md, "CI time").

#[path = "code_mode.rs"]
mod code_mode;
#[path = "engine.rs"]
mod engine;
#[path = "fetch.rs"]
mod fetch;
#[path = "http.rs"]
mod http;
#[path = "load.rs"]
mod load;
#[path = "save.rs"]
mod save;
#[path = "storage.rs"]
mod storage;

// What several benchmarks share: the test suite's helpers, once.
#[allow(dead_code, unreachable_pub)]
#[path = "../tests/it/common/delay_proxy.rs"]
mod delay_proxy;
#[path = "support/mcp.rs"]
mod mcp;
#[allow(dead_code, unreachable_pub)]
#[path = "../tests/it/common/moto.rs"]
mod moto;
#[allow(dead_code, unreachable_pub)]
#[path = "../tests/it/common/net.rs"]
mod net;
#[allow(dead_code, unreachable_pub)]
#[path = "../tests/it/common/runtime_api.rs"]
mod runtime_api;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The benchmarks, by the name that runs each.
const BENCHES: [(&str, fn()); 7] = [
    ("code_mode", code_mode::main),
    ("engine", engine::main),
    ("fetch", fetch::main),
    ("http", http::main),
    ("load", load::main),
    ("save", save::main),
    ("storage", storage::main),
];

/// The arguments after the benchmark's name.
pub(crate) fn args() -> impl Iterator<Item = String> {
    std::env::args().skip(2)
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    match BENCHES.iter().find(|(bench, _)| *bench == name) {
        Some((_, run)) => run(),
        None => {
            let names: Vec<&str> = BENCHES.iter().map(|(bench, _)| *bench).collect();
            eprintln!(
                "usage: cargo bench --bench benches -- NAME [ARGS…], NAME one of {}",
                names.join(", ")
            );
            // `cargo bench` alone runs every bench target with `--bench`:
            // naming none is not a failure.
            if !name.is_empty() && name != "--bench" {
                std::process::exit(2);
            }
        }
    }
}
