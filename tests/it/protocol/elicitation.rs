//! A run that asks the person (`elicit()`), on 2026-07-28's multi
//! round-trip requests: the official Python SDK's driver answers and
//! retries; a retry lands on another process after a SIGKILL; and every
//! wrong retry (forged, another tenant's, expired, a response the schema
//! refuses, the same retry twice) is refused and changes nothing.

use axum::body::Body;
use serde_json::{Value, json};

use crate::common::{self, Server, post};
use crate::lambda::e2e::finish;
use mcp_v8_lambda::transport::Principal;

const CODE: &str = "const fs = require('node:fs'); \
    const a = await elicit({ message: 'n?', requestedSchema: { type: 'object', \
      properties: { n: { type: 'integer', maximum: 50 } }, required: ['n'] } }); \
    fs.appendFileSync('/work/count.txt', 'x'); \
    [a.action, a.content?.n ?? null, fs.readFileSync('/work/count.txt', 'utf8').length]";

fn project() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A 2026-07-28 `tools/call` of run_js with `code` in the session `asks`,
/// from a client that declares `capabilities`, as `principal` when given,
/// retrying with `responses` and `state` when given.
async fn call(
    server: &Server,
    principal: Option<&str>,
    capabilities: Value,
    code: &str,
    retry: Option<(Value, &str)>,
) -> Value {
    let arguments = json!({ "code": code, "session": "asks" });
    call_with(server, principal, capabilities, arguments, retry).await
}

