"""One MCP client over `mcp-v8-lambda serve`, with `StdioClient`'s
interface: the server started on a free loopback port and a data
directory, each call a 2026-07-28 request on one kept-alive connection.
Under `serve` the metrics are recorded (its Prometheus recorder), so the
benches compare builds with metrics on."""

import http.client
import json
import os
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeClient:
    def __init__(self, binary, data_dir, name, env=None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", str(self.port), "--data-dir", data_dir],
            stdout=subprocess.DEVNULL,
            env=dict(os.environ, RUST_LOG="warn", **(env or {})))
        self.pid = self.proc.pid
        self.name = name
        self.next_id = 0
        deadline = time.time() + 60
        while True:
            try:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port)
                self.connection.connect()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def request(self, method, params, headers=None):
        self.next_id += 1
        params = dict(params, _meta={
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"}})
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.connection.request("POST", "/mcp", body, dict({
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": method}, **(headers or {})))
        response = self.connection.getresponse()
        return json.loads(response.read())

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments}, {"mcp-name": tool})

    def close(self):
        self.connection.close()
        self.proc.terminate()
        self.proc.wait()
