//! MCP Streamable HTTP (2025-03-26, 2025-06-18, 2025-11-25) with replayed
//! initialization: every request rebuilds the server from the session store,
//! so no request depends on this process having served the session before.
//! Protocol 2026-07-28, which has no sessions, shares the endpoint
//! (`sessionless`).

mod auth;
mod headers;
mod jwt;
mod sessionless;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde::Serialize;
use serde_json::value::RawValue;
use tracing::{Instrument, field};

use crate::protocol::jsonrpc::{self, Incoming, Message, RequestId, code};
use crate::protocol::mcp::{
    self, BATCHING_VERSION, CallToolParams, EmptyResult, InitializeMeta, InitializeParams,
    InitializeResult, SERVER_INFO, ServerCapabilities, ToolsCapability, method,
};
use crate::session::{InitState, SessionId, SessionStore, unix_now};
use crate::tools::{ToolCallError, Toolbox};

pub use auth::{Authenticator, RESOURCE_METADATA_PATH, STATIC_TOKEN_PRINCIPAL, TokenDigest};
pub use headers::{OriginPolicy, Principal};
pub use jwt::{JwtError, JwtSettings, JwtVerifier, ResourceMetadata};

/// For the model, returned by `initialize`: heaps in two sentences, then
/// continuity.
pub const INSTRUCTIONS: &str = "Run JavaScript or TypeScript with the run_js tool; every successful run saves the whole V8 heap and \
returns its key as `heap`. Pass that key back as `heap` to continue from exactly that state, in this or any later session. \
When a client initializes with an X-MCP-Session-Id that has logged runs, this result's _meta \"mcp-v8/continuity\" gives the \
number of runs and the last output heap, so the agent can resume where it left off.";

/// Settings of the transport.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Session lifetime in seconds, sliding.
    pub session_ttl_secs: i64,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Which `Origin`s may call.
    pub origins: OriginPolicy,
    /// Which bearer tokens requests need, if any.
    pub auth: Authenticator,
}

/// Everything a request needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

#[derive(Debug)]
struct AppInner {
    config: TransportConfig,
    sessions: Arc<dyn SessionStore>,
    tools: Toolbox,
}

impl App {
    /// An app over its stores and tools.
    pub fn new(config: TransportConfig, sessions: Arc<dyn SessionStore>, tools: Toolbox) -> Self {
        Self {
            inner: Arc::new(AppInner {
                config,
                sessions,
                tools,
            }),
        }
    }
}

/// The one HTTP service: `serve`, Lambda and the tests all use it.
pub fn router(app: App) -> Router {
    let limit = app.inner.config.max_body_bytes;
    let auth = app.inner.config.auth.clone();
    let mut router = Router::new()
        .route("/mcp", any(handle))
        // Function URLs are often configured with the bare URL.
        .route("/", any(handle))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(app);
    if let Some(jwt) = &auth.jwt {
        let metadata = Router::new()
            .route(RESOURCE_METADATA_PATH, get(auth::resource_metadata))
            // RFC 9728 §3.1: the resource's path appended to the well-known one.
            .route(
                &format!("{RESOURCE_METADATA_PATH}/mcp"),
                get(auth::resource_metadata),
            )
            .with_state(jwt.clone());
        router = router.merge(metadata);
    }
    if auth.is_required() {
        router = router.layer(middleware::from_fn_with_state(auth, auth::require_bearer));
    }
    router
}

/// `router` for a `serve` bound to loopback: requests must name a loopback
/// `Host` (DNS-rebinding defence beside the `Origin` check).
pub fn loopback_only(router: Router) -> Router {
    router.layer(middleware::from_fn(auth::loopback_host_only))
}

