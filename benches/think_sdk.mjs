// Think time through the official TypeScript SDK, as a new user measures it:
// `serve` started on a free port and an empty data directory, one SDK client
// (Streamable HTTP, X-MCP-Session-Id), a heap of a given size made with
// heap: "latest", then trivial chained calls (`n += 1; n`, heap: "latest",
// heap_memory_max_mb named on every call) after a pause each, and the p50 of
// their latency at the client. Every call must continue the right state (the
// counter); a wrong one fails the bench. Nothing is asserted on time:
// docs/performance.md records the figures.
//
//   node benches/think_sdk.mjs BINARY [--pause-ms 1000] [--calls 10] [--sizes tiny,5mb,50mb]
//
// Run with tests/e2e's node_modules (scripts/install-test-deps.sh installs
// them): NODE_PATH=tests/e2e/node_modules, or from that directory.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(path.resolve("tests/e2e/package.json"));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StreamableHTTPClientTransport } = await import(
  require.resolve("@modelcontextprotocol/sdk/client/streamableHttp.js")
);

const args = process.argv.slice(2);
const binary = args[0];
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const pauseMs = Number(option("--pause-ms", "1000"));
const calls = Number(option("--calls", "10"));
const sizes = option("--sizes", "tiny,5mb,50mb").split(",");
const OBJECTS = { tiny: 0, "5mb": 60_000, "50mb": 600_000 };
const LIMIT_MB = 512;

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

async function startServe() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), "think-sdk-"));
  const child = spawn(binary, ["serve", "--port", String(port), "--data-dir", dir], {
    env: { ...process.env, RUST_LOG: "warn" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(url, { method: "GET" });
      return { child, url, dir };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("serve did not start");
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};
// The nearest-rank p90: the value 90% of the calls are at or under.
const p90 = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.ceil(0.9 * s.length) - 1];
};

const rows = [];
for (const size of sizes) {
  const { child, url, dir } = await startServe();
  const session = `think-${size}`;
  const client = new Client({ name: "think-sdk", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { "X-MCP-Session-Id": session } },
    }),
  );
  const call = async (code) => {
    const result = await client.callTool(
      { name: "run_js", arguments: { code, heap: "latest", heap_memory_max_mb: LIMIT_MB } },
      undefined,
      { timeout: 600_000 },
    );
    if (result.isError) throw new Error(JSON.stringify(result));
    return result.structuredContent;
  };
  const objects = OBJECTS[size];
  await call(
    `globalThis.items = Array.from({length: ${objects}}, (_, i) => ({i, s: 'item' + i})); globalThis.n = 0; n`,
  );
  let n = 0;
  const latencies = [];
  const waited = [];
  // Two warm-up calls, then the measured ones.
  for (let i = 0; i < calls + 2; i++) {
    await new Promise((r) => setTimeout(r, pauseMs));
    const started = performance.now();
    const outcome = await call("n += 1; n");
    const took = performance.now() - started;
    n += 1;
    if (outcome.result !== String(n)) {
      throw new Error(`call ${i} continued the wrong state: ${JSON.stringify(outcome)}`);
    }
    if (i >= 2) {
      latencies.push(took);
      if (outcome.save_wait_ms) waited.push(outcome.save_wait_ms);
    }
  }
  await client.close();
  child.kill("SIGTERM");
  await new Promise((r) => child.on("exit", r));
  fs.rmSync(dir, { recursive: true, force: true });
  rows.push({
    size,
    p50: median(latencies),
    p90: p90(latencies),
    max: Math.max(...latencies),
    waited: waited.length,
  });
}
const tiny = rows.find((r) => r.size === "tiny");
console.log(`| heap | pause ms | p50 ms | p90 ms | max ms | calls that waited | p50 / tiny | p90 / tiny p50 |`);
console.log(`|---|---|---|---|---|---|---|---|`);
for (const r of rows) {
  const ratio = (x) => (tiny ? (x / tiny.p50).toFixed(1) + "×" : "–");
  console.log(
    `| ${r.size} | ${pauseMs} | ${r.p50.toFixed(1)} | ${r.p90.toFixed(1)} | ${r.max.toFixed(1)} | ${r.waited} of ${calls} | ${ratio(r.p50)} | ${ratio(r.p90)} |`,
  );
}
