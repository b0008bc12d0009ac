#!/usr/bin/env bash
# Installs what the end-to-end tests drive: the official TypeScript SDK
# (npm, pinned by tests/e2e/package-lock.json) and the Python `mcp` client
# (a venv at .venv, pinned by tests/e2e/requirements.txt). Re-running skips
# whatever is already installed at the pinned versions.
set -euo pipefail
cd "$(dirname "$0")/.."

lock_hash=$(sha256sum tests/e2e/package-lock.json | cut -d' ' -f1)
if [ "$(cat tests/e2e/node_modules/.installed-from 2>/dev/null)" != "$lock_hash" ]; then
    (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_hash" > tests/e2e/node_modules/.installed-from
fi

req_hash=$(sha256sum tests/e2e/requirements.txt | cut -d' ' -f1)
if [ "$(cat .venv/.installed-from 2>/dev/null)" != "$req_hash" ]; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
    echo "$req_hash" > .venv/.installed-from
fi
