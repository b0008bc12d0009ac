#!/usr/bin/env bash
# The project's single test entry point: README names it, .ci/run calls it.
# It installs what the tests need, so a clean checkout passes it.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/v8-env.sh

scripts/install-test-deps.sh

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
# The plain build is what `cargo lambda watch` runs in tests/e2e.rs; building
# it here keeps that compile out of any test's time.
cargo build --locked
cargo test --locked
