//! The bodies of the fuzz targets that need no harness (tests/fuzz/bodies,
//! shared with tests/fuzz/fuzz_targets), compiled into this binary and run
//! over the committed seeds: CI builds and exercises them on every run;
//! `scripts/fuzz.sh` explores beyond the seeds.

use std::path::Path;

mod request {
    include!("../../fuzz/bodies/request.rs");
}

mod snapshot {
    include!("../../fuzz/bodies/snapshot.rs");
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/seeds")
        .join(target);
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|entry| std::fs::read(entry.path()).unwrap())
        .collect();
    assert!(!seeds.is_empty(), "{target} has seeds");
    // Each seed cut short too: truncation is what stored bytes meet.
    let cut: Vec<Vec<u8>> = seeds.iter().map(|s| s[..s.len() / 2].to_vec()).collect();
    seeds.extend(cut);
    seeds
}

#[test]
fn the_request_target_holds_on_its_seeds() {
    for seed in seeds("request") {
        request::run(&seed);
    }
}

#[test]
fn the_snapshot_target_holds_on_its_seeds() {
    for seed in seeds("snapshot") {
        snapshot::run(&seed);
    }
}
