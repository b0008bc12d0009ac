#!/usr/bin/env python3
"""/work as a disk at data size (issue 93), against dd on the same disk.

    python3 benches/disk_1gib.py [--size-mb 1024] BINARY

The server runs with default settings (`stdio`: the engine, limits and
stores `serve` has, on its own data directory). One run writes a CSV of
SIZE MiB through fs.createWriteStream in 4 MiB chunks, waiting for 'drain'
when write() says so, hashing it with createHash as it goes; a second run
(from that heap) reads it back with fs.createReadStream, hashing it and
counting its lines; a third appends one line; a fourth reads 16 bytes in
the middle with fs.readSync. Printed: each call's wall time, the run that
only makes the data (to subtract its cost from the write), the store's
growth on the append, the peak resident memory of the server and of each
engine worker (VmHWM), and dd writing (conv=fdatasync) and reading a file
of the same size in the same directory.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from stdio_client import StdioClient  # noqa: E402

MAKE = """
const { createHash } = require('crypto');
function chunk(b) {
  for (let at = 0; at < b.length; at += 65536) crypto.getRandomValues(b.subarray(at, at + 65536));
  for (let k = 0; k < b.length; k++) b[k] = (k & 31) === 31 ? 10 : (k & 7) === 7 ? 44 : 48 + (b[k] % 10);
  return b;
}
"""

WRITE = MAKE + """
const fs = require('fs');
const out = fs.createWriteStream('/work/data.csv');
const hash = createHash('sha256');
const b = new Uint8Array(4 << 20);
let waited = 0;
for (let i = 0; i < CHUNKS; i++) {
  chunk(b); hash.update(b);
  if (!out.write(Buffer.from(b))) { waited++; await new Promise((r) => out.once('drain', r)); }
}
await new Promise((r, j) => { out.on('error', j); out.end(r); });
({ sha: hash.digest('hex'), size: fs.statSync('/work/data.csv').size, waited })
"""

MAKE_ONLY = MAKE + """
const hash = createHash('sha256'); const b = new Uint8Array(4 << 20);
for (let i = 0; i < CHUNKS; i++) { chunk(b); hash.update(b); }
hash.digest('hex')
"""

READ = """
const fs = require('fs'); const hash = require('crypto').createHash('sha256');
let lines = 0, size = 0;
for await (const piece of fs.createReadStream('/work/data.csv', { highWaterMark: 1 << 20 })) {
  hash.update(piece); size += piece.length;
  for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++;
}
({ sha: hash.digest('hex'), size, lines })
"""

APPEND = "require('fs').appendFileSync('/work/data.csv', '1,2,3\\n'); require('fs').statSync('/work/data.csv').size"

MIDDLE = """
const fs = require('fs'); const fd = fs.openSync('/work/data.csv', 'r'); const b = Buffer.alloc(16);
const n = fs.readSync(fd, b, 0, 16, Math.floor(fs.fstatSync(fd).size / 2)); fs.closeSync(fd); [n, b.toString()]
"""


def call(client, code, heap=None, timeout=300):
    args = {"code": code, "execution_timeout_secs": timeout}
    if heap:
        args["heap"] = heap
    started = time.perf_counter()
    answer = client.call("run_js", args)
    elapsed = time.perf_counter() - started
    content = answer["result"]["structuredContent"]
    assert content["status"] == "completed", json.dumps(answer)[:2000]
    return content, elapsed


def du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def peak_rss_kib(pid):
    """VmHWM of `pid` and of each of its children, in KiB."""
    def hwm(p):
        try:
            with open(f"/proc/{p}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            return None
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        children.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return hwm(pid), {c: hwm(c) for c in children}


def dd(directory, size_mb):
    path = os.path.join(directory, "dd.bin")
    started = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4M", f"count={size_mb // 4}",
                    "conv=fdatasync"], check=True, capture_output=True)
    write = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4M"], check=True, capture_output=True)
    read = time.perf_counter() - started
    os.remove(path)
    return write, read


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("binary")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="disk-bench-", dir=os.environ.get("BENCH_DIR"))
    client = StdioClient(args.binary, data, "disk-bench")
    chunks = args.size_mb // 4
    _, make_s = call(client, MAKE_ONLY.replace("CHUNKS", str(chunks)))
    wrote, write_s = call(client, WRITE.replace("CHUNKS", str(chunks)))
    written = json.loads(wrote["result"])
    heap = wrote["heap"]
    read, read_s = call(client, READ, heap)
    back = json.loads(read["result"])
    assert back["sha"] == written["sha"] and back["size"] == written["size"], (written, back)
    before = du(os.path.join(data, "work"))
    appended, append_s = call(client, APPEND, heap)
    grown = du(os.path.join(data, "work")) - before
    middle, middle_s = call(client, MIDDLE, appended["heap"])
    server, workers = peak_rss_kib(client.pid)
    client.close()
    dd_write, dd_read = dd(data, args.size_mb)
    size = written["size"] / 2**20
    print(f"file: {size:.0f} MiB, sha256 {written['sha'][:16]}…, {back['lines']} lines, "
          f"write() waited for 'drain' {written['waited']} times")
    print(f"make the data only:  {make_s:7.2f} s")
    print(f"write (call):        {write_s:7.2f} s; less making the data {write_s - make_s:6.2f} s "
          f"= {size / max(write_s - make_s, 1e-9):7.1f} MiB/s")
    print(f"read back (call):    {read_s:7.2f} s = {size / read_s:7.1f} MiB/s (hashing and counting lines)")
    print(f"append a line:       {append_s:7.2f} s; the store grew by {grown / 2**20:.2f} MiB")
    print(f"positioned read:     {middle_s:7.2f} s -> {json.loads(middle['result'])}")
    print(f"dd write (fdatasync):{dd_write:7.2f} s = {size / dd_write:7.1f} MiB/s")
    print(f"dd read:             {dd_read:7.2f} s = {size / dd_read:7.1f} MiB/s")
    print(f"peak RSS: server {server / 1024:.0f} MiB; workers "
          + ", ".join(f"{(w or 0) / 1024:.0f} MiB" for w in workers.values()))
    print(f"store after: {du(os.path.join(data, 'work')) / 2**20:.0f} MiB in {data}/work")


if __name__ == "__main__":
    main()