/// A response with a JSON body.
fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    let mut response = (
        status,
        serde_json::to_vec(body).expect("responses serialize"),
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A response serialized once, so a batch can hold responses of different types.
fn raw<T: Serialize>(response: &jsonrpc::Response<T>) -> Box<RawValue> {
    let text = serde_json::to_string(response).expect("responses serialize");
    RawValue::from_string(text).expect("serde_json output is valid JSON")
}

/// Why a request ends before dispatch: an HTTP status with a JSON-RPC error
/// body. Internal details go to the log, never into `message`.
#[derive(Debug)]
pub(crate) struct HttpError {
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: String,
    data: Option<serde_json::Value>,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        Self {
            status,
            id: None,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error, answering the request `id`.
    fn with_id(self, id: Option<RequestId>) -> Self {
        Self { id, ..self }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, message)
    }

    fn session_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            code::SESSION_NOT_FOUND,
            "Session not found",
        )
    }

    fn store_failed(error: &dyn std::error::Error) -> Self {
        tracing::error!(error = %error, "session store failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            code::INTERNAL_ERROR,
            "the session store is unavailable; retry later",
        )
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut body = jsonrpc::Response::error(self.id, self.code, self.message);
        if let Some(error) = &mut body.error {
            error.data = self.data;
        }
        json(self.status, &body)
    }
}

async fn handle(
    State(app): State<App>,
    method: Method,
    request_headers: HeaderMap,
    principal: Option<axum::Extension<Principal>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let span = tracing::info_span!(
        "mcp",
        http.method = %method,
        rpc.method = field::Empty,
        session = field::Empty,
        logical_session = field::Empty,
        heap = field::Empty,
        status = field::Empty,
        duration_ms = field::Empty,
    );
    let started = Instant::now();
    let principal = principal.map(|p| p.0);
    let response = dispatch(&app, method, &request_headers, principal.as_ref(), body)
        .instrument(span.clone())
        .await
        .unwrap_or_else(IntoResponse::into_response);
    span.record("status", response.status().as_u16());
    span.record("duration_ms", started.elapsed().as_millis() as u64);
    span.in_scope(|| tracing::info!("request"));
    response
}

async fn dispatch(
    app: &App,
    method: Method,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, HttpError> {
    app.inner.config.origins.check(request_headers)?;
    let body = body.map_err(|rejection| {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!(
                "request body over the {}-byte limit",
                app.inner.config.max_body_bytes
            )
        } else {
            format!("could not read the request body: {rejection}")
        };
        HttpError::new(status, code::INVALID_REQUEST, message)
    })?;
    if sessionless::requested_version(request_headers).is_some() {
        return match method {
            Method::POST => {
                headers::check_post(request_headers)?;
                sessionless::post(&app.inner.tools, request_headers, &body).await
            }
            _ => Ok(sessionless::method_not_allowed()),
        };
    }
    match method {
        Method::POST => post(app, request_headers, principal, &body).await,
        Method::DELETE => delete(app, request_headers, principal).await,
        _ => {
            let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            Ok(response)
        }
    }
}

