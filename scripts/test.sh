#!/usr/bin/env bash
# The project's single test entry point: README names it, .ci/run calls it.
# It installs what the tests need, so a clean checkout passes it.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/v8-env.sh
# A full run gains nothing from incremental state, which costs gigabytes of
# disk on a clean CI machine; set CARGO_INCREMENTAL=1 to keep it locally.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# The build needs only cargo-lambda's venv; what the tests drive (npm
# packages, Chromium, the second venv: network and disk, little CPU)
# installs beside the compile instead of before it (docs/performance.md,
# "CI time").
scripts/install-test-deps.sh --build
installs_log="$(mktemp)"
scripts/install-test-deps.sh >"$installs_log" 2>&1 &
installing=$!
trap 'kill "$installing" 2>/dev/null || true' EXIT

cargo fmt --all -- --check
# Clippy's lints, warnings denied, run inside the builds below: clippy-driver
# is the workspace's compiler, as `cargo clippy` runs it, but building rather
# than only checking. The dependencies are then compiled once, for the lints
# and the tests, where a separate `cargo clippy --all-targets` checked every
# one of them again (docs/performance.md, "CI time"). Every cargo command
# below, and the `cargo lambda watch` the tests start, sees the same wrapper,
# so none rebuilds what another built.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)"
[ -x "$RUSTC_WORKSPACE_WRAPPER" ] \
    || { echo "clippy-driver not found: install clippy (rustup component add clippy)" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER
# What `cargo clippy -- -D warnings` hands clippy-driver.
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
# Every dependency is compiled once: the tests are built and run in the
# release profile, for the target and with the flags `cargo lambda build
# --release` uses (its `--target x86_64-unknown-linux-gnu` and its "release
# optimizations", `build.rustflags = ["-C", "target-cpu=haswell"]`), so they
# share the ~570 dependency units the deployed artifact compiles, where a
# dev-profile test build compiled them all a second time
# (docs/performance.md, "CI time"). Exported, so the `cargo lambda watch`
# and `infra/local-stack.sh` the tests start build the same way. RUSTFLAGS,
# not `build.rustflags`: cargo would append cargo-lambda's own
# `--config build.rustflags` to the latter (the flag twice, every
# dependency rebuilt), while RUSTFLAGS replaces it.
export CARGO_BUILD_TARGET=x86_64-unknown-linux-gnu
export RUSTFLAGS="-C target-cpu=haswell"
# The binary that deploys: `sam build` runs `cargo lambda build --release`
# (here with the plain cargo compiler, no zig). Smoke-tested below against
# the test Runtime API before the whole suite runs.
.venv/bin/cargo-lambda lambda build --release --compiler cargo --locked
# What the artifact needs of the system is what provided.al2023 has: glibc
# up to 2.34 (AL2023's), and besides it only libgcc_s and libstdc++ (ada's,
# for `URL`; GLIBCXX up to 3.4.29, AL2023's gcc 11) (docs/deployment.md).
needed="$(objdump -p target/lambda/mcp-v8-lambda/bootstrap | awk '/NEEDED/ {print $2}' | sort | tr '\n' ' ')"
if [ "$needed" != "ld-linux-x86-64.so.2 libc.so.6 libgcc_s.so.1 libm.so.6 libstdc++.so.6 " ]; then
    echo "the release artifact needs other shared libraries: $needed" >&2
    exit 1
fi
newest() { objdump -T target/lambda/mcp-v8-lambda/bootstrap | grep -o "$1[0-9.]*" | sort -V | tail -1; }
if [ "$(printf '%s\n' "$(newest GLIBC_2)" GLIBC_2.34 | sort -V | tail -1)" != GLIBC_2.34 ] \
    || [ "$(printf '%s\n' "$(newest GLIBCXX_)" GLIBCXX_3.4.29 | sort -V | tail -1)" != GLIBCXX_3.4.29 ]; then
    echo "the release artifact needs a newer glibc or libstdc++ than provided.al2023's: $(newest GLIBC_2) $(newest GLIBCXX_)" >&2
    exit 1
fi
# The conformance fixtures never ship: the artifact holds none of their text.
if grep -q "Conformance fixture" target/lambda/mcp-v8-lambda/bootstrap; then
    echo "the release artifact contains the conformance fixture tools" >&2
    exit 1
fi
# The tests build exactly what the artifact above built (no feature of their
# own), so the library compiled for it is the one they link: the crate is
# compiled once for the artifact and once as its unit tests, not a third
# time (docs/performance.md, "CI time").
build=(--locked --release)
# The library, the binary (what `cargo lambda watch` runs in tests/it/lambda/watch.rs;
# building it here keeps that compile out of any test's time), the tests and
# the conformance suite's fixture server (examples/conformance_fixtures),
# linted as they build. Not the benches: no test runs them, and their
# binary took about 80 s of CI's 45 minutes; `cargo bench` and
# scripts/bench.sh build them (docs/performance.md, "CI time").
cargo build "${build[@]}" --lib --bins --tests --examples
wait "$installing" \
    || { cat "$installs_log"; echo "installing the tests' dependencies failed" >&2; exit 1; }
cat "$installs_log"
# `--exact` and the count check keep a renamed test from turning this into
# a smoke test that runs nothing.
smoke="$(MCP_V8_LAMBDA_BINARY="$PWD/target/lambda/mcp-v8-lambda/bootstrap" \
    cargo test "${build[@]}" --test it -- --exact \
    lambda::with_max_concurrency_a_looping_run_holds_up_no_other_invocation 2>&1)" \
    || { printf '%s\n' "$smoke"; exit 1; }
printf '%s\n' "$smoke"
grep -q "test result: ok. 1 passed" <<<"$smoke" \
    || { echo "the deployed-artifact smoke test did not run exactly one test" >&2; exit 1; }
# The one test that mostly waits (a 90 s task on a timer) runs beside the
# suite, as its own process, instead of holding one of the suite's two
# threads for a minute and a half; the suite skips it, and the smoke test
# it has just run (docs/performance.md, "CI time").
waiting_test=protocol::tasks::a_ninety_second_task_outlives_its_client_and_the_same_run_without_a_task_still_answers
it_binary="$(cargo test "${build[@]}" --test it --no-run --message-format=json \
    | python3 -c 'import json, sys
print(next(m["executable"] for m in map(json.loads, sys.stdin)
           if m.get("executable") and m["target"]["name"] == "it"))')"
waiting_log="$(mktemp)"
"$it_binary" --exact "$waiting_test" >"$waiting_log" 2>&1 &
waiting=$!
trap 'kill "$installing" "$waiting" 2>/dev/null || true' EXIT
cargo test "${build[@]}" -- \
    --skip "$waiting_test" \
    --skip lambda::with_max_concurrency_a_looping_run_holds_up_no_other_invocation
wait "$waiting" || { cat "$waiting_log"; exit 1; }
cat "$waiting_log"
grep -q "test result: ok. 1 passed" "$waiting_log" \
    || { echo "the waiting test did not run exactly one test" >&2; exit 1; }
