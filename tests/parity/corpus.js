// The package parity corpus: packages agents reach for in data work, in
// each module shape that trips a bundler, and what tests/it/parity.rs asks
// of each under Node 22 and in a run. The same text runs in both (Node:
// `node -e` in this directory, where `npm ci` installed them; a run: after
// `packages add`), so a difference is a difference in module loading.
//
// `named` is a name Node's own import of the package finds (`default` where
// its lexer finds none: lodash, iconv-lite, papaparse); `call` uses the
// package once, given what `require` returns and the namespace `import`
// gives. `cjs` marks CommonJS packages: a run's namespace of one may have
// more names than Node's (docs/engine.md, "Packages": every key of
// `module.exports`, where Node's lexer finds only some), never fewer.
const corpus = [
  // CommonJS with circular requires and `browser` maps.
  { name: "readable-stream", cjs: true, named: "Readable",
    call: (m) => new Promise((resolve, reject) => {
      let text = "";
      m.pipeline(m.Readable.from(["a", "b", "c"]),
        new m.Transform({ transform(chunk, _, done) { done(null, String(chunk).toUpperCase()); } }),
        new m.Writable({ write(chunk, _, done) { text += chunk; done(); } }),
        (error) => (error ? reject(error) : resolve(text)));
    }) },
  { name: "xml2js", cjs: true, named: "parseStringPromise",
    call: (m) => m.parseStringPromise("<a><b x='1'>t</b><b>u</b></a>") },
  // Dual packages with export maps and subpath exports.
  { name: "csv-parse", named: "parse",
    call: () => require("csv-parse/sync").parse("a,b\n1,2\n3,4", { columns: true }) },
  { name: "date-fns", cjs: true, named: "format",
    call: (m) => [m.format(new Date(Date.UTC(2024, 0, 15, 12)), "yyyy-MM-dd"),
      m.differenceInDays(new Date(2024, 2, 1), new Date(2024, 1, 1))] },
  { name: "zod", cjs: true, named: "z",
    call: (m) => [m.z.string().safeParse(1).success, m.z.object({ a: m.z.number() }).parse({ a: 1, b: 2 })] },
  { name: "yaml", cjs: true, named: "parse",
    call: (m) => [m.parse("a: 1\nb: [x, y]"), m.stringify({ a: [1, 2] })] },
  // ES-module-only packages.
  { name: "d3-array", named: "extent",
    call: (m) => [m.extent([3, 1, 2]), m.mean([1, 2, 3, 4]), m.bin().thresholds(2)([1, 2, 3, 4]).length] },
  { name: "nanoid", named: "nanoid",
    call: (m) => [m.nanoid(12).length, m.customAlphabet("ab", 6)().length] },
  { name: "chalk", named: "Chalk",
    call: (m, ns) => new ns.Chalk({ level: 1 }).red.bold("x") },
  // Packages leaning on Node's core modules.
  { name: "iconv-lite", cjs: true, named: "default",
    call: (m) => [m.decode(Buffer.from([0x63, 0x61, 0x66, 0xe9]), "latin1"),
      Buffer.isBuffer(m.encode("é", "win1252")), m.encode("é", "win1252").toString("hex")] },
  { name: "fast-xml-parser", cjs: true, named: "XMLParser",
    call: (m) => new m.XMLParser({ ignoreAttributes: false }).parse("<a><b x='1'>t</b></a>") },
  // Classes or functions exported as the module itself.
  { name: "decimal.js", cjs: true, named: "Decimal",
    call: (m) => [new m("0.1").plus("0.2").toString(), m.sqrt(2).toFixed(10)] },
  { name: "dayjs", cjs: true, named: "default",
    call: (m) => m("2024-01-15T00:00:00Z").add(1, "day").toISOString() },
  { name: "ms", cjs: true, named: "default",
    call: (m) => [m("2h"), m(90000)] },
  // Namespaces of hundreds of functions.
  { name: "lodash", cjs: true, named: "default",
    call: (m) => [m.chunk([1, 2, 3, 4, 5], 2), m.groupBy([1.2, 1.5, 2.1], Math.floor), m.VERSION] },
  { name: "ramda", cjs: true, named: "map",
    call: (m) => [m.map((x) => x * 2, [1, 2, 3]), m.pipe(m.add(1), m.multiply(3))(2)] },
  // Everyday data work.
  { name: "papaparse", cjs: true, named: "default",
    call: (m) => [m.parse("a,b\n1,2", { header: true, dynamicTyping: true }).data,
      typeof m.DuplexStreamStreamer, m.unparse([{ a: 1, b: "x,y" }])] },
  { name: "js-yaml", cjs: true, named: "load",
    call: (m) => [m.load("a: 1\nb: [x, y]"), m.dump({ a: [1] })] },
  { name: "semver", cjs: true, named: "satisfies",
    call: (m) => [m.satisfies("1.2.3", "^1.0.0"), m.maxSatisfying(["1.0.0", "1.5.0", "2.0.0"], "~1"), m.coerce("v2.3").version] },
  { name: "simple-statistics", cjs: true, named: "mean",
    call: (m) => [m.mean([1, 2, 3]), m.standardDeviation([2, 4, 4, 4, 5, 5, 7, 9]), m.linearRegression([[0, 1], [1, 3]])] },
  { name: "uuid", cjs: true, named: "v4",
    call: (m) => [m.validate(m.v4()), m.version(m.v4()), m.v5("x", m.v5.URL)] },
  { name: "immer", cjs: true, named: "produce",
    call: (m) => { const a = { n: 1, l: [1] }; const b = m.produce(a, (d) => { d.l.push(2); }); return [a, b, Object.isFrozen(b)]; } },
];

// What a value is, as the comparison reads it: its type, its own keys
// (sorted), and whether it is a module namespace.
function describe(value) {
  const type = value === null ? "null" : typeof value;
  if (type !== "object" && type !== "function") return { type };
  const out = { type, keys: Object.keys(value).sort() };
  if (Object.prototype.toString.call(value) === "[object Module]") out.module = true;
  return out;
}

async function attempt(f) {
  try {
    return await f();
  } catch (error) {
    return { threw: String((error && error.message) || error).split("\n")[0] };
  }
}

async function probe() {
  const report = {};
  for (const entry of corpus) {
    const r = (report[entry.name] = {});
    r.require = await attempt(() => describe(require(entry.name)));
    r.namespace = await attempt(async () => Object.keys(await import(entry.name)).sort());
    r.default = await attempt(async () => describe((await import(entry.name)).default));
    r.named = await attempt(async () => describe((await import(entry.name))[entry.named]));
    r.call = await attempt(async () =>
      JSON.stringify(await entry.call(require(entry.name), await import(entry.name))));
    r.cjs = entry.cjs === true;
  }
  return JSON.stringify(report);
}
