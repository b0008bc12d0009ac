#!/usr/bin/env bash
# A local AWS for development: moto (S3 and DynamoDB) on loopback, set up with
# `mcp-v8-lambda setup`. Prints the environment to export, then keeps moto in
# the foreground until Ctrl-C.
#   infra/local-stack.sh [PORT]        (default 5555; needs scripts/install-test-deps.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/v8-env.sh
port="${1:-5555}"
[ -x .venv/bin/moto_server ] || { echo "moto is not installed: run scripts/install-test-deps.sh" >&2; exit 1; }

export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
export MCP_V8_HEAP_BUCKET=mcp-v8-heaps MCP_V8_TABLE_PREFIX=mcp-v8- MCP_V8_S3_FORCE_PATH_STYLE=true

# One request at a time, as DynamoDB serializes transactions (tests/moto_serial.py says why).
.venv/bin/python tests/moto_serial.py 127.0.0.1 "$port" &
moto_pid=$!
trap 'kill $moto_pid 2>/dev/null' EXIT
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
cargo run --quiet -- setup

cat <<ENV

Local stack ready. In another shell:

export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_REGION=$AWS_REGION AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
export MCP_V8_HEAP_BUCKET=$MCP_V8_HEAP_BUCKET MCP_V8_TABLE_PREFIX=$MCP_V8_TABLE_PREFIX MCP_V8_S3_FORCE_PATH_STYLE=true
cargo run --release -- serve                      # or: cargo lambda watch -A 127.0.0.1
ENV
wait $moto_pid
