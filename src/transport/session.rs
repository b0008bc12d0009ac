//! The session era (2025-03-26, 2025-06-18, 2025-11-25): `initialize`
//! stores the session, and every later request replays it from the store, so
//! no request depends on this process having served the session before.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;

use super::asking;
use super::call::{self, Answered, Post, RequestContext};
use super::envelope::{HttpError, check_nesting, json, raw};
use super::headers::{self, Principal};
use super::stream::{self, Calls};
use crate::clock::unix_now;
use crate::protocol::jsonrpc::{self, Incoming, Message, RequestId, code, plain_json_error};
use crate::protocol::logging::{self, LoggingLevel};
use crate::protocol::mcp::{self, BATCHING_VERSION, InitializeParams, method};
use crate::server::McpServer;
use crate::server::MethodResult;
use crate::session::{InitState, McpSessionId, SessionStore};

/// The session store and the sessions' lifetime.
#[derive(Debug)]
pub(super) struct Sessions {
    pub(super) store: Arc<dyn SessionStore>,
    /// Seconds, sliding.
    pub(super) ttl_secs: i64,
}

impl Sessions {
    /// Loads the session a request names, or the error that ends the request.
    async fn replay(
        &self,
        request_headers: &HeaderMap,
        principal: Option<&Principal>,
    ) -> Result<InitState, HttpError> {
        let raw = request_headers
            .get(mcp::header::SESSION_ID)
            .ok_or_else(|| {
                HttpError::bad_request("missing Mcp-Session-Id header: initialize first")
            })?;
        // An id this server could not have issued names no session.
        let id = raw
            .to_str()
            .ok()
            .and_then(|text| McpSessionId::parse(text).ok())
            .ok_or_else(HttpError::session_not_found)?;
        tracing::Span::current().record("session", id.as_str());
        let now = unix_now();
        let state = self
            .store
            .get(&id, now)
            .await
            .map_err(|e| HttpError::store_failed("session", &e))?
            .ok_or_else(HttpError::session_not_found)?;
        // Another caller presenting this id learns nothing about it.
        if state.principal.as_ref() != principal.map(|p| &p.0) {
            return Err(HttpError::session_not_found());
        }
        if let Some(name) = &state.logical_session {
            tracing::Span::current().record("logical_session", name.as_str());
        }
        // Sliding expiry, written only when less than half the lifetime is
        // left, so most requests cost one read and no write.
        if state.expires_at - now < self.ttl_secs / 2 {
            self.store
                .touch(&id, now, now + self.ttl_secs)
                .await
                .map_err(|e| HttpError::store_failed("session", &e))?;
        }
        Ok(state)
    }
}

