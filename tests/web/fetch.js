// fetch with the egress policy off (the default): what code sees without a
// network. tests/it/fetch.rs covers requests against loopback servers.
promise_test(async () => {
  assert_equals(typeof fetch, "function");
  assert_equals(fetch.length, 1);
  const refused = await fetch("https://example.com/").then(() => null, (e) => e);
  assert_true(refused instanceof TypeError);
  assert_true(refused.message.includes("egress policy (MCP_V8_FETCH_ALLOW)"), refused.message);
  await promise_rejects_js(TypeError, fetch(), "no argument");
  await promise_rejects_js(TypeError, fetch("/relative"), "not absolute");
  await promise_rejects_js(TypeError, fetch("https://example.com", { method: "GET", body: "x" }), "GET with a body");
  await promise_rejects_js(TypeError, fetch("https://example.com", { method: "TRACE" }));
  await promise_rejects_dom("AbortError", fetch("https://example.com", { signal: AbortSignal.abort() }));
  const reason = await fetch("https://example.com", { signal: AbortSignal.abort("why") }).then(() => null, (e) => e);
  assert_equals(reason, "why", "an aborted signal's reason");
  await promise_rejects_js(TypeError, fetch(new Request("http://169.254.169.254/")), "metadata");
  // Handled: a rejection nobody handles is a warning of the run.
  const pending = fetch("https://example.com");
  pending.catch(() => {});
  assert_true(pending instanceof Promise, "always a promise");
}, "fetch when no origin is allowed");
