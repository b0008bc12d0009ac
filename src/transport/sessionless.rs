//! MCP 2026-07-28 on the same endpoint as the session protocols. A POST whose
//! `MCP-Protocol-Version` header names no session-era version is one
//! self-contained exchange: no `initialize`, no `Mcp-Session-Id` issued or
//! read, no session store touched. The request proves who it is in
//! `params._meta`, and the standard headers must agree with the body.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::call::{self, Answered, Post, RequestContext};
use super::envelope::{HttpError, check_nesting, json, raw};
use super::stream::Calls;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, code, plain_json_error};
use crate::protocol::logging::{LoggingLevel, META_LOG_LEVEL};
use crate::protocol::mcp::{
    self, ALL_VERSIONS, ClientInfo, STATELESS_VERSION, StatelessResult, UnsupportedVersionData,
    method,
};
use crate::server::{McpServer, MethodError, MethodResult};

/// The protocol version a request asks for in its header, when that version
/// is not one with sessions: such requests are served here, and an unknown
/// version is answered here too, with the versions that are supported.
pub(super) fn requested_version(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(mcp::header::PROTOCOL_VERSION)?;
    let version = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
    (!mcp::is_session_version(&version)).then_some(version)
}

/// GET and DELETE have no meaning without sessions.
pub(super) fn method_not_allowed() -> Response {
    let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `params` as far as the transport reads them; the method's own fields are
/// decoded later, into the method's type.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMeta>,
    /// `tools/call` only: the tool, compared with `Mcp-Name`.
    #[serde(default)]
    name: Option<String>,
    /// Task methods: the task, compared with `Mcp-Name` when sent.
    #[serde(rename = "taskId", default)]
    task_id: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct RequestMeta {
    /// A string when well-formed; kept raw so a non-string is an
    /// invalid-params error rather than a header mismatch.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    protocol_version: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    client_capabilities: Option<Map<String, Value>>,
    /// Optional (a SHOULD); read so a malformed one is refused.
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    client_info: Option<ClientInfo>,
    /// Opts the request in to log messages; kept raw so a level the spec
    /// does not name is refused saying which exist.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    log_level: Option<Value>,
}

/// What a 2026-07-28 request's envelope declares, once checked.
struct Declared {
    version: String,
    tasks_extension: bool,
    ui_extension: bool,
    elicitation: crate::elicit::Declared,
    client_capabilities: Map<String, Value>,
    log_level: Option<LoggingLevel>,
}

/// The HTTP status the 2026-07-28 transport gives a JSON-RPC error code.
fn status_of(code: i64) -> StatusCode {
    match code {
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

fn error(id: &RequestId, code: i64, message: impl Into<String>) -> HttpError {
    HttpError::new(status_of(code), code, message).with_id(Some(id.clone()))
}

/// A header's value with surrounding whitespace removed (RFC 9110 §5.5), or
/// an error when it is sent twice: two values cannot both match the body.
fn single_header<'h>(
    headers: &'h HeaderMap,
    name: &str,
    id: &RequestId,
) -> Result<Option<&'h str>, HttpError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(error(
            id,
            code::HEADER_MISMATCH,
            format!("the {name} header appears more than once"),
        ));
    }
    Ok(first.map(|v| v.to_str().unwrap_or("\u{fffd}").trim()))
}

/// A 2026-07-28 body that passed every transport check.
pub(super) enum Decoded {
    /// Acknowledged with 202 and dropped.
    Notification,
    /// A request to dispatch.
    Request {
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
        /// The client declared the tasks extension in this request.
        tasks_extension: bool,
        /// The client declared MCP Apps in this request.
        ui_extension: bool,
        /// The elicitation modes the client declared in this request.
        elicitation: crate::elicit::Declared,
        /// The capabilities the client declared in this request.
        client_capabilities: Map<String, Value>,
        /// The request asked for log messages from this level up.
        log_level: Option<LoggingLevel>,
    },
}

