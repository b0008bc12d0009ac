#!/usr/bin/env python3
"""Memory of ready heaps under a burst of sessions: `stdio` with N engine
workers, N logical sessions each loading a heap of 200k small objects,
then the resident memory of the server and its workers read from /proc.
Run it with several `MCP_V8_READY_HEAPS_MB` values to see the bound hold.

    python3 benches/ready_burst.py BINARY [--workers 8] [--ready-mb 512]
"""
import argparse
import os
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from stdio_client import StdioClient  # noqa: E402


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
    env = dict(MCP_V8_ENGINE_WORKERS=str(args.workers), MCP_V8_READY_HEAPS_MB=str(args.ready_mb))
    with tempfile.TemporaryDirectory() as data_dir:
        client = StdioClient(args.binary, data_dir, "burst", env=env)
        request = client.request
        code = ("globalThis.items = Array.from({length: 200000}, (_, i) => ({i, s: 'item' + i})); "
                "items.length")
        for n in range(args.workers):
            answer = request("tools/call", {"name": "run_js", "arguments": {
                "code": code, "session": f"burst-{n}"}})
            assert not answer["result"].get("isError"), answer
        time.sleep(2)
        workers = children(client.pid)
        total = rss_kib(client.pid) + sum(rss_kib(w) for w in workers)
        print(f"| {args.ready_mb} | {args.workers} | {len(workers)} | {total // 1024} |")
        client.close()


if __name__ == "__main__":
    main()
