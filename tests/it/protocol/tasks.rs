//! MCP tasks beyond the conformance suite: a 90 s run that outlives its
//! client's connection under `serve`, and on Lambda (the binary against the
//! test Runtime API, stores on moto, the Invoke API faked on loopback) a
//! task handed to the function's own asynchronous invocation, run once
//! however often the event comes, cancelled and read through other
//! instances, and ended `failed` when its invocation dies.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::common;
use crate::common::process::Serve;
use crate::common::runtime_api::RuntimeApi;
use crate::lambda::{Function, event_2026, rpc_body, start_function};
use mcp_v8_lambda::protocol::apps::DISPLAYS_META;

/// A 2025-11-25 session over plain HTTP: `initialize`, then requests.
struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn open(url: &str) -> Session {
        let http = reqwest::Client::new();
        let response = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tasks","version":"1"}}}))
            .send()
            .await
            .unwrap();
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: Value = response.json().await.unwrap();
        assert!(
            body["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
            "{body}"
        );
        Session {
            http,
            url: url.to_owned(),
            id,
        }
    }

    fn post(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}))
    }

    async fn call_method(&self, method: &str, params: Value) -> Value {
        self.post(method, params)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

const NINETY_SECONDS: &str =
    "await new Promise(r => setTimeout(r, 90000)); globalThis.answer = 42; answer";

/// A 90 s run started as a task goes on after its client has gone (the
/// connection that started it dropped at once, the session never used
/// again) and is read back complete through a new session; the same run
/// without a task is answered on its own request, as before tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ninety_second_task_outlives_its_client_and_the_same_run_without_a_task_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::at(dir.path(), common::net::free_port());
    let url = serve.url();
    let arguments = json!({"code": NINETY_SECONDS, "execution_timeout_secs": 150});

    let direct = {
        let url = url.clone();
        let arguments = arguments.clone();
        tokio::spawn(async move {
            let session = Session::open(&url).await;
            session
                .call_method(
                    "tools/call",
                    json!({"name": "run_js", "arguments": arguments}),
                )
                .await
        })
    };
    let task_id = {
        let session = Session::open(&url).await;
        let created = session
            .call_method(
                "tools/call",
                json!({"name": "run_js", "arguments": arguments, "task": {"ttl": 600000}}),
            )
            .await;
        assert_eq!(created["result"]["task"]["status"], "working", "{created}");
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_owned()
        // The session and its client end here.
    };
    let started = Instant::now();
    let reader = Session::open(&url).await;
    let finished = loop {
        let got = reader
            .call_method("tasks/get", json!({"taskId": task_id}))
            .await;
        let status = got["result"]["status"].as_str().unwrap().to_owned();
        if status != "working" {
            break got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(170),
            "still working: {got}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    assert_eq!(finished["result"]["status"], "completed", "{finished}");
    let result = reader
        .call_method("tasks/result", json!({"taskId": task_id}))
        .await;
    assert_eq!(
        result["result"]["structuredContent"]["result"], "42",
        "{result}"
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    let heap = result["result"]["structuredContent"]["heap"]
        .as_str()
        .unwrap();
    assert!(dir.path().join("heaps").join(heap).exists(), "{result}");

    let direct = direct.await.unwrap();
    assert_eq!(
        direct["result"]["structuredContent"]["result"], "42",
        "{direct}"
    );
}

/// Where the fake Invoke API puts the events it is given: (function, event).
type Invoked = Arc<Mutex<mpsc::UnboundedSender<(String, String)>>>;

/// The Invoke API of Lambda on loopback, as far as the function calls it:
/// every asynchronous invocation's event comes out of the returned channel
/// (for the test to hand to a Runtime API, once, twice or never).
async fn fake_invoke_api() -> (String, mpsc::UnboundedReceiver<(String, String)>) {
    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode};
    let (sender, events) = mpsc::unbounded_channel();
    let sender = Arc::new(Mutex::new(sender));
    let app = axum::Router::new()
        .route(
            "/2015-03-31/functions/{name}/invocations",
            axum::routing::post(
                |State(sender): State<Invoked>,
                 Path(name): Path<String>,
                 headers: HeaderMap,
                 body: String| async move {
                    // The function signs its call and asks for an
                    // asynchronous invocation, as Lambda requires.
                    let signed = headers
                        .get("authorization")
                        .is_some_and(|v| v.as_bytes().starts_with(b"AWS4-HMAC-SHA256"));
                    let event = headers
                        .get("x-amz-invocation-type")
                        .is_some_and(|v| v == "Event");
                    if !signed || !event {
                        return StatusCode::FORBIDDEN;
                    }
                    sender.lock().unwrap().send((name, body)).unwrap();
                    StatusCode::ACCEPTED
                },
            ),
        )
        .with_state(sender);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), events)
}

