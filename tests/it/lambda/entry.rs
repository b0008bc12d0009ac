//! What a run does under the Lambda entry (the built function behind a Runtime
//! API): the Web corpus, hostile runs, top-level await, packages from the
//! bucket, files, display() and an MCP Apps host's view.

use super::*;

/// The Web layer under the Lambda entry: every corpus family of
/// tests/web through a 2026-07-28 `run_js` event, with and without a
/// logical session.
#[tokio::test]
async fn the_web_corpus_passes_under_the_lambda_entry() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    for family in crate::engine::web::FAMILIES {
        for session in [None, Some("web-corpus")] {
            let outcome =
                &run_js_2026(&app, &crate::engine::web::corpus_code(family), session).await;
            assert_eq!(outcome["status"], "completed", "{family}: {outcome}");
            let report: Value = serde_json::from_str(outcome["result"].as_str().unwrap()).unwrap();
            assert_eq!(
                report["failed"],
                serde_json::json!([]),
                "{family}, {session:?}"
            );
        }
    }
}

/// Memory past a run's budget and objects V8 cannot snapshot under the
/// Lambda entry, where stateful runs share the function's own process: each
/// call is answered with a tool result, and the process serves the next.
#[tokio::test]
async fn hostile_runs_under_the_lambda_entry_end_in_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    let run = async |code: &str, session: Option<&str>| run_js_2026(&app, code, session).await;
    for session in [None, Some("hostile")] {
        for code in crate::engine::memory::OVER_BUDGET {
            let outcome = run(code, session).await;
            assert!(
                outcome["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("limited to")),
                "{code}: {outcome}"
            );
            assert_eq!(run("1 + 1", session).await["result"], "2");
        }
    }
    for (code, says) in crate::engine::memory::UNSNAPSHOTTABLE {
        let outcome = run(code, Some("hostile")).await;
        assert_eq!(outcome["status"], "failed", "{code}: {outcome}");
        assert!(
            outcome["error"]["message"].as_str().unwrap().contains(says),
            "{code}: {outcome}"
        );
    }
    assert_eq!(run("1 + 1", Some("hostile")).await["result"], "2");
}

/// Top-level `await` keeps declarations and completion values, positions
/// are those of the code as sent, the model reads values as a REPL shows
/// them, and unhandled rejections are warnings, under the Lambda entry,
/// where stateful runs share the function's own process.
#[tokio::test]
async fn top_level_await_keeps_declarations_under_the_lambda_entry() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    for (code, _, expected) in crate::engine::repl::COMPLETIONS {
        assert_eq!(run_js_2026(&app, code, None).await["result"], *expected);
    }
    let declared = run_js_2026(&app, crate::engine::repl::DECLARES, None).await;
    assert_eq!(declared["result"], "1", "{declared}");
    let read = run_js_2026_with(
        &app,
        crate::engine::repl::READS,
        serde_json::json!({ "code": crate::engine::repl::READS, "heap": declared["heap"] }),
    )
    .await;
    assert_eq!(read["result"], crate::engine::repl::READ_BACK, "{read}");
    for (code, at) in crate::engine::repl::POSITIONS {
        let outcome = run_js_2026(&app, code, None).await;
        let stack = outcome["error"]["stack"].as_str().unwrap_or_default();
        assert!(stack.contains(&format!("at {at}")), "{code}: {outcome}");
    }
    for (code, shown, result) in crate::engine::repl::DISPLAYED {
        let call = run_js_event(serde_json::json!({"code": code}));
        let (_, _, body) = invoke(&app, &call).await;
        let text: Value =
            serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["result"], *shown, "{code}: {body}");
        assert_eq!(
            body["result"]["structuredContent"]["result"],
            serde_json::json!(result),
            "{code}: {body}"
        );
    }
    for (code, says) in crate::engine::repl::REJECTIONS {
        let outcome = run_js_2026(&app, code, None).await;
        assert_eq!(outcome["result"], "\"after\"", "{code}: {outcome}");
        let warnings = outcome["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), says.len(), "{code}: {outcome}");
        for (warning, says) in warnings.iter().zip(says.iter()) {
            assert!(
                warning.as_str().unwrap().contains(says),
                "{code}: {warning}"
            );
        }
    }
}

