//! The in-process harness shared by the HTTP-level tests: the router `serve`
//! and Lambda use, over real redb and directory stores in a temp dir.
#![allow(dead_code, unreachable_pub)]

pub mod conformance;
pub mod delay_proxy;
pub mod engine;
pub mod faults;
pub mod moto;
pub mod net;
pub mod npm;
pub mod process;
pub mod runtime_api;
pub mod sam;
pub mod source;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use faults::{Fault, FaultPlan, Faulty};
use http_body_util::BodyExt;
use mcp_v8_lambda::backends::embedded::open_database;
use mcp_v8_lambda::compose;
pub use mcp_v8_lambda::compose::Stores;
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::heap::HeapStore;
use mcp_v8_lambda::meta::MetaStore;
use mcp_v8_lambda::session::{RedbSessionStore, SessionStore};
use mcp_v8_lambda::transport::{App, router};
use serde_json::{Value, json};
use tower::ServiceExt;

pub struct Server {
    pub app: App,
    pub sessions: Arc<dyn SessionStore>,
    pub meta: Arc<dyn MetaStore>,
    pub heaps: Option<Arc<dyn HeapStore>>,
    _dir: tempfile::TempDir,
}

pub fn server_with(ttl: i64, stateless: bool, sessions: Option<Arc<dyn SessionStore>>) -> Server {
    server_wrapped(ttl, stateless, |mut stores| {
        if let Some(sessions) = sessions {
            stores.sessions = sessions;
        }
        stores
    })
}

/// The configuration of a test server: defaults, a small body limit, one
/// allowed browser origin, executions kept an hour.
pub fn test_config(ttl: i64, stateless: bool) -> Config {
    let mut config = Config::from_lookup(|_| None).expect("the defaults are valid");
    config.transport.session_ttl_secs = ttl;
    config.stateless = stateless;
    config.stores.execution_ttl_secs = 3600;
    config.transport.max_body_bytes = 64 * 1024;
    config.transport.allowed_origins = vec!["https://allowed.example".into()];
    // Tests look at what the stores themselves hold.
    config.stores.heap_memory_cache_mb = 0;
    config
}

/// A server over redb and directory stores in a temp dir, built as `serve`
/// builds it, with the stores as `wrap` leaves them.
pub fn server_wrapped(ttl: i64, stateless: bool, wrap: impl FnOnce(Stores) -> Stores) -> Server {
    server_configured(test_config(ttl, stateless), wrap)
}

/// A server built from `config` over stores in a temp dir, as `wrap`
/// leaves them, whose runs go to as many engine workers as `serve` starts
/// on this machine.
pub fn server_configured(config: Config, wrap: impl FnOnce(Stores) -> Stores) -> Server {
    server_with_workers(config, serve_workers(), wrap)
}

/// The engine workers `serve` starts when not told: two per core, at
/// least four (`StoreArgs::configure` in main.rs).
pub fn serve_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    (2 * cores).max(4)
}

/// The engine `config` describes, its runs in as many engine workers as
/// `serve` starts: this test binary's server program, linked under `dir`
/// as `name`.
pub fn worker_engine(
    config: &Config,
    dir: &std::path::Path,
    name: &str,
) -> mcp_v8_lambda::engine::EngineConfig {
    let mut engine = compose::engine_config(config);
    engine.engine_workers = serve_workers();
    engine.worker_program = Some(engine::worker_program(dir, name));
    engine
}

/// The app `config` describes on its stores under `dir` (with `aws`'s
/// clients for the AWS ones), as `compose::app` builds it for `serve` and
/// the Lambda entry, its runs in engine workers as theirs are.
pub fn app_on_workers(
    config: &Config,
    dir: &std::path::Path,
    aws: Option<&mcp_v8_lambda::backends::aws::Clients>,
) -> App {
    let stores = Stores::from_config(config, dir, aws).unwrap();
    compose::with_engine(config, worker_engine(config, dir, "app-worker"), stores)
}

/// A server built from `config` over stores as `wrap` leaves them, whose
/// runs go to `workers` engine workers (this test binary's server program,
/// as `serve` runs them).
pub fn server_with_workers(
    config: Config,
    workers: usize,
    wrap: impl FnOnce(Stores) -> Stores,
) -> Server {
    server_with_engine(config, workers, wrap, |_| {})
}

