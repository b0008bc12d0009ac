// `process/` is the engine's own `process` (the "process" family), and
// AbortController is a global of every run. Two families: "node" (the
// ports) and "node_inspect" (Node's util.inspect, used only by node:util).
const common = {
  platform: "browser",
  external: ["process/", "abort-controller"],
};
export default [
  { ...common, input: "entry.cjs",
    output: { file: "out/node_lib.cjs", format: "cjs", minify: false, comments: { legal: true } } },
  { ...common, input: "inspect.cjs",
    output: { file: "out/node_inspect.cjs", format: "cjs", minify: false, comments: { legal: true } } },
];
