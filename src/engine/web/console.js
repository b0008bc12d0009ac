// The rest of the Console Standard: table, dir, trace, assert, count,
// countReset, time, timeLog, timeEnd, group, groupCollapsed, groupEnd.
// Counters and timer labels live in the heap; group depth lasts one run.
(function (natives, load) {
  "use strict";
  const counts = new Map();
  const timers = new Map();
  // Node's own inspector (node_inspect.js), as `console.log` and
  // `util.inspect` use it: a value prints one way everywhere.
  const format = (args) => load("node_inspect").formatWithOptions({}, ...args);
  // As Node's console.table shows a cell.
  const cell = (v) => {
    const wide = v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 2;
    return load("node_inspect").inspect(v, { depth: wide ? -1 : 0, maxArrayLength: 3, breakLength: Infinity });
  };

  function table(data, properties = undefined) {
    if (data === null || typeof data !== "object") {
      natives.print(format([data]));
      return;
    }
    const rows = data instanceof Map ? [...data.entries()] : Object.entries(data);
    const columns = [];
    let values = false;
    for (const [, value] of rows) {
      if (value !== null && typeof value === "object") {
        for (const key of Object.keys(value)) if (!columns.includes(key)) columns.push(key);
      } else {
        values = true;
      }
    }
    const shown = properties === undefined ? columns : [...properties].map(String);
    const header = ["(index)", ...shown, ...(values ? ["Values"] : [])];
    const body = rows.map(([index, value]) => {
      const object = value !== null && typeof value === "object";
      return [
        String(index),
        ...shown.map((key) => (object && key in value ? cell(value[key]) : "")),
        ...(values ? [object ? "" : cell(value)] : []),
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)) + 2);
    const line = (l, m, r) => l + widths.map((w) => "─".repeat(w)).join(m) + r;
    const row = (cells) => "│" + cells.map((c, i) => ` ${c}`.padEnd(widths[i])).join("│") + "│";
    natives.print([line("┌", "┬", "┐"), row(header), line("├", "┼", "┤"), ...body.map(row), line("└", "┴", "┘")].join("\n"));
  }

  function dir(value, options) {
    natives.print(load("node_inspect").inspect(value, { customInspect: false, ...options }));
  }

  function trace(...args) {
    const stack = (new Error().stack ?? "").split("\n").slice(2).join("\n");
    natives.print(`[ERROR] Trace${args.length ? ": " + format(args) : ""}${stack ? "\n" + stack : ""}`);
  }

  function assert(condition = false, ...args) {
    if (condition) return;
    natives.print(`[ERROR] Assertion failed${args.length ? ": " + format(args) : ""}`);
  }

  function count(label = "default") {
    label = String(label);
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    natives.print(`${label}: ${n}`);
  }

  function countReset(label = "default") {
    label = String(label);
    if (counts.has(label)) counts.set(label, 0);
    else natives.print(`[WARN] Count for '${label}' does not exist`);
  }

  const elapsed = (label) => `${label}: ${(natives.now() - timers.get(label)).toFixed(3)}ms`;

  function time(label = "default") {
    label = String(label);
    if (timers.has(label)) natives.print(`[WARN] Timer '${label}' already exists`);
    else timers.set(label, natives.now());
  }

  function timeLog(label = "default", ...args) {
    label = String(label);
    if (!timers.has(label)) natives.print(`[WARN] Timer '${label}' does not exist`);
    else natives.print(elapsed(label) + (args.length ? " " + format(args) : ""));
  }

  function timeEnd(label = "default") {
    label = String(label);
    if (!timers.has(label)) {
      natives.print(`[WARN] Timer '${label}' does not exist`);
      return;
    }
    natives.print(elapsed(label));
    timers.delete(label);
  }

  function group(...label) {
    if (label.length) natives.print(format(label));
    natives.indent(1);
  }

  function groupEnd() { natives.indent(-1); }

  return {
    table, dir, trace, assert, count, countReset, time, timeLog, timeEnd,
    group, groupCollapsed: group, groupEnd,
  };
})
