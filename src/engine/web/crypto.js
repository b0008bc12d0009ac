// crypto (Web Crypto): getRandomValues, randomUUID, and subtle.digest plus
// HMAC keys (importKey/exportKey "raw", generateKey, sign, verify).
// Other algorithms reject with NotSupportedError.
(function (natives, load) {
  "use strict";
  const { DOMException } = load("events");
  const { bufferSource } = load("encoding");

  const INTEGER_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array,
    Int32Array, Uint32Array, BigInt64Array, BigUint64Array];
  const HASHES = new Map([["sha-1", "SHA-1"], ["sha-256", "SHA-256"], ["sha-384", "SHA-384"], ["sha-512", "SHA-512"]]);
  const HASH_BLOCK = { "SHA-1": 512, "SHA-256": 512, "SHA-384": 1024, "SHA-512": 1024 };
  const create = {};

  function algorithmName(algorithm) {
    if (typeof algorithm === "string") return algorithm;
    if (algorithm !== null && typeof algorithm === "object" && algorithm.name !== undefined) return String(algorithm.name);
    throw new TypeError("the algorithm must be a string or an object with a name");
  }

  function hashName(algorithm) {
    const name = HASHES.get(algorithmName(algorithm).toLowerCase());
    if (name === undefined) throw new DOMException(`Unrecognized hash: ${algorithmName(algorithm)}`, "NotSupportedError");
    return name;
  }

  function hmacParams(algorithm) {
    if (algorithmName(algorithm).toUpperCase() !== "HMAC") {
      throw new DOMException(`Unrecognized algorithm: ${algorithmName(algorithm)}`, "NotSupportedError");
    }
    if (algorithm.hash === undefined) throw new TypeError("HMAC: the algorithm needs a hash");
    return { hash: hashName(algorithm.hash), length: algorithm.length };
  }

  function copy(data, what) {
    return bufferSource(data, what).slice();
  }

  class CryptoKey {
    #type; #extractable; #algorithm; #usages; #raw;
    constructor(key, extractable, algorithm, usages, raw) {
      if (key !== create) throw new TypeError("Illegal constructor");
      this.#type = "secret";
      this.#extractable = extractable;
      this.#algorithm = algorithm;
      this.#usages = usages;
      this.#raw = raw;
    }
    static raw(key) { return key.#raw; }
    get type() { return this.#type; }
    get extractable() { return this.#extractable; }
    get algorithm() { return { name: this.#algorithm.name, hash: { name: this.#algorithm.hash.name }, length: this.#algorithm.length }; }
    get usages() { return [...this.#usages]; }
    get [Symbol.toStringTag]() { return "CryptoKey"; }
  }
  const rawOf = CryptoKey.raw;
  delete CryptoKey.raw;

  function usagesFor(usages) {
    const list = [...usages].map(String);
    for (const usage of list) {
      if (usage !== "sign" && usage !== "verify") throw new DOMException(`HMAC keys cannot be used to ${usage}`, "SyntaxError");
    }
    if (list.length === 0) throw new DOMException("a secret key needs at least one usage", "SyntaxError");
    return [...new Set(list)];
  }

  function hmacKey(raw, params, extractable, usages) {
    const length = params.length === undefined ? raw.length * 8 : Number(params.length);
    if (length === 0 || length > raw.length * 8 || length <= (raw.length - 1) * 8) {
      throw new DOMException("HMAC: the length does not match the key data", "DataError");
    }
    const algorithm = { name: "HMAC", hash: { name: params.hash }, length };
    return new CryptoKey(create, !!extractable, algorithm, usagesFor(usages), raw);
  }

  function usable(key, usage) {
    if (!(key instanceof CryptoKey)) throw new TypeError("the key must be a CryptoKey");
    if (!key.usages.includes(usage)) throw new DOMException(`the key may not be used to ${usage}`, "InvalidAccessError");
  }

  // Each method's errors become rejections, as promise-returning IDL operations do.
  const rejecting = (body) => function (...args) {
    try {
      return Promise.resolve(body.apply(this, args));
    } catch (error) {
      return Promise.reject(error);
    }
  };

  class SubtleCrypto {
    constructor(key) { if (key !== create) throw new TypeError("Illegal constructor"); }
    get [Symbol.toStringTag]() { return "SubtleCrypto"; }
  }
  Object.assign(SubtleCrypto.prototype, {
    digest: rejecting(function digest(algorithm, data) {
      return natives.digest(hashName(algorithm), copy(data, "digest"));
    }),
    importKey: rejecting(function importKey(format, keyData, algorithm, extractable, usages) {
      const params = hmacParams(algorithm);
      if (format !== "raw") throw new DOMException(`key format ${format} is not supported (only "raw")`, "NotSupportedError");
      return hmacKey(copy(keyData, "importKey"), params, extractable, usages);
    }),
    exportKey: rejecting(function exportKey(format, key) {
      if (!(key instanceof CryptoKey)) throw new TypeError("the key must be a CryptoKey");
      if (format !== "raw") throw new DOMException(`key format ${format} is not supported (only "raw")`, "NotSupportedError");
      if (!key.extractable) throw new DOMException("the key is not extractable", "InvalidAccessError");
      return rawOf(key).slice().buffer;
    }),
    generateKey: rejecting(function generateKey(algorithm, extractable, usages) {
      const params = hmacParams(algorithm);
      const bits = params.length === undefined ? HASH_BLOCK[params.hash] : Number(params.length);
      const raw = new Uint8Array(Math.ceil(bits / 8));
      natives.randomFill(raw);
      return hmacKey(raw, { hash: params.hash, length: bits }, extractable, usages);
    }),
    sign: rejecting(function sign(algorithm, key, data) {
      usable(key, "sign");
      if (algorithmName(algorithm).toUpperCase() !== "HMAC") throw new DOMException("the algorithm does not match the key", "InvalidAccessError");
      return natives.hmacSign(key.algorithm.hash.name, rawOf(key), copy(data, "sign"));
    }),
    verify: rejecting(function verify(algorithm, key, signature, data) {
      usable(key, "verify");
      if (algorithmName(algorithm).toUpperCase() !== "HMAC") throw new DOMException("the algorithm does not match the key", "InvalidAccessError");
      return natives.hmacVerify(key.algorithm.hash.name, rawOf(key), copy(data, "verify"), copy(signature, "verify"));
    }),
  });
  for (const name of ["digest", "importKey", "exportKey", "generateKey", "sign", "verify"]) {
    Object.defineProperty(SubtleCrypto.prototype, name, { enumerable: false });
  }

  class Crypto {
    #subtle = new SubtleCrypto(create);
    constructor(key) { if (key !== create) throw new TypeError("Illegal constructor"); }
    get subtle() { return this.#subtle; }
    getRandomValues(array) {
      if (!INTEGER_ARRAYS.some((T) => array instanceof T)) {
        throw new DOMException("getRandomValues: the argument must be an integer typed array", "TypeMismatchError");
      }
      if (array.byteLength > 65536) {
        throw new DOMException(`getRandomValues: ${array.byteLength} bytes is over the 65536-byte quota`, "QuotaExceededError");
      }
      natives.randomFill(array);
      return array;
    }
    randomUUID() { return natives.randomUUID(); }
    get [Symbol.toStringTag]() { return "Crypto"; }
  }

  // node:crypto's createHash and createHmac (modules.js) hash at once,
  // where subtle's promise would not do.
  const sync = {
    digest: (name, data) => natives.digest(name, data),
    hmac: (name, key, data) => natives.hmacSign(name, key, data),
  };
  return { crypto: new Crypto(create), Crypto, CryptoKey, SubtleCrypto, sync };
})
