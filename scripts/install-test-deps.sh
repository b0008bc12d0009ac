#!/usr/bin/env bash
# Installs what the end-to-end tests drive: the official TypeScript SDK and
# the MCP Apps host of the View test (npm, pinned by
# tests/e2e/package-lock.json), Debian's Chromium that test renders in, the
# View's bundler (src/apps/view/package-lock.json), the Node modules' ports
# and their bundler (scripts/node-builtins/package-lock.json), the MCP conformance suite
# (tests/conformance/package-lock.json), the package parity corpus
# (tests/parity/package-lock.json), the web-platform-tests' URL data
# (tests/wpt/url, from a crate on crates.io) and the Python `mcp` clients
# (venvs at .venv and .venv-mcp2, pinned by tests/e2e/requirements*.txt).
# With --bench, also the HTTP benchmark's reference server (benches/reference/).
# With --build, only what the build itself needs (the .venv, which holds
# cargo-lambda), so scripts/test.sh can install the rest while it compiles.
# Re-running skips whatever is already installed at the pinned versions.
set -euo pipefail
cd "$(dirname "$0")/.."

# npm ci in DIR, unless DIR/node_modules came from this very lock file.
npm_deps() {
    local lock_hash
    lock_hash=$(sha256sum "$1/package-lock.json" | cut -d' ' -f1)
    if [ "$(cat "$1/node_modules/.installed-from" 2>/dev/null)" != "$lock_hash" ]; then
        (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
        echo "$lock_hash" > "$1/node_modules/.installed-from"
    fi
}

# A venv at VENV with REQUIREMENTS, unless it was made from this very file.
venv_deps() {
    local req_hash
    req_hash=$(sha256sum "$2" | cut -d' ' -f1)
    if [ "$(cat "$1/.installed-from" 2>/dev/null)" != "$req_hash" ]; then
        python3 -m venv "$1"
        "$1/bin/pip" install --quiet --disable-pip-version-check -r "$2"
        echo "$req_hash" > "$1/.installed-from"
    fi
}

# The Python mcp 1.x client, moto, cfn-lint, cargo-lambda and prometheus-client.
venv_deps .venv tests/e2e/requirements.txt
if [ "${1:-}" = "--build" ]; then
    exit 0
fi
# The TypeScript SDK client, and the ext-apps AppBridge, playwright-core and
# rolldown of the View test.
npm_deps tests/e2e
# The View's bundler and Chart.js (tests/it/protocol/apps.rs checks that
# src/apps/run.html is what they build).
npm_deps src/apps/view
# Node's modules' npm ports and rolldown (tests/it/structure/tree/ checks
# that src/engine/node/node_lib.js and node_inspect.js are what they build).
npm_deps scripts/node-builtins
# Debian's Chromium, which the View test drives (never a browser a library
# downloads).
if ! command -v chromium >/dev/null; then
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
# The MCP conformance suite, and the Node 22 it needs (npm package node@22).
npm_deps tests/conformance
# The web-platform-tests' URL data (tests/it/engine/wpt_url.rs), as the `url`
# crate 2.5.7 ships it on crates.io, checked against the registry's checksum.
wpt_url() {
    local crate=url-2.5.7 sum=08bc136a29a3d1758e07a9cca267be308aeebf5cfd5a10f3f67ab2097683ef5b
    local dir=tests/wpt/url
    if [ "$(cat "$dir/.installed-from" 2>/dev/null)" = "$sum" ]; then
        return
    fi
    local tmp
    tmp=$(mktemp -d)
    curl -sSfL --retry 3 -o "$tmp/$crate.crate" "https://static.crates.io/crates/url/$crate.crate"
    echo "$sum  $tmp/$crate.crate" | sha256sum --check --quiet
    mkdir -p "$dir"
    tar -xzf "$tmp/$crate.crate" -C "$tmp" "$crate/tests/urltestdata.json" "$crate/tests/setters_tests.json"
    mv "$tmp/$crate/tests/"*.json "$dir/"
    rm -rf "$tmp"
    echo "$sum" > "$dir/.installed-from"
}
wpt_url
# Node 22's own source, for the slice of its test/parallel that
# tests/it/engine/node_tests.rs runs (tests/node/slice.txt names the files)
# and the lib/ files scripts/node-builtins bundles: node-v22.22.1 as Ubuntu
# 26.04 LTS ships it (Debian's +dfsg orig tarball, which keeps test/ and
# lib/), checked by its SHA-256. Ubuntu keeps a release's files for its whole
# life, where nodejs.org and GitHub are out of this CI's reach.
node_source() {
    local sum=3b0dc941e4145fcb4c4a904a4c6149829e6255c05d0e01dbe8acda03277e2e74
    local file='nodejs_22.22.1+dfsg+~cs22.19.15.orig.tar.xz'
    local dir=tests/node/source
    if [ "$(cat "$dir/.installed-from" 2>/dev/null)" = "$sum" ]; then
        return
    fi
    local tmp
    tmp=$(mktemp -d)
    curl -sSfL --retry 3 -o "$tmp/node.tar.xz" \
        "http://archive.ubuntu.com/ubuntu/pool/universe/n/nodejs/${file//+/%2B}"
    echo "$sum  $tmp/node.tar.xz" | sha256sum --check --quiet
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -xJf "$tmp/node.tar.xz" -C "$dir" --strip-components=1 \
        node-v22.22.1/LICENSE node-v22.22.1/lib node-v22.22.1/test/parallel
    rm -rf "$tmp"
    echo "$sum" > "$dir/.installed-from"
}
node_source
# The package parity corpus (tests/it/agents/parity.rs), for Node 22; the test
# serves the same files to `packages add`.
npm_deps tests/parity
# The Python mcp 2.x client, which speaks 2026-07-28; 1.x and 2.x cannot share a venv.
venv_deps .venv-mcp2 tests/e2e/requirements-mcp2.txt
if [ "${1:-}" = "--bench" ]; then
    # The node:vm reference server of benches/http.rs.
    npm_deps benches/reference
fi
