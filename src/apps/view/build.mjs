// Builds the run View, src/apps/run.html, which the server embeds: rolldown
// bundles view.js with the parts of Chart.js it imports and DOMPurify into
// one minified script, and index.html gets it and view.css inline, so the
// document loads nothing from elsewhere. `node build.mjs --check` compares what it would
// write with the committed file and fails when they differ (a test runs it).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.join(here, "..", "run.html");

const bundle = await rolldown({
  input: path.join(here, "view.js"),
  platform: "browser",
  logLevel: "warn",
});
const { output } = await bundle.generate({ format: "iife", minify: true });
await bundle.close();
const versionOf = (name) => JSON.parse(fs.readFileSync(path.join(here, "node_modules", name, "package.json"), "utf8")).version;
// `</script` would end the inline element early; `<\/script` is the same
// string to JavaScript.
const script = output[0].code.replaceAll("</script", "<\\/script").trim();
const notice = `/* The run View of mcp-v8-lambda, built by src/apps/view/build.mjs. Includes Chart.js ${versionOf("chart.js")} (https://www.chartjs.org), (c) Chart.js Contributors, MIT License; and DOMPurify ${versionOf("dompurify")} (https://github.com/cure53/DOMPurify), (c) Cure53 and other contributors, Apache License 2.0 or MPL 2.0. */`;
const css = fs.readFileSync(path.join(here, "view.css"), "utf8").trim();
const template = fs.readFileSync(path.join(here, "index.html"), "utf8");
for (const marker of ["/* style */", "/* script */"]) {
  if (template.split(marker).length !== 2) throw new Error(`index.html must hold ${marker} once`);
}
const html = template.replace("/* style */", () => css).replace("/* script */", () => `${notice}\n${script}`);

if (process.argv.includes("--check")) {
  const committed = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : "";
  if (committed !== html) {
    console.error(`${target} is not what build.mjs makes of src/apps/view: run \`node src/apps/view/build.mjs\` and commit the result`);
    process.exit(1);
  }
  console.log(`${target} is up to date (${html.length} bytes)`);
} else {
  fs.writeFileSync(target, html);
  console.log(`wrote ${target} (${html.length} bytes)`);
}