/// [`server_with_workers`] with the engine's configuration changed by
/// `tune` (what no variable sets, such as the default heap limit).
pub fn server_with_engine(
    config: Config,
    workers: usize,
    wrap: impl FnOnce(Stores) -> Stores,
    tune: impl FnOnce(&mut mcp_v8_lambda::engine::EngineConfig),
) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let stores = wrap(Stores::from_config(&config, dir.path(), None).unwrap());
    let mut engine = worker_engine(&config, dir.path(), "server-worker");
    tune(&mut engine);
    assert!(
        workers > 0,
        "the server runs code in engine workers, as `serve` does"
    );
    engine.engine_workers = workers;
    Server {
        sessions: stores.sessions.clone(),
        meta: stores.meta.clone(),
        heaps: stores.heaps.clone(),
        app: compose::with_engine(&config, engine, stores),
        _dir: dir,
    }
}

/// A session store whose every call fails, as an unreachable backend does:
/// the fault wrapper around a real store, failing from the first call on.
pub fn broken_sessions() -> Arc<dyn SessionStore> {
    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    // The database stays open through the store; the directory may go.
    let store: Arc<dyn SessionStore> = Arc::new(RedbSessionStore::new(db).unwrap());
    let plan = FaultPlan::new();
    for operation in [
        "session.get",
        "session.put",
        "session.touch",
        "session.delete",
    ] {
        plan.fail_from(operation, 1, Fault::Fail);
    }
    Arc::new(Faulty::new(store, plan))
}

pub fn server() -> Server {
    server_with(3600, false, None)
}

/// Status, headers and JSON body (`Null` when empty) of a response.
pub async fn reply(response: axum::response::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    no_rust_syntax(&body);
    Reply {
        status,
        headers,
        body,
    }
}

/// What Rust or serde, not a person, writes: `Some("x")`, `None)`,
/// `at line 1 column 9`.
fn rust_syntax(text: &str) -> Option<&'static str> {
    let column = text.find("at line ").is_some_and(|at| {
        let rest = &text[at + "at line ".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(" column ")
    });
    if column {
        return Some("at line N column M");
    }
    ["Some(", "(None", "None)", "None,", "= None"]
        .into_iter()
        .find(|pattern| text.contains(pattern))
}

