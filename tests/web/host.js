// performance, navigator, self, reportError, and absent APIs.
test(() => {
  const a = performance.now();
  let x = 0;
  for (let i = 0; i < 1e5; i++) x += i;
  const b = performance.now();
  assert_true(a >= 0);
  assert_true(b >= a, "monotonic");
  assert_true(Math.abs(performance.timeOrigin - Date.now()) < 60000, "timeOrigin is wall-clock ms");
  assert_true(performance instanceof Performance);
  assert_equals(typeof performance.toJSON().timeOrigin, "number");
  assert_throws_js(TypeError, () => new Performance());
  assert_class_string(performance, "Performance");
}, "performance");

test(() => {
  assert_equals(self, globalThis);
  assert_true(navigator.userAgent.startsWith("mcp-v8-lambda/"));
  assert_true(navigator instanceof Navigator);
  assert_equals(typeof navigator.hardwareConcurrency, "number");
  assert_equals(typeof reportError, "function");
  assert_throws_js(TypeError, () => reportError());
  reportError(new Error("reported"));
}, "self, navigator, reportError");

test(() => {
  for (const name of ["ReadableStream", "WritableStream", "TransformStream", "TextEncoderStream", "TextDecoderStream",
    "CompressionStream", "DecompressionStream", "URLPattern", "WebAssembly"]) {
    assert_equals(typeof globalThis[name], "undefined", name);
  }
  for (const name of ["URL", "URLSearchParams", "TextEncoder", "TextDecoder", "atob", "btoa", "structuredClone", "crypto",
    "performance", "navigator", "reportError", "Event", "EventTarget", "CustomEvent", "DOMException", "AbortController",
    "AbortSignal", "Blob", "File", "FormData", "Headers", "Request", "Response", "fetch", "queueMicrotask", "setTimeout"]) {
    assert_not_equals(typeof globalThis[name], "undefined", name);
  }
  assert_false(Object.keys(globalThis).includes("URL"), "globals are not enumerable");
  const d = Object.getOwnPropertyDescriptor(globalThis, "TextEncoder");
  assert_true(d.writable && d.configurable && !d.enumerable);
}, "what is present and what is not");

test(() => {
  const original = globalThis.URL;
  globalThis.URL = function () { throw new Error("the code's own URL"); };
  assert_throws_js(Error, () => new URL("https://example.com/"), "a global can be replaced");
  assert_equals(new Request("https://example.com/a b").url, "https://example.com/a%20b", "the layer does not use replaced globals");
  globalThis.URL = original;
}, "replacing a global");
