#!/usr/bin/env python3
"""p50 of fresh and chained runs that touch no files, for builds compared
back to back.

    python3 benches/runs_p50.py --runs 100 --rounds 5 BEFORE AFTER

Each binary serves over stdio on its own data directory; the builds take
turns by rounds of RUNS calls each, so the machine's drift hits them alike.
A call is timed from the tools/call request to its answer. "fresh" is a
stateless `1 + 1` (a server with MCP_V8_STATELESS); "chained" continues the
previous call's heap with `globalThis.n = (globalThis.n ?? 0) + 1`. With
--with-file the chain's first call writes a 1 MiB file to /work, which
every later heap of the chain keeps without touching it. --fresh-code
replaces the fresh call's code (`URL` parsing, say). --serve drives each
build's `serve` over HTTP (2026-07-28 requests) instead of stdio: there
its metrics are recorded.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from serve_client import ServeClient  # noqa: E402
from stdio_client import StdioClient  # noqa: E402


def timed(client, arguments):
    started = time.perf_counter()
    answer = client.call("run_js", arguments)
    elapsed = (time.perf_counter() - started) * 1000
    content = answer["result"]["structuredContent"]
    assert content["status"] == "completed", answer
    return elapsed, content


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--with-file", action="store_true")
    parser.add_argument("--fresh-code", default="1 + 1")
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    client = ServeClient if args.serve else StdioClient
    fresh = {b: client(b, tempfile.mkdtemp(prefix="p50-fresh-"), "p50",
                       env={"MCP_V8_STATELESS": "true"}) for b in args.binaries}
    chained = {b: client(b, tempfile.mkdtemp(prefix="p50-chained-"), "p50")
               for b in args.binaries}
    heaps = {b: None for b in args.binaries}
    if args.with_file:
        for binary in args.binaries:
            _, content = timed(chained[binary], {"code": "require('fs').writeFileSync('kept.bin', "
                                                          "new Uint8Array(1 << 20)); 1"})
            heaps[binary] = content["heap"]
    times = {(b, kind): [] for b in args.binaries for kind in ("fresh", "chained")}
    for _ in range(args.rounds):
        for binary in args.binaries:
            for i in range(args.runs + 1):
                elapsed, _ = timed(fresh[binary], {"code": args.fresh_code})
                if i:
                    times[(binary, "fresh")].append(elapsed)
            for i in range(args.runs + 1):
                call = {"code": "globalThis.n = (globalThis.n ?? 0) + 1"}
                if heaps[binary]:
                    call["heap"] = heaps[binary]
                elapsed, content = timed(chained[binary], call)
                heaps[binary] = content["heap"]
                if i:
                    times[(binary, "chained")].append(elapsed)
    for client in list(fresh.values()) + list(chained.values()):
        client.close()
    for kind in ("fresh", "chained"):
        first = statistics.median(times[(args.binaries[0], kind)])
        for binary in args.binaries:
            p50 = statistics.median(times[(binary, kind)])
            print(f"{kind:8} {p50:8.2f} ms  {p50 / first:5.2f}x  {binary}")


if __name__ == "__main__":
    main()
