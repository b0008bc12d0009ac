// Drives the server with the official TypeScript SDK client.
//   node ts_client.mjs URL counter   initialize, list tools, thread a counter through three heaps, then keep an awaiting run's declarations
//   node ts_client.mjs URL replay    the replay proof; the harness restarts the server when told
//   node ts_client.mjs URL tools     tags, tag queries, the session log and get_execution across a restart: every
//                                    listed tool called, its answer checked against its output schema
//   node ts_client.mjs URL continue  against a deployment that continues sessions: calls without heap carry
//                                    top-level declarations, a fresh start is asked for with heap "",
//                                    and the text the model reads shows values as a REPL does
//   node ts_client.mjs URL files       a CSV uploaded with `files`, a PNG chart made and display()ed in the run,
//                                    its /work files read back as resources
//   node ts_client.mjs BINARY stdio DATA_DIR
//                                    `BINARY stdio` started by the SDK's stdio transport, twice on one data
//                                    directory: tools/list, runs continued with "latest", the session log and
//                                    a resource read, then the second process continues the session
//   node ts_client.mjs URL codemode  against a server whose MCP_V8_MCP_SERVERS names "upstream": its tools in
//                                    run_js's description and declarations, then a loop of 10 upstream calls
//                                    in one run_js, its result kept in the heap
//   node ts_client.mjs URL surface [cancel]
//                                    annotations, heap "latest", progress under a 10 s request timeout,
//                                    a resource read, completions, a run's console lines as log messages
//                                    after logging/setLevel; with "cancel", an aborted call stops its run
//   node ts_client.mjs URL calls CALLS_JSON|@FILE
//   node ts_client.mjs BINARY calls CALLS_JSON|@FILE DATA_DIR [ENV_JSON]
//                                    each run_js arguments object of CALLS_JSON as a newcomer's call, over HTTP
//                                    or (given a binary and a data directory) stdio; prints every answer as the
//                                    model reads it (isError, the text, structuredContent): the Rust test judges
//   node ts_client.mjs URL tasks     2025-11-25 experimental tasks: run_js listed with taskSupport, a run
//                                    as a task through callToolStream (created, status, result with its heap),
//                                    tasks/get, tasks/list and tasks/result, then a long run cancelled as a task
//   node ts_client.mjs URL budget    three answers over the answer budget (3 MB of output, a 2 MB string,
//                                    200k rows): each within it, structuredContent valid against run_js's
//                                    output schema (the SDK checks), the link in the answer read back whole
//                                    and page by page with readResource (lines; JSON arrays of whole rows)
//   node ts_client.mjs URL asks
//   node ts_client.mjs BINARY asks DATA_DIR
//                                    2025-11-25, the client declaring form elicitation: a run_js that asks twice
//                                    in a loop, each elicitation/create answered by the client's handler (10, then
//                                    100), over HTTP or (given a binary and a data directory) stdio
// Prints one JSON line per event; exits non-zero on any failed expectation.
import assert from "node:assert/strict";
import fs from "node:fs";
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, mode] = process.argv.slice(2);
const say = (event) => console.log(JSON.stringify(event));

async function connect(logicalSession) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { "X-MCP-Session-Id": logicalSession } },
  });
  const client = new Client({ name: "e2e-typescript", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function run(client, code, heap) {
  const result = await client.callTool({ name: "run_js", arguments: heap ? { code, heap } : { code } });
  assert.equal(result.isError, false, JSON.stringify(result));
  const outcome = result.structuredContent;
  assert.equal(outcome.status, "completed");
  assert.match(outcome.heap, /^[0-9a-f]{64}$/);
  return outcome;
}

async function counter() {
  const { client, transport } = await connect("ts-counter");
  assert.equal(client.getServerVersion().name, "mcp-v8-lambda");
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === "run_js"), JSON.stringify(tools));
  let heap;
  for (let i = 1; i <= 3; i++) {
    const outcome = await run(client, i === 1 ? "globalThis.counter = 1; counter" : "counter += 1; counter", heap);
    assert.equal(outcome.result, String(i));
    heap = outcome.heap;
  }
  // Top-level await keeps the run's declarations for the next (REPL semantics).
  const awaited = await run(client, "const tenfold = await Promise.resolve(counter * 10); let note = 'kept'; tenfold", heap);
  assert.equal(awaited.result, "30");
  const read = await run(client, "tenfold + note.length", awaited.heap);
  assert.equal(read.result, "34");
  heap = read.heap;
  say({ event: "done", heap, session: transport.sessionId, protocol: transport.protocolVersion });
  await transport.close();
}