/// Decodes and checks one 2026-07-28 POST body, up to dispatch: what the
/// fuzz targets drive.
pub(super) fn decode(headers: &HeaderMap, body: &[u8]) -> Result<Decoded, HttpError> {
    check_nesting(body)?;
    let whole: Box<RawValue> =
        serde_json::from_slice(body).map_err(|e| HttpError::parse_error(&e))?;
    if whole.get().trim_start().starts_with('[') {
        return Err(HttpError::bad_request(format!(
            "protocol {STATELESS_VERSION} takes one JSON-RPC message per request, not a batch"
        )));
    }
    let incoming: Incoming = serde_json::from_str(whole.get()).map_err(|e| {
        HttpError::bad_request(format!("Invalid Request: {}", plain_json_error(&e)))
    })?;
    if incoming.jsonrpc != "2.0" || incoming.result.is_some() || incoming.error.is_some() {
        return Err(HttpError::bad_request(
            "Invalid Request: the body must be one JSON-RPC 2.0 request or notification",
        ));
    }
    let Some(method) = incoming.method else {
        return Err(HttpError::bad_request(
            "Invalid Request: a message needs a method",
        ));
    };
    tracing::Span::current().record("rpc.method", method.as_str());
    let Some(id) = incoming.id else {
        // No client-to-server notification means anything in this revision;
        // they are acknowledged, as the session transport does, unless the
        // version itself is one this server does not speak.
        let requested = requested_version(headers).unwrap_or_default();
        if requested != STATELESS_VERSION {
            return Err(unsupported(None, &requested));
        }
        return Ok(Decoded::Notification);
    };
    let declared = check_envelope(headers, &id, &method, incoming.params.as_deref())?;
    if declared.version != STATELESS_VERSION {
        return Err(unsupported(Some(&id), &declared.version));
    }
    Ok(Decoded::Request {
        id,
        method,
        params: incoming.params,
        tasks_extension: declared.tasks_extension,
        ui_extension: declared.ui_extension,
        elicitation: declared.elicitation,
        client_capabilities: declared.client_capabilities,
        log_level: declared.log_level,
    })
}

/// Serves one 2026-07-28 POST body.
pub(super) async fn post(
    server: &McpServer,
    calls: &Calls,
    post: Post<'_>,
) -> Result<Response, HttpError> {
    let Decoded::Request {
        id,
        method: rpc_method,
        params,
        tasks_extension,
        ui_extension,
        elicitation,
        client_capabilities,
        log_level,
    } = decode(post.headers, post.body)?
    else {
        return Ok(StatusCode::ACCEPTED.into_response());
    };
    // The log follows the `session` argument, else this request's own
    // X-MCP-Session-Id header: there is no session to replay.
    let logical_session = if rpc_method == method::TOOLS_CALL {
        super::headers::logical_session(post.headers).map_err(|e| e.with_id(Some(id.clone())))?
    } else {
        None
    };
    if let Some(name) = &logical_session {
        tracing::Span::current().record("logical_session", name.as_str());
    }
    // Without a session, only the client going away cancels a call.
    let request = RequestContext {
        protocol_version: STATELESS_VERSION.to_owned(),
        tenant: post.tenant.clone(),
        logical_session,
        deadline: post.deadline,
        session: None,
        may_stream: calls.streaming,
        tasks_extension,
        ui_extension,
        elicitation,
        client_capabilities: Some(client_capabilities),
        param_headers: (rpc_method == method::TOOLS_CALL).then(|| param_headers(post.headers)),
        log_level,
    };
    let answer = call::call(
        request,
        server,
        calls,
        &id,
        &rpc_method,
        params.as_deref(),
        message,
    )
    .await;
    match answer {
        Answered::Streamed(response) => Ok(response),
        Answered::Now(Ok(result)) => Ok(json(StatusCode::OK, &complete(id, result))),
        Answered::Now(Err(e)) => Err(HttpError::from_method(id, e, status_of)),
    }
}

/// A 2026-07-28 result: complete, with its caching hints and the server's
/// identity.
fn complete(
    id: RequestId,
    result: MethodResult,
) -> jsonrpc::Response<StatelessResult<MethodResult>> {
    let cache = result.cache_hints();
    let result_type = result.result_type();
    let mut answer = StatelessResult::complete(result, cache, crate::server::SERVER_INFO);
    answer.result_type = result_type;
    jsonrpc::Response::ok(id, answer)
}

/// A streamed call's last message.
fn message(id: RequestId, answer: Result<MethodResult, MethodError>) -> Box<RawValue> {
    match answer {
        Ok(result) => raw(&complete(id, result)),
        Err(e) => raw(&jsonrpc::Response::error_with_data(
            Some(id),
            e.code,
            e.message,
            e.data,
        )),
    }
}

fn unsupported(id: Option<&RequestId>, requested: &str) -> HttpError {
    let data = UnsupportedVersionData {
        supported: &ALL_VERSIONS,
        requested,
    };
    HttpError::new(
        StatusCode::BAD_REQUEST,
        code::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}; this server speaks {}",
            ALL_VERSIONS.join(", ")
        ),
    )
    .with_id(id.cloned())
    .with_data(serde_json::to_value(data).expect("error data serializes"))
}

