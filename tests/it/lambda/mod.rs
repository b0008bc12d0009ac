//! The Lambda entry: every `events/*.json` function URL event through the
//! service Lambda runs, the IAM principal, the binary serving concurrent
//! invocations from a Runtime API, and the deployment templates checked
//! against the code's table definitions and with cfn-lint.

pub(crate) mod asking;
pub(crate) mod deployment;
pub(crate) mod managed;
pub(crate) mod post_response;
pub(crate) mod records;
mod watch;

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use axum::http::StatusCode;
use mcp_v8_lambda::backends::aws::{KeyKind, TABLES};
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::lambda::service;
use mcp_v8_lambda::transport::App;
use serde_json::Value;
use serde_yaml::Value as Yaml;
use sha2::Digest;
use tower::ServiceExt;

mod entry;
mod templates;

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn event(name: &str, session: &str) -> String {
    std::fs::read_to_string(project().join("events").join(format!("{name}.json")))
        .unwrap()
        .replace("REPLACE_WITH_SESSION_ID", session)
}

pub(crate) async fn invoke(app: &App, event: &str) -> (StatusCode, Option<String>, Value) {
    invoke_allowing(app, event, false).await
}

/// `invoke` on a function whose `MCP_V8_ALLOW_UNAUTHENTICATED` is `allow`.
async fn invoke_allowing(
    app: &App,
    event: &str,
    allow: bool,
) -> (StatusCode, Option<String>, Value) {
    let request = lambda_http::request::from_str(event).expect("a function URL event");
    let reply = common::reply(service(app.clone(), allow).oneshot(request).await.unwrap()).await;
    (reply.status, reply.session_id(), reply.body)
}