// A package the operator added with `packages add`: named in run_js's
// description, imported, and kept in the heap for the next call.
async function packages() {
  const { client, transport } = await connect("ts-packages");
  const { tools } = await client.listTools();
  const runJs = tools.find((t) => t.name === "run_js");
  assert.match(runJs.description, /lodash@4\.17\.21/);
  const first = await run(client, "import _ from 'lodash';\nimport { chunk } from 'lodash';\nchunk(_.range(5), 2).length");
  assert.equal(first.result, "3");
  const second = await run(client, "_.sum(_.map([1, 2, 3], (x) => x * 2))", first.heap);
  assert.equal(second.result, "12");
  const missing = await client.callTool({ name: "run_js", arguments: { code: "import { z } from 'zod'" } });
  assert.equal(missing.isError, true);
  assert.match(missing.structuredContent.error.message, /Installed packages: lodash@4\.17\.21.*packages add zod/);
  say({ event: "done", heap: second.heap });
  await transport.close();
}

// Files in and out: a CSV uploaded with `files`, a chart made in the run
// and shown with display(), the run's files read back as resources.
async function files() {
  const { client, transport } = await connect("ts-files");
  const code = fs.readFileSync(new URL("./chart.js", import.meta.url), "utf8");
  const csv = "region,amount\nnorth,10\nsouth,25\nnorth,5\neast,12\n";
  const result = await client.callTool({ name: "run_js", arguments: { code, files: { "sales.csv": csv } } });
  assert.equal(result.isError, false, JSON.stringify(result.content[0]));
  assert.deepEqual(JSON.parse(result.structuredContent.result), { east: 12, north: 15, south: 25 });
  const image = result.content.find((c) => c.type === "image");
  assert.ok(image, JSON.stringify(result.content.map((c) => c.type)));
  assert.equal(image.mimeType, "image/png");
  const png = Buffer.from(image.data, "base64");
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const heap = result.structuredContent.heap;
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.ok(resourceTemplates.some((t) => t.uriTemplate === "mcp-v8://heaps/{heap}/files/{+path}"));
  const summary = await client.readResource({ uri: `mcp-v8://heaps/${heap}/files/summary.json` });
  assert.deepEqual(JSON.parse(summary.contents[0].text), { north: 15, south: 25, east: 12 });
  const chart = await client.readResource({ uri: `mcp-v8://heaps/${heap}/files/chart.png` });
  assert.equal(chart.contents[0].mimeType, "image/png");
  assert.deepEqual(Buffer.from(chart.contents[0].blob, "base64"), png);
  const listing = await client.readResource({ uri: `mcp-v8://heaps/${heap}/files/` });
  const names = JSON.parse(listing.contents[0].text).entries.map((e) => e.name).sort();
  assert.deepEqual(names, ["chart.png", "sales.csv", "summary.json"]);
  say({ event: "done", heap, png: png.length });
  await transport.close();
}

