//! One method call, made the same way in both protocol eras: a
//! `tools/call` is registered so that a cancel or a client that goes away
//! stops it, a call with a progress token or whose client asked for log
//! messages is answered as an event stream where the request and the
//! deployment allow one, and any other answer is
//! handed back to the era that shapes it.

use std::sync::Arc;
use std::time::SystemTime;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use serde_json::value::RawValue;

use super::asking;
use super::headers::Principal;
use super::stream::{self, Calls};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::logging::LoggingLevel;
use crate::protocol::mcp::{self, CallToolResult, InputRequiredResult, method};
use crate::server::{McpServer, MethodError, MethodResult};
use crate::session::{LogicalSession, McpSessionId, SessionStore};
use crate::tenant::Tenant;
use crate::tools::{CallContext, RunControl};

/// What the transport knows of one HTTP request, handed to the POST of
/// either era.
pub(super) struct Post<'a> {
    pub headers: &'a HeaderMap,
    pub principal: Option<&'a Principal>,
    pub tenant: &'a Tenant,
    /// When the host stops waiting for the answer (a Lambda invocation's
    /// deadline); `None` under `serve`.
    pub deadline: Option<SystemTime>,
    pub body: &'a [u8],
}

/// Whose call it is and how its answer may travel, whichever era it came in.
#[derive(Clone)]
pub(super) struct RequestContext {
    pub protocol_version: String,
    pub tenant: Tenant,
    pub logical_session: Option<LogicalSession>,
    pub deadline: Option<SystemTime>,
    /// The transport session the call belongs to, whose store relays
    /// cancels that another process received (session era only).
    pub session: Option<(McpSessionId, Arc<dyn SessionStore>)>,
    /// Whether the answer may be an event stream: not inside a batch, and
    /// only where the deployment streams responses.
    pub may_stream: bool,
    /// A 2026-07-28 request declaring the tasks extension.
    pub tasks_extension: bool,
    /// The client declared MCP Apps.
    pub ui_extension: bool,
    /// The elicitation modes the client declared, and why its calls cannot
    /// wait for an answer when they cannot.
    pub elicitation: crate::elicit::Declared,
    /// The capabilities the client declared.
    pub client_capabilities: Option<serde_json::Map<String, serde_json::Value>>,
    /// A 2026-07-28 request's `Mcp-Param-*` headers (SEP-2243).
    pub param_headers: Option<std::collections::BTreeMap<String, String>>,
    /// The client asked for log messages from this level up: the session's
    /// `logging/setLevel`, or the request's
    /// `_meta["io.modelcontextprotocol/logLevel"]`.
    pub log_level: Option<LoggingLevel>,
}

impl RequestContext {
    fn call_context<'a>(&'a self, control: Option<&'a Arc<RunControl>>) -> CallContext<'a> {
        CallContext {
            protocol_version: &self.protocol_version,
            tenant: &self.tenant,
            logical_session: self.logical_session.as_ref(),
            deadline: self.deadline,
            control,
            tasks_extension: self.tasks_extension,
            ui_extension: self.ui_extension,
            elicitation: self.elicitation,
            client_capabilities: self.client_capabilities.as_ref(),
            param_headers: self.param_headers.as_ref(),
            retry: None,
        }
    }
}

/// How a call was answered.
pub(super) enum Answered {
    /// An event stream: progress, then the message the era shaped.
    Streamed(Response),
    /// The method's answer, for the era to shape.
    Now(Result<MethodResult, MethodError>),
}

/// Makes the call `id` of `method`; `message` shapes a streamed answer as
/// the era sends it.
pub(super) async fn call(
    request: RequestContext,
    server: &McpServer,
    calls: &Calls,
    id: &RequestId,
    rpc_method: &str,
    params: Option<&RawValue>,
    message: fn(RequestId, Result<MethodResult, MethodError>) -> Box<RawValue>,
) -> Answered {
    // What a streamed answer needs is gathered only for one: a call that
    // answers at once pays for none of it.
    let streamed = |request: RequestContext| StreamedCall {
        request,
        server: server.clone(),
        id: id.clone(),
        rpc_method: rpc_method.to_owned(),
        replies: calls.replies.clone(),
        params: params.map(ToOwned::to_owned),
        message,
    };
    let asks_on_stream = request.session.is_some() && request.may_stream;
    if rpc_method != method::TOOLS_CALL {
        // Only a 2025-11-25 `tasks/result` of a task whose run asks turns
        // into a stream here, to carry the asks.
        let answer = server
            .handle(request.call_context(None), rpc_method, params)
            .await;
        return match answer {
            Ok(MethodResult::InputRequired(asked)) if asks_on_stream => {
                let registration = calls.inflight.register(None);
                streamed(request).into_stream(None, registration, Some(asked))
            }
            answer => Answered::Now(answer),
        };
    }
    let key = request.session.as_ref().map(|(session, _)| (session, id));
    let registration = calls.inflight.register(key);
    let token = mcp::progress_token(params);
    // A client that asked for log messages gets the run's console lines as
    // they are written, which only a stream can carry.
    let logs = request.log_level.filter(|_| request.may_stream);
    if let Some(level) = logs {
        registration
            .control()
            .forward_console(crate::tools::engine_log_level(level));
    }
    if request.may_stream && (token.is_some() || logs.is_some()) {
        return streamed(request).into_stream(token, registration, None);
    }
    // Without a progress token the answer is JSON, unless the run asks:
    // then it becomes a stream the asks travel on.
    let control = registration.control();
    match watched(&request, server, id, rpc_method, params, control).await {
        Ok(MethodResult::InputRequired(asked)) if asks_on_stream => {
            streamed(request).into_stream(None, registration, Some(asked))
        }
        answer => {
            drop(registration);
            Answered::Now(answer)
        }
    }
}

