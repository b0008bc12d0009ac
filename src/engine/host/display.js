// display(data, { mimeType, name }): Jupyter's habit. Each call adds a
// block to the tool result, after the run's own text, in call order:
// images the model can see, text, or a file. The bytes are the host's
// (`natives.show`); nothing of them stays in the heap.
(function (natives) {
  "use strict";
  const MIME = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;.*)?$/;

  function display(data, options) {
    if (arguments.length === 0) {
      throw new TypeError("display: 1 argument required, but only 0 present");
    }
    if (options === undefined || options === null) options = {};
    if (typeof options === "string") options = { mimeType: options };
    if (typeof options !== "object") {
      throw new TypeError("display: the second argument must be an object like { mimeType: \"image/png\", name: \"chart.png\" }");
    }
    let { mimeType, name } = options;
    if (mimeType !== undefined && (typeof mimeType !== "string" || !MIME.test(mimeType))) {
      throw new TypeError(`display: mimeType must be a media type like "image/png" or "text/csv", not ${JSON.stringify(mimeType)}`);
    }
    if (name !== undefined && typeof name !== "string") {
      throw new TypeError("display: name must be a string (a file name like \"chart.png\")");
    }
    let body;
    if (typeof data === "string") {
      body = data;
      mimeType ??= /^\s*<svg[\s>]/.test(data) ? "image/svg+xml" : "text/plain";
    } else if (ArrayBuffer.isView(data) || Object.prototype.toString.call(data) === "[object ArrayBuffer]") {
      body = data;
    } else if (data instanceof Blob) {
      throw new TypeError("display: a Blob is read asynchronously; pass its bytes: display(await blob.bytes(), { mimeType: blob.type })");
    } else {
      body = JSON.stringify(data, null, 2);
      if (body === undefined) {
        throw new TypeError(`display: ${typeof data} cannot be shown; pass a string, bytes (Uint8Array, Buffer) or a JSON value`);
      }
      mimeType ??= "application/json";
    }
    natives.show(body, mimeType ?? "", name ?? "");
  }

  // display.chart({ type, data, x, y, title, name }): a chart an MCP Apps
  // host draws (docs/engine.md, "Charts"); the model reads the same rows
  // as JSON text.
  const CHART_TYPES = ["line", "bar", "scatter"];
  const CHART_MIME = "application/vnd.mcp-v8-lambda.chart+json";
  const MAX_CHART_ROWS = 10000;
  const describeValue = (value) => (typeof value === "string" ? JSON.stringify(value) : String(value));

  function chart(spec) {
    const usage = 'display.chart({ type: "line", data: [{ month: "Jan", sales: 3 }, ...], x: "month", y: "sales" })';
    if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
      throw new TypeError(`display.chart: pass one object, like ${usage}`);
    }
    const { type = "line", data, x, title, name } = spec;
    if (!CHART_TYPES.includes(type)) {
      throw new TypeError(`display.chart: type must be "line", "bar" or "scatter", not ${describeValue(type)}`);
    }
    if (!Array.isArray(data) || data.length === 0) {
      throw new TypeError(`display.chart: data must be a non-empty array of rows (objects), like ${usage}`);
    }
    if (data.length > MAX_CHART_ROWS) {
      throw new RangeError(`display.chart: ${data.length} rows is more than a chart shows (${MAX_CHART_ROWS}); aggregate or sample the rows first, and display(rows) for a table of all of them`);
    }
    const bad = data.findIndex((row) => row === null || typeof row !== "object" || Array.isArray(row));
    if (bad !== -1) {
      throw new TypeError(`display.chart: data[${bad}] is not an object; each row is one, like { month: "Jan", sales: 3 }`);
    }
    const columns = Object.keys(data[0]);
    if (typeof x !== "string" || !columns.includes(x)) {
      throw new TypeError(`display.chart: x must name a column of the rows (${columns.join(", ")}), not ${describeValue(x)}`);
    }
    let y = spec.y ?? columns.filter((c) => c !== x && typeof data[0][c] === "number");
    if (typeof y === "string") y = [y];
    if (!Array.isArray(y) || y.length === 0) {
      throw new TypeError(`display.chart: y must name one column of numbers or an array of them (columns: ${columns.join(", ")})`);
    }
    for (const column of y) {
      if (typeof column !== "string" || !columns.includes(column)) {
        throw new TypeError(`display.chart: y names ${describeValue(column)}, which is not a column of the rows (${columns.join(", ")})`);
      }
      const at = data.findIndex((row) => row[column] !== null && row[column] !== undefined && typeof row[column] !== "number");
      if (at !== -1) {
        throw new TypeError(`display.chart: y column ${JSON.stringify(column)} must hold numbers, but data[${at}].${column} is ${describeValue(data[at][column])}; convert it (Number(v)) first`);
      }
    }
    if (title !== undefined && typeof title !== "string") {
      throw new TypeError("display.chart: title must be a string");
    }
    if (name !== undefined && typeof name !== "string") {
      throw new TypeError("display.chart: name must be a string (a file name like \"sales.json\")");
    }
    const rows = data.map((row) => {
      const kept = { [x]: row[x] };
      for (const column of y) kept[column] = row[column] ?? null;
      return kept;
    });
    const body = JSON.stringify({ chart: type, title, x, y, data: rows });
    natives.show(body, CHART_MIME, name ?? "");
  }
  Object.defineProperty(display, "chart", { value: chart, writable: true, configurable: true });

  return { display };
})