/// `event` as a function URL without IAM auth delivers it: no caller.
fn unsigned(event: &str) -> String {
    let mut unsigned: Value = serde_json::from_str(event).unwrap();
    unsigned["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    unsigned.to_string()
}

fn local_app(dir: &std::path::Path) -> App {
    crate::common::app_on_workers(&Config::from_lookup(|_| None).unwrap(), dir, None)
}

#[tokio::test]
async fn every_event_file_gets_its_documented_answer() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    let (status, sid, body) = invoke(&app, &event("initialize", "")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "mcp-v8-lambda");
    let sid = sid.expect("initialize returns a session id");

    let (status, _, _) = invoke(&app, &event("initialized", &sid)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _, body) = invoke(&app, &event("tools-list", &sid)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["result"]["tools"].as_array().unwrap().len() > 1);
    let (status, _, body) = invoke(&app, &event("run-js", &sid)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"]["structuredContent"]["result"], "1", "{body}");
    assert!(body["result"]["structuredContent"]["heap"].is_string());
    let (status, _, body) = invoke(&app, &event("unknown-session", &sid)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], -32001);
    let (status, _, _) = invoke(&app, &event("delete", &sid)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _, _) = invoke(&app, &event("tools-list", &sid)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "deleted");

    let (status, sid, body) = invoke(&app, &event("run-js-2026", "")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(sid.is_none(), "2026-07-28 has no sessions");
    assert_eq!(
        body["result"]["structuredContent"]["result"], "42",
        "{body}"
    );
    assert_eq!(body["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_session_answers_only_the_iam_principal_that_created_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    let (_, sid, _) = invoke(&app, &event("initialize", "")).await;
    let sid = sid.unwrap();
    let (status, _, _) = invoke(&app, &event("tools-list", &sid)).await;
    assert_eq!(status, StatusCode::OK);
    let other = event("tools-list", &sid).replace("user/agent-operator", "user/someone-else");
    let (status, _, body) = invoke(&app, &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // Where the operator allows callers nobody authenticated, such a
    // caller is still another principal.
    let (status, _, _) = invoke_allowing(&app, &unsigned(&event("tools-list", &sid)), true).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an unauthenticated caller is another principal"
    );
}

/// Without IAM auth on the URL and without a bearer token or JWT, the
/// function serves no one, and says how to configure auth; the operator's
/// explicit switch opens it; a configured bearer token takes over the gate.
#[tokio::test]
async fn a_function_that_authenticates_no_one_refuses_every_unsigned_request() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    for name in ["initialize", "run-js-2026"] {
        let (status, sid, body) = invoke(&app, &unsigned(&event(name, ""))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {body}");
        assert!(sid.is_none());
        let message = body["error"]["message"].as_str().unwrap();
        for names in [
            "AWS_IAM",
            "MCP_V8_AUTH_TOKEN_SHA256",
            "MCP_V8_ALLOW_UNAUTHENTICATED",
        ] {
            assert!(message.contains(names), "{message}");
        }
    }
    let (status, _, _) = invoke(&app, &event("initialize", "")).await;
    assert_eq!(status, StatusCode::OK, "an IAM caller passes");
    let (status, sid, _) = invoke_allowing(&app, &unsigned(&event("initialize", "")), true).await;
    assert_eq!(status, StatusCode::OK, "allowed by the operator");
    assert!(sid.is_some());

    let token = "a-bearer-token";
    let digest = hex::encode(sha2::Sha256::digest(token.as_bytes()));
    let dir = tempfile::tempdir().unwrap();
    let config =
        Config::from_lookup(|name| (name == "MCP_V8_AUTH_TOKEN_SHA256").then(|| digest.clone()))
            .unwrap();
    let guarded = crate::common::app_on_workers(&config, dir.path(), None);
    let mut with_token: Value = serde_json::from_str(&unsigned(&event("initialize", ""))).unwrap();
    with_token["headers"]["authorization"] = Value::String(format!("Bearer {token}"));
    let (status, _, body) = invoke(&guarded, &with_token.to_string()).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the bearer token is the gate: {body}"
    );
    let (status, _, body) = invoke(&guarded, &unsigned(&event("initialize", ""))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
}

#[tokio::test]
async fn the_bare_function_url_path_serves_mcp_too() {
    let dir = tempfile::tempdir().unwrap();
    let app = local_app(dir.path());
    let at_root = event("initialize", "")
        .replace("\"rawPath\": \"/mcp\"", "\"rawPath\": \"/\"")
        .replace("\"path\": \"/mcp\"", "\"path\": \"/\"");
    assert!(at_root.contains("\"rawPath\": \"/\""));
    let (status, sid, _) = invoke(&app, &at_root).await;
    assert_eq!(status, StatusCode::OK);
    assert!(sid.is_some());
}

/// A 2026-07-28 function URL event (no session to set up first) for
/// `method` with `params`, on the model of `events/run-js-2026.json`.
pub(crate) fn event_2026(method: &str, name: Option<&str>, mut params: Value) -> String {
    let mut event: Value = serde_json::from_str(&event("run-js-2026", "")).unwrap();
    let model: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    params["_meta"] = model["params"]["_meta"].clone();
    let headers = event["headers"].as_object_mut().unwrap();
    headers.insert("mcp-method".into(), method.into());
    match name {
        Some(name) => headers.insert("mcp-name".into(), name.into()),
        None => headers.remove("mcp-name"),
    };
    event["body"] =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            .to_string()
            .into();
    event.to_string()
}

/// The outcome of a 2026-07-28 `run_js` of `code` through the Lambda
/// entry, logged in `session` when one is named.
pub(crate) async fn run_js_2026(app: &App, code: &str, session: Option<&str>) -> Value {
    let mut arguments = serde_json::json!({ "code": code });
    if let Some(session) = session {
        arguments["session"] = session.into();
    }
    run_js_2026_with(app, code, arguments).await
}

/// `run_js` with `arguments` through the Lambda entry (2026-07-28).
async fn run_js_2026_with(app: &App, code: &str, arguments: Value) -> Value {
    let (status, _, body) = invoke(app, &run_js_event(arguments)).await;
    assert_eq!(status, StatusCode::OK, "{code}: {body}");
    body["result"]["structuredContent"].clone()
}

/// The JSON-RPC answer inside a function URL response the function posted.
pub(crate) fn rpc_body(answer: &common::runtime_api::Answer) -> Value {
    assert_eq!(answer.outcome, "response", "{}", answer.body);
    let response: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    serde_json::from_str(response["body"].as_str().unwrap()).unwrap()
}

/// The binary started as a Lambda function; killed when dropped, with its
/// engine workers where it leads a process group of its own.
pub(crate) struct Function(std::process::Child, bool);

impl Function {
    /// Whether the function's process is still running.
    pub(crate) fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// The function's process id, which is its group's where it has one.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        if self.1 {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary the Runtime API tests start: this build's, or the artifact
/// `cargo lambda build --release` made when `MCP_V8_LAMBDA_BINARY` names it
/// (`target/lambda/mcp-v8-lambda/bootstrap`), to smoke-test what deploys.
fn function_binary() -> PathBuf {
    std::env::var_os("MCP_V8_LAMBDA_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mcp-v8-lambda")))
}

/// [`function_binary`] started as a Lambda function with `env` (its
/// Runtime API's included), logging warnings only.
pub(crate) fn start_function(env: Vec<(String, String)>) -> Function {
    start_function_writing(env, std::process::Stdio::null())
}

/// [`start_function`] with its standard output, where the metrics go
/// (docs/observability.md), on `stdout`.
pub(crate) fn start_function_writing(
    env: Vec<(String, String)>,
    stdout: std::process::Stdio,
) -> Function {
    Function(
        Command::new(function_binary())
            .envs(env)
            .env("RUST_LOG", "warn")
            .stdout(stdout)
            .spawn()
            .expect("starting the Lambda entry"),
        false,
    )
}

/// [`start_function`] in a process group of its own, which `api` freezes
/// between invocations as Lambda freezes an environment.
pub(crate) fn start_frozen_function(
    api: &common::runtime_api::RuntimeApi,
    env: Vec<(String, String)>,
) -> Function {
    start_frozen_function_logging(api, env, std::process::Stdio::inherit())
}

/// [`start_frozen_function`] with its log on `stderr`, at the level `env`'s
/// `RUST_LOG` names (warnings where it names none).
pub(crate) fn start_frozen_function_logging(
    api: &common::runtime_api::RuntimeApi,
    env: Vec<(String, String)>,
    stderr: std::process::Stdio,
) -> Function {
    use std::os::unix::process::CommandExt;
    let function = Function(
        Command::new(function_binary())
            .env("RUST_LOG", "warn")
            .envs(env)
            .envs(api.function_env())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .expect("starting the Lambda entry"),
        true,
    );
    api.freeze(function.pid());
    function
}

/// A 2026-07-28 `tools/call` of `run_js` with `arguments`, as a function
/// URL event.
pub(crate) fn run_js_event(arguments: Value) -> String {
    event_2026(
        "tools/call",
        Some("run_js"),
        serde_json::json!({"name": "run_js", "arguments": arguments}),
    )
}

/// Lambda Managed Instances hand one instance several invocations at once
/// (`AWS_LAMBDA_MAX_CONCURRENCY`). A run that loops until its timeout must
/// hold up neither a `tools/list` nor a stateful run of another session
/// given after it: both answer first, and the loop still ends with its
/// timeout. Served one at a time, or with stateful runs queued behind one
/// another in the function's process, they would answer after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_max_concurrency_a_looping_run_holds_up_no_other_invocation() {
    let cache = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(
        &common::moto::unique("concurrent"),
        &format!("{}-", common::moto::unique("concurrent")),
        cache.path(),
    );
    common::moto::setup(&env);
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    env.push(("AWS_LAMBDA_MAX_CONCURRENCY".into(), "3".into()));
    let function = start_function(env);

    let run_js = |code: &str, session: &str, timeout: f64| {
        run_js_event(serde_json::json!({
            "code": code, "session": session, "execution_timeout_secs": timeout}))
    };
    let limit = std::time::Duration::from_secs(120);
    let looping = api.give(run_js("for (;;) {}", "looping", 10.0));
    // The loop must be running before the others arrive, or a quick run
    // could take the process's one snapshot slot first and pass without
    // workers: the others come once a worker of the function spins.
    api.all_taken(limit).await;
    common::process::wait_spinning(function.0.id(), 1).await;
    let listing = api.give(event_2026("tools/list", None, serde_json::json!({})));
    let quick = api.give(run_js("globalThis.n = 41; n + 1", "quick", 5.0));

    let first = api.answer(limit).await;
    let second = api.answer(limit).await;
    let last = api.answer(limit).await;
    let mut early = [first.request_id.clone(), second.request_id.clone()];
    early.sort();
    assert_eq!(
        (early, last.request_id.clone()),
        ([listing.clone(), quick.clone()], looping),
        "the loop answered before an invocation given after it"
    );
    for answer in [&first, &second] {
        let body = rpc_body(answer);
        if answer.request_id == listing {
            assert!(body.to_string().contains("\"run_js\""), "{body}");
        } else {
            assert_eq!(
                body["result"]["structuredContent"]["result"], "42",
                "{body}"
            );
        }
    }
    let body = rpc_body(&last);
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(body.to_string().contains("timed_out"), "{body}");
}
