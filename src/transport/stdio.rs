//! MCP over stdio (the spec's stdio transport): newline-delimited JSON-RPC
//! messages on stdin and stdout, as desktop clients start local servers.
//!
//! Each message goes through the same router `serve` runs, in process and
//! without a socket, as one HTTP request of one transport session: every
//! method, tool, resource and prompt answers exactly as over HTTP, and
//! progress events of a streamed answer become lines as they arrive. The
//! session's id and protocol version, which an HTTP client repeats in
//! headers, are kept here; `--session NAME` plays the `X-MCP-Session-Id`
//! header. 2026-07-28 messages carry their version in `_meta` and get the
//! headers that era asks for, derived from the message itself. A desktop
//! client keeps its server for days, past the transport session's
//! lifetime, and cannot know it ended: the process initializes a new one
//! with the client's own `initialize` and retries the message.

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower::ServiceExt;

use super::routes::{App, router};
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp::{header as names, meta, method};
use axum::Router;

/// How a stdio server presents itself to the router.
#[derive(Debug, Clone, Default)]
pub struct StdioOptions {
    /// The logical session of every message that names none (the
    /// `X-MCP-Session-Id` an HTTP client would send).
    pub logical_session: Option<String>,
}

/// What the transport session has negotiated so far.
#[derive(Debug, Default)]
struct Negotiated {
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// The client's `initialize`, sent again when the session expires.
    initialize: Option<Bytes>,
}

/// Serves MCP on `input` and `output` until `input` ends. Messages are
/// handled concurrently (a `notifications/cancelled` must reach a running
/// call), but `initialize` is answered before the next line is read, since
/// every later message carries what it negotiated. Answers are written one
/// per line, in the order they are ready.
pub async fn serve<R, W>(
    app: App,
    options: StdioOptions,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (lines, mut outgoing) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = outgoing.recv().await {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let negotiated = Arc::new(Mutex::new(Negotiated::default()));
    let router = router(app);
    let options = Arc::new(options);
    let mut input = input;
    let mut running = tokio::task::JoinSet::new();
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes).await? == 0 {
            break;
        }
        // The bytes as sent: what is not JSON (or not UTF-8) gets the
        // router's parse error.
        let line = bytes.trim_ascii_end();
        if line.trim_ascii().is_empty() {
            continue;
        }
        let message = Message::parse(Bytes::copy_from_slice(line));
        let exchange = Exchange {
            router: router.clone(),
            options: options.clone(),
            negotiated: negotiated.clone(),
            lines: lines.clone(),
        };
        if message.method.as_deref() == Some(method::INITIALIZE) {
            exchange.handle(message).await;
        } else {
            running.spawn(exchange.handle(message));
        }
        // Finished handlers are reaped as we go.
        while running.try_join_next().is_some() {}
    }
    // The client closed stdin: it is gone, and so is whatever it waited for.
    running.abort_all();
    drop(lines);
    writer.await.map_err(std::io::Error::other)?
}

/// One line of input and what the transport needs to know of it.
struct Message {
    line: Bytes,
    /// A request's id: an error the router gives without one (a body over
    /// the limit, read before it is parsed) is answered with it, so the
    /// client can match it to its request.
    id: Option<Value>,
    method: Option<String>,
    /// `tools/call`'s tool, for the 2026-07-28 name header.
    tool: Option<String>,
    /// The version a 2026-07-28 message names in its `_meta`.
    stateless_version: Option<String>,
}

impl Message {
    fn parse(line: Bytes) -> Self {
        let json: Option<Value> = serde_json::from_slice(&line).ok();
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        let method = text(json.as_ref().and_then(|j| j.get("method")));
        let id = json
            .as_ref()
            .and_then(|j| j.get("id"))
            .filter(|id| !id.is_null())
            .cloned();
        let params = json.as_ref().and_then(|j| j.get("params"));
        let tool = text(params.and_then(|p| p.get("name")));
        let stateless_version = text(
            params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(meta::PROTOCOL_VERSION)),
        );
        Self {
            line,
            id,
            method,
            tool,
            stateless_version,
        }
    }
}

/// What handling one message needs.
struct Exchange {
    router: Router,
    options: Arc<StdioOptions>,
    negotiated: Arc<Mutex<Negotiated>>,
    lines: mpsc::UnboundedSender<String>,
}