/// Stores on moto, the fake Invoke API, and tasks that beat every 0.5 s
/// (so an interrupted one shows in 3 s); a `run_js` asking for more than
/// a second is a task.
struct Deployment {
    env: Vec<(String, String)>,
    invocations: mpsc::UnboundedReceiver<(String, String)>,
    _cache: tempfile::TempDir,
}

async fn deployment() -> Deployment {
    let cache = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(
        &common::moto::unique("tasks"),
        &format!("{}-", common::moto::unique("tasks")),
        cache.path(),
    );
    common::moto::setup(&env);
    let (endpoint, invocations) = fake_invoke_api().await;
    env.extend([
        ("AWS_ENDPOINT_URL_LAMBDA".to_owned(), endpoint),
        ("MCP_V8_LAMBDA_TASK_ABOVE_SECS".to_owned(), "1".to_owned()),
        ("MCP_V8_TASK_HEARTBEAT_MS".to_owned(), "500".to_owned()),
        ("MCP_V8_ALLOW_UNAUTHENTICATED".to_owned(), "true".to_owned()),
    ]);
    Deployment {
        env,
        invocations,
        _cache: cache,
    }
}

impl Deployment {
    /// A function instance of its own: the binary on a Runtime API.
    async fn instance(&self) -> (RuntimeApi, Function) {
        let api = RuntimeApi::start().await;
        let mut env = self.env.clone();
        env.extend(api.function_env());
        (api, start_function(env))
    }

    /// The next asynchronous invocation the function asked for.
    async fn invoked(&mut self) -> String {
        let (function, event) =
            tokio::time::timeout(Duration::from_secs(60), self.invocations.recv())
                .await
                .expect("the function invoked itself")
                .unwrap();
        assert_eq!(function, "mcp-v8-lambda", "it invokes itself, by name");
        event
    }
}

/// A 2026-07-28 event whose client declares the tasks extension.
fn with_extension(method: &str, name: Option<&str>, params: Value) -> String {
    let mut event: Value = serde_json::from_str(&event_2026(method, name, params)).unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    event["body"] = body.to_string().into();
    event.to_string()
}

fn run_js(code: &str, session: &str, timeout: f64) -> String {
    with_extension(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {
            "code": code, "session": session, "execution_timeout_secs": timeout}}),
    )
}

fn task_get(id: &str) -> String {
    with_extension("tasks/get", Some(id), json!({"taskId": id}))
}

const LIMIT: Duration = Duration::from_secs(120);

