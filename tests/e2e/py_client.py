"""Drives the server with the Python `mcp` client.

    python py_client.py URL            initialize, list tools, thread a counter through three heaps, then keep an awaiting run's declarations
    python py_client.py URL continue   against a deployment that continues sessions: calls without heap carry
                                       top-level declarations; heap "" starts fresh; values shown as a REPL does
    python py_client.py BINARY stdio DATA_DIR
                                       `BINARY stdio` started by the stdio client, twice on one data directory:
                                       tools/list, runs continued with "latest", the session log, a resource
                                       read, then the second process continues the session
    python py_client.py URL files      a CSV uploaded with `files`, a PNG chart made and display()ed in the
                                       run, its /work files read back as resources
    python py_client.py URL surface    annotations, heap "latest", progress under a short request
                                       timeout, cancellation, a resource read
    python py_client.py URL tasks      2025-11-25 experimental tasks: run_js as a task, polled with
                                       tasks/get to completion, its result from tasks/result, and a
                                       long run cancelled as a task

Prints one JSON line at the end; raises (exit 1) on any failed expectation.
"""

import asyncio
import base64
import json
import pathlib
import sys
from datetime import timedelta

import anyio
import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CancelledNotification,
    CancelledNotificationParams,
    ClientNotification,
    PromptReference,
    ResourceTemplateReference,
)


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
            # Top-level await keeps the run's declarations for the next.
            awaited = await session.call_tool(
                "run_js", {"code": "const tenfold = await Promise.resolve(counter * 10); let note = 'kept'; tenfold", "heap": heap}
            )
            assert awaited.structuredContent["result"] == "30", awaited
            read = await session.call_tool("run_js", {"code": "tenfold + note.length", "heap": awaited.structuredContent["heap"]})
            assert read.structuredContent["result"] == "34", read
            heap = read.structuredContent["heap"]
            print(json.dumps({"event": "done", "heap": heap, "session": session_id(), "protocol": init.protocolVersion}))


