#!/usr/bin/env bash
# The HTTP benchmark (benches/http.rs) with what it needs: the reference
# server's npm packages (benches/reference/, pinned by its package-lock.json)
# and moto and cargo-lambda for the Lambda cold starts (the test venv).
# Arguments go to the bench, e.g. `scripts/bench.sh --clients 2 --only chained`.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/v8-env.sh

scripts/install-test-deps.sh --bench

exec cargo bench --bench benches -- http "$@"
