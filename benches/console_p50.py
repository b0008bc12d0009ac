#!/usr/bin/env python3
"""p50 of fresh stateless runs that print, for builds compared back to back.

    python3 benches/console_p50.py --runs 100 --rounds 3 BINARY [BINARY ...]

Each binary serves over stdio (`MCP_V8_STATELESS`, its own data directory); the
builds take turns by rounds of RUNS calls per program, so the machine's
drift hits them alike. A call is timed from the tools/call request to its
answer. The programs: a lone string (no formatter), one object (Node's
formatter, loaded into the run's fresh context), and a loop printing a
number and an object a thousand times.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from stdio_client import StdioClient  # noqa: E402

PROGRAMS = {
    "string": "console.log('x'); 1",
    "object": "console.log({ a: 1, b: [1, 2, 3] }); 1",
    "loop": "for (let i = 0; i < 1000; i++) console.log(i, { i }); 1",
}


def run(client, code):
    """One fresh run of `code`, timed from the request to its answer."""
    started = time.perf_counter()
    answer = client.call("run_js", {"code": code})
    elapsed = (time.perf_counter() - started) * 1000
    assert answer["result"]["structuredContent"]["status"] == "completed", answer
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    servers = [StdioClient(b, tempfile.mkdtemp(prefix="console-bench-"), "console-bench",
                           env={"MCP_V8_STATELESS": "true"}) for b in args.binaries]
    times = {(b, p): [] for b in args.binaries for p in PROGRAMS}
    for _ in range(args.rounds):
        for binary, server in zip(args.binaries, servers):
            for name, code in PROGRAMS.items():
                run(server, code)  # the first of a round warms what it needs
                times[(binary, name)].extend(run(server, code) for _ in range(args.runs))
    for server in servers:
        server.close()
    for name in PROGRAMS:
        for binary in args.binaries:
            print(f"{name:7} {statistics.median(times[(binary, name)]):8.2f} ms  {binary}")


if __name__ == "__main__":
    main()
