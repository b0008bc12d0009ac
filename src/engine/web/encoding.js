// TextEncoder, TextDecoder (Encoding Standard), atob, btoa (HTML).
(function (natives, load) {
  "use strict";
  const { DOMException } = load("events");

  function bufferSource(input, what) {
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && input instanceof SharedArrayBuffer)) {
      return new Uint8Array(input);
    }
    throw new TypeError(`${what}: the input must be an ArrayBuffer or an ArrayBufferView`);
  }

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") { return natives.encode(String(input)); }
    encodeInto(source, destination) {
      if (!(destination instanceof Uint8Array)) throw new TypeError("TextEncoder.encodeInto: the destination must be a Uint8Array");
      const [read, written] = natives.encodeInto(String(source), destination);
      return { read, written };
    }
    get [Symbol.toStringTag]() { return "TextEncoder"; }
  }

  const UNICODE = new Set(["utf-8", "utf-16le", "utf-16be"]);

  class TextDecoder {
    #encoding;
    #fatal;
    #ignoreBOM;
    #bomSeen = false;
    #pending = null;
    #streaming = false;
    constructor(label = "utf-8", options = undefined) {
      const name = natives.label(String(label));
      if (name === undefined || name === "replacement") {
        throw new RangeError(`TextDecoder: the encoding label '${label}' is not supported`);
      }
      this.#encoding = name;
      this.#fatal = !!options?.fatal;
      this.#ignoreBOM = !!options?.ignoreBOM;
    }
    get encoding() { return this.#encoding; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input = undefined, options = undefined) {
      let bytes = input === undefined ? new Uint8Array(0) : bufferSource(input, "TextDecoder.decode");
      if (!this.#streaming) {
        this.#pending = null;
        this.#bomSeen = false;
      }
      const stream = !!options?.stream;
      this.#streaming = stream;
      if (this.#pending !== null) {
        const joined = new Uint8Array(this.#pending.length + bytes.length);
        joined.set(this.#pending, 0);
        joined.set(bytes, this.#pending.length);
        bytes = joined;
      }
      let text, pending;
      try {
        [text, pending] = natives.decode(this.#encoding, bytes, this.#fatal, stream);
      } catch (error) {
        this.#pending = null;
        this.#streaming = false;
        throw error;
      }
      this.#pending = pending > 0 ? bytes.slice(bytes.length - pending) : null;
      if (!this.#ignoreBOM && !this.#bomSeen && text.length > 0 && UNICODE.has(this.#encoding)) {
        this.#bomSeen = true;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      return text;
    }
    get [Symbol.toStringTag]() { return "TextDecoder"; }
  }

  function atob(data) {
    if (arguments.length === 0) throw new TypeError("atob: 1 argument required, but only 0 present");
    const text = natives.atob(String(data));
    if (text === undefined) throw new DOMException("The string to be decoded is not correctly encoded.", "InvalidCharacterError");
    return text;
  }

  function btoa(data) {
    if (arguments.length === 0) throw new TypeError("btoa: 1 argument required, but only 0 present");
    const text = natives.btoa(String(data));
    if (text === undefined) throw new DOMException("The string to be encoded contains characters outside of the Latin1 range.", "InvalidCharacterError");
    return text;
  }

  return { TextEncoder, TextDecoder, atob, btoa, bufferSource };
})
