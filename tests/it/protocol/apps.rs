//! MCP Apps (`io.modelcontextprotocol/ui`): a host that declares the
//! extension, in either era, sees `run_js` name its View and reads the
//! View's document; one that does not sees today's tool and results; a
//! run's result for the model is the same for both, apart from `_meta`.

use crate::common;

use axum::body::Body;
use common::{Server, post};
use mcp_v8_lambda::protocol::apps::{DISPLAYS_META, EXTENSION, MIME_TYPE, RUN_VIEW_URI};

/// The View's page tool.
const PAGE_TOOL: &str = "read_display_page";
use serde_json::{Value, json};

fn ui_capabilities() -> Value {
    json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}})
}

/// Client capabilities that declare MCP Apps, or declare nothing.
pub(crate) fn capabilities(declared: bool) -> Value {
    if declared {
        ui_capabilities()
    } else {
        json!({})
    }
}

/// Asserts that `listed`, a `tools/list` answer, is what a host that
/// declared MCP Apps (`declared`) sees: run_js naming the View and the page
/// tool listed as the app's; or, for another host, neither.
pub(crate) fn assert_listed_for(listed: &Value, declared: bool) {
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let run_js = crate::common::listed_tool(&listed["result"], "run_js");
    let page = tools.iter().find(|t| t["name"] == PAGE_TOOL);
    if declared {
        assert_eq!(
            run_js["_meta"]["ui"]["resourceUri"], RUN_VIEW_URI,
            "{run_js}"
        );
        assert_eq!(
            page.expect("the page tool")["_meta"]["ui"]["visibility"],
            json!(["app"])
        );
    } else {
        assert!(run_js.get("_meta").is_none(), "{run_js}");
        assert!(page.is_none(), "{listed}");
    }
}

/// A session-era session whose client declared `capabilities`.
pub(crate) async fn session(s: &Server, capabilities: Value) -> String {
    let reply = s
        .rpc(
            None,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "apps-test", "version": "1"}}}),
        )
        .await;
    reply.session_id().expect("a session")
}

/// A 2026-07-28 request of `method` whose client declared `capabilities`.
async fn sessionless(
    s: &Server,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    capabilities: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "apps-test", "version": "1"}
    });
    let mut builder = post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    s.send(builder.body(Body::from(body.to_string())).unwrap())
        .await
        .body
}

fn run_js(tools: &Value) -> Value {
    tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "run_js")
        .cloned()
        .expect("run_js is listed")
}

/// `tool` without its `_meta`.
fn without_meta(mut value: Value) -> Value {
    value.as_object_mut().unwrap().remove("_meta");
    value
}

#[tokio::test]
async fn a_host_that_declares_the_extension_sees_run_js_name_its_view_in_either_era() {
    let s = common::server();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let declared = session(&s, ui_capabilities()).await;
    let plain = session(&s, json!({})).await;
    let with_view = run_js(&s.rpc(Some(&declared), list.clone()).await.body);
    let without = run_js(&s.rpc(Some(&plain), list).await.body);
    assert_eq!(
        with_view["_meta"]["ui"]["resourceUri"], RUN_VIEW_URI,
        "{with_view}"
    );
    assert!(without.get("_meta").is_none(), "{without}");
    assert_eq!(without_meta(with_view), without, "only _meta differs");

    let with_view =
        run_js(&sessionless(&s, "tools/list", None, json!({}), ui_capabilities()).await);
    let without = run_js(&sessionless(&s, "tools/list", None, json!({}), json!({})).await);
    assert_eq!(
        with_view["_meta"]["ui"]["resourceUri"], RUN_VIEW_URI,
        "{with_view}"
    );
    assert!(without.get("_meta").is_none(), "{without}");
    assert_eq!(without_meta(with_view), without, "only _meta differs");
    // Another media type than the View's is no declaration.
    let other = json!({"extensions": {EXTENSION: {"mimeTypes": ["text/uri-list"]}}});
    let listed = run_js(&sessionless(&s, "tools/list", None, json!({}), other).await);
    assert!(listed.get("_meta").is_none(), "{listed}");
    // A stateless server has no resources, so no View to name.
    let stateless = common::server_with(3600, true, None);
    let listed =
        run_js(&sessionless(&stateless, "tools/list", None, json!({}), ui_capabilities()).await);
    assert!(listed.get("_meta").is_none(), "{listed}");
}