async function replay() {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const { client, transport } = await connect("ts-replay");
  const first = await run(client, "globalThis.counter = 1; counter");
  const session = transport.sessionId;
  say({ event: "restart", session });
  const reply = await lines.next();
  assert.equal(reply.value, "continue");

  // Same client, same transport session, a new server process: no re-initialize.
  const second = await run(client, "counter += 1; counter", first.heap);
  assert.equal(second.result, "2");
  assert.equal(transport.sessionId, session);
  say({ event: "continued", session });

  // The session ends on the server (out of band, as expiry would end it).
  const deleted = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": session } });
  assert.equal(deleted.status, 204);
  await assert.rejects(run(client, "counter", second.heap), (e) => e instanceof StreamableHTTPError && e.code === 404);
  say({ event: "not_found", session });

  // Re-initializing gives a new transport session; heaps and the log go on.
  const again = await connect("ts-replay");
  assert.notEqual(again.transport.sessionId, session);
  const third = await run(again.client, "counter += 1; counter", second.heap);
  assert.equal(third.result, "3");
  say({ event: "done", session: again.transport.sessionId, heap: third.heap });
  await again.transport.close();
}

async function structured(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError, false, JSON.stringify(result));
  return result.structuredContent;
}

async function tools() {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const { client, transport } = await connect("ts-tools");
  const first = await run(client, "globalThis.model = { version: 2 }; model.version");
  const second = await run(client, "model.version += 1; model.version", first.heap);
  assert.deepEqual(await structured(client, "set_heap_tags", { heap: second.heap, tags: { stage: "trained", v: "3" } }), { ok: true });
  const found = await structured(client, "query_heaps_by_tags", { tags: { stage: "trained" } });
  assert.deepEqual(found.results, [{ heap: second.heap, tags: { stage: "trained", v: "3" } }]);
  const log = await structured(client, "list_session_snapshots", { fields: "index,output_heap" });
  assert.deepEqual(log.entries, [
    { index: 0, output_heap: first.heap },
    { index: 1, output_heap: second.heap },
  ]);
  say({ event: "restart", execution_id: second.execution_id });
  assert.equal((await lines.next()).value, "continue");

  const execution = await structured(client, "get_execution", { execution_id: second.execution_id });
  assert.equal(execution.heap, second.heap);
  assert.equal(execution.result, "3");
  assert.ok(execution.started_at && execution.completed_at);
  const sessions = await structured(client, "list_sessions", {});
  assert.ok(sessions.sessions.includes("ts-tools"));
  assert.deepEqual((await structured(client, "get_heap_tags", { heap: second.heap })).tags, { stage: "trained", v: "3" });
  await structured(client, "delete_heap_tags", { heap: second.heap, keys: "v" });
  assert.deepEqual((await structured(client, "get_heap_tags", { heap: second.heap })).tags, { stage: "trained" });
  // Every listed tool was called here, each answer checked by the SDK
  // against the tool's output schema.
  const called = ["run_js", "set_heap_tags", "query_heaps_by_tags", "list_session_snapshots", "get_execution",
    "list_sessions", "get_heap_tags", "delete_heap_tags"];
  const { tools: listed } = await client.listTools();
  assert.deepEqual(listed.map((t) => t.name).sort(), called.sort());
  say({ event: "done", session: transport.sessionId });
  await transport.close();
}

// Code that keeps its isolate busy for `secs` seconds after one console line.
const busy = (secs) =>
  `console.log("working"); (() => { const t = Date.now(); while (Date.now() - t < ${secs * 1000}) {} })(); "done"`;