/// Loads the session a request names, or the error that ends the request.
async fn replay(
    app: &App,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<InitState, HttpError> {
    let raw = request_headers
        .get(mcp::header::SESSION_ID)
        .ok_or_else(|| HttpError::bad_request("missing Mcp-Session-Id header: initialize first"))?;
    // An id this server could not have issued names no session.
    let id = raw
        .to_str()
        .ok()
        .and_then(|text| SessionId::parse(text).ok())
        .ok_or_else(HttpError::session_not_found)?;
    tracing::Span::current().record("session", id.as_str());
    let now = unix_now();
    let state = app
        .inner
        .sessions
        .get(&id, now)
        .await
        .map_err(|e| HttpError::store_failed(&e))?
        .ok_or_else(HttpError::session_not_found)?;
    // Another caller presenting this id learns nothing about it.
    if state.principal.as_ref() != principal.map(|p| &p.0) {
        return Err(HttpError::session_not_found());
    }
    if let Some(name) = &state.logical_session {
        tracing::Span::current().record("logical_session", name.as_str());
    }
    // Sliding expiry, written only when less than half the lifetime is left,
    // so most requests cost one read and no write.
    let ttl = app.inner.config.session_ttl_secs;
    if state.expires_at - now < ttl / 2 {
        app.inner
            .sessions
            .touch(&id, now, now + ttl)
            .await
            .map_err(|e| HttpError::store_failed(&e))?;
    }
    Ok(state)
}

/// Decodes a POST body as the endpoint does, up to dispatch, touching no
/// store and running nothing; `Err` holds the HTTP status and JSON-RPC code
/// the endpoint would answer. The entry point of the fuzz targets.
#[doc(hidden)]
pub fn decode_only(request_headers: &HeaderMap, body: &[u8]) -> Result<(), (u16, i64)> {
    let outcome = if sessionless::requested_version(request_headers).is_some() {
        sessionless::decode(request_headers, body).map(|_| ())
    } else {
        parse_body(body).map(|_| ())
    };
    outcome.map_err(|e| (e.status.as_u16(), e.code))
}

/// Refuses bodies nested deeper than [`jsonrpc::MAX_NESTING`] before any
/// decoder sees them.
fn check_nesting(body: &[u8]) -> Result<(), HttpError> {
    if jsonrpc::nests_deeper_than(body, jsonrpc::MAX_NESTING) {
        return Err(HttpError::bad_request(format!(
            "JSON nested deeper than {} levels",
            jsonrpc::MAX_NESTING
        )));
    }
    Ok(())
}

/// Splits a body into messages and says whether it was a batch.
fn parse_body(body: &[u8]) -> Result<(Vec<Message>, bool), HttpError> {
    check_nesting(body)?;
    let parse_error = |e: serde_json::Error| {
        HttpError::new(
            StatusCode::BAD_REQUEST,
            code::PARSE_ERROR,
            format!("Parse error: {e}"),
        )
    };
    let whole: Box<RawValue> = serde_json::from_slice(body).map_err(parse_error)?;
    let batch = whole.get().trim_start().starts_with('[');
    let items: Vec<Box<RawValue>> = if batch {
        serde_json::from_str(whole.get()).map_err(parse_error)?
    } else {
        vec![whole]
    };
    if items.is_empty() {
        return Err(HttpError::bad_request("empty batch"));
    }
    let messages = items
        .iter()
        .map(|item| {
            let incoming: Incoming = serde_json::from_str(item.get())
                .map_err(|e| HttpError::bad_request(format!("Invalid Request: {e}")))?;
            Message::try_from(incoming)
                .map_err(|e| HttpError::bad_request(format!("Invalid Request: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((messages, batch))
}

async fn post(
    app: &App,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
    body: &[u8],
) -> Result<Response, HttpError> {
    headers::check_post(request_headers)?;
    let (mut messages, batch) = parse_body(body)?;
    let is_initialize =
        |m: &Message| matches!(m, Message::Request { method, .. } if method == method::INITIALIZE);
    if messages.iter().any(is_initialize) {
        if batch {
            return Err(HttpError::bad_request(
                "initialize must not be part of a batch",
            ));
        }
        let Some(Message::Request { id, params, .. }) = messages.pop() else {
            unreachable!("checked: the single message is an initialize request")
        };
        tracing::Span::current().record("rpc.method", method::INITIALIZE);
        return initialize(app, request_headers, principal, id, params.as_deref()).await;
    }

    let mut state = replay(app, request_headers, principal).await?;
    if let Some(version) = request_headers.get(mcp::header::PROTOCOL_VERSION)
        && version.as_bytes() != state.protocol_version.as_bytes()
    {
        return Err(HttpError::bad_request(format!(
            "MCP-Protocol-Version {:?} does not match the version negotiated for this session ({})",
            String::from_utf8_lossy(version.as_bytes()),
            state.protocol_version
        )));
    }
    if batch && state.protocol_version != BATCHING_VERSION {
        return Err(HttpError::bad_request(format!(
            "JSON-RPC batches are only accepted in protocol version {BATCHING_VERSION}"
        )));
    }

    let mut responses = Vec::new();
    for message in messages {
        match message {
            Message::Request { id, method, params } => {
                tracing::Span::current().record("rpc.method", method.as_str());
                responses.push(request(app, &state, id, &method, params.as_deref()).await);
            }
            Message::Notification { method, .. } => {
                tracing::Span::current().record("rpc.method", method.as_str());
                if method == method::INITIALIZED && !state.initialized {
                    state.initialized = true;
                    app.inner
                        .sessions
                        .put(&state)
                        .await
                        .map_err(|e| HttpError::store_failed(&e))?;
                }
                // notifications/cancelled and unknown notifications need no answer:
                // every request here completes within its own HTTP exchange.
            }
            Message::Response => {}
        }
    }
    Ok(match (responses.pop(), batch) {
        (None, _) => StatusCode::ACCEPTED.into_response(),
        (Some(last), true) => {
            responses.push(last);
            json(StatusCode::OK, &responses)
        }
        (Some(only), false) => json(StatusCode::OK, &only),
    })
}

/// One JSON-RPC request of a replayed session, answered as JSON.
async fn request(
    app: &App,
    state: &InitState,
    id: RequestId,
    method: &str,
    params: Option<&RawValue>,
) -> Box<RawValue> {
    let error = |id, code, message: String| raw(&jsonrpc::Response::error(Some(id), code, message));
    match method {
        method::PING => raw(&jsonrpc::Response::ok(id, EmptyResult {})),
        method::TOOLS_LIST => raw(&jsonrpc::Response::ok(
            id,
            app.inner.tools.list(&state.protocol_version),
        )),
        method::TOOLS_CALL => {
            let params: CallToolParams =
                match serde_json::from_str(params.map_or("null", RawValue::get)) {
                    Ok(params) => params,
                    Err(e) => {
                        return error(id, code::INVALID_PARAMS, format!("Invalid params: {e}"));
                    }
                };
            match app.inner.tools.call(state.into(), params).await {
                Ok(result) => raw(&jsonrpc::Response::ok(id, result)),
                Err(e @ ToolCallError::UnknownTool(_)) => {
                    error(id, code::INVALID_PARAMS, e.to_string())
                }
                Err(e @ ToolCallError::NotAvailable(_)) => {
                    error(id, code::METHOD_NOT_FOUND, e.to_string())
                }
            }
        }
        method::INITIALIZE => error(
            id,
            code::INVALID_REQUEST,
            "this session is already initialized".into(),
        ),
        other => error(
            id,
            code::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        ),
    }
}

async fn initialize(
    app: &App,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
    id: RequestId,
    params: Option<&RawValue>,
) -> Result<Response, HttpError> {
    let params: InitializeParams = serde_json::from_str(params.map_or("null", RawValue::get))
        .map_err(|e| {
            HttpError::new(
                StatusCode::BAD_REQUEST,
                code::INVALID_PARAMS,
                format!("Invalid initialize params: {e}"),
            )
            .with_id(Some(id.clone()))
        })?;
    let version = mcp::negotiate(&params.protocol_version);
    let captured =
        headers::mcp_headers(request_headers).map_err(|e| e.with_id(Some(id.clone())))?;
    let now = unix_now();
    let state = InitState {
        session_id: SessionId::generate(),
        protocol_version: version.to_owned(),
        client_capabilities: params.capabilities,
        client_info: params.client_info,
        logical_session: captured.get("session-id").cloned(),
        mcp_headers: captured,
        principal: principal.map(|p| p.0.clone()),
        initialized: false,
        created_at: now,
        expires_at: now + app.inner.config.session_ttl_secs,
    };
    let span = tracing::Span::current();
    span.record("session", state.session_id.as_str());
    if let Some(name) = &state.logical_session {
        span.record("logical_session", name.as_str());
    }
    let continuity = match &state.logical_session {
        Some(name) => app
            .inner
            .tools
            .continuity(name)
            .await
            .map_err(|e| HttpError::store_failed(&e))?,
        None => None,
    };
    app.inner
        .sessions
        .put(&state)
        .await
        .map_err(|e| HttpError::store_failed(&e))?;
    let result = InitializeResult {
        protocol_version: version,
        capabilities: ServerCapabilities {
            tools: ToolsCapability {
                list_changed: false,
            },
        },
        server_info: SERVER_INFO,
        instructions: INSTRUCTIONS,
        meta: continuity.map(|continuity| InitializeMeta { continuity }),
    };
    let mut response = json(StatusCode::OK, &jsonrpc::Response::ok(id, result));
    response.headers_mut().insert(
        mcp::header::SESSION_ID,
        HeaderValue::from_str(state.session_id.as_str()).expect("hex is a valid header value"),
    );
    Ok(response)
}

async fn delete(
    app: &App,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Response, HttpError> {
    let state = replay(app, request_headers, principal).await?;
    match app.inner.sessions.delete(&state.session_id).await {
        Ok(true) => Ok(StatusCode::NO_CONTENT.into_response()),
        Ok(false) => Err(HttpError::session_not_found()),
        Err(e) => Err(HttpError::store_failed(&e)),
    }
}