/// Checks `params._meta` and the standard headers against the body, in the
/// order the revision gives: a malformed envelope, then a client that
/// disagrees with itself, before its version is judged.
fn check_envelope(
    headers: &HeaderMap,
    id: &RequestId,
    rpc_method: &str,
    params: Option<&RawValue>,
) -> Result<Declared, HttpError> {
    let invalid = |message: String| error(id, code::INVALID_PARAMS, message);
    let envelope: Envelope = match params {
        None => {
            return Err(invalid(format!(
                "params._meta is required in protocol {STATELESS_VERSION}"
            )));
        }
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| invalid(format!("Invalid params: {}", plain_json_error(&e))))?,
    };
    let Some(meta) = envelope.meta else {
        return Err(invalid(format!(
            "params._meta must carry {} and {}",
            mcp::meta::PROTOCOL_VERSION,
            mcp::meta::CLIENT_CAPABILITIES
        )));
    };
    let missing: Vec<&str> = [
        (mcp::meta::PROTOCOL_VERSION, meta.protocol_version.is_none()),
        (
            mcp::meta::CLIENT_CAPABILITIES,
            meta.client_capabilities.is_none(),
        ),
    ]
    .into_iter()
    .filter_map(|(key, absent)| absent.then_some(key))
    .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "params._meta is missing {}",
            missing.join(" and ")
        )));
    }
    if let Some(client) = &meta.client_info {
        tracing::debug!(client = %client.name, client_version = %client.version, "sessionless request");
    }
    let version = meta.protocol_version.expect("checked present");

    let mismatch = |what: String| error(id, code::HEADER_MISMATCH, what);
    let version_header = single_header(headers, mcp::header::PROTOCOL_VERSION, id)?;
    if version_header.is_none_or(|h| version.as_str() != Some(h)) {
        return Err(mismatch(format!(
            "the MCP-Protocol-Version header {} does not match {} {version}",
            shown(version_header),
            mcp::meta::PROTOCOL_VERSION
        )));
    }
    let method_header = single_header(headers, mcp::header::METHOD, id)?;
    if method_header != Some(rpc_method) {
        return Err(mismatch(format!(
            "the Mcp-Method header {} does not match the method \"{rpc_method}\"",
            shown(method_header)
        )));
    }
    // SEP-2663: a task method names its task in Mcp-Name, for routing.
    if crate::protocol::tasks::is_task_method(rpc_method)
        && let Some(task_id) = envelope.task_id.as_ref().and_then(Value::as_str)
    {
        let name_header = single_header(headers, mcp::header::NAME, id)?;
        if name_header.is_some_and(|h| h != task_id) {
            return Err(mismatch(format!(
                "the Mcp-Name header {} does not match the task \"{task_id}\"",
                shown(name_header)
            )));
        }
    }
    if rpc_method == method::TOOLS_CALL
        && let Some(name) = &envelope.name
    {
        let name_header = single_header(headers, mcp::header::NAME, id)?;
        if name_header != Some(name.as_str()) {
            return Err(mismatch(format!(
                "the Mcp-Name header {} does not match the tool \"{name}\"",
                shown(name_header)
            )));
        }
    }
    let Value::String(version) = version else {
        return Err(invalid(format!(
            "{} must be a string",
            mcp::meta::PROTOCOL_VERSION
        )));
    };
    let log_level = meta
        .log_level
        .as_ref()
        .map(|level| LoggingLevel::parse(level, META_LOG_LEVEL))
        .transpose()
        .map_err(invalid)?;
    let capabilities = meta.client_capabilities.as_ref();
    Ok(Declared {
        version,
        tasks_extension: crate::protocol::tasks::declares_extension(capabilities),
        ui_extension: crate::protocol::apps::declares(capabilities),
        elicitation: crate::elicit::Declared::of(capabilities),
        client_capabilities: meta.client_capabilities.unwrap_or_default(),
        log_level,
    })
}

/// The request's `Mcp-Param-*` headers, by lowercased name after the
/// prefix (a header sent twice keeps its first value: the tool's check
/// compares that one).
fn param_headers(headers: &HeaderMap) -> std::collections::BTreeMap<String, String> {
    let mut found = std::collections::BTreeMap::new();
    for (name, value) in headers {
        if let Some(param) = name
            .as_str()
            .strip_prefix(crate::tools::param_headers::PREFIX)
        {
            let value = String::from_utf8_lossy(value.as_bytes()).trim().to_owned();
            found.entry(param.to_owned()).or_insert(value);
        }
    }
    found
}

/// A header's value as a message shows it: quoted, or that it is absent
/// (never Rust's `Some(..)`/`None`).
fn shown(header: Option<&str>) -> String {
    header.map_or_else(|| "(absent)".to_owned(), |value| format!("\"{value}\""))
}
