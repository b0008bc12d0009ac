"""Drives the server with the Python `mcp` 2.x client, which negotiates
protocol 2026-07-28 through `server/discover` and sends no initialize.

    python py_modern_client.py URL SESSION [HEAP]

Lists tools and checks each input and output schema against its JSON
Schema meta-schema (uniqueness included, as the SDK's validator does), then
threads a counter through three heaps (starting from HEAP when given),
naming the logical session with run_js's `session` argument, reads the
session log back with list_session_snapshots, and calls every other listed
tool, so the SDK validates each answer against its output schema; then
completes a session name, and checks that a run's console lines arrive as
log messages only on a client that opts in with `log_level`. Prints one
JSON line at the end; raises (exit 1) on any failed expectation.
"""

import asyncio
import json
import sys

from jsonschema.validators import validator_for
from mcp.client import Client
from mcp.types import PromptReference


def check_schemas(tools) -> None:
    """Each schema must be valid under the meta-schema it names (2020-12 by
    default), which is how the SDK decides whether it can use a tool."""
    for tool in tools:
        for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            if schema is None:
                continue
            try:
                validator_for(schema).check_schema(schema)
            except Exception as error:  # noqa: BLE001 - the reason is the point
                raise AssertionError(f"{tool.name}'s {kind} schema: {error}") from error


async def main(url: str, session: str, heap: str | None) -> None:
    logs = []

    async def on_log(params) -> None:
        logs.append((params.level, params.data))

    # Without log_level the requests do not opt in: no log message arrives.
    async with Client(url, logging_callback=on_log) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        assert "run_js" in names and "list_session_snapshots" in names, names
        check_schemas(tools.tools)
        called = {"run_js"}
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
        execution_id = outcome["execution_id"]
        log = await client.call_tool("list_session_snapshots", {"session": session, "fields": "index,output_heap"})
        assert not log.is_error, log
        called.add("list_session_snapshots")
        entries = log.structured_content["entries"]
        # Every other tool, each answer validated by the SDK against the
        # tool's output schema.
        others = {
            "get_execution": {"execution_id": execution_id},
            "set_heap_tags": {"heap": heap, "tags": {"client": "py-modern"}},
            "get_heap_tags": {"heap": heap},
            "query_heaps_by_tags": {"tags": {"client": "py-modern"}},
            "delete_heap_tags": {"heap": heap, "keys": "client"},
            "list_sessions": {},
        }
        for name, arguments in others.items():
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result)
            assert result.structured_content is not None, (name, result)
            called.add(name)
        assert called == set(names), f"tools listed but not called here: {set(names) - called}"
        assert logs == [], logs
        # A person typing a session's name: it completes to this caller's
        # sessions that start with what was typed.
        completed = await client.complete(
            PromptReference(type="ref/prompt", name="resume_session"), {"name": "session", "value": session[:3]}
        )
        assert session in completed.completion.values, completed
    # With log_level every request carries io.modelcontextprotocol/logLevel:
    # a run's console lines from that level up arrive while it runs.
    async with Client(url, log_level="info", logging_callback=on_log) as client:
        code = "console.debug('hidden'); console.log('first'); console.warn('careful'); 42"
        result = await client.call_tool("run_js", {"code": code})
        assert not result.is_error, result
        assert result.structured_content["result"] == "42", result
        assert logs == [("info", "first"), ("warning", "careful")], logs
        print(
            json.dumps(
                {
                    "event": "done",
                    "protocol": client.protocol_version,
                    "heap": heap,
                    "counter": start + 3,
                    "log": [e["output_heap"] for e in entries],
                    "logs": len(logs),
                    "completed": completed.completion.values,
                }
            )
        )


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
