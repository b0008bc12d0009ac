"""Drives the server with the Python `mcp` client.

    python py_client.py URL    initialize, list tools, thread a counter through three heaps

Prints one JSON line at the end; raises (exit 1) on any failed expectation.
"""

import asyncio
import json
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> None:
    http = httpx.AsyncClient(headers={"X-MCP-Session-Id": "py-counter"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.serverInfo.name == "mcp-v8-lambda", init
            tools = await session.list_tools()
            assert "run_js" in [t.name for t in tools.tools], tools
            heap = None
            for i in range(1, 4):
                args = {"code": "globalThis.counter = 1; counter" if i == 1 else "counter += 1; counter"}
                if heap:
                    args["heap"] = heap
                result = await session.call_tool("run_js", args)
                assert not result.isError, result
                outcome = result.structuredContent
                assert outcome["status"] == "completed", outcome
                assert outcome["result"] == str(i), outcome
                heap = outcome["heap"]
            print(json.dumps({"event": "done", "heap": heap, "session": session_id(), "protocol": init.protocolVersion}))


asyncio.run(main(sys.argv[1]))