/// The deployment's path for packages: `packages add` with the function's
/// S3 settings writes beside the heaps; a Lambda function on those
/// settings lists them in run_js's description, imports them (its bundle
/// cache filled from S3), and a later invocation restores the heap that
/// has them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packages_added_to_the_bucket_import_under_the_lambda_entry() {
    let cache = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(
        &common::moto::unique("packages"),
        &format!("{}-", common::moto::unique("packages")),
        cache.path().join("heaps").as_path(),
    );
    common::moto::setup(&env);
    let added = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "add"])
        .arg(common::npm::fixture("lodash"))
        .arg(common::npm::fixture("nanoid"))
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    let _function = start_function(env);
    let limit = std::time::Duration::from_secs(120);
    api.give(event_2026("tools/list", None, serde_json::json!({})));
    let listing = rpc_body(&api.answer(limit).await);
    assert!(
        listing.to_string().contains("lodash@4.17.21, nanoid@3.3.7"),
        "{listing}"
    );
    api.give(run_js_event(serde_json::json!({
        "code": "import _ from 'lodash'; import { customAlphabet } from 'nanoid'; const id = customAlphabet('z', 2); _.chunk([1, 2, 3], 2)",
        "session": "lambda-packages",
    })));
    let first = rpc_body(&api.answer(limit).await);
    let outcome = &first["result"]["structuredContent"];
    assert_eq!(outcome["result"], "[[1,2],[3]]", "{first}");
    api.give(run_js_event(serde_json::json!({
        "code": "[_.sum([1, 2]), id()]",
        "heap": outcome["heap"],
    })));
    let second = rpc_body(&api.answer(limit).await);
    assert_eq!(
        second["result"]["structuredContent"]["result"], "[3,\"zz\"]",
        "{second}"
    );
    // The bundles came from S3 into the cache beside the heap cache.
    let cached = std::fs::read_dir(cache.path().join("heaps-packages"))
        .unwrap()
        .count();
    assert_eq!(cached, 2);
}

/// Files through the Lambda entry on moto: a CSV uploaded with `files`, a
/// chart made and shown with `display()` as image content (tests/e2e's
/// chart.js), a later run reading the files from its heap, and the heap's
/// files read back as resources from S3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_display_and_file_resources_under_the_lambda_entry() {
    let cache = tempfile::tempdir().unwrap();
    let bucket = common::moto::unique("files");
    let mut env = common::moto::serve_env(
        &bucket,
        &format!("{}-", common::moto::unique("files")),
        cache.path().join("heaps").as_path(),
    );
    common::moto::setup(&env);
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    let _function = start_function(env);
    let limit = std::time::Duration::from_secs(120);
    let chart = include_str!("../../e2e/chart.js");
    api.give(run_js_event(serde_json::json!({
        "code": chart,
        "files": {"sales.csv": "region,amount\nnorth,10\nsouth,25\nnorth,5\neast,12\n"},
    })));
    let first = rpc_body(&api.answer(limit).await);
    let result = &first["result"];
    assert_eq!(result["isError"], false, "{first}");
    let image = &result["content"][1];
    assert_eq!(image["type"], "image", "{first}");
    assert_eq!(image["mimeType"], "image/png");
    let heap = result["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    api.give(run_js_event(serde_json::json!({
        "code": "[fs.readFileSync('sales.csv', 'utf8').split('\\n').length, fs.statSync('chart.png').size]",
        "heap": heap,
    })));
    let second = rpc_body(&api.answer(limit).await);
    let png_len = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        image["data"].as_str().unwrap(),
    )
    .unwrap()
    .len();
    assert_eq!(
        second["result"]["structuredContent"]["result"],
        format!("[6,{png_len}]"),
        "{second}"
    );
    api.give(event_2026(
        "resources/read",
        None,
        serde_json::json!({"uri": format!("mcp-v8://heaps/{heap}/files/summary.json")}),
    ));
    let read = rpc_body(&api.answer(limit).await);
    assert_eq!(
        read["result"]["contents"][0]["text"], "{\"north\":15,\"south\":25,\"east\":12}",
        "{read}"
    );
}

/// MCP Apps under the Lambda entry: a 2026-07-28 request whose client
/// declares the extension sees run_js name its View and the page tool, and
/// reads the View; one that does not sees neither.
#[tokio::test]
async fn an_mcp_apps_host_sees_the_view_under_the_lambda_entry() {
    use mcp_v8_lambda::protocol::apps::{MIME_TYPE, RUN_VIEW_URI};
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    // `event_2026`'s event, its client's capabilities replaced.
    let declaring = |event: String, capabilities: Value| {
        let mut event: Value = serde_json::from_str(&event).unwrap();
        let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
        event["body"] = body.to_string().into();
        event.to_string()
    };
    for declared in [true, false] {
        let capabilities = crate::protocol::apps::capabilities(declared);
        let list = declaring(
            event_2026("tools/list", None, serde_json::json!({})),
            capabilities.clone(),
        );
        let (status, _, listed) = invoke(&app, &list).await;
        assert_eq!(status, StatusCode::OK, "{listed}");
        crate::protocol::apps::assert_listed_for(&listed, declared);
        let read = declaring(
            event_2026(
                "resources/read",
                Some(RUN_VIEW_URI),
                serde_json::json!({"uri": RUN_VIEW_URI}),
            ),
            capabilities,
        );
        let (status, _, read) = invoke(&app, &read).await;
        assert_eq!(status, StatusCode::OK, "{read}");
        let contents = &read["result"]["contents"][0];
        assert_eq!(contents["mimeType"], MIME_TYPE, "{read}");
        assert!(
            contents["text"]
                .as_str()
                .unwrap()
                .starts_with("<!DOCTYPE html>")
        );
    }
}
