//! The in-process harness shared by the HTTP-level tests: the router `serve`
//! and Lambda use, over real redb and directory stores in a temp dir.
#![allow(dead_code, unreachable_pub)]

pub mod engine;
pub mod moto;
pub mod net;
pub mod runtime_api;

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use mcp_v8_lambda::embedded::open_database;
use mcp_v8_lambda::engine::{Engine, EngineConfig};
use mcp_v8_lambda::heap::{FileHeapStorage, HeapStorage};
use mcp_v8_lambda::meta::{MetaStore, RedbMetaStore};
use mcp_v8_lambda::session::{
    InitState, RedbSessionStore, SessionId, SessionStore, SessionStoreError,
};
use mcp_v8_lambda::tools::Toolbox;
use mcp_v8_lambda::transport::{App, OriginPolicy, TransportConfig, router};
use serde_json::{Value, json};
use tower::ServiceExt;

pub struct Server {
    pub app: App,
    pub sessions: Arc<dyn SessionStore>,
    pub meta: Arc<dyn MetaStore>,
    pub heaps: Option<Arc<dyn HeapStorage>>,
    _dir: tempfile::TempDir,
}

/// The stores a test server runs on; a test may wrap or replace them.
pub struct Stores {
    pub sessions: Arc<dyn SessionStore>,
    pub heaps: Option<Arc<dyn HeapStorage>>,
    pub meta: Arc<dyn MetaStore>,
}

pub fn server_with(ttl: i64, stateless: bool, sessions: Option<Arc<dyn SessionStore>>) -> Server {
    server_wrapped(ttl, stateless, |mut stores| {
        if let Some(sessions) = sessions {
            stores.sessions = sessions;
        }
        stores
    })
}

/// A server over redb and directory stores, as `wrap` leaves them.
pub fn server_wrapped(ttl: i64, stateless: bool, wrap: impl FnOnce(Stores) -> Stores) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = open_database(&dir.path().join("meta.redb")).unwrap();
    let Stores {
        sessions,
        heaps,
        meta,
    } = wrap(Stores {
        sessions: Arc::new(RedbSessionStore::new(db.clone()).unwrap()),
        heaps: (!stateless).then(|| {
            Arc::new(FileHeapStorage::new(dir.path().join("heaps"))) as Arc<dyn HeapStorage>
        }),
        meta: Arc::new(RedbMetaStore::new(db).unwrap()),
    });
    let tools = Toolbox {
        engine: Arc::new(Engine::new(EngineConfig::default(), heaps.clone())),
        meta: meta.clone(),
        stateless,
        execution_ttl_secs: 3600,
    };
    let config = TransportConfig {
        session_ttl_secs: ttl,
        max_body_bytes: 64 * 1024,
        origins: OriginPolicy {
            extra: vec!["https://allowed.example".into()],
        },
        auth: Default::default(),
    };
    Server {
        app: App::new(config, sessions.clone(), tools),
        sessions,
        meta,
        heaps,
        _dir: dir,
    }
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
    Reply {
        status,
        headers,
        body,
    }
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

pub fn post(body: &str) -> axum::http::request::Builder {
    let _ = body;
    Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

impl Server {
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
        let mut builder = post(&text);
        if let Some(session) = session {
            builder = builder.header("mcp-session-id", session);
        }
        self.send(builder.body(Body::from(text)).unwrap()).await
    }

    pub async fn initialize_as(&self, version: &str, extra_headers: &[(&str, &str)]) -> String {
        let text = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": {"roots": {}}, "clientInfo": {"name":"http-test","version":"1.0"}}})
        .to_string();
        let mut builder = post(&text);
        for (name, value) in extra_headers {
            builder = builder.header(*name, *value);
        }
        let reply = self.send(builder.body(Body::from(text)).unwrap()).await;
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

/// A session store whose every call fails, as an unreachable backend does.
#[derive(Debug)]
pub struct BrokenStore;

#[async_trait]
impl SessionStore for BrokenStore {
    async fn get(&self, _: &SessionId, _: i64) -> Result<Option<InitState>, SessionStoreError> {
        Err(broken())
    }
    async fn put(&self, _: &InitState) -> Result<(), SessionStoreError> {
        Err(broken())
    }
    async fn touch(&self, _: &SessionId, _: i64, _: i64) -> Result<bool, SessionStoreError> {
        Err(broken())
    }
    async fn delete(&self, _: &SessionId) -> Result<bool, SessionStoreError> {
        Err(broken())
    }
}

pub fn broken() -> SessionStoreError {
    SessionStoreError::Backend {
        store: "broken",
        source: "injected failure".into(),
    }
}
