// DOMException, Event, EventTarget, CustomEvent, AbortController, AbortSignal
// (DOM Standard; WebIDL for DOMException). Evaluated once per context as
// `(natives, load) => exports`.
(function (natives, load) {
  "use strict";

  const CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4,
    InvalidCharacterError: 5, NoModificationAllowedError: 7, NotFoundError: 8,
    NotSupportedError: 9, InUseAttributeError: 10, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
    InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18,
    NetworkError: 19, AbortError: 20, URLMismatchError: 21,
    QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };
  const CONSTANTS = [
    ["INDEX_SIZE_ERR", 1], ["DOMSTRING_SIZE_ERR", 2], ["HIERARCHY_REQUEST_ERR", 3],
    ["WRONG_DOCUMENT_ERR", 4], ["INVALID_CHARACTER_ERR", 5], ["NO_DATA_ALLOWED_ERR", 6],
    ["NO_MODIFICATION_ALLOWED_ERR", 7], ["NOT_FOUND_ERR", 8], ["NOT_SUPPORTED_ERR", 9],
    ["INUSE_ATTRIBUTE_ERR", 10], ["INVALID_STATE_ERR", 11], ["SYNTAX_ERR", 12],
    ["INVALID_MODIFICATION_ERR", 13], ["NAMESPACE_ERR", 14], ["INVALID_ACCESS_ERR", 15],
    ["VALIDATION_ERR", 16], ["TYPE_MISMATCH_ERR", 17], ["SECURITY_ERR", 18],
    ["NETWORK_ERR", 19], ["ABORT_ERR", 20], ["URL_MISMATCH_ERR", 21],
    ["QUOTA_EXCEEDED_ERR", 22], ["TIMEOUT_ERR", 23], ["INVALID_NODE_TYPE_ERR", 24],
    ["DATA_CLONE_ERR", 25],
  ];

  class DOMException extends Error {
    #name;
    #code;
    constructor(message = "", options = "Error") {
      super(String(message));
      const name = options !== null && typeof options === "object"
        ? (options.name === undefined ? "Error" : String(options.name))
        : String(options);
      if (options !== null && typeof options === "object" && "cause" in options) {
        Object.defineProperty(this, "cause", { value: options.cause, writable: true, configurable: true });
      }
      this.#name = name;
      this.#code = CODES[name] ?? 0;
    }
    get name() { return #name in this ? this.#name : "Error"; }
    get code() { return #code in this ? this.#code : 0; }
  }
  for (const [key, value] of CONSTANTS) {
    const d = { value, enumerable: true };
    Object.defineProperty(DOMException, key, d);
    Object.defineProperty(DOMException.prototype, key, d);
  }

  const NONE = 0, CAPTURING_PHASE = 1, AT_TARGET = 2, BUBBLING_PHASE = 3;
  let stateOf;

  class Event {
    #s;
    constructor(type, init = undefined) {
      if (arguments.length === 0) throw new TypeError("Event constructor: 1 argument required, but only 0 present");
      const i = init ?? {};
      if (typeof i !== "object" && typeof i !== "function") throw new TypeError("Event constructor: the init argument must be an object");
      this.#s = {
        type: String(type), bubbles: !!i.bubbles, cancelable: !!i.cancelable,
        composed: !!i.composed, canceled: false, stop: false, stopNow: false,
        passive: false, target: null, currentTarget: null, phase: NONE,
        dispatching: false, timeStamp: Date.now(),
      };
    }
    static { stateOf = (event) => event.#s; }
    get type() { return this.#s.type; }
    get target() { return this.#s.target; }
    get srcElement() { return this.#s.target; }
    get currentTarget() { return this.#s.currentTarget; }
    get eventPhase() { return this.#s.phase; }
    get bubbles() { return this.#s.bubbles; }
    get cancelable() { return this.#s.cancelable; }
    get composed() { return this.#s.composed; }
    get defaultPrevented() { return this.#s.canceled; }
    get isTrusted() { return false; }
    get timeStamp() { return this.#s.timeStamp; }
    get returnValue() { return !this.#s.canceled; }
    set returnValue(value) { if (!value) this.preventDefault(); }
    get cancelBubble() { return this.#s.stop; }
    set cancelBubble(value) { if (value) this.#s.stop = true; }
    composedPath() { return this.#s.dispatching && this.#s.currentTarget ? [this.#s.currentTarget] : []; }
    preventDefault() { if (this.#s.cancelable && !this.#s.passive) this.#s.canceled = true; }
    stopPropagation() { this.#s.stop = true; }
    stopImmediatePropagation() { this.#s.stop = true; this.#s.stopNow = true; }
    get [Symbol.toStringTag]() { return "Event"; }
  }
  for (const [key, value] of [["NONE", NONE], ["CAPTURING_PHASE", CAPTURING_PHASE], ["AT_TARGET", AT_TARGET], ["BUBBLING_PHASE", BUBBLING_PHASE]]) {
    Object.defineProperty(Event, key, { value, enumerable: true });
    Object.defineProperty(Event.prototype, key, { value, enumerable: true });
  }

  class CustomEvent extends Event {
    #detail;
    constructor(type, init = undefined) {
      super(type, init);
      this.#detail = init?.detail ?? null;
    }
    get detail() { return this.#detail; }
    get [Symbol.toStringTag]() { return "CustomEvent"; }
  }

  function flatten(options) {
    if (typeof options === "boolean") return { capture: options };
    if (options === null || options === undefined) return { capture: false };
    return { capture: !!options.capture, once: !!options.once, passive: !!options.passive, signal: options.signal };
  }

  let listenersOf;

  class EventTarget {
    #listeners = new Map();
    constructor() {}
    static { listenersOf = (target) => target.#listeners; }
    addEventListener(type, callback, options = undefined) {
      if (arguments.length < 2) throw new TypeError("addEventListener: 2 arguments required");
      const o = flatten(options);
      if (callback === null || callback === undefined) return;
      if (typeof callback !== "function" && typeof callback !== "object") {
        throw new TypeError("addEventListener: the listener must be a function or an object");
      }
      if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
        throw new TypeError("addEventListener: options.signal must be an AbortSignal");
      }
      if (o.signal?.aborted) return;
      type = String(type);
      let list = this.#listeners.get(type);
      if (!list) this.#listeners.set(type, list = []);
      if (list.some((l) => l.callback === callback && l.capture === o.capture)) return;
      const entry = { callback, capture: o.capture, once: !!o.once, passive: !!o.passive, removed: false };
      list.push(entry);
      if (o.signal) {
        onAbort(o.signal, () => this.removeEventListener(type, callback, { capture: o.capture }));
      }
    }
    removeEventListener(type, callback, options = undefined) {
      const capture = flatten(options).capture;
      const list = this.#listeners.get(String(type));
      if (!list) return;
      const i = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (i >= 0) {
        list[i].removed = true;
        list.splice(i, 1);
      }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) throw new TypeError("dispatchEvent: the argument must be an Event");
      const s = stateOf(event);
      if (s.dispatching) throw new DOMException("The event is already being dispatched", "InvalidStateError");
      s.dispatching = true;
      s.target = this;
      s.currentTarget = this;
      s.phase = AT_TARGET;
      try {
        const list = this.#listeners.get(s.type);
        if (list && !s.stop) {
          for (const l of [...list]) {
            if (l.removed) continue;
            if (l.once) this.removeEventListener(s.type, l.callback, { capture: l.capture });
            s.passive = l.passive;
            try {
              if (typeof l.callback === "function") {
                l.callback.call(this, event);
              } else {
                const handle = l.callback.handleEvent;
                if (typeof handle !== "function") throw new TypeError("the listener's handleEvent is not a function");
                handle.call(l.callback, event);
              }
            } catch (error) {
              globalThis.reportError(error);
            }
            s.passive = false;
            if (s.stopNow) break;
          }
        }
      } finally {
        s.dispatching = false;
        s.phase = NONE;
        s.currentTarget = null;
        s.stop = false;
        s.stopNow = false;
      }
      return !s.canceled;
    }
    get [Symbol.toStringTag]() { return "EventTarget"; }
  }

  // Abort algorithms for host code (dependent signals; fetch).
  let onAbort;
  let signalAbort;
  let create;

  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    #algorithms = [];
    #dependents = [];
    #handler = null;
    constructor(key) {
      if (key !== create) throw new TypeError("Illegal constructor");
      super();
    }
    static {
      onAbort = (signal, algorithm) => {
        if (!signal.#aborted) signal.#algorithms.push(algorithm);
      };
      signalAbort = (signal, reason) => {
        if (signal.#aborted) return;
        signal.#aborted = true;
        signal.#reason = reason === undefined
          ? new DOMException("This operation was aborted", "AbortError")
          : reason;
        const algorithms = signal.#algorithms;
        signal.#algorithms = [];
        const dependents = signal.#dependents.filter((d) => !d.#aborted);
        signal.#dependents = [];
        for (const dependent of dependents) {
          dependent.#aborted = true;
          dependent.#reason = signal.#reason;
        }
        for (const algorithm of algorithms) algorithm();
        signal.dispatchEvent(new Event("abort"));
        for (const dependent of dependents) {
          const rest = dependent.#algorithms;
          dependent.#algorithms = [];
          for (const algorithm of rest) algorithm();
          dependent.dispatchEvent(new Event("abort"));
        }
      };
      create = {};
    }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    throwIfAborted() { if (this.#aborted) throw this.#reason; }
    get onabort() { return this.#handler; }
    set onabort(value) {
      const fresh = this.#handler === null;
      this.#handler = typeof value === "function" || (value !== null && typeof value === "object") ? value : null;
      if (fresh && this.#handler !== null) {
        this.addEventListener("abort", (event) => {
          const h = this.#handler;
          if (typeof h === "function") h.call(this, event);
        });
      }
    }
    static abort(reason = undefined) {
      const signal = new AbortSignal(create);
      signalAbort(signal, reason);
      return signal;
    }
    static timeout(milliseconds) {
      const ms = Number(milliseconds);
      if (!Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) {
        throw new TypeError(`AbortSignal.timeout: ${milliseconds} is not a valid number of milliseconds`);
      }
      const signal = new AbortSignal(create);
      // Does not keep the run going, as in Node; a heap keeps no timers.
      natives.setTimeout(() => {
        signalAbort(signal, new DOMException("The operation timed out.", "TimeoutError"));
      }, ms);
      return signal;
    }
    static any(signals) {
      const list = [...signals];
      for (const s of list) {
        if (!(s instanceof AbortSignal)) throw new TypeError("AbortSignal.any: every item must be an AbortSignal");
      }
      const result = new AbortSignal(create);
      for (const s of list) {
        if (s.#aborted) {
          result.#aborted = true;
          result.#reason = s.#reason;
          return result;
        }
      }
      for (const s of list) s.#dependents.push(result);
      return result;
    }
    get [Symbol.toStringTag]() { return "AbortSignal"; }
  }

  class AbortController {
    #signal = new AbortSignal(create);
    get signal() { return this.#signal; }
    abort(reason = undefined) { signalAbort(this.#signal, reason); }
    get [Symbol.toStringTag]() { return "AbortController"; }
  }

  return {
    DOMException, Event, EventTarget, CustomEvent, AbortController, AbortSignal,
    onAbort, signalAbort,
  };
})
