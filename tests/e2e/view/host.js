// The host side of MCP Apps in the page: the ext-apps SDK's AppBridge over
// its PostMessageTransport, talking to the View in a sandboxed frame, as
// the SDK's basic-host example does. Bundled by view_in_chromium.mjs;
// `window.hostCallTool` is the Node side's MCP client (exposed by
// playwright), which forwards the View's tool calls to the server.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.sizes = [];
// Messages a run's markup might post to the host: none may arrive.
window.pwned = false;
window.addEventListener("message", (event) => {
  if (event.data && event.data.method === "pwned") window.pwned = true;
});

window.startHost = async ({ html, csp, input, result }) => {
  const frame = document.getElementById("view");
  const bridge = new AppBridge(
    null,
    { name: "mcp-v8-lambda chromium test host", version: "1" },
    { serverTools: {}, openLinks: {} },
    { hostContext: { theme: "light", displayMode: "inline", availableDisplayModes: ["inline"] } },
  );
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onsizechange = (size) => {
    window.sizes.push(size);
    if (size.height) frame.style.height = `${size.height}px`;
  };
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: input });
    await bridge.sendToolResult(result);
    window.resultSent = true;
  };
  // The person switches the host's theme: the View is told what changed.
  window.setHostContext = (context) => bridge.setHostContext(context);
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  // The spec's CSP for a resource that declares no `_meta.ui.csp`.
  const meta = `<meta http-equiv="Content-Security-Policy" content="${csp}">`;
  frame.srcdoc = html.replace(/<head>/i, `<head>${meta}`);
};
