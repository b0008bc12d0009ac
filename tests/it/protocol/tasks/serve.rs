//! Tasks under serve: tasks/get and tasks/cancel, a stopped server, a client
//! gone before its run became a task, a task that cannot be handed off, and a
//! cancel in this process without the store.

use super::*;

/// `tasks/get` is a complete result whatever the task's state (the second
/// masked check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_get_is_a_complete_result() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let id = started_task(&url, "await new Promise(r => setTimeout(r, 1500)); 6 * 7").await;
    let get = || on_task(&url, "tasks/get", &id);
    let working = get().await;
    assert_eq!(working["result"]["resultType"], "complete", "{working}");
    assert_eq!(working["result"]["status"], "working", "{working}");
    let done = ended(&url, &id).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["status"], "completed", "{done}");
}

/// Under `serve`, a run that outlasts `MCP_V8_TASK_AFTER_MS` becomes a
/// task; `tasks/cancel` is acknowledged with a complete result (the third
/// masked check), and stops the run and frees its worker, not only its
/// status: with one worker, another client's run answers at once, where a
/// run left going would hold the worker for its 60 s and the other would be
/// refused as busy after its 5 s wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_under_serve_stops_the_run_and_frees_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let id = started_task(&url, "await new Promise(r => setTimeout(r, 60000)); 1").await;
    let ack = on_task(&url, "tasks/cancel", &id).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // Answered directly, or as a task when the worker took a moment to be
    // free again; either way within the queue's 5 s wait.
    let next = answer(extension_call(&url, json!({"code": "6 * 7"}))).await;
    let next = match next["result"]["taskId"].as_str() {
        Some(task) => {
            let got = ended(&url, task).await;
            got["result"]["result"].clone()
        }
        None => next["result"].clone(),
    };
    assert_eq!(
        next["structuredContent"]["result"], "42",
        "the cancelled run still held the one worker: {next}"
    );
    let got = on_task(&url, "tasks/get", &id).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
}

/// A server stopped with SIGTERM while a task runs ends the task at once:
/// after the restart it reads `failed`, saying the server stopped and that
/// nothing of the run was stored, and the session goes on from the heap it
/// had before the call, as the message says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_running_when_serve_is_stopped_fails_saying_the_server_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let before = answer(extension_call(
        &url,
        json!({"code": "globalThis.kept = 1; kept", "session": "stopped"}),
    ))
    .await;
    assert_eq!(
        before["result"]["structuredContent"]["result"], "1",
        "{before}"
    );
    let created = answer(extension_call(
        &url,
        json!({"code": "kept = 2; await new Promise(r => setTimeout(r, 60000)); kept",
               "session": "stopped", "heap": "latest", "execution_timeout_secs": 90}),
    ))
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    serve.stop_and_restart(Duration::from_secs(20));
    let got = on_task(&url, "tasks/get", &id).await;
    assert_eq!(
        got["result"]["status"], "failed",
        "at once, not after its silence: {got}"
    );
    let message = got["result"]["statusMessage"].as_str().unwrap();
    for part in [
        "the server stopped",
        "nothing of the run was stored",
        "before this call",
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(!message.contains("function"), "{message}");
    let after = answer(extension_call(
        &url,
        json!({"code": "kept", "session": "stopped", "heap": "latest"}),
    ))
    .await;
    assert_eq!(
        after["result"]["structuredContent"]["result"], "1",
        "the session went on from the heap before the stopped call: {after}"
    );
}