/// Every error text an answer carries (a JSON-RPC error, a tool error, a
/// run's error and warnings) is checked for [`rust_syntax`]: the suite's
/// every in-process reply passes through here, so no message with it
/// goes unnoticed.
pub fn no_rust_syntax(body: &Value) {
    let mut texts: Vec<&str> = Vec::new();
    texts.extend(body["error"]["message"].as_str());
    let result = &body["result"];
    let outcome = &result["structuredContent"];
    if result["isError"] == true && outcome.is_null() {
        let content = result["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        texts.extend(content.iter().filter_map(|c| c["text"].as_str()));
    }
    texts.extend(outcome["error"]["message"].as_str());
    if let Some(warnings) = outcome["warnings"].as_array() {
        texts.extend(warnings.iter().filter_map(Value::as_str));
    }
    for text in texts {
        if let Some(found) = rust_syntax(text) {
            panic!("a message shows Rust syntax ({found}): {text}");
        }
    }
}

#[test]
fn rust_syntax_in_a_message_is_caught() {
    for text in [
        "the Mcp-Name header Some(\"x\") does not match",
        "expected a string at line 1 column 9",
        "got None, expected a key",
    ] {
        assert!(rust_syntax(text).is_some(), "{text}");
    }
    for text in [
        "None of the runs matched",
        "ReferenceError: None is not defined",
    ] {
        assert_eq!(rust_syntax(text), None, "{text}");
    }
    let caught = std::panic::catch_unwind(|| {
        no_rust_syntax(
            &json!({"result": {"isError": true, "content": [{"type": "text", "text": "Some(1)"}]}}),
        )
    });
    assert!(caught.is_err());
}

impl Reply {
    /// The `Mcp-Session-Id` the server answered with.
    pub fn session_id(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

/// An execution record of `outcome`, as `run_js` makes one.
pub fn execution_record(
    outcome: mcp_v8_lambda::engine::RunOutcome,
    started_at: &str,
    completed_at: &str,
    expires_at: i64,
) -> mcp_v8_lambda::meta::ExecutionRecord {
    let Value::Object(mut fields) = serde_json::to_value(&outcome).unwrap() else {
        unreachable!("an outcome is an object")
    };
    fields.remove("execution_id");
    mcp_v8_lambda::meta::ExecutionRecord {
        execution_id: outcome.execution_id,
        outcome: fields,
        started_at: started_at.to_owned(),
        completed_at: completed_at.to_owned(),
        expires_at,
        kept: None,
    }
}

/// A POST to `/mcp` with the headers every MCP request carries; the caller
/// adds its own headers and the body.
pub fn post() -> axum::http::request::Builder {
    Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

impl Server {
    /// The server's data directory (its embedded stores).
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    pub async fn send(&self, request: Request<Body>) -> Reply {
        reply(router(self.app.clone()).oneshot(request).await.unwrap()).await
    }

    /// The `tools/list` result of a session.
    pub async fn tools_list(&self, session: &str) -> Value {
        let reply = self
            .rpc(
                Some(session),
                json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            )
            .await;
        reply.body["result"].clone()
    }

    pub async fn rpc(&self, session: Option<&str>, body: Value) -> Reply {
        let text = body.to_string();
        let mut builder = post();
        if let Some(session) = session {
            builder = builder.header("mcp-session-id", session);
        }
        self.send(builder.body(Body::from(text)).unwrap()).await
    }

    /// The reply to an `initialize` of `version` with `extra_headers`.
    pub async fn initialize_reply(&self, version: &str, extra_headers: &[(&str, &str)]) -> Reply {
        let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": {"roots": {}}, "clientInfo": {"name":"http-test","version":"1.0"}}})
        .to_string();
        let mut builder = post();
        for (name, value) in extra_headers {
            builder = builder.header(*name, *value);
        }
        self.send(builder.body(Body::from(text)).unwrap()).await
    }

    /// The session of an `initialize` of `version` with `extra_headers`.
    pub async fn initialize_as(&self, version: &str, extra_headers: &[(&str, &str)]) -> String {
        let reply = self.initialize_reply(version, extra_headers).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.headers["mcp-session-id"].to_str().unwrap().to_owned()
    }

    pub async fn initialize(&self) -> String {
        self.initialize_as("2025-06-18", &[]).await
    }

    /// `run_js` with `arguments`; returns the `result` of the response.
    pub async fn call(&self, session: &str, arguments: Value) -> Value {
        self.tool(session, "run_js", arguments).await
    }

    /// Any tool; returns the `result` of the response.
    pub async fn tool(&self, session: &str, name: &str, arguments: Value) -> Value {
        let reply = self
            .rpc(Some(session), json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":name,"arguments":arguments}}))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.body["result"].clone()
    }
}

/// The tool `name` of a `tools/list` result.
pub fn listed_tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

/// A logical session name the test knows is valid.
pub fn logical(name: &str) -> mcp_v8_lambda::session::LogicalSession {
    mcp_v8_lambda::session::LogicalSession::parse(name).expect("a valid logical session name")
}

/// The JSON-RPC answer of a 2026-07-28 request of `method` (naming `name`,
/// for a tool call) with `params`, posted to the MCP endpoint on loopback
/// `port`, as a client of that protocol sends it.
/// A 2026-07-28 request to `url` as an SDK client sends it: its headers,
/// and `_meta` naming the protocol version and the client's
/// `capabilities` (beside whatever `_meta` `params` already has).
pub fn request_2026(
    url: &str,
    method: &str,
    name: &str,
    mut params: serde_json::Value,
    capabilities: serde_json::Value,
) -> reqwest::RequestBuilder {
    if !params["_meta"].is_object() {
        params["_meta"] = serde_json::json!({});
    }
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2026-07-28".into();
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
}

/// The JSON-RPC message of the first whole server-sent event in `pending`,
/// taken out of it; `None` until an event is whole.
pub fn take_event(pending: &mut String) -> Option<serde_json::Value> {
    let end = pending.find("\n\n")?;
    let event: String = pending.drain(..end + 2).collect();
    let data: String = event
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect();
    Some(serde_json::from_str(&data).unwrap())
}

pub async fn post_2026(
    port: u16,
    method: &str,
    name: Option<&str>,
    mut params: serde_json::Value,
) -> serde_json::Value {
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"}
    });
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let answer: Value = request
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    no_rust_syntax(&answer);
    answer
}
