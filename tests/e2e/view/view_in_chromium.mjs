// Renders the run View as an MCP Apps host does, in headless Chromium
// (Debian's package, /usr/bin/chromium or $CHROMIUM), and checks from the
// DOM what a person would see. Usage: node view_in_chromium.mjs URL [PNG]
//
// The Node side is the host's MCP client (the official TypeScript SDK,
// declaring io.modelcontextprotocol/ui): it lists tools, reads the View,
// calls run_js, and answers the View's tool calls. The page is the host's
// UI: host.js (the SDK's AppBridge and PostMessageTransport, bundled here
// by rolldown) puts the View in an iframe sandboxed with allow-scripts only,
// under the spec's default CSP. Any request other than the host page, any
// CSP violation, any uncaught error fails the test.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";
import { rolldown } from "rolldown";

const [url, screenshot] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
// The spec's default: no network, inline scripts and styles, data: images.
const CSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'";

const client = new Client(
  { name: "chromium-test-host", version: "1" },
  { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } },
);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const { tools } = await client.listTools();
const runJs = tools.find((tool) => tool.name === "run_js");
const viewUri = runJs?._meta?.ui?.resourceUri;
assert.ok(viewUri?.startsWith("ui://"), `run_js names no View: ${JSON.stringify(runJs?._meta)}`);
// What the host lets the View call: its server's tools that are the app's.
const appTools = new Set(
  tools.filter((tool) => (tool._meta?.ui?.visibility ?? ["model", "app"]).includes("app")).map((tool) => tool.name),
);
const modelTools = tools.filter((tool) => (tool._meta?.ui?.visibility ?? ["model"]).includes("model")).map((tool) => tool.name);
assert.ok(!modelTools.includes("read_display_page"), "the page tool is the View's, not the model's");

const read = await client.readResource({ uri: viewUri });
const view = read.contents[0];
assert.equal(view.mimeType, MIME);
assert.equal(view._meta?.ui?.csp, undefined, "the View asks for no more than the default CSP");

// What an agent shows: HTML (whose script and handlers must not run, one
// block 300 px tall and one 2000 px), an SVG, a 50-row table, a chart, and
// a 100k-row table too large for one answer, kept in /work and linked.
const code = `
const fs = require("node:fs");
display("<style>h1 { letter-spacing: 1px }</style><h1 id='title'>Quarterly <em>report</em></h1>" +
  "<p id='para' style='height: 300px; margin: 0'>Revenue grew.</p>" +
  "<img id='broken' src='data:image/gif;base64,AAAA' onerror=\\"document.body.append('pwned')\\">" +
  "<a id='js' href=\\"javascript:document.body.append('pwned')\\">more</a>" +
  "<script>document.body.append('pwned'); parent.postMessage({ jsonrpc: '2.0', method: 'pwned' }, '*')</script>", "text/html");
display("<div style='height: 2000px'>tall</div>", { mimeType: "text/html", name: "tall.html" });
display('<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="teal"/><circle cx="60" cy="30" r="20" fill="gold"/></svg>');
const regions = ["north", "south", "east", "west"];
const sales = Array.from({ length: 50 }, (_, i) => ({ id: i + 1, region: regions[i % 4], amount: Math.round(1000 * Math.abs(Math.sin(i + 1))) }));
display(sales, { name: "sales.json" });
display.chart({ type: "line", data: sales, x: "id", y: "amount", title: "Amount by id" });
const rows = Array.from({ length: 100000 }, (_, i) => ({ n: i, square: i * i, label: "row " + i + " of the long table" }));
fs.writeFileSync("/work/rows.json", JSON.stringify(rows));
display(fs.readFileSync("/work/rows.json"), { mimeType: "application/json", name: "rows.json" });
console.log("made", rows.length, "rows");
sales.length`;
const input = { code };
const result = await client.callTool({ name: "run_js", arguments: input });
assert.equal(result.isError, false, JSON.stringify(result.content?.[0]));
const link = result.content.find((c) => c.type === "resource_link");
assert.ok(link?.uri.endsWith("/files/rows.json"), `the long table is a link: ${JSON.stringify(result.content.map((c) => c.type))}`);

