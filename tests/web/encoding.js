// TextEncoder, TextDecoder, atob, btoa.
test(() => {
  const e = new TextEncoder();
  assert_equals(e.encoding, "utf-8");
  assert_array_equals(e.encode("a€😀"), [0x61, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80]);
  assert_array_equals(e.encode(), []);
  assert_array_equals(e.encode("\uD800"), [0xef, 0xbf, 0xbd], "lone high surrogate");
  assert_array_equals(e.encode("\uDC00x"), [0xef, 0xbf, 0xbd, 0x78], "lone low surrogate");
  assert_array_equals(e.encode("\uD83D\uDE00"), [0xf0, 0x9f, 0x98, 0x80], "a surrogate pair is one character");
  assert_array_equals(e.encode("\uDE00\uD83D"), [0xef, 0xbf, 0xbd, 0xef, 0xbf, 0xbd], "reversed pair");
  assert_true(e.encode("x") instanceof Uint8Array);
  assert_array_equals(e.encode(12), [0x31, 0x32], "non-strings are converted");
}, "TextEncoder.encode");

test(() => {
  const e = new TextEncoder();
  const buf = new Uint8Array(5);
  const r = e.encodeInto("a€😀", buf);
  assert_equals(r.read, 2, "whole characters only");
  assert_equals(r.written, 4);
  assert_array_equals(buf, [0x61, 0xe2, 0x82, 0xac, 0]);
  const big = new Uint8Array(8);
  const r2 = e.encodeInto("a😀", big);
  assert_equals(r2.read, 3, "a pair counts two code units");
  assert_equals(r2.written, 5);
  const view = new Uint8Array(new ArrayBuffer(6), 2, 3);
  e.encodeInto("xyz", view);
  assert_array_equals(new Uint8Array(view.buffer), [0, 0, 0x78, 0x79, 0x7a, 0], "respects the view's offset");
  assert_throws_js(TypeError, () => e.encodeInto("x", new Uint16Array(2)));
}, "TextEncoder.encodeInto");

test(() => {
  const d = new TextDecoder();
  assert_equals(d.encoding, "utf-8");
  assert_false(d.fatal);
  assert_false(d.ignoreBOM);
  assert_equals(d.decode(new Uint8Array([0x61, 0xe2, 0x82, 0xac])), "a€");
  assert_equals(d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])), "a", "BOM stripped");
  assert_equals(new TextDecoder("utf-8", { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])), "\uFEFFa");
  assert_equals(d.decode(new Uint8Array([0xff, 0x61])), "\uFFFDa", "replacement");
  assert_equals(d.decode(new Uint8Array([0xe2, 0x82])), "\uFFFD", "truncated at the end");
  assert_equals(d.decode(), "");
  assert_equals(d.decode(new Uint8Array([0x61, 0x62]).buffer), "ab", "ArrayBuffer input");
  assert_equals(d.decode(new DataView(new Uint8Array([0x63]).buffer)), "c", "DataView input");
  assert_equals(d.decode(new Uint16Array([0x6261])), "ab", "any view, as bytes");
  assert_throws_js(TypeError, () => d.decode("text"));
}, "TextDecoder UTF-8");

test(() => {
  const d = new TextDecoder("utf-8", { fatal: true });
  assert_true(d.fatal);
  assert_throws_js(TypeError, () => d.decode(new Uint8Array([0xff])));
  assert_throws_js(TypeError, () => d.decode(new Uint8Array([0xed, 0xa0, 0x80])), "encoded surrogate");
  assert_throws_js(TypeError, () => d.decode(new Uint8Array([0xc0, 0x80])), "overlong");
  assert_equals(d.decode(new Uint8Array([0x61])), "a", "usable after an error");
}, "TextDecoder fatal");

test(() => {
  const d = new TextDecoder();
  const bytes = new TextEncoder().encode("x😀€y");
  let out = "";
  for (const b of bytes) out += d.decode(new Uint8Array([b]), { stream: true });
  out += d.decode();
  assert_equals(out, "x😀€y", "byte by byte");
  assert_equals(d.decode(new Uint8Array([0xf0, 0x9f]), { stream: true }), "");
  assert_equals(d.decode(new Uint8Array([0x98, 0x80]), { stream: true }), "😀");
  assert_equals(d.decode(new Uint8Array([0xe2]), { stream: true }), "");
  assert_equals(d.decode(), "\uFFFD", "an unfinished character at the end of the stream");
  const bom = new TextDecoder();
  assert_equals(bom.decode(new Uint8Array([0xef, 0xbb]), { stream: true }) + bom.decode(new Uint8Array([0xbf, 0x41])), "A", "BOM split across chunks");
}, "TextDecoder stream");

