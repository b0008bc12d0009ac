"""One MCP client over `mcp-v8-lambda stdio`, shared by the Python benches:
the server started on a data directory, `initialize` sent, then requests
answered in order (notifications the server sends between are skipped)."""

import json
import os
import subprocess


class StdioClient:
    def __init__(self, binary, data_dir, name, protocol="2025-06-18", capabilities=None, env=None):
        self.proc = subprocess.Popen(
            [binary, "stdio", "--data-dir", data_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env=dict(os.environ, RUST_LOG="warn", **(env or {})))
        self.pid = self.proc.pid
        self.next_id = 0
        self.request("initialize", {"protocolVersion": protocol, "capabilities": capabilities or {},
                                    "clientInfo": {"name": name, "version": "1"}})
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

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
