#!/usr/bin/env bash
# A local AWS for development: moto (S3 and DynamoDB) on loopback, set up with
# `mcp-v8-lambda setup`. Prints the environment to export, then keeps moto in
# the foreground until Ctrl-C.
#   infra/local-stack.sh [PORT [CARGO BUILD ARGS...]]
#       (port 5555 by default; needs scripts/install-test-deps.sh first; the
#       build arguments match the binary to a `cargo lambda watch` of the same)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/v8-env.sh
port="${1:-5555}"
shift || true
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
# The project's binary, built as `cargo lambda watch` builds it (the dev
# profile, unless the arguments say otherwise), so the watch below starts at
# once. The first build compiles V8's bindings, the AWS SDK and the bundler:
# 15 to 25 minutes on 2 cores.
if [ ! -x target/debug/mcp-v8-lambda ]; then
    echo "building mcp-v8-lambda (the first build takes 15 to 25 minutes on 2 cores; later ones seconds)" >&2
fi
cargo run --bin mcp-v8-lambda "$@" -- setup

cat <<ENV

Local stack ready. In another shell:

export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_REGION=$AWS_REGION AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
export MCP_V8_HEAP_BUCKET=$MCP_V8_HEAP_BUCKET MCP_V8_TABLE_PREFIX=$MCP_V8_TABLE_PREFIX MCP_V8_S3_FORCE_PATH_STYLE=true
cargo run -- serve

or the function under the Lambda emulator (progress needs the streamed invoke
mode; tasks go to the emulator's own Invoke API and run in an instance of
their own, as on Lambda, hence --concurrency):

cargo lambda watch -A 127.0.0.1 --concurrency 4 --env-var MCP_V8_ALLOW_UNAUTHENTICATED=true --env-var MCP_V8_INVOKE_MODE=RESPONSE_STREAM

and point an MCP client at http://127.0.0.1:9000/lambda-url/mcp-v8-lambda/mcp
ENV
wait $moto_pid
