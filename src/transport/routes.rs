//! The HTTP router of the MCP endpoint and what it serves with: the
//! application state, the transport's settings, the invocation a request
//! arrived in.

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
use tracing::{Instrument, field};

use super::auth::{self, Authenticator, RESOURCE_METADATA_PATH};
use super::envelope::HttpError;
use super::headers::{self, OriginPolicy, Principal};
use super::session::Sessions;
use super::{call, session, sessionless, stream};
use crate::observe::prometheus::{self, Scrape};
use crate::observe::{self, Refusal};
use crate::protocol::jsonrpc::code;
use crate::server::McpServer;
use crate::session::SessionStore;
use crate::tenant::{Tenancy, Tenant};

/// What the host knows of the invocation a request arrived in (Lambda's
/// context), put in the request extensions by the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// When the host stops waiting for the answer; tools fit their work
    /// inside it.
    pub deadline: Option<std::time::SystemTime>,
    /// The host's id of the request, for the log line.
    pub request_id: Option<String>,
}

/// Whether this process has served no request yet: its first is a cold
/// start.
fn cold_start() -> bool {
    static SERVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    !SERVED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

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
    /// How callers map to tenants.
    pub tenancy: Tenancy,
    /// Whether a tool call with a progress token may be answered as an
    /// event stream; off behind a host that buffers responses (a Lambda
    /// function URL in `BUFFERED` mode), where progress could not arrive.
    pub streaming: bool,
}

/// Everything a request needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct App {
    inner: Arc<AppInner>,
    /// What `/metrics` answers, when the host serves it.
    metrics: Option<Scrape>,
}

#[derive(Debug)]
struct AppInner {
    config: TransportConfig,
    sessions: Sessions,
    server: McpServer,
    calls: stream::Calls,
}

impl App {
    /// The endpoint of `server`, keeping its sessions in `sessions`.
    pub fn new(
        config: TransportConfig,
        sessions: Arc<dyn SessionStore>,
        server: McpServer,
    ) -> Self {
        let sessions = Sessions {
            store: sessions,
            ttl_secs: config.session_ttl_secs,
        };
        let calls = stream::Calls {
            inflight: Arc::default(),
            streaming: config.streaming,
            replies: Arc::default(),
        };
        Self {
            inner: Arc::new(AppInner {
                config,
                sessions,
                server,
                calls,
            }),
            metrics: None,
        }
    }

    /// The endpoint serving `scrape` at `/metrics` too, behind the same
    /// authentication and `Host` check as `/mcp`.
    pub fn with_metrics(self, scrape: Scrape) -> Self {
        Self {
            metrics: Some(scrape),
            ..self
        }
    }

    /// The MCP server behind the endpoint.
    pub fn server(&self) -> &McpServer {
        &self.inner.server
    }

    /// Whether requests must carry a bearer token or JWT that this app
    /// checks (`MCP_V8_AUTH_TOKEN_SHA256`, `MCP_V8_JWKS_URL`).
    pub fn authenticates_callers(&self) -> bool {
        self.inner.config.auth.is_required()
    }
}

/// The one HTTP service: `serve`, Lambda and the tests all use it.
pub fn router(app: App) -> Router {
    let limit = app.inner.config.max_body_bytes;
    let auth = app.inner.config.auth.clone();
    let metrics = app.metrics.clone();
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
    if let Some(scrape) = metrics {
        let scrape = Router::new()
            .route("/metrics", get(prometheus::answer))
            .with_state(scrape);
        router = router.merge(scrape);
    }
    if auth.is_required() {
        router = router.layer(middleware::from_fn_with_state(auth, auth::require_bearer));
    }
    router
}

/// A request refused before it reaches the endpoint (by a host's own
/// check), answered as the endpoint answers its own refusals: `status` with
/// a JSON-RPC error body carrying `message`.
pub fn refusal(status: StatusCode, message: &str) -> Response {
    HttpError::new(status, code::INVALID_REQUEST, message).into_response()
}

/// `router` for a `serve` bound to loopback: requests must name a loopback
/// `Host` (DNS-rebinding defence beside the `Origin` check).
pub fn loopback_only(router: Router) -> Router {
    router.layer(middleware::from_fn(auth::loopback_host_only))
}

