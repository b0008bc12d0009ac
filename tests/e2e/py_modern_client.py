"""Drives the server with the Python `mcp` 2.x client, which negotiates
protocol 2026-07-28 through `server/discover` and sends no initialize.

    python py_modern_client.py URL SESSION [HEAP]

Lists tools, then threads a counter through three heaps (starting from HEAP
when given), naming the logical session with run_js's `session` argument, and
reads the session log back with list_session_snapshots. Prints one JSON line
at the end; raises (exit 1) on any failed expectation.
"""

import asyncio
import json
import sys

from mcp.client import Client


async def main(url: str, session: str, heap: str | None) -> None:
    async with Client(url) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        assert "run_js" in names and "list_session_snapshots" in names, names
        start = 0
        if heap:
            result = await client.call_tool("run_js", {"code": "counter", "heap": heap})
            assert not result.is_error, result
            start = int(result.structured_content["result"])
        for i in range(1, 4):
            code = "globalThis.counter = 1; counter" if heap is None and i == 1 else "counter += 1; counter"
            args = {"code": code, "session": session}
            if heap:
                args["heap"] = heap
            result = await client.call_tool("run_js", args)
            assert not result.is_error, result
            outcome = result.structured_content
            assert outcome["status"] == "completed", outcome
            assert outcome["result"] == str(start + i), outcome
            heap = outcome["heap"]
        log = await client.call_tool("list_session_snapshots", {"session": session, "fields": "index,output_heap"})
        assert not log.is_error, log
        entries = log.structured_content["entries"]
        print(
            json.dumps(
                {
                    "event": "done",
                    "protocol": client.protocol_version,
                    "heap": heap,
                    "counter": start + 3,
                    "log": [e["output_heap"] for e in entries],
                }
            )
        )


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
