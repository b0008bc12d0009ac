#!/usr/bin/env python3
"""p50 of a fresh run importing a package, for builds compared back to back.

    python3 benches/import_p50.py --runs 200 --rounds 5 BINARY [BINARY ...]

Each binary gets its own data directory with lodash added from the fixture
tarball (tests/fixtures/npm), then serves over stdio; the builds take turns
(one round of RUNS fresh stateless runs each), so the machine's drift hits
them alike. A run is `import _ from "lodash"; _.chunk([1, 2, 3], 2).length`,
timed from the tools/call request to its answer.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = 'import _ from "lodash"; _.chunk([1, 2, 3], 2).length'


class Server:
    def __init__(self, binary, data_dir):
        self.process = subprocess.Popen(
            [binary, "stdio", "--data-dir", data_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return json.loads(self.process.stdout.readline())

    def run(self):
        start = time.perf_counter()
        answer = self.call("tools/call", {"name": "run_js", "arguments": {"code": CODE}})
        elapsed = time.perf_counter() - start
        status = answer["result"]["structuredContent"]["status"]
        assert status == "completed", answer
        return elapsed * 1000

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tarball = glob.glob(os.path.join(ROOT, "tests/fixtures/npm/lodash-*.tgz"))[0]
    servers = []
    for binary in args.binaries:
        data_dir = tempfile.mkdtemp(prefix="import-p50-")
        subprocess.run([binary, "packages", "--data-dir", data_dir, "add", tarball],
                       check=True, stdout=subprocess.DEVNULL)
        server = Server(binary, data_dir)
        server.run()  # warm-up
        servers.append(server)
    times = {binary: [] for binary in args.binaries}
    for _ in range(args.rounds):
        for binary, server in zip(args.binaries, servers):
            round_times = [server.run() for _ in range(args.runs)]
            times[binary] += round_times
            print(f"{binary}: round p50 {statistics.median(round_times):.2f} ms", flush=True)
    for binary in args.binaries:
        t = sorted(times[binary])
        print(f"{binary}: p50 {statistics.median(t):.2f} ms, "
              f"p95 {t[int(len(t) * 0.95)]:.2f} ms, {len(t)} runs")
    for server in servers:
        server.close()


if __name__ == "__main__":
    main()
