// `process/` is the engine's own `process` (the "process" family), and
// AbortController is a global of every run.
export default {
  input: "entry.cjs",
  platform: "browser",
  external: ["process/", "abort-controller"],
  output: { file: "out/node_lib.cjs", format: "cjs", minify: false, comments: { legal: true } },
};
