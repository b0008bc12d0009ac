//! The official TypeScript SDK and Python `mcp` clients in their flows
//! against `serve`.

use super::*;
use crate::common;

#[test]
fn a_client_asked_for_a_flow_it_does_not_have_fails() {
    for mut command in [node(), python()] {
        command.args(["http://127.0.0.1:9/mcp", "no-such-flow"]);
        let output = command.output().expect("running the client");
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("unknown mode"), "{stderr}");
    }
}

#[test]
fn typescript_sdk_client_threads_a_counter_through_three_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "counter"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    assert_eq!(done["protocol"], "2025-11-25");
    let heap = done["heap"].as_str().unwrap();
    assert!(
        dir.path().join("heaps").join(heap).exists(),
        "the last heap is stored"
    );
}

/// An operator adds a package with the CLI; the official TypeScript client
/// finds it in run_js's description, imports it, and uses it again from
/// the heap, through `serve`.
#[test]
fn typescript_sdk_client_imports_a_package_the_operator_added() {
    let dir = tempfile::tempdir().unwrap();
    let added = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "add", "--data-dir"])
        .arg(dir.path())
        .arg(common::npm::fixture("lodash"))
        .env_remove("MCP_V8_HEAP_BUCKET")
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "packages"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
}

/// Code mode through the official TypeScript client and `serve`: the model
/// reads the upstream's tools in run_js's description and declarations,
/// and one run loops over ten upstream calls, keeping the result.
#[test]
fn typescript_sdk_client_runs_a_code_mode_loop_of_ten_upstream_calls() {
    let upstream = crate::engine::code_mode::Upstream::modern();
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at_with(
        dir.path(),
        common::net::free_port(),
        vec![(
            "MCP_V8_MCP_SERVERS".into(),
            crate::engine::code_mode::servers_json(&[("upstream", &upstream)]),
        )],
    );
    let mut command = node();
    command.args([&serve.url(), "codemode"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    assert_eq!(done["calls"], 10, "{done}");
}

/// The MCP surface through the official TypeScript client and `serve`:
/// annotations, `heap: "latest"`, a 14 s run completing under a 10 s
/// request timeout that progress resets (and timing out without a progress
/// token), a resource read, completions, console lines as log messages
/// after `logging/setLevel`, and an aborted call whose run stops.
#[test]
fn typescript_sdk_client_uses_progress_cancellation_latest_and_resources() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let events = drive_with(&serve.url(), "surface", &["cancel"], || {
        unreachable!("no restart")
    });
    let mut expected = SURFACE_EVENTS.to_vec();
    expected.insert(expected.len() - 1, "cancelled");
    assert_eq!(names(&events), expected);
}

/// The answer budget through the official TypeScript SDK: 3 MB of output,
/// a 2 MB string and 200k rows each answer within 32 KiB, with
/// structuredContent the SDK validates against run_js's output schema, and
/// a link it reads back whole and by page.
#[test]
fn typescript_sdk_reads_large_answers_within_the_budget_and_follows_their_links() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "budget"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    for case in ["output", "string", "rows"] {
        assert!(done[case]["whole"].as_u64().unwrap() > 32 * 1024, "{done}");
    }
}

