// The View of a run_js result (MCP Apps, io.modelcontextprotocol/ui). It
// speaks the View's side of the protocol over postMessage itself: the
// SDK's App class brings the MCP SDK and zod (500 KB) for the three
// messages used here. build.mjs bundles this file into ../run.html.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Colors,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  ScatterController,
  Title,
  Tooltip,
} from "chart.js";
import DOMPurify from "dompurify";

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Colors,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  ScatterController,
  Title,
  Tooltip,
);

const PAGE = 25;
const DISPLAYS_META = "mcp-v8-lambda/displays";
const CHART_MIME = "application/vnd.mcp-v8-lambda.chart+json";
// The app-only tool that reads one page of a table kept in a heap's /work.
const PAGE_TOOL = "read_display_page";
const root = document.getElementById("run");
let nextId = 1;
const pending = new Map();

const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
const request = (method, params) => {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
};
const notify = (method, params) => send({ method, params });

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
};
const section = (title, ...children) => el("section", {}, el("h2", { text: title }), ...children);

// The last result shown: drawn again when the host's theme changes, so
// that charts take the new colours.
let shownResult = null;

function applyContext(context) {
  if (!context) return;
  if (context.theme) document.documentElement.style.colorScheme = context.theme;
  const variables = context.styles && context.styles.variables;
  if (variables) {
    for (const [name, value] of Object.entries(variables)) {
      if (value) document.documentElement.style.setProperty(name, value);
    }
  }
  if (shownResult && (context.theme || variables)) render(shownResult);
}

