#!/usr/bin/env bash
# Runs each coverage-guided fuzz target (tests/fuzz) for a bounded time:
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`); the stable
# toolchain runs it with RUSTC_BOOTSTRAP=1. New corpus entries go to
# tests/fuzz/corpus/ (not committed); the committed seeds are
# tests/fuzz/seeds/. A crash leaves its input in tests/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/v8-env.sh
seconds=${1:-60}
export RUSTC_BOOTSTRAP=1
for target in request snapshot tool_args kept_objects; do
    mkdir -p "tests/fuzz/corpus/$target"
    cargo fuzz run --fuzz-dir tests/fuzz -O "$target" \
        "tests/fuzz/corpus/$target" "tests/fuzz/seeds/$target" \
        -- -max_total_time="$seconds" -max_len=131072
done
# The proptest twin of kept_objects, as CI runs it but for longer.
MCP_V8_FUZZ_CASES=${MCP_V8_FUZZ_CASES:-2000} \
    cargo test --locked --test it -- reliability::properties::kept_object_graphs_snapshot_or_fail_cleanly