test(() => {
  assert_equals(new TextDecoder("utf-16le").decode(new Uint8Array([0x61, 0x00, 0x3d, 0xd8, 0x00, 0xde])), "a😀");
  assert_equals(new TextDecoder("utf-16be").decode(new Uint8Array([0x00, 0x61])), "a");
  assert_equals(new TextDecoder("utf-16").encoding, "utf-16le");
  assert_equals(new TextDecoder("utf-16le").decode(new Uint8Array([0xff, 0xfe, 0x61, 0x00])), "a", "UTF-16 BOM");
  const s = new TextDecoder("utf-16le");
  assert_equals(s.decode(new Uint8Array([0x3d]), { stream: true }) + s.decode(new Uint8Array([0xd8, 0x00]), { stream: true }) + s.decode(new Uint8Array([0xde])), "😀");
  assert_equals(new TextDecoder("latin1").encoding, "windows-1252");
  assert_equals(new TextDecoder("latin1").decode(new Uint8Array([0xe9, 0x80])), "é€");
  assert_equals(new TextDecoder(" ISO-8859-2 ").encoding, "iso-8859-2", "labels are trimmed and case-folded");
  assert_equals(new TextDecoder("shift_jis").decode(new Uint8Array([0x82, 0xa0])), "あ");
  const sj = new TextDecoder("shift_jis");
  assert_equals(sj.decode(new Uint8Array([0x82]), { stream: true }) + sj.decode(new Uint8Array([0xa0])), "あ");
  assert_equals(new TextDecoder("gbk").encoding, "gbk");
  assert_throws_js(RangeError, () => new TextDecoder("nope"));
  assert_throws_js(RangeError, () => new TextDecoder("replacement"));
  assert_throws_js(RangeError, () => new TextDecoder("iso-2022-kr"), "a label for the replacement encoding");
}, "TextDecoder labels and other encodings");

test(() => {
  assert_equals(btoa(""), "");
  assert_equals(btoa("f"), "Zg==");
  assert_equals(btoa("fo"), "Zm8=");
  assert_equals(btoa("foo"), "Zm9v");
  assert_equals(btoa("\xff\xfe"), "//4=");
  assert_equals(btoa(null), "bnVsbA==", "converted to a string");
  const e = assert_throws_dom("InvalidCharacterError", () => btoa("€"));
  assert_equals(e.code, 5);
  assert_throws_js(TypeError, () => btoa());
}, "btoa");

test(() => {
  assert_equals(atob("Zg=="), "f");
  assert_equals(atob("Zg"), "f", "padding optional");
  assert_equals(atob("Zm8="), "fo");
  assert_equals(atob(" Z m 8 =\n"), "fo", "ASCII whitespace ignored");
  assert_equals(atob("//4="), "\xff\xfe");
  assert_equals(atob(""), "");
  assert_equals(atob("YR"), "a", "non-zero trailing bits are dropped");
  assert_throws_dom("InvalidCharacterError", () => atob("%"));
  assert_throws_dom("InvalidCharacterError", () => atob("Z"), "length 1 mod 4");
  assert_throws_dom("InvalidCharacterError", () => atob("Zg="), "one '=' on length 3");
  assert_throws_dom("InvalidCharacterError", () => atob("Zg==="));
  assert_throws_dom("InvalidCharacterError", () => atob("Z=g="), "'=' inside");
  assert_throws_dom("InvalidCharacterError", () => atob("Zm9v\u00a0"), "non-ASCII whitespace");
  assert_throws_dom("InvalidCharacterError", () => atob("Zm-_"), "base64url alphabet");
  assert_throws_dom("InvalidCharacterError", () => atob(undefined), "'undefined' is nine characters");
  assert_equals(atob(null), "\x9e\xe9e", "null is the string 'null'");
}, "atob");
