"""A real upstream MCP server for the code-mode tests (tests/it/code_mode.rs).

    python server.py TOKEN

Under the Python `mcp` 1.x package (.venv) it is FastMCP and speaks the
session era (initialize, Mcp-Session-Id); under `mcp` 2.x (.venv-mcp2) it is
MCPServer, which answers `server/discover` and serves protocol 2026-07-28.
Both listen on loopback over Streamable HTTP at /mcp and refuse (401) every
request without `Authorization: Bearer TOKEN`, so a call that succeeds shows
the header reached the upstream.

Prints {"port": N} once listening, then one JSON line per event:
{"event": "request", "protocol": <MCP-Protocol-Version header>},
{"event": "start" | "end" | "cancelled", "tool": "slow"} around `slow`'s
wait (cancelled: the call was cancelled mid-way; it reports progress every
500 ms of it), and {"event": "asked",
"tool": "delete_rows"} each time `delete_rows` asks the person (its
confirmation: an `elicitation/create` on the call's stream in the session
era, an `InputRequiredResult` on 2026-07-28).
"""

import asyncio
import json
import socket
import sys
from typing import TypedDict

import uvicorn

from pydantic import BaseModel
from typing_extensions import Annotated

try:
    from mcp.server.mcpserver import Context, MCPServer as Server  # mcp 2.x
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.resolve import Elicit, Resolve

    MODERN = True
except ImportError:
    from mcp.server.fastmcp import Context, FastMCP as Server  # mcp 1.x
    from mcp.server.fastmcp.exceptions import ToolError

    MODERN = False

TOKEN = sys.argv[1]


def emit(**event) -> None:
    print(json.dumps(event), flush=True)


server = Server("code-mode-upstream")


class Sum(TypedDict):
    sum: int


@server.tool()
def add(a: int, b: int) -> Sum:
    """Adds two integers. The result is structured."""
    return {"sum": a + b}


@server.tool()
def count(text: str) -> int:
    """Counts the words of text: a primitive the SDK wraps as {"result": n}."""
    return len(text.split())


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Returns its text as plain text content."""
    return text


@server.tool(structured_output=False)
def code(n: int) -> str:
    """Returns a number as plain text (an id, say): it stays text."""
    return str(n).zfill(4)


@server.tool(structured_output=False)
def numbers(n: int) -> str:
    """Returns JSON as text: the integers below n."""
    return json.dumps({"items": list(range(n))})


@server.tool(structured_output=False)
def fail(message: str) -> str:
    """Always fails, with the message (an isError result)."""
    raise ToolError(message)


@server.tool(structured_output=False)
async def slow(ms: int, ctx: Context) -> str:
    """Answers after ms milliseconds. It reports progress every 500 ms."""
    emit(event="start", tool="slow")
    try:
        waited = 0
        while waited < ms:
            step = min(500, ms - waited)
            await asyncio.sleep(step / 1000)
            waited += step
            await ctx.report_progress(waited, ms, f"waited {waited} ms")
    except asyncio.CancelledError:
        emit(event="cancelled", tool="slow")
        raise
    emit(event="end", tool="slow")
    return "done"


class Confirm(BaseModel):
    confirm: bool


def outcome(rows: int, action: str, confirmed: bool) -> str:
    if action == "accept" and confirmed:
        return f"deleted {rows} rows"
    return f"kept {rows} rows ({action})"


if MODERN:
    # 2.x: a resolver asks; on 2026-07-28 the framework answers the call
    # with an InputRequiredResult and resumes on the retry.
    def ask_confirm(rows: int) -> Elicit[Confirm]:
        emit(event="asked", tool="delete_rows")
        return Elicit(f"Delete {rows} rows?", Confirm)

    @server.tool(structured_output=False)
    def delete_rows(rows: int, answer: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
        """Deletes rows once the person confirms."""
        return outcome(rows, "accept", answer.confirm)

else:
    # 1.x: elicitation/create on the call's stream, answered in the call.
    @server.tool(structured_output=False)
    async def delete_rows(rows: int, ctx: Context) -> str:
        """Deletes rows once the person confirms."""
        emit(event="asked", tool="delete_rows")
        answer = await ctx.elicit(f"Delete {rows} rows?", Confirm)
        confirmed = answer.action == "accept" and answer.data.confirm
        return outcome(rows, answer.action, confirmed)


def guarded(app):
    """The app, refusing requests without the bearer token."""

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = dict(scope["headers"])
        if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        emit(event="request", protocol=headers.get(b"mcp-protocol-version", b"").decode())
        return await app(scope, receive, send)

    return asgi


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it; without it each answer waited ~40 ms
    # for the client's delayed ACK (Nagle), which the benchmark measured.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is printed: a client may connect at once,
    # its connection waiting in the backlog until the server accepts.
    sock.listen(128)
    app = guarded(server.streamable_http_app())
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    emit(port=sock.getsockname()[1])
    await uvicorn.Server(config).serve(sockets=[sock])


asyncio.run(main())
