// The console methods; what they print is checked by the Rust side, which
// reads the run's output (tests/it/web.rs).
test(() => {
  for (const name of ["log", "info", "warn", "error", "debug", "table", "dir", "trace", "assert", "count", "countReset",
    "time", "timeLog", "timeEnd", "group", "groupCollapsed", "groupEnd"]) {
    assert_equals(typeof console[name], "function", name);
  }
  assert_false(Object.keys(console).includes("table"), "added methods are not enumerable");
}, "every method is there");

test(() => {
  console.count();
  console.count();
  console.count("x");
  console.countReset();
  console.count();
  console.countReset("never");
  console.assert(true, "not shown");
  console.assert(false, "shown", 1);
  console.assert(0);
  console.group("outer");
  console.log("in 1");
  console.group();
  console.info("in 2");
  console.groupEnd();
  console.groupEnd();
  console.groupEnd();
  console.log("out");
  console.dir({ a: { b: 1 } });
  console.table([{ a: 1 }, { a: 2, b: "x" }]);
  console.table(["p", "q"]);
  console.table(5);
  console.time("t");
  console.time("t");
  console.timeLog("t", "mid");
  console.timeEnd("t");
  console.timeEnd("t");
  console.trace("here");
  assert_true(true);
}, "the methods run");
