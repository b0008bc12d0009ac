// reportProgress(progress, total?, message?): tells the caller how far the
// run has come, as MCP `notifications/progress` when the call carries a
// progress token (a no-op otherwise). The host checks the values and that
// progress increases within the run (engine/host/progress.rs).
(function (natives) {
  "use strict";
  function reportProgress(progress, total, message) {
    if (arguments.length === 0) {
      throw new TypeError("reportProgress: 1 argument required: reportProgress(progress, total?, message?)");
    }
    natives.report(progress, total, message);
  }
  return { reportProgress };
})