/// A call whose answer may travel as an event stream, with what it needs
/// once the request that brought it is gone.
struct StreamedCall {
    request: RequestContext,
    server: McpServer,
    id: RequestId,
    rpc_method: String,
    replies: Arc<asking::Replies>,
    params: Option<Box<RawValue>>,
    message: fn(RequestId, Result<MethodResult, MethodError>) -> Box<RawValue>,
}

impl StreamedCall {
    /// The one place a call becomes an event stream: with progress for
    /// `token`, the call made on the stream, or, when its first round
    /// already `asked` (a run that asks the person), its asks carried on
    /// it, until the message that ends it.
    fn into_stream(
        self,
        token: Option<Value>,
        registration: stream::Registration,
        asked: Option<InputRequiredResult>,
    ) -> Answered {
        Answered::Streamed(stream::respond(
            token,
            registration,
            move |control, events| async move {
                let answer = match asked {
                    Some(asked) => Ok(MethodResult::InputRequired(asked)),
                    None => self.first(&control).await,
                };
                self.finish(answer, &control, &events).await
            },
        ))
    }

    /// The call's first round.
    async fn first(&self, control: &Arc<RunControl>) -> Result<MethodResult, MethodError> {
        let params = self.params.as_deref();
        let (request, server) = (&self.request, &self.server);
        watched(request, server, &self.id, &self.rpc_method, params, control).await
    }

    /// The message that ends the stream, after `answer`: a session-era run
    /// that asked has its asks carried on the stream, and the replies back,
    /// until it ends.
    async fn finish(
        self,
        mut answer: Result<MethodResult, MethodError>,
        control: &Arc<RunControl>,
        events: &tokio::sync::mpsc::Sender<axum::body::Bytes>,
    ) -> Box<RawValue> {
        if let Some((session, store)) = self
            .request
            .session
            .as_ref()
            .filter(|_| self.request.may_stream)
            && let Ok(MethodResult::InputRequired(asked)) = answer
        {
            let conversation = asking::Conversation {
                session,
                store: store.as_ref(),
                deadline: self.request.deadline,
                kept_secs: self.server.suspended_run_ttl_secs(),
                replies: &self.replies,
                control,
                events,
            };
            // Round after round: the asks out on the stream, the replies
            // back as the retry's `inputResponses`, until the run ends.
            let mut asked = asked;
            answer = loop {
                let responses = match conversation.ask(&asked).await {
                    Ok(responses) => responses,
                    Err(why) => break Ok(MethodResult::Call(CallToolResult::error(why))),
                };
                let params =
                    asking::retry_params(self.params.as_deref(), responses, &asked.request_state);
                let (request, server, method) = (&self.request, &self.server, &self.rpc_method);
                match watched(request, server, &self.id, method, Some(&params), control).await {
                    Ok(MethodResult::InputRequired(next)) => asked = next,
                    other => break other,
                }
            };
        }
        (self.message)(self.id, answer)
    }
}

/// A registered call, watched for cancels relayed through the session
/// store when it belongs to a session.
async fn watched(
    request: &RequestContext,
    server: &McpServer,
    id: &RequestId,
    rpc_method: &str,
    params: Option<&RawValue>,
    control: &Arc<RunControl>,
) -> Result<MethodResult, MethodError> {
    let call = server.handle(request.call_context(Some(control)), rpc_method, params);
    match &request.session {
        Some((session, store)) => stream::watched(call, store.as_ref(), session, id, control).await,
        None => call.await,
    }
}
