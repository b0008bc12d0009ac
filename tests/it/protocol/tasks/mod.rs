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

mod serve;
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
