#!/usr/bin/env python3
"""p50 of fresh stateless runs that print, for builds compared back to back.

    python3 benches/console_p50.py --runs 100 --rounds 3 BINARY [BINARY ...]

Each binary serves over stdio (stateless, its own data directory); the
builds take turns by rounds of RUNS calls per program, so the machine's
drift hits them alike. A call is timed from the tools/call request to its
answer. The programs: a lone string (no formatter), one object (Node's
formatter, loaded into the run's fresh context), and a loop printing a
number and an object a thousand times.
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time

PROGRAMS = {
    "string": "console.log('x'); 1",
    "object": "console.log({ a: 1, b: [1, 2, 3] }); 1",
    "loop": "for (let i = 0; i < 1000; i++) console.log(i, { i }); 1",
}


class Server:
    def __init__(self, binary, data_dir):
        self.process = subprocess.Popen(
            [binary, "stdio", "--stateless", "--data-dir", data_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "console-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return json.loads(self.process.stdout.readline())

    def run(self, code):
        started = time.perf_counter()
        answer = self.request("tools/call", {"name": "run_js", "arguments": {"code": code}})
        elapsed = (time.perf_counter() - started) * 1000
        assert answer["result"]["structuredContent"]["status"] == "completed", answer
        return elapsed

    def close(self):
        self.process.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    servers = [Server(b, tempfile.mkdtemp(prefix="console-bench-")) for b in args.binaries]
    times = {(b, p): [] for b in args.binaries for p in PROGRAMS}
    for _ in range(args.rounds):
        for binary, server in zip(args.binaries, servers):
            for name, code in PROGRAMS.items():
                server.run(code)  # the first of a round warms what it needs
                times[(binary, name)].extend(server.run(code) for _ in range(args.runs))
    for server in servers:
        server.close()
    for name in PROGRAMS:
        for binary in args.binaries:
            print(f"{name:7} {statistics.median(times[(binary, name)]):8.2f} ms  {binary}")


if __name__ == "__main__":
    main()