async function surface() {
  const withCancel = process.argv[4] === "cancel";
  const { client, transport } = await connect("ts-surface");
  const { tools } = await client.listTools();
  const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
  assert.equal(hints.run_js.readOnlyHint, false);
  assert.equal(hints.list_sessions.readOnlyHint, true);
  assert.equal(hints.set_heap_tags.idempotentHint, true);
  assert.ok(tools.every((t) => t.title), JSON.stringify(tools));

  // Continue without copying keys: "latest" is the session's last heap.
  // Where every latest run answers before its save (Lambda), the answer
  // says so instead of carrying the key, which the next run names.
  const first = await structured(client, "run_js", { code: "globalThis.n = 1; n", heap: "latest" });
  assert.equal(first.result, "1");
  assert.ok(first.heap || first.heap_saving, JSON.stringify(first));
  const second = await structured(client, "run_js", { code: "n += 1; n", heap: "latest" });
  assert.equal(second.result, "2");
  // A run that continued a heap still being stored (the instance that
  // holds it live continues at once) answers before that heap's key
  // exists: input_heap null, and heap_saving for its own; its log entry
  // names the key once stored (checked below).
  if (first.heap) assert.equal(second.input_heap, first.heap);
  else assert.ok(second.input_heap || second.heap_saving, JSON.stringify(second));
  say({ event: "latest", heap: second.heap ?? null });

  // A 14 s run under a 10 s request timeout that progress (every 3 s)
  // resets: its isolate busy all along, so progress comes from the server.
  let progress = 0;
  const long = await client.callTool(
    { name: "run_js", arguments: { code: busy(14), heap: "latest" } },
    undefined,
    { timeout: 10_000, resetTimeoutOnProgress: true, onprogress: () => { progress += 1; } },
  );
  assert.equal(long.isError, false, JSON.stringify(long));
  assert.equal(long.structuredContent.result, '"done"');
  assert.ok(progress >= 3, `progress notifications: ${progress}`);
  say({ event: "progress", progress });

  // Without a progress token the same timeout ends the call (a run that
  // waits on a timer: what ends the call is the missing progress, not the
  // isolate being busy, and it burns no core the other tests share).
  const waits = (secs) => `await new Promise((r) => setTimeout(r, ${secs * 1000})); "done"`;
  await assert.rejects(
    client.callTool({ name: "run_js", arguments: { code: waits(15) } }, undefined, { timeout: 10_000 }),
    (e) => /timed out|timeout/i.test(String(e)),
  );
  say({ event: "timed_out" });

  // The session log as a resource.
  const uri = "mcp-v8://sessions/ts-surface/log";
  const read = await client.readResource({ uri });
  const log = JSON.parse(read.contents[0].text);
  assert.equal(log.session, "ts-surface");
  const logged = (code) => log.entries.find((e) => e.code === code);
  assert.ok(logged("n += 1; n")?.input_heap, read.contents[0].text);
  assert.equal(logged("n += 1; n").input_heap, logged("globalThis.n = 1; n").output_heap, read.contents[0].text);
  // A person typing a session's name in a host: the prompt's argument and
  // the log template's variable complete to the caller's sessions that
  // start with what was typed.
  const byPrompt = await client.complete({
    ref: { type: "ref/prompt", name: "resume_session" },
    argument: { name: "session", value: "ts-sur" },
  });
  assert.ok(byPrompt.completion.values.includes("ts-surface"), JSON.stringify(byPrompt));
  assert.ok(byPrompt.completion.values.every((v) => v.startsWith("ts-sur")), JSON.stringify(byPrompt));
  const byTemplate = await client.complete({
    ref: { type: "ref/resource", uri: "mcp-v8://sessions/{name}/log" },
    argument: { name: "name", value: "ts-" },
  });
  assert.ok(byTemplate.completion.values.includes("ts-surface"), JSON.stringify(byTemplate));
  const nobody = await client.complete({
    ref: { type: "ref/prompt", name: "resume_session" },
    argument: { name: "session", value: "zz-nobody-" },
  });
  assert.deepEqual(nobody.completion.values, []);
  say({ event: "resource", entries: log.entries.length, completed: byPrompt.completion.values });

  // Log messages: after logging/setLevel("info"), a run's console lines
  // from info up arrive as notifications/message while it runs; a level
  // the spec does not name is refused.
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  await client.setLoggingLevel("info");
  const printed = await structured(client, "run_js", {
    code: "console.debug('hidden'); console.log('first'); console.warn('careful'); 42",
    heap: "latest",
  });
  assert.equal(printed.result, "42");
  assert.deepEqual(logs.map((l) => [l.level, l.data, l.logger]), [["info", "first", "console"], ["warning", "careful", "console"]]);
  await assert.rejects(client.setLoggingLevel("verbose"), /level must be one of/);
  say({ event: "logging", logs: logs.length });

  if (withCancel) {
    const before = (await structured(client, "list_session_snapshots", { fields: "index" })).entries.length;
    const abort = new AbortController();
    const started = client.callTool(
      { name: "run_js", arguments: { code: "for (;;) {}", heap: "latest", execution_timeout_secs: 120 } },
      undefined,
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort("the user gave up"), 1_000);
    await assert.rejects(started);
    // The run was stopped: a snapshot run, which waits for the process's
    // snapshot lock, completes long before the stopped one's 120 s.
    const after = await structured(client, "run_js", { code: "n", heap: "latest" });
    assert.equal(after.result, "2");
    const entries = (await structured(client, "list_session_snapshots", { fields: "index" })).entries.length;
    assert.equal(entries, before + 1, "the cancelled run left no entry");
    say({ event: "cancelled" });
  }
  say({ event: "done" });
  await transport.close();
}

