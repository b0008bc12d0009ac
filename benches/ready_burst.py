#!/usr/bin/env python3
"""Memory of ready heaps under a burst of sessions: `stdio` with N engine
workers, N logical sessions each loading a heap of 200k small objects,
then the resident memory of the server and its workers read from /proc.
Run it with several `MCP_V8_READY_HEAPS_MB` values to see the bound hold.

    python3 benches/ready_burst.py BINARY [--workers 8] [--ready-mb 512]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                pass
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--ready-mb", type=int, default=512)
    args = parser.parse_args()
    env = dict(os.environ, MCP_V8_ENGINE_WORKERS=str(args.workers),
               MCP_V8_READY_HEAPS_MB=str(args.ready_mb), RUST_LOG="warn")
    with tempfile.TemporaryDirectory() as data_dir:
        proc = subprocess.Popen([args.binary, "stdio", "--data-dir", data_dir], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ids = iter(range(1, 1_000_000))

        def request(method, params):
            rid = next(ids)
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                         "params": params}) + "\n")
            proc.stdin.flush()
            while True:
                answer = json.loads(proc.stdout.readline())
                if answer.get("id") == rid:
                    return answer

        request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "burst", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        code = ("globalThis.items = Array.from({length: 200000}, (_, i) => ({i, s: 'item' + i})); "
                "items.length")
        for n in range(args.workers):
            answer = request("tools/call", {"name": "run_js", "arguments": {
                "code": code, "session": f"burst-{n}"}})
            assert not answer["result"].get("isError"), answer
        time.sleep(2)
        workers = children(proc.pid)
        total = rss_kib(proc.pid) + sum(rss_kib(w) for w in workers)
        print(f"| {args.ready_mb} | {args.workers} | {len(workers)} | {total // 1024} |")
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    main()
