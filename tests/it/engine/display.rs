//! `display()` (src/engine/host/display.*, src/tools/answer/display.rs) and the
//! files of heaps as resources (src/server/heap_files.rs): blocks on every
//! engine mode, their content in run_js's answer, links to /work files past
//! the answer's bound, and reads of a heap's /work.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mcp_v8_lambda::engine::{Displayed, EngineConfig, RunStatus};
use mcp_v8_lambda::files::DirFileStore;
use mcp_v8_lambda::heap::{FileHeapStore, HeapStore};
use serde_json::{Value, json};

use crate::common::engine::{error_text, run_report};

/// Blocks of every kind, then the completion value.
const SHOW: &str = r#"
display(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10]));
display("<svg xmlns='http://www.w3.org/2000/svg'/>");
display({ rows: [1, 2] });
display("a,b\n1,2", { mimeType: "text/csv", name: "t.csv" });
display(new Uint8Array([37, 80, 68, 70]).buffer, "application/pdf");
7
"#;

fn kinds(displays: &[Displayed]) -> Vec<(&str, Option<&str>, usize)> {
    displays
        .iter()
        .map(|d| (d.mime_type.as_str(), d.name.as_deref(), d.size))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn display_adds_blocks_in_call_order_on_every_engine_mode() {
    let dir = tempfile::tempdir().unwrap();
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let files = Arc::new(DirFileStore::new(dir.path().join("work")));
    let engine = |mode: &str| match mode {
        "stateless" => crate::common::engine::on_workers(EngineConfig::default(), None),
        _ => crate::common::engine::on_workers(EngineConfig::default(), Some(heaps.clone()))
            .with_files(files.clone()),
    };
    for mode in ["stateless", "stateful"] {
        let engine = &engine(mode);
        let report = run_report(engine, SHOW, None).await;
        assert_eq!(
            report.outcome.status,
            RunStatus::Completed,
            "{mode}: {report:#?}"
        );
        assert_eq!(report.outcome.result.as_deref(), Some("7"));
        assert_eq!(
            kinds(&report.displays),
            [
                ("image/png", None, 8),
                ("image/svg+xml", None, 41),
                ("application/json", None, 32),
                ("text/csv", Some("t.csv"), 7),
                ("application/pdf", None, 4),
            ],
            "{mode}"
        );
        let bytes = |i: usize| report.displays[i].bytes.as_deref().unwrap().to_vec();
        assert_eq!(bytes(0), [0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10], "{mode}");
        assert_eq!(
            bytes(2),
            b"{\n  \"rows\": [\n    1,\n    2\n  ]\n}",
            "{mode}"
        );
        assert_eq!(bytes(4), b"%PDF", "{mode}");
        // Shown in a failed run too, as Jupyter keeps output above an error.
        let failed = run_report(engine, "display('before'); throw new Error('late')", None).await;
        assert_eq!(failed.outcome.status, RunStatus::Failed, "{mode}");
        assert_eq!(kinds(&failed.displays), [("text/plain", None, 6)], "{mode}");
    }

    // A stateful run that leaves the displayed bytes in /work names the file.
    for mode in ["stateful", "worker"] {
        let engine = &engine(mode);
        let code = "const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1]); \
                    require('fs').mkdirSync('out'); require('fs').writeFileSync('out/c.png', png); \
                    display(png); display('not a file')";
        let report = run_report(engine, code, None).await;
        assert_eq!(
            report.outcome.status,
            RunStatus::Completed,
            "{mode}: {report:#?}"
        );
        assert_eq!(
            report.displays[0].path.as_deref(),
            Some("/work/out/c.png"),
            "{mode}"
        );
        assert_eq!(report.displays[1].path, None, "{mode}");
        // And a restored heap has display (and its files).
        let heap = report.outcome.heap.clone().unwrap();
        let again = run_report(
            engine,
            "display(require('fs').readFileSync('out/c.png'))",
            Some(&heap),
        )
        .await;
        assert_eq!(
            kinds(&again.displays),
            [("image/png", None, 5)],
            "{mode}: {again:#?}"
        );
        // The heap's tree, as resources/read lists it.
        let tree = engine
            .files_of(&Default::default(), &heap)
            .await
            .unwrap()
            .unwrap();
        let paths: Vec<_> = tree
            .iter()
            .map(|e| (e.path.as_str(), e.dir, e.size))
            .collect();
        assert_eq!(
            paths,
            [
                ("/work", true, 0),
                ("/work/out", true, 0),
                ("/work/out/c.png", false, 5)
            ],
            "{mode}"
        );
        let other = mcp_v8_lambda::tenant::Tenant::of_principal("someone-else");
        assert!(
            engine.files_of(&other, &heap).await.unwrap().is_none(),
            "{mode}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_display_calls_are_errors_that_say_what_to_pass() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    for (code, expected) in [
        ("display()", "1 argument required"),
        ("display(undefined)", "pass a string, bytes"),
        (
            "display('x', { mimeType: 'png' })",
            "media type like \"image/png\"",
        ),
        ("display('x', { name: 3 })", "name must be a string"),
        ("display(new Blob(['x']))", "await blob.bytes()"),
        (
            "for (let i = 0; i < 101; i++) display(String(i))",
            "at most 100 blocks",
        ),
    ] {
        let report = run_report(&engine, code, None).await;
        let error = error_text(code, &report.outcome);
        assert!(error.contains(expected), "{code}: {error}");
    }
    // A block over what an answer can carry keeps its size but not its bytes.
    let report = run_report(&engine, "display(new Uint8Array(6 * 1024 * 1024))", None).await;
    assert_eq!(report.displays[0].size, 6 * 1024 * 1024);
    assert!(report.displays[0].bytes.is_none());
}

/// `display.chart` keeps the x and y columns of the rows as compact JSON of
/// the chart type (what the model reads and the View draws); each mistake
/// says what the rows have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn display_chart_makes_a_chart_block_and_says_what_is_wrong() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let code = "const rows = [{ month: 'Jan', sales: 3, cost: 1, note: 'x' }, { month: 'Feb', sales: 5, cost: null, note: 'y' }]; \
                display.chart({ type: 'bar', data: rows, x: 'month', y: ['sales', 'cost'], title: 'Sales', name: 's.json' }); \
                display.chart({ data: rows, x: 'month' }); 1";
    let report = run_report(&engine, code, None).await;
    assert_eq!(
        report.outcome.status,
        RunStatus::Completed,
        "{:?}",
        report.outcome
    );
    let chart = "application/vnd.mcp-v8-lambda.chart+json";
    assert_eq!(kinds(&report.displays)[0].0, chart);
    assert_eq!(kinds(&report.displays)[0].1, Some("s.json"));
    let body = |i: usize| -> Value {
        serde_json::from_slice(report.displays[i].bytes.as_ref().unwrap()).unwrap()
    };
    assert_eq!(
        body(0),
        json!({"chart": "bar", "title": "Sales", "x": "month", "y": ["sales", "cost"],
            "data": [{"month": "Jan", "sales": 3, "cost": 1}, {"month": "Feb", "sales": 5, "cost": null}]})
    );
    // By default a line of every numeric column.
    assert_eq!(body(1)["chart"], "line");
    assert_eq!(body(1)["y"], json!(["sales", "cost"]));
    for (code, expected) in [
        ("display.chart()", "pass one object"),
        (
            "display.chart({ type: 'pie', data: [{a: 1}], x: 'a' })",
            "type must be \"line\", \"bar\" or \"scatter\", not \"pie\"",
        ),
        (
            "display.chart({ data: [], x: 'a' })",
            "data must be a non-empty array of rows",
        ),
        (
            "display.chart({ data: [{a: 1}, 2], x: 'a' })",
            "data[1] is not an object",
        ),
        (
            "display.chart({ data: [{a: 1, b: 2}], x: 'c' })",
            "x must name a column of the rows (a, b), not \"c\"",
        ),
        (
            "display.chart({ data: [{a: 1, b: 2}], x: 'a', y: 'cost' })",
            "y names \"cost\", which is not a column of the rows (a, b)",
        ),
        (
            "display.chart({ data: [{a: 1, b: 2}, {a: 2, b: 'n/a'}], x: 'a', y: 'b' })",
            "data[1].b is \"n/a\"; convert it (Number(v)) first",
        ),
        (
            "display.chart({ data: [{a: 'x', b: 'y'}], x: 'a' })",
            "y must name one column of numbers",
        ),
        (
            "display.chart({ data: Array.from({length: 10001}, (_, i) => ({i})), x: 'i', y: 'i' })",
            "10001 rows is more than a chart shows (10000)",
        ),
    ] {
        let report = run_report(&engine, code, None).await;
        let error = error_text(code, &report.outcome);
        assert!(error.contains(expected), "{code}: {error}");
    }
}

/// `resources/read` of `uri` on `server`'s session.
async fn read(server: &crate::common::Server, session: &str, uri: &str) -> Value {
    server
        .rpc(
            Some(session),
            json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": uri}}),
        )
        .await
        .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_js_answers_with_the_blocks_and_links_files_past_the_bound() {
    let server = crate::common::server();
    let session = server.initialize().await;
    let result = server.call(&session, json!({"code": SHOW})).await;
    assert_eq!(result["isError"], false, "{result:#}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 6, "{result:#}");
    assert_eq!(content[0]["type"], "text");
    assert_eq!(
        content[1],
        json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10])})
    );
    assert_eq!(
        content[2]["text"],
        "<svg xmlns='http://www.w3.org/2000/svg'/>"
    );
    assert_eq!(
        content[3]["text"],
        "{\n  \"rows\": [\n    1,\n    2\n  ]\n}"
    );
    assert_eq!(content[4]["text"], "a,b\n1,2");
    assert_eq!(content[5]["type"], "resource");
    assert_eq!(content[5]["resource"]["blob"], STANDARD.encode(b"%PDF"));
    assert_eq!(result["structuredContent"]["result"], "7");

    // Two 3 MiB blocks: the first, no file's, is kept apart and linked, the
    // second becomes a link to the file holding it; 4 MiB that no file holds is
    // left out; each says so, and the small block after them still shows.
    let code = "const fs = require('fs'); const big = new Uint8Array(3 * 1024 * 1024); \
                big.set([0x89, 0x50, 0x4e, 0x47]); fs.mkdirSync('charts'); \
                fs.writeFileSync('charts/big chart.png', big); fs.writeFileSync('notes.md', '# hi'); \
                display(new Uint8Array(3 * 1024 * 1024), 'application/octet-stream'); \
                display(big, { name: 'big chart.png' }); display(new Uint8Array(4 * 1024 * 1024)); display('after'); 1";
    let result = server.call(&session, json!({"code": code})).await;
    assert_eq!(result["isError"], false, "{:#}", result["content"][0]);
    let heap = result["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let content = result["content"].as_array().unwrap();
    let types: Vec<_> = content
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    // The first block no file holds is over the answer budget: kept apart
    // and linked.
    assert_eq!(types, ["text", "resource_link", "resource_link", "text"]);
    assert!(
        content[1]["uri"]
            .as_str()
            .unwrap()
            .starts_with("mcp-v8://displays/"),
        "{:?}",
        content[1]
    );
    let uri = format!("mcp-v8://heaps/{heap}/files/charts/big%20chart.png");
    assert_eq!(content[2]["uri"], uri);
    assert_eq!(content[2]["name"], "big chart.png");
    assert_eq!(content[2]["mimeType"], "image/png");
    assert_eq!(content[2]["size"], 3 * 1024 * 1024);
    assert_eq!(content[3]["text"], "after");
    let warnings = result["structuredContent"]["warnings"].to_string();
    assert!(
        warnings.contains("display 2")
            && warnings.contains("is a link to")
            && warnings
                .contains("display 3 (application/octet-stream, 4194304 bytes) was left out"),
        "{warnings}"
    );
    assert!(
        serde_json::to_vec(&result).unwrap().len() <= mcp_v8_lambda::tools::MAX_RESULT_JSON_BYTES
    );

    // The link reads back; so do text files and directories.
    let blob = read(&server, &session, &uri).await;
    let contents = &blob["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "image/png", "{:#}", blob["error"]);
    assert_eq!(
        STANDARD
            .decode(contents["blob"].as_str().unwrap())
            .unwrap()
            .len(),
        3 * 1024 * 1024
    );
    let notes = read(
        &server,
        &session,
        &format!("mcp-v8://heaps/{heap}/files/notes.md"),
    )
    .await;
    assert_eq!(notes["result"]["contents"][0]["text"], "# hi", "{notes}");
    let root = read(&server, &session, &format!("mcp-v8://heaps/{heap}/files/")).await;
    let listing: Value =
        serde_json::from_str(root["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let names: Vec<_> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].clone(), e["type"].clone()))
        .collect();
    assert_eq!(
        names,
        [
            (json!("charts"), json!("directory")),
            (json!("notes.md"), json!("file"))
        ]
    );
    assert_eq!(
        listing["entries"][0]["uri"],
        format!("mcp-v8://heaps/{heap}/files/charts")
    );

    // Unknown paths, unknown heaps and paths climbing out: one "not found".
    let nowhere = "0".repeat(64);
    for uri in [
        format!("mcp-v8://heaps/{heap}/files/missing.txt"),
        format!("mcp-v8://heaps/{nowhere}/files/notes.md"),
        format!("mcp-v8://heaps/{heap}/files/../../etc/passwd"),
    ] {
        let answer = read(&server, &session, &uri).await;
        assert_eq!(answer["error"]["code"], -32602, "{uri}: {answer}");
        assert_eq!(answer["error"]["message"], "Resource not found", "{uri}");
    }
    let templates = server
        .rpc(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"}),
        )
        .await
        .body;
    assert!(
        templates
            .to_string()
            .contains("mcp-v8://heaps/{heap}/files/{+path}"),
        "{templates}"
    );
    // Each template read as listed says it is one and what fills it.
    for template in templates["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
    {
        let answer = read(&server, &session, template).await;
        assert_eq!(answer["error"]["code"], -32602, "{template}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("is a URI template") && message.contains("execution_id"),
            "{template}: {answer}"
        );
    }
}

/// `display()` of what no `/work` file holds and the answer budget has no
/// room for (100 KB of text, 3,000 objects, a 5,000-point chart): each
/// answer stays within the budget, the block is a link kept apart with the
/// caller's files, and the link reads back the whole block; another tenant
/// reading it finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn display_past_the_budget_is_a_link_that_reads_back_whole() {
    const BUDGET: usize = 32 * 1024;
    let server = crate::common::server();
    let session = server.initialize().await;
    let cases = [
        (
            "display('line of text\\n'.repeat(100 * 1024 / 13))",
            "text/plain",
        ),
        (
            "display(Array.from({ length: 3000 }, (_, i) => ({ id: i, name: 'row ' + i, score: i % 97 })))",
            "application/json",
        ),
        (
            "display.chart({ type: 'line', data: Array.from({ length: 5000 }, (_, i) => ({ t: i, v: Math.round(Math.sin(i / 50) * 1000) })), x: 't', y: 'v' })",
            "application/vnd.mcp-v8-lambda.chart+json",
        ),
    ];
    for (code, mime_type) in cases {
        let result = server
            .call(&session, json!({"code": format!("{code}; 1")}))
            .await;
        assert_eq!(result["isError"], false, "{code}: {result:#}");
        let content = result["content"].as_array().unwrap();
        let size = serde_json::to_vec(content).unwrap().len();
        assert!(size <= BUDGET, "{code}: {size} bytes of content");
        let link = content
            .iter()
            .find(|c| c["type"] == "resource_link")
            .unwrap_or_else(|| panic!("{code}: no link in {content:?}"));
        assert_eq!(link["mimeType"], mime_type, "{link}");
        let warnings = result["structuredContent"]["warnings"].to_string();
        assert!(
            warnings.contains("which holds it whole"),
            "{code}: {warnings}"
        );
        let uri = link["uri"].as_str().unwrap();
        let read = read(&server, &session, uri).await;
        let contents = &read["result"]["contents"][0];
        assert_eq!(contents["mimeType"], mime_type, "{read}");
        let text = contents["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{read}"));
        assert_eq!(text.len() as u64, link["size"].as_u64().unwrap(), "{code}");
        match mime_type {
            "text/plain" => assert!(text.starts_with("line of text\n") && text.len() > 100_000),
            "application/json" => {
                let rows: Value = serde_json::from_str(text).unwrap();
                assert_eq!(rows.as_array().unwrap().len(), 3000);
                assert_eq!(rows[2999]["name"], "row 2999");
            }
            _ => {
                let chart: Value = serde_json::from_str(text).unwrap();
                assert_eq!(chart["data"].as_array().unwrap().len(), 5000);
            }
        }
    }
}

/// A file past what one answer carries reads by pages: each page of a text
/// file holds whole lines, the pages together are the file, and a read
/// without a page, or past the last, says which pages there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_reads_back_by_pages_of_whole_lines() {
    let server = crate::common::server();
    let session = server.initialize().await;
    let code = "const w = require('fs').createWriteStream('rows.csv');\n\
        for (let i = 0; i < 400000; i++) if (!w.write(`${i},${'x'.repeat(i % 40)}\\n`)) await new Promise((r) => w.once('drain', r));\n\
        await new Promise((r) => w.end(r)); require('fs').statSync('rows.csv').size";
    let result = server.call(&session, json!({"code": code})).await;
    assert_eq!(result["isError"], false, "{result:#}");
    let heap = result["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    let size: u64 = result["structuredContent"]["result"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let uri = format!("mcp-v8://heaps/{heap}/files/rows.csv");
    let whole = read(&server, &session, &uri).await;
    let message = whole["error"]["message"].as_str().unwrap_or_default();
    let pages = size.div_ceil(mcp_v8_lambda::tools::MAX_READ_FILE_BYTES as u64);
    assert!(message.contains(&format!("?page={pages}")), "{whole:#}");
    let mut text = String::new();
    for page in 1..=pages {
        let answer = read(&server, &session, &format!("{uri}?page={page}")).await;
        let contents = &answer["result"]["contents"][0];
        let part = contents["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer:#}"));
        assert!(part.ends_with('\n'), "page {page} ends with a whole line");
        assert_eq!(contents["_meta"]["mcp-v8-lambda/page"]["pages"], pages);
        text.push_str(part);
    }
    assert_eq!(text.len() as u64, size);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 400000);
    assert_eq!(lines[123456], format!("123456,{}", "x".repeat(123456 % 40)));
    let past = read(&server, &session, &format!("{uri}?page={}", pages + 1)).await;
    assert!(
        past["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("?page=1 to ?page={pages}")),
        "{past:#}"
    );
}