async function continueSessions() {
  const { client, transport } = await connect("ts-continue");
  const { tools } = await client.listTools();
  const runJs = tools.find((t) => t.name === "run_js");
  assert.match(runJs.description, /^State carries over within a logical session/, runJs.description);
  const call = async (args) => {
    const result = await client.callTool({ name: "run_js", arguments: args });
    assert.equal(result.isError, false, JSON.stringify(result));
    return result;
  };
  const first = (await call({ code: "const rows = await Promise.resolve([3, 1, 2]); rows.length" })).structuredContent;
  assert.equal(first.result, "3");
  assert.deepEqual(first.warnings, [], JSON.stringify(first));
  const second = (await call({ code: "rows.sort(); rows" })).structuredContent;
  assert.equal(second.result, "[1,2,3]");
  assert.equal(second.input_heap, first.heap);
  const fresh = (await call({ code: "typeof rows", heap: "" })).structuredContent;
  assert.equal(fresh.result, '"undefined"');
  const shown = await call({ code: "[NaN, -0, undefined]", heap: "" });
  assert.equal(shown.structuredContent.result, "[null,0,null]");
  assert.equal(JSON.parse(shown.content[0].text).result, "[ NaN, -0, undefined ]");
  say({ event: "done", heap: second.heap });
  await transport.close();
}

async function stdio() {
  const dataDir = process.argv[4];
  const start = async () => {
    const transport = new StdioClientTransport({
      command: url,
      args: ["stdio", "--data-dir", dataDir, "--session", "ts-stdio"],
      stderr: "inherit",
    });
    const client = new Client({ name: "e2e-typescript-stdio", version: "1.0.0" });
    await client.connect(transport);
    return { client, transport };
  };
  const first = await start();
  const { tools } = await first.client.listTools();
  assert.ok(tools.some((t) => t.name === "run_js"), JSON.stringify(tools));
  const one = await run(first.client, "globalThis.n = 1; n", "latest");
  assert.equal(one.result, "1");
  const two = await run(first.client, "n += 1; n", "latest");
  assert.equal(two.result, "2");
  assert.equal(two.input_heap, one.heap);
  const log = await structured(first.client, "list_session_snapshots", { fields: "index,output_heap" });
  assert.deepEqual(log.entries.map((e) => e.output_heap), [one.heap, two.heap]);
  const read = await first.client.readResource({ uri: "mcp-v8://sessions/ts-stdio/log" });
  assert.equal(JSON.parse(read.contents[0].text).entries.length, 2, read.contents[0].text);
  await first.client.close();
  // A client that restarts its server: a new process on the same data directory.
  const second = await start();
  const three = await run(second.client, "n += 1; n", "latest");
  assert.equal(three.result, "3");
  assert.equal(three.input_heap, two.heap);
  await second.client.close();
  say({ event: "done", heap: three.heap });
}