impl Exchange {
    async fn handle(self, message: Message) {
        let initialize = message.method.as_deref() == Some(method::INITIALIZE);
        let mut response = self.send(&message).await;
        if response.status() == StatusCode::NOT_FOUND
            && !initialize
            && message.stateless_version.is_none()
            && self.renew().await
        {
            response = self.send(&message).await;
        }
        let (parts, body) = response.into_parts();
        if parts.status == StatusCode::ACCEPTED {
            return;
        }
        if initialize && let Some(id) = session_id(&parts.headers) {
            let mut negotiated = self.lock();
            negotiated.session_id = Some(id);
            negotiated.initialize = Some(message.line.clone());
        }
        let streamed = parts
            .headers
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if streamed {
            self.forward_events(body, message.id.as_ref()).await;
        } else {
            match body.collect().await {
                Ok(bytes) => self.answer(&bytes.to_bytes(), parts.status, message.id.as_ref()),
                Err(e) => tracing::warn!(error = %e, "reading an answer for stdio failed"),
            }
        }
    }

    async fn send(&self, message: &Message) -> axum::response::Response {
        match self.router.clone().oneshot(self.request(message)).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// A new transport session from the client's own `initialize`, after
    /// the last one expired; whether there is one.
    async fn renew(&self) -> bool {
        let Some(line) = self.lock().initialize.clone() else {
            return false;
        };
        self.lock().session_id = None;
        let answer = self.send(&Message::parse(line)).await;
        let Some(id) = session_id(answer.headers()) else {
            return false;
        };
        self.lock().session_id = Some(id);
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        self.send(&Message::parse(Bytes::from_static(initialized.as_bytes())))
            .await;
        tracing::info!("the transport session expired; stdio initialized a new one");
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Negotiated> {
        self.negotiated
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The HTTP request an HTTP client of this session would send.
    fn request(&self, message: &Message) -> Request<Body> {
        let mut request = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        let mut add = |name: &str, value: &str| {
            if let Ok(value) = HeaderValue::from_str(value) {
                request = std::mem::take(&mut request).header(name, value);
            }
        };
        if let Some(version) = &message.stateless_version {
            add(names::PROTOCOL_VERSION, version);
            if let Some(method) = &message.method {
                add(names::METHOD, method);
            }
            if message.method.as_deref() == Some(method::TOOLS_CALL)
                && let Some(tool) = &message.tool
            {
                add(names::NAME, tool);
            }
        } else {
            let negotiated = self.lock();
            if let Some(id) = &negotiated.session_id {
                add(names::SESSION_ID, id);
            }
            if let Some(version) = &negotiated.protocol_version {
                add(names::PROTOCOL_VERSION, version);
            }
        }
        if let Some(session) = &self.options.logical_session {
            add(names::LOGICAL_SESSION, session);
        }
        request
            .body(Body::from(message.line.clone()))
            .expect("a request of valid parts")
    }

    /// A JSON answer as one line; a transport error without a JSON-RPC body
    /// (a 404 for a session that expired) becomes one.
    fn answer(&self, bytes: &[u8], status: StatusCode, request_id: Option<&Value>) {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(mut json) => {
                if let (Some(id), Some(answer)) = (request_id, json.as_object_mut())
                    && answer.contains_key("error")
                    && answer.get("id").is_none_or(Value::is_null)
                {
                    answer.insert("id".into(), id.clone());
                }
                if let Some(version) = json
                    .pointer("/result/protocolVersion")
                    .and_then(Value::as_str)
                {
                    self.lock().protocol_version = Some(version.to_owned());
                }
                let _ = self.lines.send(json.to_string());
            }
            Err(_) if bytes.is_empty() => {}
            Err(_) => {
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": request_id.cloned().unwrap_or(Value::Null),
                    "error": {
                        "code": code::INTERNAL_ERROR,
                        "message": format!(
                            "the server answered {status} without a JSON-RPC message: {}",
                            String::from_utf8_lossy(bytes)
                        ),
                    }
                });
                let _ = self.lines.send(error.to_string());
            }
        }
    }

    /// Each event of a streamed answer (progress, then the result) as a
    /// line, as it arrives.
    async fn forward_events(&self, mut body: Body, request_id: Option<&Value>) {
        let mut pending = String::new();
        let mut data = String::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                break;
            };
            let Some(chunk) = frame.data_ref() else {
                continue;
            };
            pending.push_str(&String::from_utf8_lossy(chunk));
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                let line = line.trim_end_matches(['\n', '\r']);
                if let Some(payload) = line.strip_prefix("data:") {
                    data.push_str(payload.strip_prefix(' ').unwrap_or(payload));
                } else if line.is_empty() && !data.is_empty() {
                    let data = std::mem::take(&mut data);
                    self.answer(data.as_bytes(), StatusCode::OK, request_id);
                }
            }
        }
        if !data.is_empty() {
            self.answer(data.as_bytes(), StatusCode::OK, request_id);
        }
    }
}

fn session_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(names::SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
