#!/usr/bin/env python3
"""Think time through `stdio`: the p50 of a trivial `latest` call after a
pause, on a tiny, ~5 MB (60k objects) and ~50 MB (600k) heap, as an agent
with a desktop client makes it. Raw JSON-RPC lines, one client, one
process per heap size. No timing is asserted: docs/performance.md records
the figures.

    python3 benches/think_stdio.py BINARY [--pause-ms 3000] [--calls 10]
"""
import argparse
import os
import statistics
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from stdio_client import StdioClient  # noqa: E402

SIZES = [("tiny", 0), ("5mb", 60_000), ("50mb", 600_000)]


class Client(StdioClient):
    def __init__(self, binary, data_dir):
        super().__init__(binary, data_dir, "think-stdio")

    def run_js(self, **arguments):
        result = self.call("run_js", arguments)["result"]
        if result.get("isError"):
            raise SystemExit(f"run_js failed: {result}")
        return result["structuredContent"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--pause-ms", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    print("| heap | pause ms | calls | p50 ms | max ms |\n|---|---|---|---|---|")
    for name, objects in SIZES:
        with tempfile.TemporaryDirectory() as data_dir:
            client = Client(args.binary, data_dir)
            client.run_js(code=f"globalThis.items = Array.from({{length: {objects}}}, "
                               f"(_, i) => ({{i, s: 'item' + i}})); globalThis.n = 0; n",
                          session="think")
            latencies = []
            for n in range(args.calls + 2):
                time.sleep(args.pause_ms / 1000)
                started = time.perf_counter()
                outcome = client.run_js(code="n += 1; n", heap="latest", session="think")
                elapsed = (time.perf_counter() - started) * 1000
                assert outcome["result"] == str(n + 1), outcome
                if n >= 2:
                    latencies.append(elapsed)
            client.close()
        print(f"| {name} | {args.pause_ms} | {args.calls} | {statistics.median(latencies):.1f} | "
              f"{max(latencies):.1f} |")


if __name__ == "__main__":
    main()
