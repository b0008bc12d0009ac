//! `fetch` in runs under the egress policy (src/egress, src/engine/web/
//! fetch.rs). Every server here listens on loopback, opened by IP-literal
//! entries; refusals of metadata, link-local and private addresses are
//! proven through the policy (its unit tests), the resolver seam
//! (`FetchConfig::resolve`) and addresses with no route here, and each
//! refusal's message must name the policy so a network error cannot pass
//! for one. No test sends a packet off this machine.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use mcp_v8_lambda::egress::{FetchConfig, FetchCount};
use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunRequest, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapStore};
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};

use crate::common::engine::{completed, run};

mod headers;
mod limits;

const SECRET: &str = "Bearer s3cret-injected-7f3a";

/// What a test server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// The `authorization` and `host` headers of each request.
    authorization: Mutex<Vec<Option<String>>>,
    hosts: Mutex<Vec<String>>,
}

struct TestServer {
    address: SocketAddr,
    seen: Arc<Seen>,
}

impl TestServer {
    fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }
}

async fn record(seen: &Seen, headers: &HeaderMap) {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    seen.authorization.lock().unwrap().push(
        headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
    );
    seen.hosts.lock().unwrap().push(
        headers
            .get("host")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default(),
    );
}

/// Echoes a request without its headers' values (so nothing injected can
/// travel back through the echo): method, header names, body.
async fn echo(
    State(seen): State<Arc<Seen>>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    record(&seen, &headers).await;
    let names: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    axum::Json(json!({
        "method": method.as_str(),
        "header_names": names,
        "content_type": content_type,
        "x_code": headers.get("x-code").map(|v| v.to_str().unwrap()),
        "body": String::from_utf8_lossy(&body),
        "length": body.len(),
    }))
    .into_response()
}

async fn redirect(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    record(&seen, &headers).await;
    let status = query
        .get("status")
        .map(|s| s.parse().unwrap())
        .unwrap_or(302);
    (
        StatusCode::from_u16(status).unwrap(),
        [("location", query["to"].clone())],
    )
        .into_response()
}

async fn big(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, usize>>,
) -> Response {
    record(&seen, &headers).await;
    "x".repeat(query["n"]).into_response()
}

async fn slow(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, u64>>,
) -> Response {
    record(&seen, &headers).await;
    let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most_in_flight.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(query["ms"])).await;
    seen.in_flight.fetch_sub(1, Ordering::SeqCst);
    "done".into_response()
}

async fn server() -> TestServer {
    let seen = Arc::new(Seen::default());
    let app = axum::Router::new()
        .route("/echo", any(echo))
        .route("/redirect", any(redirect))
        .route("/big", get(big))
        .route("/slow", get(slow))
        .route(
            "/json",
            get(
                |State(seen): State<Arc<Seen>>, headers: HeaderMap| async move {
                    record(&seen, &headers).await;
                    (
                        [("x-server", "yes")],
                        axum::Json(json!({"hello": "world", "n": [1, 2]})),
                    )
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    TestServer { address, seen }
}

fn config(allow: &[String]) -> FetchConfig {
    FetchConfig {
        allow: allow.to_vec(),
        ..FetchConfig::off()
    }
}

fn engine(fetch: FetchConfig) -> Engine {
    crate::common::engine::on_workers(
        EngineConfig {
            fetch,
            ..EngineConfig::default()
        },
        None,
    )
}

async fn stateless(engine: &Engine, code: &str) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            ..Default::default()
        },
    )
    .await
}

/// The run's result as JSON.
fn json_result(outcome: &RunOutcome) -> Value {
    serde_json::from_str(completed(outcome)).unwrap()
}

/// Code that evaluates to the rejection's name and message of `fetch(args)`.
fn refusal(args: &str) -> String {
    format!(
        "fetch({args}).then(() => 'fetched', (e) => ({{ name: e.name, type: e.constructor.name, message: e.message }}))"
    )
}

