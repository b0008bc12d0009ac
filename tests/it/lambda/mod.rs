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
    Function(
        Command::new(function_binary())
            .envs(env)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
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

fn yaml(file: &str) -> Yaml {
    serde_yaml::from_str(&std::fs::read_to_string(project().join(file)).unwrap()).unwrap()
}

/// The `!Sub` suffix of a table's name in a template.
fn table_suffix(properties: &Yaml) -> String {
    let Yaml::Tagged(tagged) = &properties["TableName"] else {
        panic!("TableName must be !Sub \"${{TablePrefix}}…\"")
    };
    tagged
        .value
        .as_str()
        .unwrap()
        .strip_prefix("${TablePrefix}")
        .unwrap()
        .to_owned()
}

fn check_tables(file: &str) {
    let template = yaml(file);
    let resources = template["Resources"].as_mapping().unwrap();
    let tables: Vec<&Yaml> = resources
        .values()
        .filter(|r| r["Type"] == "AWS::DynamoDB::Table")
        .map(|r| &r["Properties"])
        .collect();
    assert_eq!(tables.len(), TABLES.len(), "{file}: one resource per table");
    for table in TABLES {
        let properties = tables
            .iter()
            .find(|p| table_suffix(p) == table.suffix)
            .unwrap_or_else(|| panic!("{file}: no table {}", table.suffix));
        assert_eq!(
            properties["BillingMode"], "PAY_PER_REQUEST",
            "{file} {}",
            table.suffix
        );
        let mut keys = vec![(table.partition_key, "HASH")];
        keys.extend(table.sort_key.map(|k| (k, "RANGE")));
        let schema: Vec<(String, String)> = properties["KeySchema"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["AttributeName"].as_str().unwrap().to_owned(),
                    k["KeyType"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = keys
            .iter()
            .map(|((name, _), kind)| (name.to_string(), kind.to_string()))
            .collect();
        assert_eq!(schema, expected, "{file} {} key schema", table.suffix);
        let attributes: Vec<(String, String)> = properties["AttributeDefinitions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["AttributeName"].as_str().unwrap().to_owned(),
                    a["AttributeType"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = keys
            .iter()
            .map(|((name, kind), _)| {
                (
                    name.to_string(),
                    match kind {
                        KeyKind::S => "S",
                        KeyKind::N => "N",
                    }
                    .to_owned(),
                )
            })
            .collect();
        assert_eq!(attributes, expected, "{file} {} attributes", table.suffix);
        let ttl = &properties["TimeToLiveSpecification"];
        match (table.ttl_attribute, table.retention_attribute) {
            (Some(attribute), _) => {
                assert_eq!(ttl["AttributeName"], attribute, "{file} {}", table.suffix);
                assert_eq!(ttl["Enabled"], true, "{file} {}", table.suffix);
            }
            // On when a retention is set (the SAM template decides by its
            // parameter): the attribute must be the one the store writes.
            (None, Some(attribute)) => {
                assert_eq!(ttl["AttributeName"], attribute, "{file} {}", table.suffix);
            }
            (None, None) => assert!(ttl.is_null(), "{file} {}: no TTL", table.suffix),
        }
        let pitr =
            properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] == true;
        assert_eq!(
            pitr, table.point_in_time_recovery,
            "{file} {} point-in-time recovery",
            table.suffix
        );
    }
}

#[test]
fn the_sam_template_and_the_infra_stack_define_exactly_the_codes_tables() {
    check_tables("template.yaml");
    check_tables("infra/stack.yaml");
}

#[test]
fn the_sam_template_wires_the_function_as_documented() {
    let template = yaml("template.yaml");
    let function = &template["Resources"]["McpFunction"];
    assert_eq!(function["Metadata"]["BuildMethod"], "rust-cargolambda");
    let properties = &function["Properties"];
    assert_eq!(properties["Runtime"], "provided.al2023");
    let parameters = &template["Parameters"];
    assert_eq!(parameters["MemorySize"]["Default"], 1024);
    assert_eq!(parameters["Timeout"]["Default"], 60);
    assert_eq!(parameters["FunctionUrlAuthType"]["Default"], "AWS_IAM");
    assert_eq!(parameters["Architecture"]["Default"], "x86_64");
    let env = properties["Environment"]["Variables"].as_mapping().unwrap();
    for variable in ["MCP_V8_HEAP_BUCKET", "MCP_V8_TABLE_PREFIX"] {
        assert!(env.contains_key(variable), "{variable}");
    }
    let outputs = template["Outputs"].as_mapping().unwrap();
    assert!(outputs.contains_key("FunctionUrl"));
}

#[test]
fn cfn_lint_passes_on_both_templates() {
    crate::common::sam::cfn_lint(&["template.yaml", "infra/stack.yaml"]);
}

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