// A theme colour as a canvas takes it: Chart.js draws on a canvas, which
// cannot read a CSS variable (the defaults are light-dark(...) pairs), so
// the browser computes the colour of an element styled with it.
function themeColor(variable) {
  const probe = document.createElement("span");
  probe.style.color = `var(${variable}, CanvasText)`;
  document.body.append(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color;
}

const formatBytes = (bytes) =>
  bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

// What a block is, in a word, for its heading when it has no title.
const kindOf = (mime) =>
  mime === "text/html" ? "HTML" :
  mime === CHART_MIME ? "Chart" :
  mime.startsWith("image/") ? "Image" :
  mime === "text/markdown" ? "Markdown" :
  mime === "text/csv" ? "CSV" :
  mime.startsWith("text/") ? "Text" :
  mime === "application/json" || mime.endsWith("+json") ? "JSON" : "File";
const heading = (kind, name) => (name ? `${kind} · ${name}` : kind);

const isRow = (row) => row !== null && typeof row === "object" && !Array.isArray(row);

// The rows of a table the View holds: sorted and sliced here.
function localRows(rows) {
  const seen = new Set();
  for (const row of rows) for (const key of Object.keys(row)) seen.add(key);
  const columns = [...seen];
  return async (offset, limit, sortBy, descending) => {
    let order = rows;
    if (sortBy !== null) {
      order = rows.slice().sort((a, b) => {
        const x = a[sortBy], y = b[sortBy];
        const c = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
        return descending ? -c : c;
      });
    }
    return { total: rows.length, columns, rows: order.slice(offset, offset + limit) };
  };
}

// The rows of a table kept in /work: each page read by the app-only tool,
// through the host, with the caller's own rights.
function remoteRows(uri) {
  return async (offset, limit, sortBy, descending) => {
    const args = { uri, offset, limit };
    if (sortBy !== null) Object.assign(args, { sort_by: sortBy, descending });
    const result = await request("tools/call", { name: PAGE_TOOL, arguments: args });
    if (!result || result.isError || !result.structuredContent) {
      const text = result && (result.content || []).find((c) => c.type === "text");
      throw new Error(text ? text.text : "the page could not be read");
    }
    return result.structuredContent;
  };
}

// A table with column headers that sort it, a row count and pages of PAGE
// rows; `read(offset, limit, sortBy, descending)` gives a page.
function table(read) {
  let page = 0;
  let sortedBy = null;
  let descending = false;
  let columns = null;
  let drawn = 0;
  const header = el("tr");
  const body = el("tbody");
  const count = el("span", { class: "count", text: "loading…" });
  const previous = el("button", { type: "button", text: "‹ previous" });
  const next = el("button", { type: "button", text: "next ›" });
  const cell = (value) => {
    const text = value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
    return el("td", typeof value === "number" ? { class: "num", text } : { text });
  };
  const heads = () => {
    header.replaceChildren(...columns.map((column) => {
      const mark = sortedBy === column ? (descending ? " ▾" : " ▴") : "";
      const th = el("th", { text: column + mark, scope: "col" });
      th.addEventListener("click", () => {
        descending = sortedBy === column ? !descending : false;
        sortedBy = column;
        page = 0;
        draw();
      });
      return th;
    }));
  };
  const draw = async () => {
    const ticket = ++drawn;
    previous.disabled = next.disabled = true;
    let shown;
    try {
      shown = await read(page * PAGE, PAGE, sortedBy, descending);
    } catch (error) {
      if (ticket === drawn) count.textContent = `the rows could not be read: ${error.message}`;
      return;
    }
    if (ticket !== drawn) return;
    if (columns === null || shown.columns.join("\u0000") !== columns.join("\u0000")) columns = shown.columns;
    heads();
    body.replaceChildren(...shown.rows.map((row) => el("tr", {}, ...columns.map((c) => cell(row[c])))));
    const pages = Math.max(1, Math.ceil(shown.total / PAGE));
    count.textContent = `${shown.total} rows · page ${page + 1} of ${pages}`;
    previous.disabled = page === 0;
    next.disabled = page >= pages - 1;
  };
  previous.addEventListener("click", () => { page -= 1; draw(); });
  next.addEventListener("click", () => { page += 1; draw(); });
  draw();
  return el("div", { class: "table" }, el("table", {}, el("thead", {}, header), body), el("div", { class: "pager" }, count, previous, next));
}

function tree(value, label) {
  if (value === null || typeof value !== "object") {
    return el("div", {}, el("span", { class: "key", text: label === undefined ? "" : `${label}: ` }), JSON.stringify(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const summary = el("summary", { text: `${label === undefined ? "" : `${label}: `}${Array.isArray(value) ? `Array(${value.length})` : `{${entries.length} keys}`}` });
  const details = el("details", {}, summary, ...entries.map(([k, v]) => tree(v, k)));
  if (label === undefined) details.open = true;
  return details;
}

function html(markup) {
  // Markup from a run, sanitized by DOMPurify (no scripts, event handlers,
  // javascript: URLs, frames or external styles: it cannot script the View
  // or reach the host), in a shadow root, where its styles apply to it
  // alone. The box is as tall as its content up to a bound (view.css), then
  // scrolls: a frame without scripts could not be measured.
  const box = el("div", { class: "html" });
  const shadow = box.attachShadow({ mode: "open" });
  // Ids are kept as written (SANITIZE_DOM off): in a shadow root they
  // clobber no property of the View's document or window.
  const page = DOMPurify.sanitize(markup, { WHOLE_DOCUMENT: true, RETURN_DOM: true, SANITIZE_DOM: false });
  const body = page.querySelector("body");
  shadow.append(...page.querySelectorAll("head style"), ...(body ? [...body.childNodes] : []));
  return box;
}

// Charts are drawn once their canvas is in the document, where Chart.js
// can measure it.
let charts = [];

function chart(spec) {
  const canvas = el("canvas", { role: "img", "aria-label": spec.title || `${spec.chart} chart of ${spec.y.join(", ")} by ${spec.x}` });
  const xs = spec.data.map((row) => row[spec.x]);
  // Numbers on x are a linear axis, except for bars, which stand on
  // categories.
  const linear = spec.chart !== "bar" && xs.every((v) => typeof v === "number");
  const datasets = spec.y.map((column) => ({
    label: column,
    data: linear ? spec.data.map((row) => ({ x: row[spec.x], y: row[column] })) : spec.data.map((row) => row[column]),
    pointRadius: spec.chart === "scatter" ? 3 : spec.data.length > 200 ? 0 : 2,
  }));
  charts.push(() => {
    // Text and lines in the theme's colours, resolved when drawn.
    const text = themeColor("--color-text-secondary");
    const lines = themeColor("--color-border-primary");
    const axis = (title) => ({
      title: { ...title, color: text },
      ticks: { color: text },
      grid: { color: lines },
      border: { color: lines },
    });
    const drawn = new Chart(canvas, {
      type: spec.chart,
      data: linear ? { datasets } : { labels: xs.map(String), datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        // No chart-wide borderColor: with one, the Colors plugin would
        // leave the datasets uncoloured.
        color: text,
        scales: {
          x: { type: linear ? "linear" : "category", ...axis({ display: true, text: spec.x }) },
          y: axis({ display: spec.y.length === 1, text: spec.y[0] }),
        },
        plugins: {
          // The block's heading is the chart's title: drawn once.
          title: { display: false },
          legend: { display: spec.y.length > 1, labels: { color: text } },
        },
      },
    });
    canvas.dataset.drawn = String(drawn.data.datasets.reduce((n, d) => n + d.data.length, 0));
  });
  return el("div", { class: "chart" }, canvas);
}

const isChart = (value) =>
  isRow(value) && ["line", "bar", "scatter"].includes(value.chart) && typeof value.x === "string" &&
  Array.isArray(value.y) && Array.isArray(value.data) && value.data.every(isRow);

function display(entry, content, note) {
  const mime = (entry.mimeType || "").split(";")[0].trim().toLowerCase();
  const titled = (title, node, said) =>
    section(title, ...(said ? [el("p", { class: "note", text: said })] : []), el("div", { class: "block", "data-mime": mime }, node));
  const plain = heading(kindOf(mime), entry.name);
  if (!content) {
    return titled(plain, el("p", { text: `Too large to show here (${formatBytes(entry.size)}).` }));
  }
  if (content.type === "image") {
    return titled(plain, el("img", { src: `data:${content.mimeType};base64,${content.data}`, alt: entry.name || "image" }));
  }
  if (content.type === "resource_link") {
    const kept = `Too large for the answer (${formatBytes(entry.size)}): shown from the copy kept with the run.`;
    // A JSON table too large for the answer is paged from its /work file.
    if (mime === "application/json") return titled(heading("Table", entry.name), table(remoteRows(content.uri)), kept);
    // Other blocks over the answer budget are read from their file (hosts
    // pass resources/read on from MCP Apps 1.2); until then, where it is.
    const holder = el("div", {}, el("p", { class: "link", text: `Kept as ${content.uri}` }));
    const shown = titled(plain, holder, kept);
    request("resources/read", { uri: content.uri }).then((read) => {
      const file = read && (read.contents || [])[0];
      if (!file || typeof file.text !== "string") return;
      const drawn = charts.length;
      shown.replaceWith(display(entry, { type: "text", text: file.text }, kept));
      for (const draw of charts.splice(drawn)) draw();
    }, () => {});
    return shown;
  }
  const text = content.type === "text" ? content.text : content.resource && content.resource.text;
  if (typeof text !== "string") return titled(plain, el("p", { text: `${mime}, ${formatBytes(entry.size)}` }));
  if (mime === "text/html") return titled(plain, html(text), note);
  if (mime === "image/svg+xml") {
    return titled(plain, el("img", { src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`, alt: entry.name || "SVG" }), note);
  }
  if (mime === "application/json" || mime.endsWith("+json")) {
    try {
      const value = JSON.parse(text);
      if (mime === CHART_MIME && isChart(value)) {
        return titled(value.title || heading("Chart", entry.name), chart(value), note);
      }
      if (Array.isArray(value) && value.length > 0 && value.every(isRow)) {
        return titled(heading("Table", entry.name), table(localRows(value)), note);
      }
      if (value && typeof value === "object") return titled(heading("JSON", entry.name), tree(value), note);
    } catch (_) { /* shown as text below */ }
  }
  return titled(plain, el("pre", { text }), note);
}

// The server's notes are written for the model (what to call, which
// variable to set); the person reads what they mean here. Each pattern is
// one the server writes (tools/budget.rs, tools/display.rs); other
// warnings are the run's own and are shown as they are.
function personNotes(warnings) {
  const notes = [];
  for (const warning of warnings) {
    if (/^display \d+ \(/.test(warning)) continue; // said at the block
    if (/^result: \d+ bytes, over/.test(warning)) continue; // said at the result
    const output = /^output: (\d+) bytes, over/.exec(warning);
    if (output) {
      notes.push(`The console printed ${formatBytes(Number(output[1]))}: its first and last lines are shown, and the whole is kept with the run.`);
      continue;
    }
    const more = /^(\d+) more warnings did not fit/.exec(warning);
    if (more) {
      notes.push(`${more[1]} more notes are kept with the run.`);
      continue;
    }
    notes.push(warning);
  }
  return notes;
}

function render(result) {
  shownResult = result;
  const outcome = result.structuredContent || {};
  const shown = [];
  charts = [];
  const status = outcome.status || (result.isError ? "failed" : "completed");
  shown.push(el("p", { class: `status ${status}`, text: `${status}${outcome.duration_ms !== undefined ? ` in ${outcome.duration_ms} ms` : ""}` }));
  const value = outcome.result;
  if (value && typeof value === "object") {
    // A result over the answer budget: its stand-in.
    const items = value.length !== undefined ? `${value.length} ${value.type === "string" ? "characters" : "items"}, ` : "";
    const kept = value.uri ? "the whole is kept with the run" : "the whole was not kept";
    shown.push(section("Result", el("pre", { class: "result", text: `${value.preview}…` }),
      el("p", { class: "note", text: `Only the start is shown (${items}${formatBytes(value.bytes)} in all); ${kept}.` })));
  } else if (value !== undefined && value !== null) shown.push(section("Result", el("pre", { class: "result", text: value })));
  if (outcome.output) shown.push(section("Console", el("pre", { class: "console", text: outcome.output })));
  if (outcome.error) {
    const error = outcome.error;
    shown.push(el("section", { class: "error" }, el("h2", { text: "Error" }), el("pre", { text: error.stack || `${error.name}: ${error.message}` })));
  } else if (result.isError && !result.structuredContent) {
    const first = (result.content || []).find((c) => c.type === "text");
    shown.push(el("section", { class: "error" }, el("h2", { text: "Error" }), el("pre", { text: first ? first.text : "the call failed" })));
  }
  const notes = personNotes(Array.isArray(outcome.warnings) ? outcome.warnings : []);
  if (notes.length) shown.push(section("Notes", el("ul", { class: "warnings" }, ...notes.map((w) => el("li", { text: w })))));
  // Without the server's list (a result read back from a task), the
  // blocks after the run's own text are shown by their content type.
  const displays = (result._meta && result._meta[DISPLAYS_META]) ||
    (result.content || []).slice(1).map((c, i) => ({
      content: i + 1,
      mimeType: c.type === "image" ? c.mimeType : c.type === "resource" ? c.resource.mimeType : c.mimeType || "text/plain",
    }));
  for (const entry of displays) {
    const content = entry.content === undefined || entry.content === null ? null : (result.content || [])[entry.content];
    shown.push(display(entry, content));
  }
  root.replaceChildren(...shown);
  for (const draw of charts) draw();
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(new Error(message.error.message)); else resolve(message.result);
    return;
  }
  switch (message.method) {
    case "ui/notifications/tool-result": render(message.params || {}); break;
    case "ui/notifications/tool-cancelled": root.replaceChildren(el("p", { class: "status cancelled", text: `cancelled${message.params && message.params.reason ? `: ${message.params.reason}` : ""}` })); break;
    case "ui/notifications/host-context-changed": applyContext(message.params); break;
    case "ui/resource-teardown": case "ping": send({ id: message.id, result: {} }); break;
    default: if (message.id !== undefined && message.method) send({ id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } });
  }
});

let lastSize = "";
new ResizeObserver(() => {
  const width = Math.ceil(document.documentElement.scrollWidth);
  const height = Math.ceil(document.documentElement.scrollHeight);
  const size = `${width}x${height}`;
  if (size !== lastSize) { lastSize = size; notify("ui/notifications/size-changed", { width, height }); }
}).observe(document.documentElement);

request("ui/initialize", {
  appInfo: { name: "mcp-v8-lambda run view", version: "1" },
  appCapabilities: { availableDisplayModes: ["inline"] },
  protocolVersion: "2026-01-26",
}).then((result) => {
  applyContext(result && result.hostContext);
  notify("ui/notifications/initialized", {});
}, () => notify("ui/notifications/initialized", {}));
