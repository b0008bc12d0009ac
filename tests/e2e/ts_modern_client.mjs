// Drives the server with the official TypeScript SDK v2 client
// (@modelcontextprotocol/client), pinned to protocol 2026-07-28:
//   node ts_modern_client.mjs URL SESSION
// A run in logical session SESSION (run_js's `session` argument), then its
// name completed for a person typing it, then log messages: none for a
// request that does not opt in, and a run's console lines from `info` up
// for one whose `_meta` carries io.modelcontextprotocol/logLevel.
// Prints one JSON line; exits non-zero on any failed expectation.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, session] = process.argv.slice(2);
const client = new Client(
  { name: "e2e-typescript-modern", version: "1.0.0" },
  { versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const logs = [];
client.setNotificationHandler("notifications/message", (n) => { logs.push(n.params); });
const code = "console.debug('hidden'); console.log('first'); console.warn('careful'); 42";

const quiet = await client.callTool({ name: "run_js", arguments: { code, session } });
assert.equal(quiet.isError, false, JSON.stringify(quiet));
assert.equal(quiet.structuredContent.result, "42");
assert.deepEqual(logs, [], "no log without the request's logLevel");

const completed = await client.complete({
  ref: { type: "ref/prompt", name: "resume_session" },
  argument: { name: "session", value: session.slice(0, 3) },
});
assert.ok(completed.completion.values.includes(session), JSON.stringify(completed));

const asked = await client.callTool({
  name: "run_js",
  arguments: { code },
  _meta: { "io.modelcontextprotocol/logLevel": "info" },
});
assert.equal(asked.structuredContent.result, "42", JSON.stringify(asked));
assert.deepEqual(
  logs.map((l) => [l.level, l.data, l.logger]),
  [["info", "first", "console"], ["warning", "careful", "console"]],
);
console.log(JSON.stringify({ event: "done", completed: completed.completion.values, logs: logs.length }));
await client.close();
