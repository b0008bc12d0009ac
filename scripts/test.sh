#!/usr/bin/env bash
# The project's single test entry point: README names it, .ci/run calls it.
# It installs what the tests need, so a clean checkout passes it.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/v8-env.sh
# A full run gains nothing from incremental state, which costs gigabytes of
# disk on a clean CI machine; set CARGO_INCREMENTAL=1 to keep it locally.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

scripts/install-test-deps.sh

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
# The plain build is what `cargo lambda watch` runs in tests/it/e2e.rs; building
# it here keeps that compile out of any test's time.
cargo build --locked
# The binary that deploys: `sam build` runs `cargo lambda build --release`
# (here with the plain cargo compiler, no zig). Smoke-test that very
# artifact against the test Runtime API before the whole suite runs.
.venv/bin/cargo-lambda lambda build --release --compiler cargo --locked
# `--exact` and the count check keep a renamed test from turning this into
# a smoke test that runs nothing.
smoke="$(MCP_V8_LAMBDA_BINARY="$PWD/target/lambda/mcp-v8-lambda/bootstrap" \
    cargo test --locked --test it -- --exact \
    lambda::with_max_concurrency_a_looping_run_holds_up_no_other_invocation 2>&1)" \
    || { printf '%s\n' "$smoke"; exit 1; }
printf '%s\n' "$smoke"
grep -q "test result: ok. 1 passed" <<<"$smoke" \
    || { echo "the deployed-artifact smoke test did not run exactly one test" >&2; exit 1; }
cargo test --locked
