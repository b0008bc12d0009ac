// performance, navigator, reportError (HTML; High Resolution Time).
(function (natives, load) {
  "use strict";
  const create = {};

  class Performance {
    constructor(key) { if (key !== create) throw new TypeError("Illegal constructor"); }
    // Milliseconds since this run started: each run is a fresh time origin.
    now() { return natives.now(); }
    get timeOrigin() { return natives.timeOrigin(); }
    toJSON() { return { timeOrigin: this.timeOrigin }; }
    get [Symbol.toStringTag]() { return "Performance"; }
  }

  class Navigator {
    constructor(key) { if (key !== create) throw new TypeError("Illegal constructor"); }
    get userAgent() { return natives.version(); }
    get hardwareConcurrency() { return 1; }
    get language() { return "en-US"; }
    get languages() { return ["en-US"]; }
    get [Symbol.toStringTag]() { return "Navigator"; }
  }

  function reportError(error) {
    if (arguments.length === 0) throw new TypeError("reportError: 1 argument required, but only 0 present");
    natives.report(error);
  }

  return {
    performance: new Performance(create), Performance,
    navigator: new Navigator(create), Navigator,
    reportError,
  };
})