#[tokio::test]
async fn the_view_is_one_self_contained_document_under_400_kb() {
    let s = common::server();
    let sid = session(&s, ui_capabilities()).await;
    let read = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": RUN_VIEW_URI}}),
        )
        .await
        .body;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["uri"], RUN_VIEW_URI, "{read}");
    assert_eq!(contents["mimeType"], MIME_TYPE);
    let html = contents["text"].as_str().unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "an HTML5 document");
    assert!(html.len() < 400 * 1024, "{} bytes", html.len());
    // Nothing loaded from elsewhere (names of URLs in its text are no
    // requests; the Chromium test sees that none is made).
    for outside in [
        "src=\"http",
        "src=\"//",
        "href=\"http",
        "@import",
        "url(http",
    ] {
        assert!(!html.contains(outside), "the View names {outside}");
    }
    assert!(
        contents.get("_meta").is_none(),
        "the default CSP suffices: {contents}"
    );
    // In the 2026-07-28 era too, and an unknown ui:// resource is not found.
    let read = sessionless(
        &s,
        "resources/read",
        Some(RUN_VIEW_URI),
        json!({"uri": RUN_VIEW_URI}),
        json!({}),
    )
    .await;
    assert_eq!(
        read["result"]["contents"][0]["mimeType"], MIME_TYPE,
        "{read}"
    );
    let missing = s
        .rpc(
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "ui://mcp-v8-lambda/nope.html"}}),
        )
        .await
        .body;
    assert!(missing["error"].is_object(), "{missing}");
}

