// The reference server of the HTTP benchmark (benches/http.rs): what a user
// would otherwise run. The official TypeScript SDK's Streamable HTTP server,
// sessions in process memory, one `run_js` tool that evaluates code in a
// fresh node:vm context, and plain node:http (no framework) in front.
//   node server.mjs PORT
// Prints "listening PORT" once it accepts connections.
import http from "node:http";
import { randomUUID } from "node:crypto";
import vm from "node:vm";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const port = Number(process.argv[2] ?? 0);
const transports = new Map();

function newServer() {
  const server = new McpServer({ name: "node-vm-reference", version: "1.0.0" });
  server.registerTool(
    "run_js",
    { description: "Evaluate JavaScript in a fresh node:vm context", inputSchema: { code: z.string() } },
    async ({ code }) => {
      try {
        const result = vm.runInNewContext(code, {}, { timeout: 5000 });
        return { content: [{ type: "text", text: String(result) }] };
      } catch (error) {
        return { isError: true, content: [{ type: "text", text: String(error) }] };
      }
    },
  );
  return server;
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const httpServer = http.createServer(async (req, res) => {
  try {
    const sessionId = req.headers["mcp-session-id"];
    const body = req.method === "POST" ? await readJson(req) : undefined;
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(body)) {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

httpServer.listen(port, "127.0.0.1", () => {
  console.log(`listening ${httpServer.address().port}`);
});