async fn handle(
    State(app): State<App>,
    method: Method,
    request_headers: HeaderMap,
    principal: Option<axum::Extension<Principal>>,
    invocation: Option<axum::Extension<Invocation>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let invocation = invocation.map(|i| i.0).unwrap_or_default();
    // Every field a request's log line may carry, filled in as they become
    // known (docs/configuration.md, "Log lines").
    let span = tracing::info_span!(
        "mcp",
        http.method = %method,
        rpc.method = field::Empty,
        cold_start = field::Empty,
        request_id = invocation.request_id.as_deref(),
        session = field::Empty,
        tenant = field::Empty,
        logical_session = field::Empty,
        tool = field::Empty,
        execution_id = field::Empty,
        status = field::Empty,
        input_heap = field::Empty,
        heap = field::Empty,
        http.status = field::Empty,
        duration_ms = field::Empty,
    );
    let started = Instant::now();
    let cold = cold_start();
    span.record("cold_start", cold);
    if cold {
        observe::cold_start();
    }
    // A client that gives up (its timeout) drops this future: the guard
    // writes the request's line then, so no call goes unlogged.
    let mut line = RequestLine {
        span: span.clone(),
        started,
        written: false,
    };
    let principal = principal.map(|p| p.0);
    let tenant = app
        .inner
        .config
        .tenancy
        .tenant_of(principal.as_ref().map(|p| p.0.as_str()));
    span.record("tenant", tenant.partition());
    let deadline = invocation.deadline;
    let response = dispatch(
        &app,
        method,
        &request_headers,
        principal.as_ref(),
        &tenant,
        deadline,
        body,
    )
    .instrument(span.clone())
    .await
    .unwrap_or_else(IntoResponse::into_response);
    span.record("http.status", response.status().as_u16());
    if let Some(reason) = Refusal::of_status(response.status().as_u16()) {
        observe::refused(reason);
    }
    span.record("duration_ms", started.elapsed().as_millis() as u64);
    span.in_scope(|| tracing::info!("request"));
    line.written = true;
    response
}

/// Writes a request's line when its handler is dropped unanswered.
struct RequestLine {
    span: tracing::Span,
    started: Instant,
    written: bool,
}

impl Drop for RequestLine {
    fn drop(&mut self) {
        if self.written {
            return;
        }
        self.span
            .record("duration_ms", self.started.elapsed().as_millis() as u64);
        self.span.in_scope(|| {
            tracing::warn!("request abandoned: the client closed the connection before the answer")
        });
    }
}

async fn dispatch(
    app: &App,
    method: Method,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
    tenant: &Tenant,
    deadline: Option<std::time::SystemTime>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, HttpError> {
    app.inner.config.origins.check(request_headers)?;
    let body = body.map_err(|rejection| {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!(
                "the request is over the {} KiB a request may carry (MCP_V8_MAX_BODY_BYTES raises it); \
                 send large data in smaller calls, or have the code fetch it",
                app.inner.config.max_body_bytes / 1024
            )
        } else {
            format!("could not read the request body: {rejection}")
        };
        HttpError::new(status, code::INVALID_REQUEST, message)
    })?;
    let sessionless = sessionless::requested_version(request_headers).is_some();
    if method == Method::POST {
        headers::check_post(request_headers)?;
        let post = call::Post {
            headers: request_headers,
            principal,
            tenant,
            deadline,
            body: &body,
        };
        let (server, calls) = (&app.inner.server, &app.inner.calls);
        return if sessionless {
            sessionless::post(server, calls, post).await
        } else {
            session::post(&app.inner.sessions, server, calls, post).await
        };
    }
    if sessionless {
        return Ok(sessionless::method_not_allowed());
    }
    match method {
        Method::DELETE => session::delete(&app.inner.sessions, request_headers, principal).await,
        _ => {
            let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            Ok(response)
        }
    }
}

/// Decodes a POST body as the endpoint does, up to dispatch, touching no
/// store and running nothing; `Err` holds the HTTP status and JSON-RPC code
/// the endpoint would answer. The entry point of the fuzz targets.
#[doc(hidden)]
pub fn decode_only(request_headers: &HeaderMap, body: &[u8]) -> Result<(), (u16, i64)> {
    let outcome = if sessionless::requested_version(request_headers).is_some() {
        sessionless::decode(request_headers, body).map(|_| ())
    } else {
        session::parse_body(body).map(|_| ())
    };
    outcome.map_err(|e| (e.status.as_u16(), e.code))
}