/// Waits, asking through `api`, until task `id`'s runner has taken it: its
/// status no longer says it waits for an instance.
async fn taken_by_its_runner(api: &mut RuntimeApi, id: &str) {
    let started = Instant::now();
    loop {
        let got = ask(api, task_get(id)).await;
        if got["result"]["statusMessage"] != "The run is waiting for an instance to take it." {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{got}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Gives `event` to `api` and returns the JSON-RPC answer.
async fn ask(api: &mut RuntimeApi, event: String) -> Value {
    api.give(event);
    rpc_body(&api.answer(LIMIT).await)
}

/// A task started on one invocation is run by the asynchronous invocation
/// the function sends itself; Lambda delivering that event twice runs it
/// once (the session log gets one entry); another invocation reads it
/// complete, its result and heap as a direct call returns them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_task_runs_once_in_the_functions_own_invocation_however_often_it_arrives() {
    let mut deployment = deployment().await;
    let (mut api, _function) = deployment.instance().await;
    let session = format!("handed-{}", uuid::Uuid::new_v4().simple());
    let created = ask(
        &mut api,
        run_js(
            "await new Promise(r => setTimeout(r, 300)); globalThis.v = 6; v * 7",
            &session,
            30.0,
        ),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // Durable before the answer: read at once by the next invocation.
    let working = ask(&mut api, task_get(&id)).await;
    assert_eq!(working["result"]["status"], "working", "{working}");

    let handed = deployment.invoked().await;
    api.give(handed.clone());
    api.give(handed);
    for _ in 0..2 {
        let answer = api.answer(LIMIT).await;
        assert_eq!(answer.outcome, "response", "{}", answer.body);
    }
    let done = ask(&mut api, task_get(&id)).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let outcome = &done["result"]["result"]["structuredContent"];
    assert_eq!(outcome["result"], "42", "{done}");
    assert!(
        outcome["heap"].as_str().is_some_and(|h| h.len() == 64),
        "{done}"
    );

    let log = ask(
        &mut api,
        with_extension(
            "tools/call",
            Some("list_session_snapshots"),
            json!({"name": "list_session_snapshots", "arguments": {"session": session}}),
        ),
    )
    .await;
    let entries = log["result"]["structuredContent"]["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(entries.len(), 1, "the run ran once: {log}");
    assert_eq!(entries[0]["output_heap"], outcome["heap"]);
}

/// A cancel sent to another instance stops a handed run within a second
/// or so (its runner reads the record every 0.5 s), and every instance
/// then reads the task `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_through_another_instance_stops_a_handed_run() {
    let mut deployment = deployment().await;
    let (mut first, _one) = deployment.instance().await;
    let (mut second, _two) = deployment.instance().await;
    let created = ask(
        &mut first,
        run_js(
            "await new Promise(r => setTimeout(r, 60000)); 1",
            "cancelled-task",
            90.0,
        ),
    )
    .await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    first.give(deployment.invoked().await);
    first.all_taken(LIMIT).await;
    taken_by_its_runner(&mut second, &id).await;
    let ack = ask(
        &mut second,
        with_extension("tasks/cancel", Some(&id), json!({"taskId": id})),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled_at = Instant::now();
    let handed = first.answer(LIMIT).await;
    assert_eq!(handed.outcome, "response", "{}", handed.body);
    let stopped_after = handed.at - cancelled_at;
    eprintln!("the handed run stopped {stopped_after:?} after the cancel");
    assert!(
        stopped_after < Duration::from_secs(10),
        "the 60 s run went on after the cancel"
    );
    for api in [&mut first, &mut second] {
        let got = ask(api, task_get(&id)).await;
        assert_eq!(got["result"]["status"], "cancelled", "{got}");
    }
}

/// A handed run whose invocation dies (the process killed) leaves its task
/// `failed` with a message saying it was interrupted, never `working`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_invocation_dies_ends_failed_saying_so() {
    let mut deployment = deployment().await;
    let (mut first, one) = deployment.instance().await;
    let (mut second, _two) = deployment.instance().await;
    let created = ask(
        &mut first,
        run_js(
            "await new Promise(r => setTimeout(r, 60000)); 1",
            "dying-task",
            90.0,
        ),
    )
    .await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    first.give(deployment.invoked().await);
    first.all_taken(LIMIT).await;
    taken_by_its_runner(&mut second, &id).await;
    drop(one);
    let started = Instant::now();
    let failed = loop {
        let got = ask(&mut second, task_get(&id)).await;
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still working after its invocation died: {got}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let message = failed["result"]["statusMessage"].as_str().unwrap();
    assert!(message.contains("interrupted"), "{message}");
    assert_eq!(failed["result"]["error"]["code"], -32603, "{failed}");
}

/// A 2026-07-28 request (`name`: its `Mcp-Name`) of a client declaring
/// the tasks extension.
fn extension_request(
    url: &str,
    method: &str,
    name: &str,
    params: Value,
) -> reqwest::RequestBuilder {
    declaring_request(url, method, name, params, &[])
}

/// [`extension_request`] of a client declaring `more` extensions too.
fn declaring_request(
    url: &str,
    method: &str,
    name: &str,
    params: Value,
    more: &[&str],
) -> reqwest::RequestBuilder {
    let mut extensions = json!({"io.modelcontextprotocol/tasks": {}});
    for extension in more {
        extensions[*extension] = json!({});
    }
    crate::common::request_2026(url, method, name, params, json!({"extensions": extensions}))
}

/// A 2026-07-28 `tools/call` of `run_js` declaring the tasks extension.
fn extension_call(url: &str, arguments: Value) -> reqwest::RequestBuilder {
    extension_request(
        url,
        "tools/call",
        "run_js",
        json!({"name": "run_js", "arguments": arguments}),
    )
}

/// The JSON-RPC answer to `request`.
async fn answer(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// `serve` with one engine worker, whose runs become tasks after 300 ms.
pub(crate) fn serve_with_tasks(dir: &std::path::Path) -> Serve {
    Serve::at_with(
        dir,
        common::net::free_port(),
        vec![
            ("MCP_V8_ENGINE_WORKERS".into(), "1".into()),
            ("MCP_V8_TASK_AFTER_MS".into(), "300".into()),
            ("MCP_V8_QUEUE_WAIT_MS".into(), "5000".into()),
        ],
    )
}

/// A `run_js` the server answers directly, to a client that declared the
/// extension, is a complete result (one of the three checks the conformance
/// suite's `tasks-result-type-complete-on-non-task-responses` holds, which
/// expected-failures-tasks.yaml masks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_answered_directly_under_the_extension_is_a_complete_result() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with_tasks(dir.path());
    let direct = answer(extension_call(&serve.url(), json!({"code": "6 * 7"}))).await;
    assert_eq!(direct["result"]["resultType"], "complete", "{direct}");
    assert_eq!(
        direct["result"]["structuredContent"]["result"], "42",
        "{direct}"
    );
}

/// Starts a run that outlasts `MCP_V8_TASK_AFTER_MS` under `serve`; its
/// task's id.
async fn started_task(url: &str, code: &str) -> String {
    let created = answer(extension_call(
        url,
        json!({"code": code, "execution_timeout_secs": 90}),
    ))
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// `method` (`tasks/get`, `tasks/cancel`) of task `id`, as answered.
async fn on_task(url: &str, method: &str, id: &str) -> Value {
    answer(extension_request(url, method, id, json!({"taskId": id}))).await
}

/// Task `id` once it has ended, as `tasks/get` answers it.
async fn ended(url: &str, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = on_task(url, "tasks/get", id).await;
        if got["result"]["status"] != "working" {
            return got;
        }
        assert!(started.elapsed() < LIMIT, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A run that became a task for an MCP Apps host ends with what a direct
/// call gives it: the View's `_meta` beside the same content; for another
/// host, no `_meta`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_for_an_mcp_apps_host_ends_with_the_views_meta() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let code = "await new Promise(r => setTimeout(r, 1000)); display([{a: 1}, {a: 2}]); 1";
    let mut results = Vec::new();
    for more in [&["io.modelcontextprotocol/ui"][..], &[]] {
        let call =
            json!({"name": "run_js", "arguments": {"code": code, "execution_timeout_secs": 90}});
        let created = answer(declaring_request(&url, "tools/call", "run_js", call, more)).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let id = created["result"]["taskId"].as_str().unwrap().to_owned();
        let done = ended(&url, &id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        results.push(done["result"]["result"].clone());
    }
    let [with_view, without] = [&results[0], &results[1]];
    let entries = &with_view["_meta"][DISPLAYS_META];
    assert_eq!(entries[0]["mimeType"], "application/json", "{with_view}");
    assert_eq!(entries[0]["content"], 1, "{with_view}");
    assert!(without.get("_meta").is_none(), "{without}");
    assert_eq!(with_view["content"][1], without["content"][1]);
}

/// The trial's probe: a run's `reportProgress()` reaches its task's
/// status message at the next poll, not only at the next beat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_status_message_carries_the_runs_progress() {
    let dir = tempfile::tempdir().unwrap();
    let serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let id = started_task(
        &url,
        "await new Promise(r => setTimeout(r, 1500)); reportProgress(40, 100, 'loading rows');\n\
         await new Promise(r => setTimeout(r, 30000)); 1",
    )
    .await;
    let started = Instant::now();
    loop {
        let got = on_task(&url, "tasks/get", &id).await;
        let message = got["result"]["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if message.contains("loading rows (40 of 100)") {
            assert_eq!(got["result"]["status"], "working", "{got}");
            break;
        }
        assert!(started.elapsed() < LIMIT, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = on_task(&url, "tasks/cancel", &id).await;
}

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