/// Splits a body into messages and says whether it was a batch.
pub(super) fn parse_body(body: &[u8]) -> Result<(Vec<Message>, bool), HttpError> {
    check_nesting(body)?;
    let whole: Box<RawValue> =
        serde_json::from_slice(body).map_err(|e| HttpError::parse_error(&e))?;
    let batch = whole.get().trim_start().starts_with('[');
    let items: Vec<Box<RawValue>> = if batch {
        serde_json::from_str(whole.get()).map_err(|e| HttpError::parse_error(&e))?
    } else {
        vec![whole]
    };
    if items.is_empty() {
        return Err(HttpError::bad_request("empty batch"));
    }
    let messages = items
        .iter()
        .map(|item| {
            let incoming: Incoming = serde_json::from_str(item.get()).map_err(|e| {
                HttpError::bad_request(format!("Invalid Request: {}", plain_json_error(&e)))
            })?;
            Message::try_from(incoming)
                .map_err(|e| HttpError::bad_request(format!("Invalid Request: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((messages, batch))
}

/// Serves one session-era POST body: `initialize`, or messages of a
/// replayed session.
pub(super) async fn post(
    sessions: &Sessions,
    server: &McpServer,
    calls: &Calls,
    post: Post<'_>,
) -> Result<Response, HttpError> {
    let request_headers = post.headers;
    let (mut messages, batch) = parse_body(post.body)?;
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
        return initialize(sessions, server, &post, id, params.as_deref()).await;
    }

    let mut state = sessions.replay(request_headers, post.principal).await?;
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
                if method == logging::SET_LEVEL {
                    let answer = set_level(sessions, &mut state, params.as_deref()).await?;
                    responses.push(answer_of(id, answer));
                    continue;
                }
                let request = RequestContext {
                    protocol_version: state.protocol_version.clone(),
                    tenant: post.tenant.clone(),
                    logical_session: state.logical_session.clone(),
                    deadline: post.deadline,
                    session: Some((state.session_id.clone(), sessions.store.clone())),
                    may_stream: !batch && calls.streaming,
                    tasks_extension: false,
                    ui_extension: crate::protocol::apps::declares(Some(&state.client_capabilities)),
                    elicitation: elicitation(&state, !batch && calls.streaming),
                    client_capabilities: Some(state.client_capabilities.clone()),
                    param_headers: None,
                    log_level: state.log_level,
                };
                match call::call(
                    request,
                    server,
                    calls,
                    &id,
                    &method,
                    params.as_deref(),
                    answer_of,
                )
                .await
                {
                    Answered::Streamed(response) => return Ok(response),
                    Answered::Now(answer) => responses.push(answer_of(id, answer)),
                }
            }
            Message::Notification { method, params } => {
                tracing::Span::current().record("rpc.method", method.as_str());
                if method == method::INITIALIZED && !state.initialized {
                    state.initialized = true;
                    sessions
                        .store
                        .put(&state)
                        .await
                        .map_err(|e| HttpError::store_failed("session", &e))?;
                }
                if method == method::CANCELLED {
                    cancel(sessions, calls, &state.session_id, params.as_deref()).await;
                }
                // Other notifications need no answer.
            }
            Message::Response { id, reply } => {
                let kept = server.suspended_run_ttl_secs();
                let store = sessions.store.as_ref();
                asking::deliver(&calls.replies, store, &state.session_id, id, reply, kept).await;
            }
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

async fn initialize(
    sessions: &Sessions,
    server: &McpServer,
    post: &Post<'_>,
    id: RequestId,
    params: Option<&RawValue>,
) -> Result<Response, HttpError> {
    let (request_headers, principal, tenant) = (post.headers, post.principal, post.tenant);
    let with_id = |e: HttpError| e.with_id(Some(id.clone()));
    let params: InitializeParams = serde_json::from_str(params.map_or("null", RawValue::get))
        .map_err(|e| {
            with_id(HttpError::new(
                StatusCode::BAD_REQUEST,
                code::INVALID_PARAMS,
                format!("Invalid initialize params: {}", plain_json_error(&e)),
            ))
        })?;
    let version = mcp::negotiate(&params.protocol_version);
    let captured = headers::mcp_headers(request_headers).map_err(with_id)?;
    let logical_session = headers::logical_session(request_headers).map_err(with_id)?;
    let now = unix_now();
    let state = InitState {
        session_id: McpSessionId::generate(),
        protocol_version: version.to_owned(),
        client_capabilities: params.capabilities,
        client_info: params.client_info,
        logical_session,
        mcp_headers: captured,
        principal: principal.map(|p| p.0.clone()),
        initialized: false,
        log_level: None,
        created_at: now,
        expires_at: now + sessions.ttl_secs,
    };
    let span = tracing::Span::current();
    span.record("session", state.session_id.as_str());
    if let Some(name) = &state.logical_session {
        span.record("logical_session", name.as_str());
    }
    let result = server
        .initialize(version, tenant, state.logical_session.as_ref())
        .await
        .map_err(|e| HttpError::store_failed("metadata", &e))?;
    sessions
        .store
        .put(&state)
        .await
        .map_err(|e| HttpError::store_failed("session", &e))?;
    let mut response = json(StatusCode::OK, &jsonrpc::Response::ok(id, result));
    response.headers_mut().insert(
        mcp::header::SESSION_ID,
        HeaderValue::from_str(state.session_id.as_str()).expect("hex is a valid header value"),
    );
    Ok(response)
}

/// A method's answer as one JSON-RPC response.
fn answer_of(
    id: RequestId,
    answer: Result<MethodResult, crate::server::MethodError>,
) -> Box<RawValue> {
    match answer {
        Ok(result) => raw(&jsonrpc::Response::ok(id, result)),
        Err(e) => raw(&jsonrpc::Response::error_with_data(
            Some(id),
            e.code,
            e.message,
            e.data,
        )),
    }
}

/// `notifications/cancelled`: stops the named call when this process runs
/// it, else relays the cancel through the session store to the process
/// that does. A malformed one is ignored, as notifications get no answer.
async fn cancel(
    sessions: &Sessions,
    calls: &Calls,
    session: &McpSessionId,
    params: Option<&RawValue>,
) {
    let Some(params) =
        params.and_then(|p| serde_json::from_str::<mcp::CancelledParams>(p.get()).ok())
    else {
        tracing::debug!("ignored a notifications/cancelled without a requestId");
        return;
    };
    let found = calls.inflight.cancel(session, &params.request_id);
    tracing::info!(
        found,
        reason = params.reason.as_deref().unwrap_or(""),
        "notifications/cancelled"
    );
    if !found {
        stream::relay_cancel(sessions.store.as_ref(), session, &params.request_id).await;
    }
}

/// `logging/setLevel`: the session's later calls stream their runs'
/// console lines from `level` up, on any instance (the level is part of
/// the replayed state). A level the spec does not name is -32602 and
/// changes nothing.
async fn set_level(
    sessions: &Sessions,
    state: &mut InitState,
    params: Option<&RawValue>,
) -> Result<Result<MethodResult, crate::server::MethodError>, HttpError> {
    let invalid = |message: String| {
        Ok(Err(crate::server::MethodError::new(
            code::INVALID_PARAMS,
            message,
        )))
    };
    let params: logging::SetLevelParams =
        match serde_json::from_str(params.map_or("null", RawValue::get)) {
            Ok(params) => params,
            Err(e) => return invalid(format!("Invalid params: {}", plain_json_error(&e))),
        };
    let level = match LoggingLevel::parse(&params.level, "level") {
        Ok(level) => level,
        Err(why) => return invalid(why),
    };
    if state.log_level != Some(level) {
        state.log_level = Some(level);
        sessions
            .store
            .put(state)
            .await
            .map_err(|e| HttpError::store_failed("session", &e))?;
    }
    Ok(Ok(MethodResult::Empty(mcp::EmptyResult {})))
}

/// Whom a call of session `state` could ask: the modes its client declared
/// in `initialize`, unless the call's answer cannot be a stream, which is
/// where a session's asks travel.
fn elicitation(state: &InitState, may_stream: bool) -> crate::elicit::Declared {
    let declared = crate::elicit::Declared::of(Some(&state.client_capabilities));
    if may_stream {
        declared
    } else {
        declared.refused(crate::elicit::NO_STREAM)
    }
}

/// Ends the session a DELETE names.
pub(super) async fn delete(
    sessions: &Sessions,
    request_headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Response, HttpError> {
    let state = sessions.replay(request_headers, principal).await?;
    match sessions.store.delete(&state.session_id).await {
        Ok(true) => Ok(StatusCode::NO_CONTENT.into_response()),
        Ok(false) => Err(HttpError::session_not_found()),
        Err(e) => Err(HttpError::store_failed("session", &e)),
    }
}
