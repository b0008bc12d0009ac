// elicit({ message, requestedSchema }) or elicit({ mode: "url", message, url }):
// a promise of the person's answer, { action, content }. The request is
// checked by the host before anything is sent (natives.check throws what
// is wrong). The promises wait here, in the heap: when the run has nothing
// else to do, the host suspends it (`suspend`) and stores the heap; the
// answers come back into a restored copy of it (`resume`).
(function (natives) {
  "use strict";
  const waiting = new Map();
  let made = 0;
  let completion;

  function elicit(params) {
    if (arguments.length === 0) {
      throw new TypeError("elicit: 1 argument required: { message, requestedSchema } or { mode: \"url\", message, url }");
    }
    const json = JSON.stringify(params === undefined ? null : params);
    const checked = natives.check(json ?? "null", waiting.size);
    made += 1;
    // Keys count per call, from 1: the host numbers the call's requests
    // (this heap's earlier calls asked too).
    const key = `elicit-${typeof natives.count === "number" ? natives.count : made}`;
    return new Promise((resolve) => {
      waiting.set(key, { params: checked, resolve });
    });
  }

  return {
    elicit,
    // How many elicitations wait.
    waiting: () => waiting.size,
    // Keeps the run's completion value for `resume` and gives the waiting
    // elicitations as JSON, { key: params }.
    suspend(value) {
      completion = value;
      const requests = {};
      for (const [key, { params }] of waiting) requests[key] = JSON.parse(params);
      return JSON.stringify(requests);
    },
    // Settles each waiting elicitation with its response (JSON, { key:
    // response }) and gives back the completion value `suspend` kept.
    resume(json) {
      const responses = JSON.parse(json);
      for (const key of Object.keys(responses)) {
        const entry = waiting.get(key);
        if (entry === undefined) continue;
        waiting.delete(key);
        entry.resolve(responses[key]);
      }
      const value = completion;
      completion = undefined;
      return value;
    },
  };
})