/// The model reads the same result whether its host has the View or not;
/// the View gets each display block's type in `_meta`.
#[tokio::test]
async fn a_runs_result_differs_for_a_view_only_in_meta() {
    let s = common::server();
    let code = "display('<b>bold</b>', 'text/html'); \
                display([{a: 1, b: 'x'}, {a: 2, b: 'y'}]); \
                display('<svg xmlns=\"http://www.w3.org/2000/svg\"/>', 'image/svg+xml'); 6 * 7";
    let mut answers = Vec::new();
    for capabilities in [ui_capabilities(), json!({})] {
        let sid = session(&s, capabilities).await;
        answers.push(s.call(&sid, json!({"code": code})).await);
    }
    let [with_view, without] = [answers[0].clone(), answers[1].clone()];
    assert!(without.get("_meta").is_none(), "{without}");
    let entries = with_view["_meta"][DISPLAYS_META]
        .as_array()
        .expect("the displays")
        .clone();
    let types: Vec<_> = entries
        .iter()
        .map(|e| e["mimeType"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types[0], "text/html", "{entries:?}");
    assert!(types[1].starts_with("application/json"), "{entries:?}");
    assert_eq!(types[2], "image/svg+xml", "{entries:?}");
    for entry in &entries {
        let at = entry["content"].as_u64().expect("in the answer") as usize;
        assert_eq!(with_view["content"][at]["type"], "text", "{with_view}");
    }
    assert!(
        with_view["content"][entries[0]["content"].as_u64().unwrap() as usize]["text"]
            .as_str()
            .unwrap()
            .contains("<b>bold</b>")
    );
    // Apart from `_meta` and the run's own id, time and heap, the same.
    let normalize = |mut answer: Value| {
        answer.as_object_mut().unwrap().remove("_meta");
        let text = answer.to_string();
        let id = answer["structuredContent"]["execution_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let ms = answer["structuredContent"]["duration_ms"].to_string();
        let heap = answer["structuredContent"]["heap"]
            .as_str()
            .unwrap()
            .to_owned();
        text.replace(&id, "ID")
            .replace(&heap, "HEAP")
            .replace(&format!("\"duration_ms\":{ms}"), "\"duration_ms\":0")
            .replace(
                &format!("\\\"duration_ms\\\":{ms}"),
                "\\\"duration_ms\\\":0",
            )
    };
    assert_eq!(normalize(with_view), normalize(without));
}

/// The View's page tool is listed to a host that declares the extension
/// alone, as the app's and never the model's; another host cannot call it.
#[tokio::test]
async fn the_page_tool_is_the_views_alone() {
    let s = common::server();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let declared = session(&s, ui_capabilities()).await;
    let plain = session(&s, json!({})).await;
    let listed = s.rpc(Some(&declared), list.clone()).await.body;
    let page = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == PAGE_TOOL)
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(page["_meta"]["ui"]["visibility"], json!(["app"]), "{page}");
    assert_eq!(page["annotations"]["readOnlyHint"], true);
    let names = |body: &Value| -> Vec<String> {
        body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let without = s.rpc(Some(&plain), list).await.body;
    assert!(
        !names(&without).contains(&PAGE_TOOL.to_owned()),
        "{without}"
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": PAGE_TOOL, "arguments": {"uri": "mcp-v8://heaps/x/files/a.json"}}});
    let refused = s.rpc(Some(&plain), call).await.body;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(PAGE_TOOL),
        "{refused}"
    );
    // Nor in the 2026-07-28 era.
    let listed = sessionless(&s, "tools/list", None, json!({}), json!({})).await;
    assert!(!names(&listed).contains(&PAGE_TOOL.to_owned()), "{listed}");
    let listed = sessionless(&s, "tools/list", None, json!({}), ui_capabilities()).await;
    assert!(names(&listed).contains(&PAGE_TOOL.to_owned()), "{listed}");
}

/// A table kept in `/work` reads back a page at a time, sorted on request;
/// what is not a table, not a file or past the bounds says so.
#[tokio::test]
async fn the_page_tool_pages_and_sorts_a_table_in_work() {
    let s = common::server();
    let sid = session(&s, ui_capabilities()).await;
    let code = "const rows = Array.from({length: 1000}, (_, i) => ({ n: i, even: i % 2 === 0, name: 'r' + i })); \
                rows[3].extra = 'only here'; \
                require('fs').writeFileSync('rows.json', JSON.stringify(rows)); \
                require('fs').writeFileSync('note.txt', 'not json'); 1";
    let run = s.call(&sid, json!({"code": code})).await;
    assert_eq!(run["isError"], false, "{run}");
    let heap = run["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("mcp-v8://heaps/{heap}/files/rows.json");
    let page = |arguments: Value| {
        let s = &s;
        let sid = sid.clone();
        async move { s.tool(&sid, PAGE_TOOL, arguments).await }
    };
    let first = page(json!({"uri": uri})).await;
    assert_eq!(first["isError"], false, "{first}");
    let shown = &first["structuredContent"];
    assert_eq!(shown["total"], 1000);
    assert_eq!(shown["offset"], 0);
    assert_eq!(shown["columns"], json!(["n", "even", "name", "extra"]));
    assert_eq!(shown["rows"].as_array().unwrap().len(), 25);
    let later = page(json!({"uri": uri, "offset": 990, "limit": 25})).await;
    let rows = later["structuredContent"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[0]["n"], 990);
    // Sorted as numbers, not as text ("999" before "99" descending).
    let sorted = page(json!({"uri": uri, "limit": 3, "sort_by": "n", "descending": true})).await;
    let ns: Vec<_> = sorted["structuredContent"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n"].as_i64().unwrap())
        .collect();
    assert_eq!(ns, [999, 998, 997], "{sorted}");
    let ascending = page(json!({"uri": uri, "offset": 2, "limit": 2, "sort_by": "name"})).await;
    let names: Vec<_> = ascending["structuredContent"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["r10", "r100"], "{ascending}");
    // A heap never changes: the table was parsed for the first page, and
    // every later page and order was served from it.
    assert_eq!(
        mcp_v8_lambda::tools::display_table_parses(&heap, "/work/rows.json"),
        1
    );
    for (arguments, says) in [
        (
            json!({"uri": uri, "limit": 0}),
            "a page holds 1 to 500 rows",
        ),
        (
            json!({"uri": uri, "limit": 501}),
            "a page holds 1 to 500 rows",
        ),
        (
            json!({"uri": uri, "sort_by": "nope"}),
            "sort_by \"nope\" is not a column of /work/rows.json (n, even, name, extra)",
        ),
        (
            json!({"uri": format!("mcp-v8://heaps/{heap}/files/note.txt")}),
            "/work/note.txt is not a table",
        ),
        (
            json!({"uri": format!("mcp-v8://heaps/{heap}/files/gone.json")}),
            "names no file of yours",
        ),
        (
            json!({"uri": "ui://mcp-v8-lambda/run.html"}),
            "names no file of yours",
        ),
        (json!({"uri": uri, "offset": -1}), "invalid arguments"),
    ] {
        let refused = page(arguments.clone()).await;
        assert_eq!(refused["isError"], true, "{arguments}: {refused}");
        let text = refused["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{arguments}: {text}");
    }
}

/// The View rendered by a host, in headless Chromium, after a real run_js
/// through `serve`: tests/e2e/view/view_in_chromium.mjs checks what a person
/// sees (blocks headed by name or kind, sanitized HTML as tall as its
/// content, the SVG drawn, a 50-row table, a chart legible in light and
/// dark themes, a 100k-row table paged through the page tool) and that
/// nothing was refused. `MCP_V8_VIEW_SCREENSHOT=path.png` keeps a
/// screenshot of each theme (docs/tools.md's).
#[test]
fn a_host_renders_a_run_in_chromium() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "Chromium is not installed at {chromium}: run scripts/install-test-deps.sh (Debian's chromium package)"
    );
    let dir = tempfile::tempdir().unwrap();
    let serve = crate::common::process::Serve::at(dir.path(), common::net::free_port());
    let mut command = crate::clients::node_script("view/view_in_chromium.mjs");
    command.arg(serve.url());
    if let Some(path) = std::env::var_os("MCP_V8_VIEW_SCREENSHOT") {
        command.arg(path);
    }
    let output = command.output().expect("node runs");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