// Code mode: the model reads what it can call, then one run makes ten
// upstream calls and returns only their sum.
async function codemode() {
  const { client, transport } = await connect("ts-codemode");
  const { tools } = await client.listTools();
  const runJs = tools.find((t) => t.name === "run_js");
  assert.match(runJs.description, /\[upstream\] add\(a, b\): Adds two integers;/);
  const { resources } = await client.listResources();
  const uri = "mcp-v8://mcp-servers/upstream/tools.d.ts";
  assert.ok(resources.some((r) => r.uri === uri), JSON.stringify(resources));
  const declared = await client.readResource({ uri });
  assert.match(declared.contents[0].text, /add\(args: \{/);
  const loop = await run(
    client,
    `const sums = [];
for (let i = 0; i < 10; i++) sums.push((await mcp.upstream.add({ a: i, b: 1 })).sum);
globalThis.sums = sums;
sums.reduce((x, y) => x + y, 0)`,
  );
  assert.equal(loop.result, "55");
  assert.deepEqual(loop.mcp_calls, { count: 10 });
  const kept = await run(client, "sums.length + ':' + sums.at(-1)", loop.heap);
  assert.equal(kept.result, '"10:10"');
  say({ event: "done", heap: kept.heap, calls: loop.mcp_calls.count });
  await transport.close();
}

// A newcomer's calls, answered as the model reads them; the test judges.
async function calls() {
  // `@file`: the calls are in a file (a 1 MB call is past argv's limit).
  const given = process.argv[4];
  const list = JSON.parse(given.startsWith("@") ? fs.readFileSync(given.slice(1), "utf8") : given);
  const dataDir = process.argv[5];
  // The server's own variables (MCP_V8_*), beside what the SDK passes on.
  const env = { ...getDefaultEnvironment(), ...JSON.parse(process.argv[6] ?? "{}") };
  let client, transport;
  if (dataDir) {
    transport = new StdioClientTransport({ command: url, args: ["stdio", "--data-dir", dataDir], env, stderr: "inherit" });
    client = new Client({ name: "e2e-typescript-calls", version: "1.0.0" });
    await client.connect(transport);
  } else {
    ({ client, transport } = await connect("ts-calls"));
  }
  const answers = [];
  for (const args of list) {
    try {
      const result = await client.callTool({ name: "run_js", arguments: args }, undefined, { timeout: 120000 });
      answers.push({ isError: result.isError ?? false, text: result.content?.[0]?.text, structured: result.structuredContent });
    } catch (error) {
      // A request the server refused: what the SDK tells the caller.
      answers.push({ thrown: { code: error.code ?? null, message: String(error.message) } });
    }
  }
  say({ event: "done", answers });
  await transport.close();
}

async function task() {
  const { client, transport } = await connect("ts-tasks");
  const { tools } = await client.listTools();
  const runJs = tools.find((t) => t.name === "run_js");
  assert.equal(runJs.execution?.taskSupport, "optional", JSON.stringify(runJs));
  // A run as a task, followed as the SDK follows one: created, polled, result.
  const seen = [];
  let taskId;
  let result;
  const stream = client.experimental.tasks.callToolStream(
    { name: "run_js", arguments: { code: "await new Promise(r => setTimeout(r, 1500)); globalThis.n = 41; n + 1" } },
    CallToolResultSchema,
    { task: { ttl: 120000 } },
  );
  for await (const message of stream) {
    seen.push(message.type);
    if (message.type === "taskCreated") taskId = message.task.taskId;
    if (message.type === "result") result = message.result;
    if (message.type === "error") throw message.error;
  }
  assert.ok(taskId, `no task was created: ${JSON.stringify(seen)}`);
  assert.equal(seen[0], "taskCreated");
  assert.equal(seen.at(-1), "result");
  assert.equal(result.isError, false, JSON.stringify(result));
  assert.equal(result.structuredContent.result, "42");
  assert.match(result.structuredContent.heap, /^[0-9a-f]{64}$/);
  const task = await client.experimental.tasks.getTask(taskId);
  assert.equal(task.status, "completed");
  const listed = [];
  let cursor;
  do {
    const page = await client.experimental.tasks.listTasks(cursor);
    listed.push(...page.tasks.map((t) => t.taskId));
    cursor = page.nextCursor;
  } while (cursor);
  assert.ok(listed.includes(taskId), JSON.stringify(listed));
  const again = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  assert.equal(again.structuredContent.heap, result.structuredContent.heap);
  say({ event: "task_completed", taskId, heap: result.structuredContent.heap, messages: seen });
  return { client, transport };
}

async function tasks() {
  const { client, transport } = await task();
  // A long run started as a task and cancelled: the task says cancelled,
  // and the run's heap never reaches the session log.
  const created = await client.request(
    { method: "tools/call", params: { name: "run_js", arguments: { code: "await new Promise(r => setTimeout(r, 60000)); 1" }, task: { ttl: 60000 } } },
    CreateTaskResultSchema,
  );
  const longId = created.task.taskId;
  assert.equal(created.task.status, "working");
  const cancelled = await client.experimental.tasks.cancelTask(longId);
  assert.equal(cancelled.status, "cancelled");
  assert.equal((await client.experimental.tasks.getTask(longId)).status, "cancelled");
  say({ event: "task_cancelled", taskId: longId });
  await transport.terminateSession();
  await client.close();
}

// `task` is the first half of `tasks`: a run made a task, followed to its result.
// Answers over the answer budget (32 KiB here) link the rest.
async function budget() {
  const BUDGET = 32 * 1024;
  const { client, transport } = await connect("ts-budget");
  await client.listTools(); // the SDK validates structuredContent against the listed schema
  const cases = {
    output: "for (let i = 0; i < 300000; i++) console.log(`line ${i}`); 'logged'",
    string: "'ab'.repeat(1 << 20)",
    rows: "Array.from({ length: 200000 }, (_, i) => ({ id: i, name: `row ${i}`, value: i * 2 }))",
  };
  const seen = {};
  for (const [name, code] of Object.entries(cases)) {
    const answer = await client.callTool({ name: "run_js", arguments: { code } });
    assert.equal(answer.isError, false, name);
    const text = answer.content[0].text;
    const outcome = answer.structuredContent;
    assert.ok(text.length <= BUDGET, `${name}: text of ${text.length}`);
    assert.ok(JSON.stringify(outcome).length <= BUDGET, `${name}: structuredContent of ${JSON.stringify(outcome).length}`);
    JSON.parse(text);
    const note = outcome.warnings.find((w) => w.includes("mcp-v8://executions/"));
    assert.ok(note, `${name}: ${JSON.stringify(outcome.warnings)}`);
    const uri = note.match(/mcp-v8:\/\/executions\/[0-9a-f-]+\/(output|result)/)[0];
    const whole = (await client.readResource({ uri })).contents[0].text;
    assert.ok(whole.length > BUDGET, `${name}: the whole is ${whole.length}`);
    assert.ok(!whole.includes("truncated"), `${name}: the link opens the whole`);
    // Page by page: every page within the budget and whole (lines, or a
    // JSON array of whole rows), together the whole.
    const pages = [];
    for (let n = 1; ; n++) {
      const read = (await client.readResource({ uri: `${uri}?page=${n}` })).contents[0];
      const place = read._meta["mcp-v8-lambda/page"];
      assert.equal(place.page, n, name);
      assert.ok(read.text.length <= BUDGET, `${name}: page ${n} of ${read.text.length}`);
      pages.push(read.text);
      if (n === place.pages) break;
    }
    assert.ok(pages.length > 1, name);
    if (name === "output") {
      assert.equal(pages.join(""), whole, "the output's pages are its lines");
      assert.ok(whole.includes("\nline 15000\n"), "line 15000");
      assert.ok(whole.trimEnd().endsWith("line 299999"), whole.slice(-100));
      assert.ok(outcome.output.trimEnd().endsWith("line 299999"), outcome.output.slice(-100));
      assert.equal(outcome.result, '"logged"');
    } else if (name === "string") {
      const value = JSON.parse(whole);
      assert.equal(pages.join(""), value, "the string's pages are its text");
      assert.equal(value.length, 2 << 20);
      assert.ok(pages.at(-1).endsWith("ab"));
    } else {
      const rows = pages.flatMap((page) => JSON.parse(page));
      assert.equal(rows.length, 200000);
      assert.equal(JSON.parse(pages.at(-1)).at(-1).id, 199999, "the last page holds the last row");
      assert.deepEqual(rows[123456], { id: 123456, name: "row 123456", value: 246912 });
    }
    if (name !== "output") {
      assert.equal(typeof outcome.result, "object", `${name}: ${JSON.stringify(outcome.result).slice(0, 200)}`);
      assert.equal(outcome.result.uri, uri);
      assert.equal(outcome.result.type, name === "string" ? "string" : "array");
      assert.equal(outcome.result.bytes, whole.length, `${name}: the stand-in's bytes`);
      assert.equal(outcome.result.length, name === "string" ? 2 << 20 : 200000, `${name}: its length`);
      assert.ok(whole.startsWith(outcome.result.preview), name);
    }
    const pagesSaid = note.match(/in (\d+) pages/);
    assert.ok(pagesSaid && Number(pagesSaid[1]) === pages.length, `${name}: the note names ${pages.length} pages: ${note}`);
    seen[name] = { text: text.length, structured: JSON.stringify(outcome).length, whole: whole.length, pages: pages.length };
  }
  await transport.close();
  say({ event: "done", ...seen });
}

// A run that asks the person, in the session era: the server sends each
// elicitation/create on the call's stream and the handler answers it.
async function asks() {
  const dataDir = process.argv[4];
  const transport = dataDir
    ? new StdioClientTransport({ command: url, args: ["stdio", "--data-dir", dataDir], stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(url));
  const client = new Client(
    { name: "e2e-typescript-asks", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  const seen = [];
  const answers = [10, 100];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.push(request.params.message);
    return { action: "accept", content: { n: answers[seen.length - 1] } };
  });
  await client.connect(transport);
  const code = `
    let sum = 0;
    for (let i = 1; i <= 2; i++) {
      const answer = await elicit({
        message: \`Factor \${i}?\`,
        requestedSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      });
      if (answer.action !== "accept") throw new Error(\`the person chose \${answer.action}\`);
      sum += i * answer.content.n;
      console.log(\`factor \${i}: \${answer.content.n}\`);
    }
    sum`;
  const result = await client.callTool({ name: "run_js", arguments: { code, session: "ts-asks" } });
  assert.equal(result.isError, false, JSON.stringify(result));
  const outcome = result.structuredContent;
  assert.equal(outcome.status, "completed", JSON.stringify(outcome));
  say({ event: "done", asked: seen, result: outcome.result, output: outcome.output });
  await client.close();
}

const modes = { asks, budget, calls, tasks, task: async () => { const { transport } = await task(); await transport.close(); }, replay, tools, counter, surface, continue: continueSessions, stdio, packages, files, codemode };
if (!Object.hasOwn(modes, mode)) {
  // A removed or misspelt mode must fail its test, not run another flow.
  console.error(`ts_client.mjs: unknown mode ${JSON.stringify(mode)}; the modes are: ${Object.keys(modes).join(", ")}`);
  process.exit(2);
}
await modes[mode]();
// The last line says which flow ran, for the test to check.
console.log(JSON.stringify({ event: "exit", mode }));
process.exit(0);
