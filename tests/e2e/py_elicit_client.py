"""A run that asks the person, driven by the Python `mcp` 2.x client with an
`elicitation_callback`, as a host would.

    python py_elicit_client.py URL SESSION [MODE] [FLOW]

MODE is the client's `mode` ("2026-07-28": its multi round-trip driver
answers each InputRequiredResult and retries the call). FLOW:

- `loop` (default): a run_js that asks twice in a loop, each answer a number
  the callback gives (10, then 100), and appends a line to /work/side.txt
  after the loop; prints the outcome and the messages the callback saw.
- `first`: only the first round, by hand (`allow_input_required`): prints
  the InputRequiredResult's keys and requestState, for a test that retries
  it elsewhere (another process, a forged copy, twice).
- `retry`: retries with the requestState and responses of argv[5] (JSON)
  and prints the tool's structured content, or its error text.
- `code`: runs argv[5] (code mode: an upstream's tool that asks for a
  confirmation, relayed as the run's own ask), the callback accepting with
  `{"confirm": true}` (or the first `interpretation` offered); prints the
  outcome and the messages.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp.client import Client

CODE = """
let sum = 0;
for (let i = 1; i <= 2; i++) {
  const answer = await elicit({
    message: `Factor ${i}?`,
    requestedSchema: { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"] },
  });
  if (answer.action !== "accept") throw new Error(`the person chose ${answer.action}`);
  sum += i * answer.content.n;
  console.log(`factor ${i}: ${answer.content.n}`);
}
const fs = require("node:fs");
fs.appendFileSync("/work/side.txt", "done\\n");
({ sum, lines: fs.readFileSync("/work/side.txt", "utf8").split("\\n").filter(Boolean).length })
"""


async def main(url: str, session: str, mode: str, flow: str, extra: list[str]) -> None:
    seen: list[str] = []
    answers = iter([10, 100, 1000])

    async def on_elicit(_context, params):
        seen.append(params.message)
        properties = (getattr(params, "requested_schema", None) or {}).get("properties", {})
        if "confirm" in properties:
            return types.ElicitResult(action="accept", content={"confirm": True})
        if "interpretation" in properties:
            # The everything server's research query: its first choice.
            choice = properties["interpretation"]["oneOf"][0]["const"]
            return types.ElicitResult(action="accept", content={"interpretation": choice})
        return types.ElicitResult(action="accept", content={"n": next(answers)})

    async with Client(url, mode=mode, elicitation_callback=on_elicit) as client:
        arguments = {"code": CODE, "session": session}
        if flow == "code":
            arguments["code"] = extra[0]
            result = await client.call_tool("run_js", arguments)
            assert not result.is_error, result
            print(json.dumps({"outcome": result.structured_content, "asked": seen}))
        elif flow == "loop":
            result = await client.call_tool("run_js", arguments)
            assert not result.is_error, result
            print(json.dumps({"outcome": result.structured_content, "asked": seen}))
        elif flow == "first":
            first = await client.session.call_tool("run_js", arguments, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            requests = {
                key: request.params.message for key, request in (first.input_requests or {}).items()
            }
            print(json.dumps({"requests": requests, "request_state": first.request_state}))
        elif flow == "retry":
            given = json.loads(extra[0])
            responses = {
                key: types.ElicitResult(action="accept", content={"n": n})
                for key, n in given["responses"].items()
            }
            result = await client.session.call_tool(
                "run_js",
                arguments,
                input_responses=responses,
                request_state=given["request_state"],
                allow_input_required=True,
            )
            if isinstance(result, types.InputRequiredResult):
                requests = {k: r.params.message for k, r in (result.input_requests or {}).items()}
                print(json.dumps({"requests": requests, "request_state": result.request_state}))
            elif result.is_error:
                print(json.dumps({"error": result.content[0].text}))
            else:
                print(json.dumps({"outcome": result.structured_content}))
        else:
            raise SystemExit(f"unknown flow {flow!r}")


if __name__ == "__main__":
    args = sys.argv[1:]
    url, session = args[0], args[1]
    mode = args[2] if len(args) > 2 else "2026-07-28"
    flow = args[3] if len(args) > 3 else "loop"
    asyncio.run(main(url, session, mode, flow, args[4:]))