/// [`call`] with any arguments.
async fn call_with(
    server: &Server,
    principal: Option<&str>,
    capabilities: Value,
    arguments: Value,
    retry: Option<(Value, &str)>,
) -> Value {
    let mut params = json!({
        "name": "run_js",
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let mut request = post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_js")
        .body(Body::from(body.to_string()))
        .unwrap();
    if let Some(principal) = principal {
        request
            .extensions_mut()
            .insert(Principal(principal.to_owned()));
    }
    let reply = server.send(request).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["result"].clone()
}

fn form() -> Value {
    json!({ "elicitation": { "form": {} } })
}

/// The keys asked and the state of an `InputRequiredResult`.
fn asked(result: &Value) -> (Vec<String>, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let keys = result["inputRequests"].as_object().unwrap().keys().cloned();
    let request = &result["inputRequests"]["elicit-1"];
    assert_eq!(request["method"], "elicitation/create", "{result}");
    assert_eq!(request["params"]["mode"], "form", "{result}");
    (
        keys.collect(),
        result["requestState"].as_str().unwrap().to_owned(),
    )
}

/// A tool result's error text, when it is a tool error.
fn error_text(result: &Value) -> String {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

/// `state` with its expiry a day later, well-formed, under its old tag.
fn altered(state: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = state.split('.').collect();
    assert_eq!(parts.len(), 3, "{state}");
    let mut body: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    body["e"] = json!(body["e"].as_i64().unwrap() + 86_400);
    let body = URL_SAFE_NO_PAD.encode(body.to_string());
    format!("{}.{body}.{}", parts[0], parts[2])
}

fn accepted(n: i64) -> Value {
    json!({ "elicit-1": { "action": "accept", "content": { "n": n } } })
}

/// Every way a retry can be wrong is refused with what to do, and changes
/// nothing: the right retry afterwards still continues the run, once (its
/// side effect in /work counted), a second copy of it is told the run
/// continued already, and a declined ask reaches the run as its action.
#[tokio::test]
async fn a_retry_continues_its_run_once_and_a_wrong_one_changes_nothing() {
    let server = common::server();
    let first = call(&server, None, form(), CODE, None).await;
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["elicit-1"]);

    // Altered: its expiry pushed back, the body encoded again, the tag kept.
    let forged = altered(&state);
    let refused = call(&server, None, form(), CODE, Some((accepted(7), &forged))).await;
    assert!(
        error_text(&refused).contains("not one this server issued"),
        "{refused}"
    );
    // Another tenant's state, even with the right call.
    let refused = call(
        &server,
        Some("bob"),
        form(),
        CODE,
        Some((accepted(7), &state)),
    )
    .await;
    assert!(error_text(&refused).contains("another tenant"), "{refused}");
    // Another call's: other code.
    let refused = call(&server, None, form(), "1", Some((accepted(7), &state))).await;
    assert!(error_text(&refused).contains("another call"), "{refused}");
    // A response the schema refuses (over its maximum).
    let refused = call(&server, None, form(), CODE, Some((accepted(99), &state))).await;
    let text = error_text(&refused);
    assert!(
        text.contains("elicit-1") && text.contains("refused"),
        "{text}"
    );
    // A retry without the response is asked again, under the same state.
    let again = call(&server, None, form(), CODE, Some((json!({}), &state))).await;
    assert_eq!(asked(&again), (vec!["elicit-1".to_owned()], state.clone()));

    // The right retry continues the run, once.
    let done = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        done["structuredContent"]["result"], r#"["accept",7,1]"#,
        "{done}"
    );
    let twice = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert!(error_text(&twice).contains("answered already"), "{twice}");
    // The session's heap is the one run's: its side effect happened once.
    let read = json!({
        "code": "require('node:fs').readFileSync('/work/count.txt', 'utf8')",
        "session": "asks",
        "heap": "latest",
    });
    let count = call_with(&server, None, form(), read, None).await;
    assert_eq!(count["structuredContent"]["result"], r#""x""#, "{count}");

    // Declined: the run gets the action alone, and decides.
    let (_, state) = asked(&call(&server, None, form(), CODE, None).await);
    let declined = json!({ "elicit-1": { "action": "decline" } });
    let done = call(&server, None, form(), CODE, Some((declined, &state))).await;
    assert_eq!(
        done["structuredContent"]["result"], r#"["decline",null,1]"#,
        "{done}"
    );
}

/// A suspended run past `MCP_V8_SUSPENDED_RUN_TTL_SECS` is dropped: its
/// retry says so and what to do.
#[tokio::test]
async fn an_expired_suspended_run_says_to_start_over() {
    let mut config = common::test_config(3600, false);
    config.stores.suspended_run_ttl_secs = 1;
    let server = common::server_configured(config, |stores| stores);
    let (_, state) = asked(&call(&server, None, form(), CODE, None).await);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let refused = call(&server, None, form(), CODE, Some((accepted(7), &state))).await;
    assert!(error_text(&refused).contains("expired"), "{refused}");
}

/// A client that did not declare elicitation, a session-era call and a
/// stateless server: `elicit()` throws saying why (never `elicit is not
/// defined`).
#[tokio::test]
async fn a_run_that_cannot_ask_is_told_why() {
    let server = common::server();
    let result = call(&server, None, json!({}), CODE, None).await;
    let text = serde_json::to_string(&result).unwrap();
    assert!(
        text.contains("TypeError") && text.contains("cannot be asked"),
        "{text}"
    );

    let session = server.initialize().await;
    let outcome = server.call(&session, json!({ "code": CODE })).await;
    let text = outcome.to_string();
    assert!(
        text.contains("TypeError") && text.contains("2026-07-28"),
        "{text}"
    );

    let stateless = common::server_with(3600, true, None);
    let arguments = json!({ "code": CODE });
    let result = call_with(&stateless, None, form(), arguments, None).await;
    let text = serde_json::to_string(&result).unwrap();
    assert!(
        text.contains("TypeError") && text.contains("stateless"),
        "{text}"
    );
}

/// `tests/e2e/py_elicit_client.py` against `url` with `args`.
fn python(url: &str, args: &[&str]) -> Value {
    let venv = project().join(".venv-mcp2/bin/python");
    assert!(
        venv.exists(),
        "the Python mcp 2.x client is not installed: run scripts/test.sh (it creates .venv-mcp2)"
    );
    let mut command = std::process::Command::new(venv);
    command
        .current_dir(project().join("tests/e2e"))
        .arg("py_elicit_client.py")
        .arg(url)
        .args(args);
    finish(command)
}

/// The official Python SDK 2.x client, its `elicitation_callback`
/// answering, runs a run_js that asks twice in a loop to completion
/// against `serve` (its multi round-trip driver retries each round).
#[test]
fn the_python_sdk_answers_a_run_that_asks_twice_in_a_loop() {
    let serve = common::process::Serve::start(&[], &[]);
    let url = format!("http://127.0.0.1:{}/mcp", serve.port);
    let done = python(&url, &["loop-session", "2026-07-28", "loop"]);
    assert_eq!(done["asked"], json!(["Factor 1?", "Factor 2?"]), "{done}");
    let outcome = &done["outcome"];
    assert_eq!(outcome["status"], "completed", "{done}");
    assert_eq!(outcome["result"], r#"{"sum":210,"lines":1}"#, "{done}");
    assert_eq!(outcome["output"], "factor 1: 10\nfactor 2: 100\n", "{done}");
}

/// `serve` killed with SIGKILL between the ask and the answer: a new
/// process on the same data continues the run from its heap, to its
/// next ask and then its end.
#[test]
fn a_run_asked_before_a_sigkill_continues_in_the_next_process() {
    let mut serve = common::process::Serve::start(&[], &[]);
    let url = |serve: &common::process::Serve| format!("http://127.0.0.1:{}/mcp", serve.port);
    let first = python(&url(&serve), &["killed", "2026-07-28", "first"]);
    assert_eq!(
        first["requests"],
        json!({ "elicit-1": "Factor 1?" }),
        "{first}"
    );
    serve.restart_after_kill(&[], &[]);
    let retry = |given: Value| {
        let given = given.to_string();
        python(&url(&serve), &["killed", "2026-07-28", "retry", &given])
    };
    let second =
        retry(json!({ "responses": { "elicit-1": 3 }, "request_state": first["request_state"] }));
    assert_eq!(
        second["requests"],
        json!({ "elicit-2": "Factor 2?" }),
        "{second}"
    );
    let done =
        retry(json!({ "responses": { "elicit-2": 4 }, "request_state": second["request_state"] }));
    assert_eq!(
        done["outcome"]["result"], r#"{"sum":11,"lines":1}"#,
        "{done}"
    );
}
