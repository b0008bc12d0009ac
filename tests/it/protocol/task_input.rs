//! A task whose run asks the person, in both task forms, under `serve`:
//! the tasks extension's `input_required` answered with `tasks/update`
//! (a subset at a time, a refused response changing nothing), a run that
//! asks before it becomes a task (SEP-2322 first, then the task), and
//! 2025-11-25's `input_required` whose requests come on `tasks/result`'s
//! stream.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::process::Serve;
use crate::protocol::tasks::serve_with_tasks;

const LIMIT: Duration = Duration::from_secs(120);

/// A 2026-07-28 request of a client that declares the tasks extension and
/// form elicitation.
fn request(url: &str, method: &str, name: &str, params: Value) -> reqwest::RequestBuilder {
    let capabilities = json!({
        "extensions": {"io.modelcontextprotocol/tasks": {}},
        "elicitation": {"form": {}}});
    crate::common::request_2026(url, method, name, params, capabilities)
}

async fn answer(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

fn form(message: &str) -> String {
    format!(
        "elicit({{ message: '{message}', requestedSchema: {{ type: 'object', \
         properties: {{ n: {{ type: 'integer' }} }}, required: ['n'] }} }})"
    )
}

fn accept(n: Value) -> Value {
    json!({ "action": "accept", "content": { "n": n } })
}

/// `tasks/get` of task `id` until its status is no longer `working`.
async fn settled(url: &str, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = answer(request(url, "tasks/get", id, json!({"taskId": id}))).await;
        if got["result"]["status"] != "working" {
            return got["result"].clone();
        }
        assert!(started.elapsed() < LIMIT, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn update(url: &str, id: &str, responses: Value) -> Value {
    let params = json!({"taskId": id, "inputResponses": responses});
    answer(request(url, "tasks/update", id, params)).await
}

/// An acknowledgement of `tasks/update`: a complete result without the
/// task's fields.
fn acknowledged(ack: &Value) {
    let result = &ack["result"];
    assert_eq!(result["resultType"], "complete", "{ack}");
    for field in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(result.get(field).is_none(), "{field}: {ack}");
    }
}

/// A run that asks after it became a task: the task goes `input_required`
/// with both requests of its `Promise.all`; a response the schema refuses
/// is -32602 and changes nothing; one answer at a time is acknowledged,
/// the answered key leaves `inputRequests`, and once both are in, the run
/// continues from its heap to the task's result, its side effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_task_that_asks_is_answered_with_tasks_update_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let serve: Serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let code = format!(
        "await new Promise(r => setTimeout(r, 1000)); \
         const [a, b] = await Promise.all([{}, {}]); \
         require('node:fs').appendFileSync('/work/count.txt', 'x'); \
         [a.content.n * 10 + b.content.n, require('node:fs').readFileSync('/work/count.txt', 'utf8')]",
        form("First?"),
        form("Second?")
    );
    let arguments = json!({"code": code, "session": "task-asks"});
    let call = json!({"name": "run_js", "arguments": arguments});
    let created = answer(request(&url, "tools/call", "run_js", call)).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();

    let waiting = settled(&url, &id).await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let requests = waiting["inputRequests"].as_object().unwrap();
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, ["elicit-1", "elicit-2"], "{waiting}");
    assert_eq!(requests["elicit-1"]["method"], "elicitation/create");
    assert_eq!(requests["elicit-2"]["params"]["message"], "Second?");
    assert!(
        !waiting.to_string().contains("v1."),
        "the request state stays with the server: {waiting}"
    );

    // A refused response is -32602 for the client; the task takes none of
    // the update and asks again, its message saying why.
    let refused = update(
        &url,
        &id,
        json!({ "elicit-1": accept(json!("four")), "elicit-2": accept(json!(2)) }),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let asked_again = settled(&url, &id).await;
    assert_eq!(asked_again["status"], "input_required", "{asked_again}");
    let again = &asked_again["inputRequests"];
    assert_eq!(again["elicit-2"], waiting["inputRequests"]["elicit-2"]);
    let message = again["elicit-1"]["params"]["message"].as_str().unwrap();
    let asked = waiting["inputRequests"]["elicit-1"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("The answer given was not accepted") && message.ends_with(asked),
        "{message}"
    );

    let ack = update(
        &url,
        &id,
        json!({ "elicit-1": accept(json!(4)), "not-asked": { "ignored": true } }),
    )
    .await;
    acknowledged(&ack);
    let partial = settled(&url, &id).await;
    assert_eq!(partial["status"], "input_required", "{partial}");
    let keys: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["elicit-2"], "{partial}");

    let ack = update(&url, &id, json!({ "elicit-2": accept(json!(2)) })).await;
    acknowledged(&ack);
    let done = settled(&url, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let outcome = &done["result"]["structuredContent"];
    assert_eq!(outcome["result"], r#"[42,"x"]"#, "{done}");

    let again = update(&url, &id, json!({ "elicit-2": accept(json!(3)) })).await;
    acknowledged(&again);
    assert_eq!(settled(&url, &id).await["result"], done["result"]);
}

/// A run that asks at once, under the extension, is answered as a direct
/// call is (an `InputRequiredResult`, no task); the retry that carries the
/// answer runs long enough to become the task, which ends with the answer
/// in its result and no `requestState` in its envelope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_asks_before_it_becomes_a_task_takes_its_answer_into_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let serve: Serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let code = "const a = await elicit({ message: 'Name?', requestedSchema: { type: 'object', \
         properties: { name: { type: 'string' } }, required: ['name'] } }); \
         await new Promise(r => setTimeout(r, 1000)); `Hello, ${a.content.name}!`";
    let call = json!({"name": "run_js", "arguments": {"code": code, "session": "mrtr-task"}});
    let first = answer(request(&url, "tools/call", "run_js", call.clone())).await;
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none(), "{first}");

    let mut retry = call;
    retry["inputResponses"] =
        json!({ "elicit-1": { "action": "accept", "content": { "name": "Alice" } } });
    retry["requestState"] = first["requestState"].clone();
    let second = answer(request(&url, "tools/call", "run_js", retry)).await;
    let second = &second["result"];
    assert_eq!(second["resultType"], "task", "{second}");
    assert!(second.get("requestState").is_none(), "{second}");
    assert!(second.get("inputRequests").is_none(), "{second}");
    let id = second["taskId"].as_str().unwrap();
    let done = settled(&url, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["result"], "\"Hello, Alice!\"",
        "{done}"
    );
}

