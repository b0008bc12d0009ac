//! One method call, made the same way in both protocol eras: a
//! `tools/call` is registered so that a cancel or a client that goes away
//! stops it, a call with a progress token is answered as an event stream
//! where the request and the deployment allow one, and any other answer is
//! handed back to the era that shapes it.

use std::sync::Arc;
use std::time::SystemTime;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::value::RawValue;

use super::headers::Principal;
use super::stream::{self, Calls};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::{self, method};
use crate::server::{McpServer, MethodError, MethodResult};
use crate::session::{LogicalSession, SessionId, SessionStore};
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
    pub session: Option<(SessionId, Arc<dyn SessionStore>)>,
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
            retry: None,
        }
    }
}

/// How a call was answered.
pub(super) enum Answer {
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
) -> Answer {
    let key = request.session.as_ref().map(|(session, _)| (session, id));
    let registration = (rpc_method == method::TOOLS_CALL).then(|| calls.inflight.register(key));
    match (registration, mcp::progress_token(params)) {
        (Some(registration), Some(token)) if request.may_stream => {
            let (server, id, rpc_method) = (server.clone(), id.clone(), rpc_method.to_owned());
            let params = params.map(ToOwned::to_owned);
            Answer::Streamed(stream::respond(
                token,
                registration,
                move |control| async move {
                    let answer = watched(
                        &request,
                        &server,
                        &id,
                        &rpc_method,
                        params.as_deref(),
                        &control,
                    )
                    .await;
                    message(id, answer)
                },
            ))
        }
        (Some(registration), _) => {
            let answer = watched(
                &request,
                server,
                id,
                rpc_method,
                params,
                registration.control(),
            )
            .await;
            drop(registration);
            Answer::Now(answer)
        }
        (None, _) => Answer::Now(
            server
                .handle(request.call_context(None), rpc_method, params)
                .await,
        ),
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
