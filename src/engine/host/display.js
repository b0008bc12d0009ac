// display(data, { mimeType, name }): Jupyter's habit. Each call adds a
// block to the tool result, after the run's own text, in call order:
// images the model can see, text, or a file. The bytes are the host's
// (`natives.show`); nothing of them stays in the heap.
(function (natives) {
  "use strict";
  const MIME = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;.*)?$/;

  function display(data, options) {
    if (arguments.length === 0) {
      throw new TypeError("display: 1 argument required, but only 0 present");
    }
    if (options === undefined || options === null) options = {};
    if (typeof options === "string") options = { mimeType: options };
    if (typeof options !== "object") {
      throw new TypeError("display: the second argument must be an object like { mimeType: \"image/png\", name: \"chart.png\" }");
    }
    let { mimeType, name } = options;
    if (mimeType !== undefined && (typeof mimeType !== "string" || !MIME.test(mimeType))) {
      throw new TypeError(`display: mimeType must be a media type like "image/png" or "text/csv", not ${JSON.stringify(mimeType)}`);
    }
    if (name !== undefined && typeof name !== "string") {
      throw new TypeError("display: name must be a string (a file name like \"chart.png\")");
    }
    let body;
    if (typeof data === "string") {
      body = data;
      mimeType ??= /^\s*<svg[\s>]/.test(data) ? "image/svg+xml" : "text/plain";
    } else if (ArrayBuffer.isView(data) || Object.prototype.toString.call(data) === "[object ArrayBuffer]") {
      body = data;
    } else if (data instanceof Blob) {
      throw new TypeError("display: a Blob is read asynchronously; pass its bytes: display(await blob.bytes(), { mimeType: blob.type })");
    } else {
      body = JSON.stringify(data, null, 2);
      if (body === undefined) {
        throw new TypeError(`display: ${typeof data} cannot be shown; pass a string, bytes (Uint8Array, Buffer) or a JSON value`);
      }
      mimeType ??= "application/json";
    }
    natives.show(body, mimeType ?? "", name ?? "");
  }

  return { display };
})