/// With the extension, a run is the server's to make a task of only once
/// it has waited `MCP_V8_TASK_AFTER_MS`; a client that goes away before
/// then cancels it, as without tasks. With one engine worker, a run of
/// another client then gets the worker; were the first run left going, it
/// would hold the worker for its 60 s and the second would be refused as
/// busy after its 5 s queue wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_before_its_run_became_a_task_cancels_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at_with(
        dir.path(),
        common::net::free_port(),
        vec![
            ("MCP_V8_ENGINE_WORKERS".into(), "1".into()),
            ("MCP_V8_TASK_AFTER_MS".into(), "30000".into()),
            ("MCP_V8_QUEUE_WAIT_MS".into(), "5000".into()),
        ],
    );
    let url = serve.url();
    let gone = tokio::spawn(
        extension_call(
            &url,
            json!({"code": "const t = Date.now(); while (Date.now() - t < 60000) {} 1", "execution_timeout_secs": 90}),
        )
        .send(),
    );
    // Gone once its run loops in the worker.
    common::process::wait_spinning(serve.pid(), 1).await;
    gone.abort();
    let answer: Value = extension_call(&url, json!({"code": "6 * 7"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "42",
        "the gone client's run still held the one worker: {answer}"
    );
}

/// A task the function cannot hand to a new invocation (its Invoke endpoint
/// answers 404, as moto does when the self-invocation goes to
/// `AWS_ENDPOINT_URL` under the emulator) is the tool's error, which the
/// model reads: what failed, that nothing ran, what the operator sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_cannot_be_handed_off_is_a_tool_error_that_says_what_to_set() {
    let mut deployment = deployment().await;
    for (name, value) in &mut deployment.env {
        if name == "AWS_ENDPOINT_URL_LAMBDA" {
            // moto has no such function.
            *value = common::moto::moto().endpoint.clone();
        }
    }
    let (mut api, _function) = deployment.instance().await;
    let answer = ask(&mut api, run_js("1 + 1", "unhanded", 30.0)).await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Nothing ran"), "{text}");
    assert!(text.contains("AWS_ENDPOINT_URL_LAMBDA"), "{text}");
    assert!(text.contains("lambda:InvokeFunction"), "{text}");
}

/// A call that runs until its control is cancelled, and says so.
#[derive(Debug, Default)]
struct UntilCancelled(tokio::sync::Notify);

#[async_trait::async_trait]
impl mcp_v8_lambda::tasks::Execute for UntilCancelled {
    async fn execute(
        &self,
        _: &mcp_v8_lambda::tenant::Tenant,
        _: &mcp_v8_lambda::tasks::TaskRequest,
        control: Arc<mcp_v8_lambda::tools::RunControl>,
        _: Option<std::time::SystemTime>,
    ) -> mcp_v8_lambda::tasks::Executed {
        while !control.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        self.0.notify_one();
        mcp_v8_lambda::tasks::Executed::Ended(mcp_v8_lambda::tasks::TaskOutcome::Result(json!({})))
    }
}

/// A cancel made in the process running the task stops its run directly:
/// here the store is read for cancels once an hour, so only the direct
/// path can stop it. Prints how long after the cancel the run saw it.
#[tokio::test]
async fn a_cancel_in_this_process_stops_the_run_without_the_store() {
    use mcp_v8_lambda::tasks::{Changed, TaskBook, TaskRequest, TaskSettings, Tasks};
    let dir = tempfile::tempdir().unwrap();
    let db =
        mcp_v8_lambda::backends::embedded::open_database(&dir.path().join("tasks.redb")).unwrap();
    let book = TaskBook::new(Arc::new(
        mcp_v8_lambda::meta::RedbMetaStore::new(db).unwrap(),
    ));
    let executor = Arc::new(UntilCancelled::default());
    let settings = TaskSettings {
        cancel_poll: Duration::from_secs(3600),
        heartbeat: Duration::from_secs(3600),
        ..TaskSettings::default()
    };
    let tasks = Tasks::new(book, executor.clone(), None, settings);
    let tenant = mcp_v8_lambda::tenant::Tenant::anonymous();
    let request = TaskRequest {
        tool: "run_js".into(),
        arguments: None,
        logical_session: None,
        protocol_version: "2026-07-28".into(),
        ui_extension: false,
        elicitation: None,
        retry: None,
    };
    let record = tasks.start(&tenant, request, 60_000).await.unwrap();
    let asked = Instant::now();
    let changed = tasks.cancel(&tenant, record.task_id).await.unwrap();
    assert!(matches!(changed, Changed::Applied(_)), "{changed:?}");
    tokio::time::timeout(Duration::from_secs(10), executor.0.notified())
        .await
        .expect("the cancelled run went on: the cancel reached it only through the store");
    println!("the run saw the cancel {:?} after it", asked.elapsed());
}