/// Files in and out through both official clients: a CSV uploaded with
/// `files`, a PNG chart made in the run and shown with `display()` as image
/// content, the run's /work files read back through the resource template.
#[test]
fn both_clients_upload_a_csv_see_a_chart_and_read_files_back() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = node();
    command.args([&serve.url(), "files"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    assert!(done["png"].as_u64().unwrap() > 1000, "{done}");
    let mut command = python();
    command.args([serve.url().as_str(), "files"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
}

/// The same surface through the Python `mcp` client: progress arrives,
/// notifications/cancelled stops a run, a resource reads, completions
/// complete, and after `logging/setLevel` console lines arrive as log
/// messages.
#[test]
fn python_mcp_client_uses_progress_cancellation_latest_and_resources() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = python();
    command.args([serve.url().as_str(), "surface"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    assert!(done["progress"].as_u64().unwrap() >= 2, "{done}");
    assert_eq!(done["logs"], 2, "{done}");
}

/// A deployment with `MCP_V8_CONTINUE_SESSIONS=true`, through both
/// official clients: calls that leave out `heap` in a logical session carry
/// its state (top-level `await` declarations included), `heap: ""` starts
/// fresh, and the text content shows values as a REPL does.
#[test]
fn both_clients_continue_a_session_without_heap_where_the_deployment_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at_with(
        dir.path(),
        common::net::free_port(),
        vec![("MCP_V8_CONTINUE_SESSIONS".into(), "true".into())],
    );
    for mut command in [node(), python()] {
        command.args([serve.url().as_str(), "continue"]);
        let done = finish(command);
        assert_eq!(done["event"], "done", "{done}");
        let heap = done["heap"].as_str().unwrap();
        assert!(dir.path().join("heaps").join(heap).exists(), "{done}");
    }
}

/// 2025-11-25's experimental tasks through both official clients: `run_js`
/// listed with `taskSupport`, a run made a task (the TypeScript SDK's
/// `callToolStream`, Python's `call_tool_as_task`), polled to its end, its
/// result (heap key included) read back, and a long run cancelled as a task.
#[test]
fn both_clients_run_run_js_as_an_experimental_task_and_cancel_one() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let events = drive(&serve.url(), "tasks", || panic!("no restart in this flow"));
    assert_eq!(names(&events), ["task_completed", "task_cancelled"]);
    assert_eq!(events[0]["messages"][0], "taskCreated", "{events:?}");
    let heap = events[0]["heap"].as_str().unwrap();
    assert!(dir.path().join("heaps").join(heap).exists(), "{events:?}");
    let mut command = python();
    command.args([serve.url().as_str(), "tasks"]);
    let done = finish(command);
    assert_eq!(done["event"], "done", "{done}");
    let heap = done["heap"].as_str().unwrap();
    assert!(dir.path().join("heaps").join(heap).exists(), "{done}");
}

#[test]
fn python_mcp_client_threads_a_counter_through_three_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut command = python();
    command.args([serve.url().as_str(), "counter"]);
    let done = finish(command);
    assert_eq!(done["event"], "done");
    let heap = done["heap"].as_str().unwrap();
    assert!(
        dir.path().join("heaps").join(heap).exists(),
        "the last heap is stored"
    );
}

#[test]
fn a_2025_11_25_client_and_a_2026_07_28_client_share_one_deployment_and_its_heaps() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let mut legacy = node();
    legacy.args([&serve.url(), "counter"]);
    let first = finish(legacy);
    assert_eq!(first["protocol"], "2025-11-25");
    let shared = first["heap"].as_str().unwrap().to_owned();

    // Both eras at once: the 2026-07-28 client continues the session-era
    // client's heap by its key while another session-era client runs.
    let mut modern = python_modern();
    modern.args([&serve.url(), "py-modern", &shared]);
    let mut legacy = node();
    legacy.args([&serve.url(), "counter"]);
    let modern = std::thread::spawn(move || finish(modern));
    let second = finish(legacy);
    let modern = modern.join().unwrap();

    assert_eq!(second["protocol"], "2025-11-25");
    assert_eq!(modern["protocol"], "2026-07-28");
    assert_eq!(
        modern["counter"], 6,
        "the counter went on from the shared heap"
    );
    let log = modern["log"].as_array().unwrap();
    assert_eq!(log.len(), 3, "the session argument kept a log: {log:?}");
    assert_eq!(log[2], modern["heap"]);
    // Completions and log messages in this era too: the session named by
    // the run's argument completes, and console lines arrived only where
    // the client opted in with the request's logLevel.
    assert_eq!(modern["completed"], serde_json::json!(["py-modern"]));
    assert_eq!(modern["logs"], 2, "{modern}");
    // The same through the TypeScript SDK's 2026-07-28 client.
    let mut typescript = node_script("ts_modern_client.mjs");
    typescript.args([&serve.url(), "ts-modern"]);
    let typescript = finish(typescript);
    let completed = typescript["completed"].as_array().unwrap();
    assert!(completed.contains(&"ts-modern".into()), "{typescript}");
    assert_eq!(typescript["logs"], 2, "{typescript}");
    for heap in [&shared, modern["heap"].as_str().unwrap()] {
        assert!(dir.path().join("heaps").join(heap).exists(), "{heap}");
    }
}
