#!/usr/bin/env python3
"""/work as a disk at data size (issue 93), against dd on the same disk.

    python3 benches/disk_1gib.py [--size-mb 1024] [--moto] BINARY

With --moto the heaps, files and tables are on S3 and DynamoDB as moto's
server (tests/moto_serial.py, from scripts/test.sh's .venv) serves them.

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
await (async () => {
  const fs = require('fs'); const hash = require('crypto').createHash('sha256');
  let lines = 0, size = 0;
  for await (const piece of fs.createReadStream('/work/data.csv', { highWaterMark: 1 << 20 })) {
    hash.update(piece); size += piece.length;
    for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++;
  }
  return { sha: hash.digest('hex'), size, lines };
})()
"""

READ_PLAIN = """
await (async () => {
  let size = 0;
  for await (const piece of require('fs').createReadStream('/work/data.csv', { highWaterMark: 1 << 20 })) size += piece.length;
  return size;
})()
"""

APPEND = "require('fs').appendFileSync('/work/data.csv', '1,2,3\\n'); require('fs').statSync('/work/data.csv').size"

MIDDLE = """
(() => {
  const fs = require('fs'); const fd = fs.openSync('/work/data.csv', 'r'); const b = Buffer.alloc(16);
  const n = fs.readSync(fd, b, 0, 16, Math.floor(fs.fstatSync(fd).size / 2)); fs.closeSync(fd); return [n, b.toString()];
})()
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
    """dd writing SIZE MiB (synced), reading it back through the page cache
    and around it (iflag=direct), and sha256sum of it: (write, read,
    direct read, sha256sum) seconds."""
    path = os.path.join(directory, "dd.bin")

    def timed(command):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        return time.perf_counter() - started
    write = timed(["dd", "if=/dev/zero", f"of={path}", "bs=4M", f"count={size_mb // 4}",
                   "conv=fdatasync"])
    read = timed(["dd", f"if={path}", "of=/dev/null", "bs=4M"])
    direct = timed(["dd", f"if={path}", "of=/dev/null", "bs=4M", "iflag=direct"])
    sha = timed(["sha256sum", path])
    os.remove(path)
    return write, read, direct, sha


def moto_env(binary, data):
    """moto's server on a free port and the environment of a server on it,
    its bucket and tables made by `mcp-v8-lambda setup`."""
    import socket
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([os.path.join(root, ".venv/bin/python"),
                               os.path.join(root, "tests/moto_serial.py"), "127.0.0.1", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_EC2_METADATA_DISABLED": "true", "MCP_V8_HEAP_BUCKET": "disk-bench",
           "MCP_V8_TABLE_PREFIX": "disk-bench-", "MCP_V8_S3_FORCE_PATH_STYLE": "true",
           "MCP_V8_HEAP_CACHE_DIR": os.path.join(data, "cache")}
    subprocess.run([binary, "setup"], env=dict(os.environ, **env), check=True, capture_output=True)
    return server, env


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--moto", action="store_true")
    parser.add_argument("binary")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="disk-bench-", dir=os.environ.get("BENCH_DIR"))
    moto, env = moto_env(args.binary, data) if args.moto else (None, {})
    client = StdioClient(args.binary, data, "disk-bench", env=env)
    chunks = args.size_mb // 4
    _, make_s = call(client, MAKE_ONLY.replace("CHUNKS", str(chunks)))
    wrote, write_s = call(client, WRITE.replace("CHUNKS", str(chunks)))
    written = json.loads(wrote["result"])
    heap = wrote["heap"]
    read, read_s = call(client, READ, heap)
    back = json.loads(read["result"])
    assert back["sha"] == written["sha"] and back["size"] == written["size"], (written, back)
    plain, plain_s = call(client, READ_PLAIN, heap)
    assert int(plain["result"]) == written["size"], plain
    stored = (lambda: 0) if moto else (lambda: du(os.path.join(data, "work")))
    before = stored()
    appended, append_s = call(client, APPEND, heap)
    grown = stored() - before
    middle, middle_s = call(client, MIDDLE, appended["heap"])
    server, workers = peak_rss_kib(client.pid)
    client.close()
    dd_write, dd_read, dd_direct, sha256sum = dd(data, args.size_mb)
    size = written["size"] / 2**20
    print(f"file: {size:.0f} MiB, sha256 {written['sha'][:16]}…, {back['lines']} lines, "
          f"write() waited for 'drain' {written['waited']} times")
    print(f"make the data only:  {make_s:7.2f} s")
    print(f"write (call):        {write_s:7.2f} s; less making the data {write_s - make_s:6.2f} s "
          f"= {size / max(write_s - make_s, 1e-9):7.1f} MiB/s")
    print(f"read back (call):    {read_s:7.2f} s = {size / read_s:7.1f} MiB/s (hashing and counting lines)")
    print(f"read back, bytes only: {plain_s:5.2f} s = {size / plain_s:7.1f} MiB/s")
    growth = "S3's growth is measured by tests/it/engine/disk.rs" if moto else \
        f"the store grew by {grown / 2**20:.2f} MiB"
    print(f"append a line:       {append_s:7.2f} s; {growth}")
    print(f"positioned read:     {middle_s:7.2f} s -> {json.loads(middle['result'])}")
    print(f"dd write (fdatasync):{dd_write:7.2f} s = {size / dd_write:7.1f} MiB/s")
    print(f"dd read (cached):    {dd_read:7.2f} s = {size / dd_read:7.1f} MiB/s")
    print(f"dd read (direct):    {dd_direct:7.2f} s = {size / dd_direct:7.1f} MiB/s")
    print(f"sha256sum:           {sha256sum:7.2f} s = {size / sha256sum:7.1f} MiB/s")
    print(f"peak RSS: server {server / 1024:.0f} MiB; workers "
          + ", ".join(f"{(w or 0) / 1024:.0f} MiB" for w in workers.values()))
    if moto:
        moto.kill()
    else:
        print(f"store after: {du(os.path.join(data, 'work')) / 2**20:.0f} MiB in {data}/work")


if __name__ == "__main__":
    main()
