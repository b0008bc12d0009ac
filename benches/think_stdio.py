#!/usr/bin/env python3
"""Think time through `stdio`: the p50 of a trivial `latest` call after a
pause, on a tiny, ~5 MB (60k objects) and ~50 MB (600k) heap, as an agent
with a desktop client makes it. Raw JSON-RPC lines, one client, one
process per heap size. No timing is asserted: docs/performance.md records
the figures.

    python3 benches/think_stdio.py BINARY [--pause-ms 3000] [--calls 10]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

SIZES = [("tiny", 0), ("5mb", 60_000), ("50mb", 600_000)]


class Client:
    def __init__(self, binary, data_dir):
        self.proc = subprocess.Popen(
            [binary, "stdio", "--data-dir", data_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env=dict(os.environ, RUST_LOG="warn"))
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "think-stdio", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def run_js(self, **arguments):
        answer = self.request("tools/call", {"name": "run_js", "arguments": arguments})
        result = answer["result"]
        if result.get("isError"):
            raise SystemExit(f"run_js failed: {result}")
        return result["structuredContent"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


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