fn assert_policy_refusal(outcome: &RunOutcome, what: &str) {
    let value = json_result(outcome);
    assert_eq!(value["type"], "TypeError", "{what}: {value}");
    let message = value["message"].as_str().unwrap();
    assert!(
        message.contains("egress policy (MCP_V8_FETCH_ALLOW)"),
        "{what}: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_is_off_by_default() {
    let s = server().await;
    let engine = engine(FetchConfig::off());
    let out = stateless(&engine, &refusal(&format!("{:?}", s.url("/json")))).await;
    assert_policy_refusal(&out, "no allow list");
    assert_eq!(s.seen.requests.load(Ordering::SeqCst), 0);
    assert_eq!(out.fetches, None);
}

/// An allowed origin where nothing listens: the rejection says so in
/// words, and what to check, before the HTTP client's chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_origin_that_is_down_is_named_with_what_to_check() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let engine = engine(config(std::slice::from_ref(&origin)));
    let out = stateless(&engine, &refusal(&format!("{:?}", format!("{origin}/x")))).await;
    let value = json_result(&out);
    assert_eq!(value["type"], "TypeError", "{value}");
    let message = value["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "fetch failed: {origin} is allowed, but the connection was refused"
        )) && message.contains("Check the URL's host and port"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_post_with_each_body_type() {
    let s = server().await;
    let engine = engine(config(&[s.origin()]));
    let code = format!(
        r#"
        const base = {base:?};
        const post = async (body, init = {{}}) => (await fetch(base + "/echo", {{ method: "POST", body, ...init }})).json();
        const get = await fetch(base + "/json");
        const form = new FormData();
        form.append("field", "value");
        form.append("file", new File(["file body"], "f.txt", {{ type: "text/plain" }}));
        ({{
          get: {{ status: get.status, ok: get.ok, url: get.url, type: get.type, server: get.headers.get("x-server"),
                  json: await get.json(), used: get.bodyUsed }},
          text: await post("plain"),
          bytes: await post(new Uint8Array([104, 105])),
          buffer: await post(new Uint8Array([1, 2, 3]).buffer),
          blob: await post(new Blob(["blob"], {{ type: "x/blob" }})),
          params: await post(new URLSearchParams({{ a: "1 2" }})),
          form: await post(form),
          json: await post(JSON.stringify({{ k: [1] }}), {{ headers: {{ "content-type": "application/json", "x-code": "mine" }} }}),
          put: (await (await fetch(base + "/echo", {{ method: "PUT", body: "p" }})).json()).method,
          head: (await fetch(base + "/json", {{ method: "HEAD" }})).status,
          request: (await (await fetch(new Request(base + "/echo", {{ method: "DELETE" }}))).json()).method,
        }})
        "#,
        base = s.origin()
    );
    let out = stateless(&engine, &code).await;
    let v = json_result(&out);
    assert_eq!(v["get"]["status"], 200, "{v}");
    assert_eq!(v["get"]["ok"], true);
    assert_eq!(v["get"]["url"], s.url("/json"));
    assert_eq!(v["get"]["type"], "basic");
    assert_eq!(v["get"]["server"], "yes");
    assert_eq!(v["get"]["json"], json!({"hello": "world", "n": [1, 2]}));
    assert_eq!(v["get"]["used"], true);
    assert_eq!(v["text"]["body"], "plain");
    assert_eq!(v["text"]["content_type"], "text/plain;charset=UTF-8");
    assert_eq!(v["bytes"]["body"], "hi");
    assert_eq!(v["bytes"]["content_type"], Value::Null);
    assert_eq!(v["buffer"]["length"], 3);
    assert_eq!(v["blob"]["body"], "blob");
    assert_eq!(v["blob"]["content_type"], "x/blob");
    assert_eq!(v["params"]["body"], "a=1+2");
    assert_eq!(
        v["params"]["content_type"],
        "application/x-www-form-urlencoded;charset=UTF-8"
    );
    let form_type = v["form"]["content_type"].as_str().unwrap();
    assert!(
        form_type.starts_with("multipart/form-data; boundary="),
        "{form_type}"
    );
    let form_body = v["form"]["body"].as_str().unwrap();
    assert!(
        form_body.contains("name=\"file\"; filename=\"f.txt\"") && form_body.contains("file body"),
        "{form_body}"
    );
    assert_eq!(v["json"]["body"], "{\"k\":[1]}");
    assert_eq!(v["json"]["x_code"], "mine");
    assert_eq!(v["put"], "PUT");
    assert_eq!(v["head"], 200);
    assert_eq!(v["request"], "DELETE");
    // The Host the server saw is the URL's.
    assert!(
        s.seen
            .hosts
            .lock()
            .unwrap()
            .iter()
            .all(|h| *h == s.address.to_string())
    );
    let fetches = out.fetches.expect("the outcome counts fetches");
    assert_eq!(fetches.count, 11);
    assert!(fetches.bytes > 100, "{fetches:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_checked_hop_by_hop() {
    let first = server().await;
    let second = server().await;
    let denied = server().await;
    let engine = engine(config(&[first.origin(), second.origin()]));
    let to = |target: &TestServer, path: &str| {
        format!(
            "{}/redirect?to={}",
            first.origin(),
            percent(&target.url(path))
        )
    };
    let code = format!(
        r#"
        const followed = await fetch({allowed:?});
        const posted = await (await fetch({allowed_echo:?}, {{ method: "POST", body: "gone" }})).json();
        const kept = await (await fetch({kept_echo:?}, {{ method: "POST", body: "kept" }})).json();
        const manual = await fetch({allowed:?}, {{ redirect: "manual" }});
        const error = await fetch({allowed:?}, {{ redirect: "error" }}).then(() => "fetched", (e) => e.constructor.name);
        ({{
          followed: [followed.status, followed.redirected, followed.url, (await followed.json()).hello],
          posted: [posted.method, posted.length],
          kept: [kept.method, kept.body],
          manual: [manual.type, manual.status],
          error,
        }})
        "#,
        allowed = to(&second, "/json"),
        allowed_echo = to(&second, "/echo"),
        kept_echo = format!("{}&status=307", to(&second, "/echo")),
    );
    let out = stateless(&engine, &code).await;
    let v = json_result(&out);
    assert_eq!(
        v["followed"],
        json!([200, true, second.url("/json"), "world"]),
        "{v}"
    );
    assert_eq!(
        v["posted"],
        json!(["GET", 0]),
        "302 turns a POST into a GET"
    );
    assert_eq!(
        v["kept"],
        json!(["POST", "kept"]),
        "307 keeps method and body"
    );
    assert_eq!(v["manual"], json!(["opaqueredirect", 0]));
    assert_eq!(v["error"], "TypeError");

    let out = stateless(&engine, &refusal(&format!("{:?}", to(&denied, "/json")))).await;
    assert_policy_refusal(&out, "a redirect to an origin not in the list");
    assert_eq!(
        denied.seen.requests.load(Ordering::SeqCst),
        0,
        "the denied hop was never sent"
    );
}

fn percent(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_resolving_to_denied_addresses_are_refused() {
    let s = server().await;
    let port = s.address.port();
    let mut fetch = config(&[
        format!("http://private.test:{port}"),
        format!("http://loopback.test:{port}"),
        "http://metadata.test".to_owned(),
        format!("http://mixed.test:{port}"),
    ]);
    fetch.resolve = FetchConfig::parse_resolve(
        "private.test=10.0.0.1,loopback.test=127.0.0.1,metadata.test=169.254.169.254,mixed.test=127.0.0.1,mixed.test=fd00:ec2::254",
    )
    .unwrap();
    let engine = engine(fetch);
    for name in ["private.test", "loopback.test", "mixed.test"] {
        let out = stateless(&engine, &refusal(&format!("'http://{name}:{port}/json'"))).await;
        assert_policy_refusal(&out, name);
    }
    let out = stateless(
        &engine,
        &refusal("'http://metadata.test/latest/meta-data/'"),
    )
    .await;
    assert_policy_refusal(&out, "metadata by name");
    // IP literals of the never-reachable addresses, with no route here.
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
    ] {
        let out = stateless(&engine, &refusal(&format!("{url:?}"))).await;
        assert_policy_refusal(&out, url);
    }
    assert_eq!(
        s.seen.requests.load(Ordering::SeqCst),
        0,
        "loopback.test never reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_api_is_refused_even_when_listed() {
    let api = server().await;
    let mut fetch = config(&[api.origin()]);
    fetch.runtime_api = Some(api.address.to_string());
    let engine = engine(fetch);
    let out = stateless(
        &engine,
        &refusal(&format!(
            "{:?}",
            api.url("/2018-06-01/runtime/invocation/next")
        )),
    )
    .await;
    assert_policy_refusal(&out, "the Runtime API");
    assert!(
        json_result(&out)["message"]
            .as_str()
            .unwrap()
            .contains("Runtime API")
    );
    assert_eq!(api.seen.requests.load(Ordering::SeqCst), 0);
}

/// The tool tells the model what `fetch` can reach here, read from the
/// same configuration the engine enforces.
#[tokio::test]
async fn run_js_describes_the_egress_policy_in_force() {
    let mut config = crate::common::test_config(3600, false);
    config.fetch = config_from_env(&[(
        "MCP_V8_FETCH_ALLOW",
        "https://api.example.com, https://*.example.org",
    )]);
    let server = crate::common::server_configured(config, |stores| stores);
    let session = server.initialize().await;
    let tools = server.tools_list(&session).await;
    let description = tools["tools"][0]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        description.contains(
            "fetch reaches only these origins: https://api.example.com, https://*.example.org"
        ),
        "{description}"
    );
}

/// `MCP_V8_FETCH_*` as `serve` and the Lambda entry read them.
fn config_from_env(vars: &[(&str, &str)]) -> FetchConfig {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    mcp_v8_lambda::config::Config::from_lookup(|name| vars.get(name).cloned())
        .unwrap()
        .fetch
}

#[test]
fn bad_fetch_settings_stop_the_server_with_the_reason() {
    for (name, value, reason) in [
        (
            "MCP_V8_FETCH_ALLOW",
            "http://169.254.169.254",
            "never reachable",
        ),
        ("MCP_V8_FETCH_ALLOW", "api.example.com", "scheme://host"),
        (
            "MCP_V8_FETCH_HEADERS",
            "{\"not an origin\": {}}",
            "not an origin",
        ),
        ("MCP_V8_FETCH_RESOLVE", "a.test=nope", "not an IP address"),
        ("MCP_V8_FETCH_MAX_REQUESTS", "0", "positive"),
    ] {
        let error =
            mcp_v8_lambda::config::Config::from_lookup(|n| (n == name).then(|| value.to_owned()))
                .expect_err(name)
                .to_string();
        assert!(
            error.contains(name) && error.contains(reason),
            "{name}={value}: {error}"
        );
    }
    let lambda = config_from_env(&[
        ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ("MCP_V8_FETCH_ALLOW", "http://127.0.0.1:9001"),
    ]);
    assert_eq!(lambda.runtime_api.as_deref(), Some("127.0.0.1:9001"));
}
