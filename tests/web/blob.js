// Blob, File, FormData.
promise_test(async () => {
  const b = new Blob(["ab", new Uint8Array([0x63]), new Uint16Array([0x6564]).buffer, new Blob(["f"])], { type: "Text/Plain" });
  assert_equals(b.size, 6);
  assert_equals(b.type, "text/plain", "lower-cased");
  assert_equals(await b.text(), "abcdef");
  const ab = await b.arrayBuffer();
  assert_true(ab instanceof ArrayBuffer);
  assert_equals(ab.byteLength, 6);
  const u8 = await b.bytes();
  assert_true(u8 instanceof Uint8Array);
  assert_equals(u8[0], 0x61);
  assert_equals(new Blob().size, 0);
  assert_equals(new Blob([], { type: "a\u00e9" }).type, "", "non-ASCII type is dropped");
  assert_equals(await new Blob(["é"]).text(), "é");
  assert_equals(new Blob(["\uD800"]).size, 3, "lone surrogate becomes U+FFFD");
  assert_equals(await new Blob(["a\r\nb\rc"], { endings: "native" }).text(), "a\nb\nc");
  assert_equals(await new Blob(["a\r\nb"]).text(), "a\r\nb", "transparent by default");
  assert_throws_js(TypeError, () => new Blob("abc"), "not a sequence");
  assert_throws_js(TypeError, () => new Blob([], { endings: "other" }));
  assert_equals(typeof b.stream, "undefined", "no streams in this tier");
  assert_class_string(b, "Blob");
}, "Blob construction and readers");

promise_test(async () => {
  const b = new Blob(["0123456789"]);
  assert_equals(await b.slice(2, 5).text(), "234");
  assert_equals(await b.slice(-3).text(), "789");
  assert_equals(await b.slice(-3, -1).text(), "78");
  assert_equals(await b.slice(5, 2).text(), "");
  assert_equals(await b.slice(0, 100).text(), "0123456789");
  assert_equals(b.slice(0, 1, "X/Y").type, "x/y");
  assert_equals(b.slice().size, 10);
  const src = new Uint8Array([1, 2]);
  const copy = new Blob([src]);
  src[0] = 9;
  assert_equals((await copy.bytes())[0], 1, "parts are copied");
}, "Blob.slice");

test(() => {
  const f = new File(["abc"], "a.txt", { type: "text/plain", lastModified: 42 });
  assert_true(f instanceof Blob);
  assert_equals(f.name, "a.txt");
  assert_equals(f.lastModified, 42);
  assert_equals(f.size, 3);
  assert_equals(f.type, "text/plain");
  assert_equals(f.webkitRelativePath, "");
  assert_true(Math.abs(new File([], "x").lastModified - Date.now()) < 60000);
  assert_throws_js(TypeError, () => new File(["x"]));
  assert_class_string(f, "File");
}, "File");

test(() => {
  const fd = new FormData();
  fd.append("a", "1");
  fd.append("a", 2);
  fd.append("f", new Blob(["x"], { type: "text/plain" }));
  fd.append("g", new Blob(["y"]), "named.bin");
  assert_equals(fd.get("a"), "1");
  assert_array_equals(fd.getAll("a"), ["1", "2"]);
  assert_true(fd.get("f") instanceof File);
  assert_equals(fd.get("f").name, "blob");
  assert_equals(fd.get("f").type, "text/plain");
  assert_equals(fd.get("g").name, "named.bin");
  assert_true(fd.has("g"));
  fd.set("a", "3");
  assert_array_equals(fd.getAll("a"), ["3"]);
  assert_array_equals([...fd.keys()], ["a", "f", "g"], "set keeps the first position");
  fd.delete("f");
  assert_false(fd.has("f"));
  assert_equals(fd.get("none"), null);
  const seen = [];
  fd.forEach((v, k) => seen.push(k));
  assert_array_equals(seen, ["a", "g"]);
  assert_throws_js(TypeError, () => new FormData({}));
  assert_throws_js(TypeError, () => fd.append("only-name"));
  assert_class_string(fd, "FormData");
}, "FormData");
