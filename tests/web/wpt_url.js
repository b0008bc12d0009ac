// The web-platform-tests' URL data (url/resources/urltestdata.json and
// setters_tests.json) as WPT's url-constructor, url-origin, url-setters and
// url-statics tests use it, one subtest per name. The same code runs in
// Node 22 and in a run (tests/it/engine/wpt_url.rs), which compares the
// subtests each fails. Needs only the globals URL and URLSearchParams.
function wptUrl(urlTests, setterTests) {
  const failed = [];
  let ran = 0;
  function subtest(name, body) {
    ran++;
    try {
      body();
    } catch (error) {
      failed.push({ name, why: String(error && error.message) });
    }
  }
  function equal(actual, expected, what) {
    if (actual !== expected) {
      throw new Error(`${what}: got ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
    }
  }
  function throwsTypeError(body, what) {
    let threw;
    try {
      body();
    } catch (error) {
      threw = error;
    }
    if (!(threw instanceof TypeError)) {
      throw new Error(`${what}: expected a TypeError, got ${threw === undefined ? "none" : threw}`);
    }
  }
  const COMPONENTS = ["protocol", "username", "password", "host", "hostname", "port", "pathname", "search"];

  for (const expected of urlTests) {
    if (typeof expected === "string") continue;
    const base = expected.base !== null ? expected.base : undefined;
    const about = `<${expected.input}> ${base === undefined ? "without base" : `against <${base}>`}`;
    subtest(`Parsing: ${about}`, () => {
      if (expected.failure) {
        throwsTypeError(() => new URL(expected.input, base), "new URL");
        return;
      }
      const url = new URL(expected.input, base);
      equal(url.href, expected.href, "href");
      for (const component of COMPONENTS) equal(url[component], expected[component], component);
      if ("searchParams" in expected) equal(url.searchParams.toString(), expected.searchParams, "searchParams");
      equal(url.hash, expected.hash, "hash");
    });
    if ("origin" in expected) {
      subtest(`Origin parsing: ${about}`, () => {
        equal(new URL(expected.input, base).origin, expected.origin, "origin");
      });
    }
    subtest(`URL.canParse(): ${about}`, () => {
      equal(URL.canParse(expected.input, base), !expected.failure, "canParse");
    });
    if (typeof URL.parse === "function") {
      subtest(`URL.parse(): ${about}`, () => {
        const url = URL.parse(expected.input, base);
        if (expected.failure) equal(url, null, "parse");
        else equal(url.href, expected.href, "parse().href");
      });
    }
  }

  for (const [attribute, cases] of Object.entries(setterTests)) {
    if (attribute === "comment") continue;
    for (const test of cases) {
      const name = `URL: Setting <${test.href}>.${attribute} = '${test.new_value}'` +
        (test.comment ? ` ${test.comment}` : "");
      subtest(name, () => {
        const url = new URL(test.href);
        url[attribute] = test.new_value;
        for (const [component, value] of Object.entries(test.expected)) equal(url[component], value, component);
      });
    }
  }
  return { ran, failed };
}