async def files(url: str) -> None:
    http = httpx.AsyncClient(headers={"X-MCP-Session-Id": "py-files"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            code = (pathlib.Path(__file__).parent / "chart.js").read_text()
            csv = "region,amount\nnorth,10\nsouth,25\nnorth,5\neast,12\n"
            result = await session.call_tool("run_js", {"code": code, "files": {"sales.csv": csv}})
            assert not result.isError, result.content[0]
            assert json.loads(result.structuredContent["result"]) == {"east": 12, "north": 15, "south": 25}
            images = [c for c in result.content if c.type == "image"]
            assert len(images) == 1 and images[0].mimeType == "image/png", [c.type for c in result.content]
            png = base64.b64decode(images[0].data)
            assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
            heap = result.structuredContent["heap"]
            summary = await session.read_resource(f"mcp-v8://heaps/{heap}/files/summary.json")
            assert json.loads(summary.contents[0].text) == {"north": 15, "south": 25, "east": 12}, summary
            chart = await session.read_resource(f"mcp-v8://heaps/{heap}/files/chart.png")
            assert chart.contents[0].mimeType == "image/png"
            assert base64.b64decode(chart.contents[0].blob) == png
            print(json.dumps({"event": "done", "heap": heap, "png": len(png)}))


async def continue_sessions(url: str) -> None:
    http = httpx.AsyncClient(headers={"X-MCP-Session-Id": "py-continue"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            description = tools["run_js"].description
            assert description.startswith("State carries over within a logical session"), description
            first = await session.call_tool("run_js", {"code": "const rows = await Promise.resolve([3, 1, 2]); rows.length"})
            assert first.structuredContent["result"] == "3", first
            assert first.structuredContent["warnings"] == [], first
            second = await session.call_tool("run_js", {"code": "rows.sort(); rows"})
            assert second.structuredContent["result"] == "[1,2,3]", second
            assert second.structuredContent["input_heap"] == first.structuredContent["heap"], second
            fresh = await session.call_tool("run_js", {"code": "typeof rows", "heap": ""})
            assert fresh.structuredContent["result"] == '"undefined"', fresh
            shown = await session.call_tool("run_js", {"code": "[NaN, -0, undefined]", "heap": ""})
            assert shown.structuredContent["result"] == "[null,0,null]", shown
            assert json.loads(shown.content[0].text)["result"] == "[ NaN, -0, undefined ]", shown
            print(json.dumps({"event": "done", "heap": second.structuredContent["heap"]}))


async def stdio(binary: str, data_dir: str) -> None:
    params = StdioServerParameters(command=binary, args=["stdio", "--data-dir", data_dir, "--session", "py-stdio"])

    async def call(session, code):
        result = await session.call_tool("run_js", {"code": code, "heap": "latest"})
        assert not result.isError, result
        return result.structuredContent

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        assert "run_js" in tools, tools
        one = await call(session, "globalThis.n = 1; n")
        assert one["result"] == "1", one
        two = await call(session, "n += 1; n")
        assert two["result"] == "2" and two["input_heap"] == one["heap"], two
        log = (await session.call_tool("list_session_snapshots", {"fields": "index,output_heap"})).structuredContent
        assert [e["output_heap"] for e in log["entries"]] == [one["heap"], two["heap"]], log
        read_result = await session.read_resource("mcp-v8://sessions/py-stdio/log")
        assert len(json.loads(read_result.contents[0].text)["entries"]) == 2, read_result
    # A client that restarts its server: a new process on the same data directory.
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        three = await call(session, "n += 1; n")
        assert three["result"] == "3" and three["input_heap"] == two["heap"], three
    print(json.dumps({"event": "done", "heap": three["heap"]}))


def busy(secs: int) -> str:
    return f'console.log("working"); (() => {{ const t = Date.now(); while (Date.now() - t < {secs * 1000}) {{}} }})(); "done"'


async def surface(url: str) -> None:
    http = httpx.AsyncClient(headers={"X-MCP-Session-Id": "py-surface"}, timeout=60)
    logs = []

    async def on_log(params):
        logs.append((params.level, params.data, params.logger))

    async with http, streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert tools["get_heap_tags"].annotations.readOnlyHint is True, tools
            assert tools["run_js"].annotations.readOnlyHint is False, tools

            first = await session.call_tool("run_js", {"code": "globalThis.n = 1; n", "heap": "latest"})
            second = await session.call_tool("run_js", {"code": "n += 1; n", "heap": "latest"})
            assert second.structuredContent["result"] == "2", second
            assert second.structuredContent["input_heap"] == first.structuredContent["heap"]

            # This client resets no timeout on progress: a run that reports
            # progress completes inside a request timeout longer than it, and
            # progress arrives while it runs.
            seen = []

            async def on_progress(progress, total, message):
                seen.append((progress, message))

            long = await session.call_tool(
                "run_js",
                {"code": busy(8), "heap": "latest"},
                read_timeout_seconds=timedelta(seconds=30),
                progress_callback=on_progress,
            )
            assert not long.isError, long
            assert len(seen) >= 2 and "console line" in seen[0][1], seen

            # notifications/cancelled for a running call: it ends cancelled,
            # stores nothing, and the log keeps what it had.
            before = await session.call_tool("list_session_snapshots", {"fields": "index"})
            outcome = {}

            async def forever():
                outcome["result"] = await session.call_tool(
                    "run_js", {"code": "for (;;) {}", "heap": "latest", "execution_timeout_secs": 120}
                )

            async with anyio.create_task_group() as group:
                group.start_soon(forever)
                await anyio.sleep(1)
                request_id = session._request_id - 1
                await session.send_notification(
                    ClientNotification(
                        CancelledNotification(
                            method="notifications/cancelled",
                            params=CancelledNotificationParams(requestId=request_id, reason="gave up"),
                        )
                    )
                )
            cancelled = outcome["result"].structuredContent
            assert cancelled["status"] == "cancelled", cancelled
            assert cancelled["heap"] is None, cancelled
            after = await session.call_tool("list_session_snapshots", {"fields": "index"})
            assert after.structuredContent == before.structuredContent, after

            read_result = await session.read_resource("mcp-v8://sessions/py-surface/log")
            log = json.loads(read_result.contents[0].text)
            assert log["session"] == "py-surface", log
            assert log["entries"][-1]["output_heap"] == long.structuredContent["heap"], log

            # A person typing a session's name in a host: the prompt's
            # argument and the log template's variable complete to the
            # caller's sessions that start with what was typed.
            by_prompt = await session.complete(
                PromptReference(type="ref/prompt", name="resume_session"),
                {"name": "session", "value": "py-sur"},
            )
            assert "py-surface" in by_prompt.completion.values, by_prompt
            assert all(v.startswith("py-sur") for v in by_prompt.completion.values), by_prompt
            by_template = await session.complete(
                ResourceTemplateReference(type="ref/resource", uri="mcp-v8://sessions/{name}/log"),
                {"name": "name", "value": "py-"},
            )
            assert "py-surface" in by_template.completion.values, by_template
            nobody = await session.complete(
                PromptReference(type="ref/prompt", name="resume_session"),
                {"name": "session", "value": "zz-nobody-"},
            )
            assert nobody.completion.values == [], nobody

            # Log messages: none before the session asks; after
            # logging/setLevel("info") a run's console lines from info up
            # arrive as notifications/message while it runs.
            assert logs == [], logs
            await session.set_logging_level("info")
            logged = await session.call_tool(
                "run_js", {"code": "console.debug('hidden'); console.log('first'); console.warn('careful'); 42"}
            )
            assert logged.structuredContent["result"] == "42", logged
            assert logs == [("info", "first", "console"), ("warning", "careful", "console")], logs
            print(
                json.dumps(
                    {
                        "event": "done",
                        "progress": len(seen),
                        "completed": by_prompt.completion.values,
                        "logs": len(logs),
                    }
                )
            )


async def tasks(url: str) -> None:
    import warnings

    from mcp.types import CallToolResult

    # The SDK marks these 2025-11-25 methods deprecated (the extension replaces them).
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    http = httpx.AsyncClient(headers={"X-MCP-Session-Id": "py-tasks"}, timeout=30)
    async with http, streamable_http_client(url, http_client=http) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            run_js = next(t for t in tools.tools if t.name == "run_js")
            assert run_js.execution is not None and run_js.execution.taskSupport == "optional", run_js
            created = await session.experimental.call_tool_as_task(
                "run_js",
                {"code": "await new Promise(r => setTimeout(r, 1500)); globalThis.n = 6; n * 7"},
                ttl=120000,
            )
            task_id = created.task.taskId
            assert created.task.status == "working", created
            statuses = []
            for _ in range(300):
                status = await session.experimental.get_task(task_id)
                statuses.append(status.status)
                if status.status in ("completed", "failed", "cancelled"):
                    break
                await anyio.sleep(0.1)
            assert statuses[-1] == "completed", statuses
            result = await session.experimental.get_task_result(task_id, CallToolResult)
            assert result.isError is False, result
            assert result.structuredContent["result"] == "42", result
            heap = result.structuredContent["heap"]
            long = await session.experimental.call_tool_as_task(
                "run_js", {"code": "await new Promise(r => setTimeout(r, 60000)); 1"}, ttl=60000
            )
            cancelled = await session.experimental.cancel_task(long.task.taskId)
            assert cancelled.status == "cancelled", cancelled
            print(json.dumps({"event": "done", "heap": heap, "polled": len(statuses)}))


MODES = {
    "counter": lambda: main(sys.argv[1]),
    "files": lambda: files(sys.argv[1]),
    "surface": lambda: surface(sys.argv[1]),
    "stdio": lambda: stdio(sys.argv[1], sys.argv[3]),
    "continue": lambda: continue_sessions(sys.argv[1]),
    "tasks": lambda: tasks(sys.argv[1]),
}
mode = sys.argv[2] if len(sys.argv) > 2 else None
if mode not in MODES:
    # A removed or misspelt mode must fail its test, not run another flow.
    sys.exit(f"py_client.py: unknown mode {mode!r}; the modes are: {', '.join(MODES)}")
asyncio.run(MODES[mode]())
# The last line says which flow ran, for the test to check.
print(json.dumps({"event": "exit", "mode": mode}))