// The host page and its bundled AppBridge.
const bundle = await rolldown({ input: path.join(here, "host.js"), platform: "browser", logLevel: "silent" });
const { output } = await bundle.generate({ format: "iife" });
await bundle.close();
const hostPage = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>host</title></head><body style="margin:0">
<iframe id="view" sandbox="allow-scripts" title="run_js" style="width:760px;height:400px;border:0;display:block"></iframe>
<script>${output[0].code.replaceAll("</script", "<\\/script")}</script></body></html>`;
const server = http.createServer((_, response) => {
  response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  response.end(hostPage);
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const hostUrl = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const problems = [];
const calls = [];
try {
  const page = await browser.newPage({ viewport: { width: 780, height: 1000 } });
  page.on("request", (request) => {
    if (request.url() !== hostUrl) problems.push(`request for ${request.url()}`);
  });
  page.on("requestfailed", (request) => problems.push(`failed request for ${request.url()}`));
  page.on("pageerror", (error) => problems.push(`uncaught in a page: ${error.message}`));
  page.on("console", (message) => {
    const text = message.text();
    if (/Content.Security.Policy|Refused to/i.test(text)) problems.push(`refused: ${text}`);
  });
  await page.exposeFunction("hostCallTool", async (params) => {
    calls.push(params);
    if (!appTools.has(params.name)) throw new Error(`the View may not call ${params.name}`);
    return await client.callTool(params);
  });
  await page.goto(hostUrl);
  await page.evaluate((start) => window.startHost(start), { html: view.text, csp: CSP, input, result });
  await page.waitForFunction(() => window.resultSent === true, null, { timeout: 15000 });

  const frame = page.frames().find((f) => f.parentFrame() === page.mainFrame());
  assert.ok(frame, "the View's frame");
  const exactly = (text) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  const section = (name) => frame.locator("section").filter({ has: frame.locator("h2", { hasText: exactly(name) }) });

  // Each block is headed by its name or a plain kind, as a person reads it.
  const headings = await frame.locator("section > h2").allTextContents();
  assert.deepEqual(headings, ["Result", "Console", "HTML", "HTML · tall.html", "Image", "Table · sales.json", "Amount by id", "Table · rows.json"]);

  // The HTML block: sanitized markup in a shadow root, not shown as source;
  // no script, handler or javascript: link is left; as tall as its content.
  const html = section("HTML").locator("div.html");
  assert.equal(await html.locator("#title").textContent(), "Quarterly report");
  assert.equal(await section("HTML").locator("pre").count(), 0, "HTML is not shown as text");
  assert.equal(await html.locator("script").count(), 0);
  assert.equal(await html.locator("#broken").getAttribute("onerror"), null);
  assert.equal(await html.locator("#js").getAttribute("href"), null);
  const box = (locator) => locator.evaluate((b) => ({ height: b.getBoundingClientRect().height, content: b.scrollHeight }));
  const short = await box(html);
  assert.ok(short.height >= 300 && short.height < 480 && short.content <= short.height + 1, `the HTML block is as tall as its content: ${JSON.stringify(short)}`);
  const tall = await box(section("HTML · tall.html").locator("div.html"));
  assert.ok(Math.round(tall.height) === 480 && tall.content >= 2000, `a tall HTML block stops at the bound and scrolls: ${JSON.stringify(tall)}`);

  // The SVG is drawn.
  const svg = section("Image").locator("img");
  await svg.waitFor();
  assert.equal(await svg.evaluate((img) => img.complete && img.naturalWidth), 120);

  // The 50-row table: headers, a page of rows, the count; sorting works.
  const sales = section("Table · sales.json");
  assert.deepEqual(await sales.locator("th").allTextContents(), ["id", "region", "amount"]);
  assert.equal(await sales.locator("tbody tr").count(), 25);
  assert.equal(await sales.locator(".count").textContent(), "50 rows · page 1 of 2");
  await sales.locator("th", { hasText: "amount" }).click();
  await sales.locator("th", { hasText: "amount" }).click();
  const amounts = (await sales.locator("tbody tr td:nth-child(3)").allTextContents()).map(Number);
  assert.deepEqual(amounts, amounts.slice().sort((a, b) => b - a), "sorted by amount, largest first");

  // The chart: a canvas Chart.js drew 50 points on.
  const canvas = section("Amount by id").locator("canvas");
  await canvas.waitFor();
  assert.equal(await canvas.getAttribute("data-drawn"), "50");
  const inked = await canvas.evaluate((c) => {
    const pixels = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let count = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) count++;
    return { width: c.width, height: c.height, count };
  });
  assert.ok(inked.width > 100 && inked.height > 100 && inked.count > 1000, `the chart is drawn: ${JSON.stringify(inked)}`);

  // The 100k-row table, paged through the app-only tool.
  const long = section("Table · rows.json");
  assert.match(await long.locator(".note").textContent(), /^Too large for the answer \(\d+\.\d MB\): shown from the copy kept with the run\.$/);
  await long.locator(".count", { hasText: "100000 rows" }).waitFor({ timeout: 20000 });
  assert.equal(await long.locator(".count").textContent(), "100000 rows · page 1 of 4000");
  assert.deepEqual(await long.locator("th").allTextContents(), ["n", "square", "label"]);
  assert.equal(await long.locator("tbody tr").count(), 25);
  await long.locator("button", { hasText: "next" }).click();
  await long.locator(".count", { hasText: "page 2 of" }).waitFor();
  assert.equal(await long.locator("tbody tr td").first().textContent(), "25");
  await long.locator("th", { hasText: "square" }).click();
  await long.locator("th", { hasText: "square" }).click();
  await long.locator("tbody tr td", { hasText: "99999" }).first().waitFor();
  assert.equal(await long.locator("tbody tr td").first().textContent(), "99999");
  const pages = calls.filter((c) => c.name === "read_display_page");
  assert.ok(pages.length >= 3, `the View paged through the app-only tool: ${JSON.stringify(calls)}`);
  assert.deepEqual(pages[1].arguments, { uri: link.uri, offset: 25, limit: 25 });
  assert.equal(pages.at(-1).arguments.sort_by, "square");
  assert.equal(calls.length, pages.length, "the View called no other tool");

  // The status, the console, the result, and the size reported.
  assert.match(await frame.locator(".status").textContent(), /^completed/);
  assert.equal(await frame.locator(".console").textContent(), "made 100000 rows\n");
  assert.equal(await frame.locator(".result").textContent(), "50");
  const sizes = await page.evaluate(() => window.sizes);
  assert.ok(sizes.some((s) => s.height > 400), `size-changed: ${JSON.stringify(sizes)}`);
  // Nothing in the HTML blocks ran.
  const ran = await frame.evaluate(() => document.body.textContent.includes("pwned") ||
    [...document.querySelectorAll("div.html")].some((b) => b.shadowRoot.textContent.includes("pwned")));
  assert.equal(ran, false);
  assert.equal(await page.evaluate(() => window.pwned), false, "the markup posted nothing to the host");
  // Words for a person: no variable, method or tool the model is told of.
  const words = await frame.locator("main").textContent();
  assert.doesNotMatch(words, /MCP_V8_|resources\/read|run_js|fs\.readFileSync/);

  // The chart's text against the View's background, in each theme the
  // host sets: the most common opaque colour of the left band (the y
  // axis's title) and of the bottom band (the x axis's ticks and title),
  // each at least WCAG's 4.5:1.
  const luminance = ([r, g, b]) => {
    const linear = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  };
  const contrast = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const chartColours = () => frame.evaluate(() => {
    const c = document.querySelector("section .chart canvas");
    const context = c.getContext("2d");
    const common = (left, top, columns, rows) => {
      const pixels = context.getImageData(left, top, columns, rows).data;
      const counts = new Map();
      for (let i = 0; i < pixels.length; i += 4) {
        if (pixels[i + 3] < 250) continue;
        const key = `${pixels[i]},${pixels[i + 1]},${pixels[i + 2]}`;
        counts.set(key, (counts.get(key) || 0) + 1);
      }
      const [best] = [...counts].sort((x, y) => y[1] - x[1]);
      return best ? best[0].split(",").map(Number) : null;
    };
    const background = getComputedStyle(document.body).backgroundColor.match(/\d+/g).slice(0, 3).map(Number);
    return { background, y: common(0, 0, 14, c.height), x: common(0, c.height - 32, c.width, 32) };
  });
  const themes = [
    ["light", { theme: "light" }],
    ["dark", { theme: "dark" }],
    ["dark, the host's colours", { theme: "dark", styles: { variables: {
      "--color-background-primary": "#202124", "--color-text-primary": "#e8eaed",
      "--color-text-secondary": "#bdc1c6", "--color-border-primary": "#5f6368" } } }],
  ];
  const legible = [];
  for (const [name, context] of themes) {
    if (name !== "light") {
      const before = await frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
      await page.evaluate((c) => window.setHostContext({ displayMode: "inline", availableDisplayModes: ["inline"], ...c }), context);
      await frame.waitForFunction((b) => getComputedStyle(document.body).backgroundColor !== b, before);
      await section("Amount by id").locator("canvas[data-drawn='50']").waitFor();
    }
    const colours = await chartColours();
    assert.ok(colours.x && colours.y, `${name}: the chart's text is drawn: ${JSON.stringify(colours)}`);
    const x = contrast(colours.x, colours.background);
    const y = contrast(colours.y, colours.background);
    assert.ok(x >= 4.5 && y >= 4.5, `${name}: the chart's text is legible: ${JSON.stringify({ ...colours, x, y })}`);
    legible.push({ theme: name, x: Number(x.toFixed(1)), y: Number(y.toFixed(1)) });
    if (screenshot && name !== "dark, the host's colours") {
      // A viewport as tall as the page: a full-page capture leaves the
      // parts of a sandboxed (out-of-process) frame outside it blank.
      await frame.evaluate(() => window.scrollTo(0, 0));
      await page.setViewportSize({ width: 780, height: Math.ceil(await page.evaluate(() => document.body.scrollHeight)) });
      await page.waitForTimeout(300);
      await page.screenshot({ path: name === "light" ? screenshot : screenshot.replace(/\.png$/, "-dark.png") });
    }
  }
  assert.deepEqual(
    (await chartColours()).x, [189, 193, 198],
    "the host's secondary text colour draws the chart's axes",
  );

  assert.deepEqual(problems, [], "nothing refused, nothing failed");
  console.log(JSON.stringify({ ok: true, view_bytes: view.text.length, page_calls: pages.length, sizes: sizes.length, legible }));
} finally {
  await browser.close();
  server.close();
  await client.close();
}
