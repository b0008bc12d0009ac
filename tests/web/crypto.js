// crypto.getRandomValues, randomUUID, subtle.digest, HMAC.
const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
const bytes = (text) => new TextEncoder().encode(text);

test(() => {
  const a = new Uint8Array(32);
  assert_equals(crypto.getRandomValues(a), a, "returns its argument");
  assert_true(a.some((b) => b !== 0), "filled");
  const b = new Uint32Array(4);
  crypto.getRandomValues(b);
  assert_true(b.some((x) => x !== 0));
  crypto.getRandomValues(new BigUint64Array(2));
  const view = new Uint8Array(new ArrayBuffer(8), 4, 2);
  crypto.getRandomValues(view);
  assert_array_equals(new Uint8Array(view.buffer, 0, 4), [0, 0, 0, 0], "only the view's bytes");
  crypto.getRandomValues(new Uint8Array(65536));
  const e = assert_throws_dom("QuotaExceededError", () => crypto.getRandomValues(new Uint8Array(65537)));
  assert_equals(e.code, 22);
  assert_throws_dom("TypeMismatchError", () => crypto.getRandomValues(new Float32Array(1)));
  assert_throws_dom("TypeMismatchError", () => crypto.getRandomValues(new DataView(new ArrayBuffer(1))));
  assert_throws_dom("TypeMismatchError", () => crypto.getRandomValues([1, 2]));
}, "getRandomValues");

test(() => {
  const u = crypto.randomUUID();
  assert_true(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u), u);
  assert_not_equals(crypto.randomUUID(), u);
  assert_true(crypto instanceof Crypto);
  assert_true(crypto.subtle instanceof SubtleCrypto);
  assert_throws_js(TypeError, () => new Crypto());
  assert_throws_js(TypeError, () => new CryptoKey());
  assert_class_string(crypto, "Crypto");
}, "randomUUID and the interfaces");

promise_test(async () => {
  assert_equals(hex(await crypto.subtle.digest("SHA-1", bytes("abc"))), "a9993e364706816aba3e25717850c26c9cd0d89d");
  assert_equals(hex(await crypto.subtle.digest("SHA-256", bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_equals(hex(await crypto.subtle.digest("SHA-384", bytes(""))), "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b");
  assert_equals(hex(await crypto.subtle.digest({ name: "sha-512" }, bytes("abc"))).slice(0, 16), "ddaf35a193617aba", "names are case-insensitive");
  assert_equals(hex(await crypto.subtle.digest("SHA-256", bytes("abc").buffer)).slice(0, 8), "ba7816bf", "ArrayBuffer input");
  const d = await crypto.subtle.digest("SHA-256", new Uint8Array(0));
  assert_true(d instanceof ArrayBuffer);
  assert_equals(d.byteLength, 32);
  await promise_rejects_dom("NotSupportedError", crypto.subtle.digest("MD5", bytes("a")));
  await promise_rejects_js(TypeError, crypto.subtle.digest("SHA-256", "text"));
}, "subtle.digest");

promise_test(async () => {
  // RFC 4231 test case 2.
  const key = await crypto.subtle.importKey("raw", bytes("Jefe"), { name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
  assert_true(key instanceof CryptoKey);
  assert_equals(key.type, "secret");
  assert_true(key.extractable);
  assert_equals(key.algorithm.name, "HMAC");
  assert_equals(key.algorithm.hash.name, "SHA-256");
  assert_equals(key.algorithm.length, 32);
  assert_array_equals(key.usages, ["sign", "verify"]);
  const data = bytes("what do ya want for nothing?");
  const sig = await crypto.subtle.sign("HMAC", key, data);
  assert_equals(hex(sig), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  assert_true(await crypto.subtle.verify("HMAC", key, sig, data));
  const bad = new Uint8Array(sig);
  bad[0] ^= 1;
  assert_false(await crypto.subtle.verify({ name: "HMAC" }, key, bad, data));
  assert_false(await crypto.subtle.verify("HMAC", key, sig.slice(0, 31), data), "a short signature");
  assert_equals(hex(await crypto.subtle.exportKey("raw", key)), hex(bytes("Jefe")));
}, "HMAC import, sign, verify, export");

promise_test(async () => {
  const k512 = await crypto.subtle.importKey("raw", bytes("Jefe"), { name: "HMAC", hash: { name: "SHA-512" } }, false, ["sign"]);
  const sig = await crypto.subtle.sign("HMAC", k512, bytes("what do ya want for nothing?"));
  assert_equals(hex(sig).slice(0, 16), "164b7a7bfcf819e2");
  await promise_rejects_dom("InvalidAccessError", crypto.subtle.exportKey("raw", k512), "not extractable");
  await promise_rejects_dom("InvalidAccessError", crypto.subtle.verify("HMAC", k512, sig, bytes("x")), "usage");
  await promise_rejects_dom("SyntaxError", crypto.subtle.importKey("raw", bytes("k"), { name: "HMAC", hash: "SHA-256" }, false, ["encrypt"]));
  await promise_rejects_dom("SyntaxError", crypto.subtle.importKey("raw", bytes("k"), { name: "HMAC", hash: "SHA-256" }, false, []));
  await promise_rejects_dom("NotSupportedError", crypto.subtle.importKey("raw", bytes("k"), { name: "AES-GCM" }, false, ["encrypt"]));
  await promise_rejects_dom("NotSupportedError", crypto.subtle.importKey("jwk", {}, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]));
  await promise_rejects_dom("NotSupportedError", crypto.subtle.importKey("raw", bytes("k"), { name: "HMAC", hash: "SHA-3" }, false, ["sign"]));
  const gen = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-384" }, true, ["sign", "verify"]);
  assert_equals(gen.algorithm.length, 1024, "the hash's block size");
  assert_equals((await crypto.subtle.exportKey("raw", gen)).byteLength, 128);
  const s = await crypto.subtle.sign("HMAC", gen, bytes("m"));
  assert_equals(s.byteLength, 48);
  assert_true(await crypto.subtle.verify("HMAC", gen, s, bytes("m")));
}, "HMAC errors and generateKey");
