// The global `mcp`: tools of the upstream MCP servers the operator lists in
// MCP_V8_MCP_SERVERS, called from code (docs/engine.md, "Code mode"). The
// host makes every request and adds the credentials; this object holds no
// URL and no header, so a heap that keeps it keeps neither.
(natives, load) => {
  "use strict";
  const { servers, start } = natives;
  // Node's util.inspect protocol, which console.log and results follow.
  const INSPECT = Symbol.for("nodejs.util.inspect.custom");
  // A server's tools as [{name, args}], waited for (inspection is
  // synchronous); throws what listing them failed with.
  const toolList = (server) => JSON.parse(start("tools", server));
  const toolNames = (server) => toolList(server).map((tool) => tool.name);
  const described = (server) => {
    try {
      const list = toolList(server).map((tool) => `${tool.name}(${tool.args.join(", ")})`);
      return `mcp.${server} { ${list.join(", ")} }`;
    } catch (error) {
      return `mcp.${server} { tools not listed: ${error.message} }`;
    }
  };

  // An answer is JSON: {"ok": value} or {"error": {message, code, ...}}.
  const settled = (answer) => {
    if (answer.error === undefined) return answer.ok;
    const { message, ...fields } = answer.error;
    const error = new Error(message);
    Object.assign(error, fields);
    throw error;
  };
  const settle = (text) => settled(JSON.parse(text));

  // The upstream's question as `elicit` takes it: the spec's fields only.
  const question = (params) =>
    params.mode === "url"
      ? { mode: "url", message: params.message, url: params.url }
      : { message: params.message, requestedSchema: params.requestedSchema };

  // An upstream that asks the person ({"asks", "resume"}): each question
  // becomes the run's own elicit() (the run may be suspended as a heap
  // while the person decides) and the answers go back to the call.
  const relay = async (server, tool, json, answer) => {
    while (answer.asks !== undefined) {
      const keys = Object.keys(answer.asks);
      let got;
      try {
        got = await Promise.all(keys.map((key) => load("elicit").elicit(question(answer.asks[key].params))));
      } catch (cause) {
        if (answer.resume.kind === "held") start("release", server, answer.resume.token);
        const error = new Error(`${server}.${tool} asked the person, and ${cause.message}`);
        Object.assign(error, { code: "MCP_CANNOT_ASK", server, tool });
        throw error;
      }
      const responses = Object.fromEntries(keys.map((key, i) => [key, got[i]]));
      const answers = JSON.stringify({ resume: answer.resume, responses });
      answer = JSON.parse(await start("call", server, tool, json, answers));
    }
    return settled(answer);
  };

  const callTool = async (server, tool, args) => {
    if (typeof server !== "string" || typeof tool !== "string") {
      throw new TypeError(
        "mcp.callTool(server, tool, args): server and tool are strings; mcp.servers names the servers, await mcp.listTools(server) their tools",
      );
    }
    if (args === undefined || args === null) args = {};
    if (typeof args !== "object" || Array.isArray(args)) {
      throw new TypeError(
        `mcp.callTool("${server}", "${tool}", args): args is an object of the tool's arguments`,
      );
    }
    const json = JSON.stringify(args);
    return relay(server, tool, json, JSON.parse(await start("call", server, tool, json, "asks")));
  };

  const listTools = async (server) => {
    if (typeof server !== "string") {
      throw new TypeError(
        "mcp.listTools(server): server is a string; mcp.servers names the servers",
      );
    }
    return settle(await start("list", server, "", ""));
  };

  // `mcp.<server>.<tool>(args)`: a function per name, made on each read.
  // Names that conversions, promises, serializers, inspectors and test
  // libraries probe are never tools: `'' + mcp.demo` is text, not two calls.
  const NOT_TOOLS = new Set([
    "then", "catch", "finally", "toJSON", "constructor", "inspect", "asymmetricMatch",
    "nodeType", "tagName", "$$typeof", "__proto__", "prototype", "hasOwnProperty",
    "isPrototypeOf", "propertyIsEnumerable",
  ]);
  const proxies = new Map();
  const serverProxy = (server) => {
    let proxy = proxies.get(server);
    if (proxy === undefined) {
      const text = () => `[mcp server ${server}]`;
      const call = (tool) => (args) => callTool(server, tool, args);
      const target = Object.create(null);
      // What console.log shows: the tools and their arguments.
      Object.defineProperty(target, INSPECT, { value: () => described(server), configurable: true });
      proxy = new Proxy(target, {
        get(_target, tool) {
          if (tool === "toString" || tool === "valueOf" || tool === "toLocaleString") return text;
          if (tool === Symbol.toPrimitive) return text;
          if (tool === Symbol.toStringTag) return "mcp server";
          // Node's inspector (node_inspect.js) asks the proxy, not its target.
          if (tool === INSPECT) return _target[INSPECT];
          if (typeof tool !== "string" || NOT_TOOLS.has(tool)) return undefined;
          // A name the server does not list is no tool (`typeof` says
          // "undefined"); a server that cannot list its tools still gets
          // the call, whose error says why.
          let names;
          try {
            names = toolNames(server);
          } catch {
            return call(tool);
          }
          return names.includes(tool) ? call(tool) : undefined;
        },
        // `Object.keys`, `for … in`, `in` and spreading see the tools.
        has(_target, tool) {
          return typeof tool === "string" && toolNames(server).includes(tool);
        },
        ownKeys() {
          return toolNames(server);
        },
        getOwnPropertyDescriptor(_target, tool) {
          if (typeof tool !== "string" || !toolNames(server).includes(tool)) return undefined;
          return { value: call(tool), writable: false, enumerable: true, configurable: true };
        },
      });
      proxies.set(server, proxy);
    }
    return proxy;
  };

  const base = {
    get servers() {
      return servers();
    },
    listTools,
    callTool,
  };
  // console.log(mcp): each server with its tools, and the two functions.
  Object.defineProperty(base, INSPECT, {
    value: () => {
      const parts = servers().map((server) => `${server}: ${described(server)}`);
      parts.push("listTools(server)", "callTool(server, tool, args)");
      return `mcp { ${parts.join(", ")} }`;
    },
    configurable: true,
  });
  const mcp = new Proxy(base, {
    get(target, key, receiver) {
      if (key in target || typeof key !== "string") {
        return Reflect.get(target, key, receiver);
      }
      return servers().includes(key) ? serverProxy(key) : undefined;
    },
    has(target, key) {
      return key in target || (typeof key === "string" && servers().includes(key));
    },
    // `Object.keys(mcp)` and `for … in` list the servers.
    ownKeys(target) {
      return [...Reflect.ownKeys(target), ...servers().filter((s) => !(s in target))];
    },
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string" && !(key in target) && servers().includes(key)) {
        return { value: serverProxy(key), writable: false, enumerable: true, configurable: true };
      }
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  return { mcp };
};