/// The next JSON-RPC message of a `text/event-stream` response.
async fn next_event(response: &mut reqwest::Response, pending: &mut String) -> Value {
    loop {
        if let Some(event) = crate::common::take_event(pending) {
            return event;
        }
        let chunk = tokio::time::timeout(LIMIT, response.chunk())
            .await
            .expect("an event in time")
            .unwrap()
            .expect("the stream has another event");
        pending.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// 2025-11-25's form: a task-augmented run that asks goes
/// `input_required`; `tasks/result` carries its `elicitation/create`,
/// naming the task, on its stream; the client's reply continues the run,
/// and the same stream ends with the task's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_task_that_asks_is_answered_through_tasks_result() {
    let dir = tempfile::tempdir().unwrap();
    let serve: Serve = serve_with_tasks(dir.path());
    let url = serve.url();
    let http = reqwest::Client::new();
    let post = |session: Option<&str>, body: Value| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.json(&body)
    };
    let init = post(
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}, "tasks": {}},
        "clientInfo": {"name": "task-asks", "version": "1"}}}),
    )
    .send()
    .await
    .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(Some(&session), initialized).send().await.unwrap();

    let code = format!("const a = await {}; a.content.n * 2", form("Half of it?"));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_js", "arguments": {"code": code}, "task": {"ttl": 60000}}});
    let created: Value = post(Some(&session), call)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = Instant::now();
    loop {
        let get =
            json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": id}});
        let got: Value = post(Some(&session), get)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if got["result"]["status"] == "input_required" {
            break;
        }
        assert_eq!(got["result"]["status"], "working", "{got}");
        assert!(started.elapsed() < LIMIT, "{got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let result =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}});
    let mut stream = post(Some(&session), result).send().await.unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut pending = String::new();
    let ask = next_event(&mut stream, &mut pending).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Half of it?", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id,
        "{ask}"
    );
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept(json!(21))});
    let posted = post(Some(&session), reply).send().await.unwrap();
    assert_eq!(posted.status(), 202);
    let answer = next_event(&mut stream, &mut pending).await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "42",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id,
        "{answer}"
    );
}
