//! One MCP client per upstream (rmcp over Streamable HTTP), made by the
//! host for its settings and shared by every run it serves.
//!
//! # Contract
//! - A connection negotiates the era: `server/discover` (2026-07-28), and
//!   `initialize` when the upstream is of the session era. A closed one is
//!   replaced on the next call; a call is never retried, since a tool may
//!   not be idempotent.
//! - Everything here runs on the runtime the host passed in
//!   ([`Upstreams::runtime`]), where the connections' own tasks live:
//!   callers on other threads spawn onto it.
//! - A call's future, dropped, cancels the call at the upstream
//!   (`notifications/cancelled`, which rmcp turns into a closed stream in
//!   the 2026-07-28 era); [`Upstreams::cancellations_sent`] returns once
//!   every such cancel has gone out.
//! - Errors name the server and tool and never hold the upstream's URL or
//!   header values ([`Server::scrub`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use url::Url;

use super::asks::{
    Answers, Asker, Asks, HELD_KEY, HeldCalls, Listeners, Listening, ProgressSink, Resume,
    UpstreamAnswer, asks_of,
};
use super::call::{CallError, ToolInfo, value_of};
use super::call::{innermost, without_rust_types};
use super::cancel::{Abandoned, Cancellations};
use super::flight::requires_task;
use super::flight::{Flight, Step, tool_result};
use super::resolve::{Resolver, refusal_of_upstream};
use super::{UpstreamConfig, UpstreamServer};
use crate::egress::{Policy, chain};
use crate::units::MIB;

/// How long connecting (the handshake included) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The upstreams of one configuration, with their connections.
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Server>>,
    /// `run_js`'s lines about them, once listed ([`super::catalog`]).
    pub(super) catalog: tokio::sync::Mutex<Option<super::Cached>>,
    runtime: tokio::runtime::Handle,
    cancellations: Arc<Cancellations>,
    /// Session-era calls whose upstream asked the person (`asks`).
    held: HeldCalls<Held>,
}

/// A session-era call held while the person decides, with what it is.
struct Held {
    server: String,
    tool: String,
    wrapped: bool,
    flight: Flight,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Upstreams {
    /// The upstreams of `config`, whose connections run on `runtime`.
    pub fn new(
        config: &UpstreamConfig,
        runtime: tokio::runtime::Handle,
    ) -> Result<Arc<Self>, String> {
        let mut servers = BTreeMap::new();
        let cancellations = Cancellations::new(runtime.clone());
        for (name, server) in &config.servers {
            let built = Server::new(name, server, config, &runtime, &cancellations)?;
            servers.insert(name.clone(), Arc::new(built));
        }
        Ok(Arc::new(Self {
            servers,
            catalog: tokio::sync::Mutex::new(None),
            runtime,
            cancellations,
            held: HeldCalls::new(Duration::from_secs(config.held_secs.max(1))),
        }))
    }

    /// Returns once every call is answered, or its
    /// `notifications/cancelled` sent (or failed to be: its connection
    /// closed).
    pub async fn cancellations_sent(&self) {
        self.cancellations.sent().await;
    }

    /// The runtime the connections live on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// The servers' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    fn server(&self, name: &str) -> Result<&Arc<Server>, CallError> {
        self.servers
            .get(name)
            .ok_or_else(|| CallError::UnknownServer {
                name: name.to_owned(),
                known: self.known(),
            })
    }

    fn known(&self) -> String {
        if self.servers.is_empty() {
            "none is configured (MCP_V8_MCP_SERVERS), so mcp has nothing to call".to_owned()
        } else {
            format!("the servers are: {}", self.names().join(", "))
        }
    }

    /// The tools of `server`, listed once per process (again when a call
    /// names a tool the list lacks). Runs on [`Self::runtime`].
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<ToolInfo>>, CallError> {
        self.server(server)?.tools(false).await
    }

    /// Calls `tool` of `server` with `args`, at most for `timeout`: the
    /// result's value (see [`value_of`]), or the questions the upstream
    /// asked the person ([`super::asks`]); `answers` carries the person's
    /// answers to the last ones. Logs one event per call, without
    /// arguments or results. Runs on [`Self::runtime`].
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, Value>,
        answers: Option<Answers>,
        progress: Option<ProgressSink>,
        timeout: Duration,
    ) -> Result<UpstreamAnswer, CallError> {
        let mut audit = Audit {
            server,
            tool,
            started: Instant::now(),
            ended: None,
        };
        let outcome = match self.server(server) {
            Ok(found) => {
                found
                    .call(tool, args, answers, progress, timeout, &self.held)
                    .await
            }
            Err(error) => Err(error),
        };
        audit.ended = Some(match &outcome {
            Ok((UpstreamAnswer::Value(_), bytes)) => ("ok", *bytes),
            Ok((UpstreamAnswer::Asks(_), _)) => ("asked", 0),
            Err(error) => (error.status(), 0),
        });
        outcome.map(|(answer, _)| answer)
    }

    /// Drops the held call `token` names (the run could not ask the
    /// person): it is cancelled at its upstream.
    pub fn release(&self, token: &str) {
        drop(self.held.take(token));
    }
}

/// The audit event of one call, written when the call ends, or when its
/// future is dropped (the run ended first: `cancelled`).
struct Audit<'a> {
    server: &'a str,
    tool: &'a str,
    started: Instant,
    /// Status and result bytes, once the call ended.
    ended: Option<(&'static str, u64)>,
}

impl Drop for Audit<'_> {
    fn drop(&mut self) {
        let (status, bytes) = self.ended.unwrap_or(("cancelled", 0));
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (server, tool) = (self.server, self.tool);
        tracing::info!(target: "mcp_v8_lambda::mcp", server, tool, status, ms, bytes,
            "upstream tool call");
    }
}

/// One upstream: its HTTP client (headers inside), its connection and its
/// tools.
struct Server {
    name: String,
    url: Url,
    client: reqwest_013::Client,
    policy: Arc<Policy>,
    /// Strings no message may hold: the URL and the header values.
    secrets: Vec<String>,
    /// Largest answer read (`MCP_V8_MCP_MAX_RESPONSE_MB`).
    max_response_mb: usize,
    /// The `ttl` a task-only tool's task is asked for.
    task_ttl_ms: u64,
    connection: tokio::sync::Mutex<Option<RunningService<RoleClient, Asker>>>,
    tools: tokio::sync::Mutex<Option<Arc<Vec<ToolInfo>>>>,
    cancellations: Arc<Cancellations>,
    /// Calls in progress that listen for the upstream's questions.
    listeners: Listeners,
}

impl Server {
    fn new(
        name: &str,
        server: &UpstreamServer,
        config: &UpstreamConfig,
        runtime: &tokio::runtime::Handle,
        cancellations: &Arc<Cancellations>,
    ) -> Result<Self, String> {
        let runtime_api = config.runtime_api.as_deref();
        let url = Url::parse(&server.url).map_err(|e| format!("server {name:?}: {e}"))?;
        let origin = url.origin().ascii_serialization();
        let policy = Arc::new(
            Policy::new(std::slice::from_ref(&origin), runtime_api).map_err(|e| {
                format!(
                    "server {name:?}: refused by the egress policy: {}",
                    e.reason()
                )
            })?,
        );
        let mut headers = http::HeaderMap::new();
        let mut secrets = vec![server.url.clone(), url.to_string()];
        for (header, value) in &server.headers {
            let header = http::HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| format!("server {name:?}: {header:?} is not a header name"))?;
            let mut value = http::HeaderValue::from_str(value)
                .map_err(|_| format!("server {name:?}: a header value is invalid"))?;
            value.set_sensitive(true);
            if let Ok(text) = value.to_str() {
                secrets.push(text.to_owned());
                // `Bearer x` is also sent, and echoed, as `x`.
                if let Some((_, token)) = text.split_once(' ') {
                    secrets.push(token.to_owned());
                }
            }
            headers.insert(header, value);
        }
        secrets.retain(|s| s.len() >= 4);
        // Longest first, so a value containing another is scrubbed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let client = {
            let _entered = runtime.enter();
            reqwest_013::Client::builder()
                // The proxy variables would send requests around the policy.
                .no_proxy()
                .redirect(reqwest_013::redirect::Policy::none())
                .dns_resolver(Arc::new(Resolver {
                    policy: policy.clone(),
                }))
                .default_headers(headers)
                .user_agent(concat!("mcp-v8-lambda/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("server {name:?}: cannot build its client: {e}"))?
        };
        Ok(Self {
            name: name.to_owned(),
            url,
            client,
            policy,
            secrets,
            max_response_mb: config.max_response_mb as usize,
            task_ttl_ms: config.held_secs.saturating_mul(1000),
            connection: tokio::sync::Mutex::new(None),
            tools: tokio::sync::Mutex::new(None),
            cancellations: cancellations.clone(),
            listeners: Listeners::default(),
        })
    }

    /// Why a request to the upstream failed, in the words code reads: the
    /// size bound named when an answer passed it, never a Rust type.
    fn failed(&self, tool: &str, error: &rmcp::ServiceError) -> CallError {
        let reason = chain(error);
        if reason.contains("exceeded the maximum size") {
            return CallError::TooLarge {
                server: self.name.clone(),
                tool: tool.to_owned(),
                max_mb: self.max_response_mb,
            };
        }
        if let rmcp::ServiceError::TransportSend(_) = error {
            return CallError::Failed {
                server: self.name.clone(),
                tool: tool.to_owned(),
                reason: format!(
                    "the request could not be sent ({}); the next call connects again",
                    self.scrub(innermost(&reason))
                ),
            };
        }
        let mut reason = self.scrub(&without_rust_types(&reason));
        if matches!(error, rmcp::ServiceError::TransportClosed) {
            // A stream event far past the size bound ends the transport
            // with nothing else said.
            reason = format!(
                "the connection to the upstream closed during the call (if the tool's answer \
                 was large: code mode reads at most {} MiB of one answer, \
                 MCP_V8_MCP_MAX_RESPONSE_MB); the next call reconnects",
                self.max_response_mb
            );
        }
        CallError::Failed {
            server: self.name.clone(),
            tool: tool.to_owned(),
            reason,
        }
    }

    /// `text` without the upstream's URL or header values.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text
    }

    /// A live connection's peer, connecting when there is none.
    async fn peer(&self) -> Result<Peer<RoleClient>, CallError> {
        let mut connection = self.connection.lock().await;
        if let Some(live) = connection.as_ref()
            && !live.is_closed()
            && !live.is_transport_closed()
        {
            return Ok(live.peer().clone());
        }
        *connection = None;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str());
        config.reinit_on_expired_session = true;
        config.allow_stateless = true;
        // An answer comes as one JSON body or as one event of a stream. The
        // transport reads up to twice the bound, so that an answer past it
        // is told apart by its size (a stream's oversized event only closes
        // the transport); the bound itself is checked on the result.
        let read = self.max_response_mb * 2 * MIB + MIB;
        config.max_json_response_size = read;
        config.max_sse_event_size = read;
        let transport = StreamableHttpClientTransport::with_client(self.client.clone(), config);
        // Elicitation is declared so that an upstream may ask; each
        // question goes to the run whose call it came on (`asks`).
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::default()),
        );
        let info = Asker {
            info: ClientConfig::new(
                capabilities,
                Implementation::new("mcp-v8-lambda", env!("CARGO_PKG_VERSION")),
            ),
            listeners: self.listeners.clone(),
        };
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        };
        let unreachable = |reason: String| CallError::Unreachable {
            server: self.name.clone(),
            reason: self.scrub(&reason),
        };
        // The client's resolver enforces the policy; asking it first too
        // gives a refusal its own words, which rmcp's error would bury.
        if let Some(url::Host::Domain(host)) = self.url.host() {
            crate::egress::resolve_checked(&self.policy, &host.to_ascii_lowercase(), None)
                .await
                .map_err(|e| unreachable(refusal_of_upstream(e).to_string()))?;
        }
        let service = tokio::time::timeout(
            CONNECT_TIMEOUT,
            info.serve_with_lifecycle(transport, lifecycle),
        )
        .await
        .map_err(|_| unreachable(format!("no handshake within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| unreachable(without_rust_types(&chain(&e))))?;
        let peer = service.peer().clone();
        *connection = Some(service);
        Ok(peer)
    }

    /// The tools, from the cache unless `refresh`.
    async fn tools(&self, refresh: bool) -> Result<Arc<Vec<ToolInfo>>, CallError> {
        let mut tools = self.tools.lock().await;
        if !refresh && let Some(listed) = tools.as_ref() {
            return Ok(listed.clone());
        }
        let peer = self.peer().await?;
        let listed = match peer.list_all_tools().await {
            Ok(listed) => listed,
            Err(error) => return Err(self.cause("tools/list", &error).await),
        };
        let listed: Arc<Vec<ToolInfo>> = Arc::new(
            listed
                .into_iter()
                .map(|tool| ToolInfo {
                    name: tool.name.into_owned(),
                    description: tool.description.map(|d| d.into_owned()),
                    input_schema: Value::Object((*tool.input_schema).clone()),
                    output_schema: tool.output_schema.map(|s| Value::Object((*s).clone())),
                })
                .collect(),
        );
        *tools = Some(listed.clone());
        Ok(listed)
    }

    /// What a request that failed with `error` tells code. A connection
    /// that broke is forgotten; whether the upstream itself is gone is
    /// asked by connecting again (nothing is re-sent, calls are not
    /// idempotent): gone is [`CallError::Unreachable`], the code every call
    /// to a server that is not there gets, else the request's own failure.
    async fn cause(&self, tool: &str, error: &rmcp::ServiceError) -> CallError {
        let failed = self.failed(tool, error);
        if matches!(
            error,
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
        ) {
            self.closed_on(error);
            if let Err(unreachable @ CallError::Unreachable { .. }) = self.peer().await {
                return unreachable;
            }
        }
        failed
    }

    /// Forgets a connection whose transport a request found closed, so the
    /// next call makes a new one.
    fn closed_on(&self, error: &rmcp::ServiceError) {
        if matches!(
            error,
            rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
        ) && let Ok(mut connection) = self.connection.try_lock()
        {
            *connection = None;
        }
    }

    /// `tools/call` as rmcp's `Peer::call_tool` sends it, but in flight
    /// until answered ([`Flight`]): cancelled through [`Cancellations`]
    /// when dropped (the run or the call's timeout ended it), so that an
    /// engine worker can wait for the cancel to be sent before it is ended.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        progress: Option<ProgressSink>,
    ) -> Result<Flight, rmcp::ServiceError> {
        use rmcp::model::{CallToolRequest, ClientRequest};
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        self.send(peer, request, progress, None).await
    }

    /// A tool called as a 2025-11-25 task: `tools/call` with `task` (the
    /// upstream answers at once with the task), then `tasks/result`, whose
    /// stream carries the task's questions and then its result.
    async fn send_task(
        &self,
        peer: &Peer<RoleClient>,
        tool: &str,
        args: &serde_json::Map<String, Value>,
        progress: Option<ProgressSink>,
    ) -> Result<Flight, rmcp::ServiceError> {
        use rmcp::model::{ClientRequest, CustomRequest};
        let params = serde_json::json!({
            "name": tool, "arguments": args, "task": { "ttl": self.task_ttl_ms },
        });
        let created = peer
            .send_request(ClientRequest::CustomRequest(CustomRequest::new(
                "tools/call",
                Some(params),
            )))
            .await?;
        let created = serde_json::to_value(&created).unwrap_or(Value::Null);
        let Some(task) = created.pointer("/task/taskId").and_then(Value::as_str) else {
            return Err(rmcp::ServiceError::UnexpectedResponse);
        };
        let result = serde_json::json!({ "taskId": task });
        let request =
            ClientRequest::CustomRequest(CustomRequest::new("tasks/result", Some(result)));
        self.send(peer, request, progress, Some(task.to_owned()))
            .await
    }

    /// Sends `request` as a [`Flight`] (`task`: a task's `tasks/result`,
    /// the task cancelled too if the flight is dropped unanswered).
    async fn send(
        &self,
        peer: &Peer<RoleClient>,
        request: rmcp::model::ClientRequest,
        progress: Option<ProgressSink>,
        task: Option<String>,
    ) -> Result<Flight, rmcp::ServiceError> {
        let handle = peer
            .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
            .await?;
        let (listening, questions) = Listening::new(
            &self.listeners,
            handle.id.clone(),
            handle.progress_token.clone(),
            progress,
        );
        let mut in_flight = Abandoned::start(peer, handle.id.clone(), &self.cancellations);
        if let Some(task) = &task {
            in_flight = in_flight.with_task(task.clone());
        }
        Ok(Flight {
            response: Box::pin(handle.await_response()),
            questions,
            _listening: listening,
            in_flight: Some(in_flight),
            reply: None,
            task: task.is_some(),
        })
    }

    async fn call(
        &self,
        tool: &str,
        args: serde_json::Map<String, Value>,
        answers: Option<Answers>,
        progress: Option<ProgressSink>,
        timeout: Duration,
        held: &HeldCalls<Held>,
    ) -> Result<(UpstreamAnswer, u64), CallError> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let timed_out = || CallError::TimedOut {
            server: self.name.clone(),
            tool: tool.to_owned(),
            ms,
        };
        let failed = |reason: String| CallError::Failed {
            server: self.name.clone(),
            tool: tool.to_owned(),
            reason,
        };
        let work = async {
            let (wrapped, mut flight) = match answers {
                Some(Answers {
                    resume: Resume::Held { token },
                    responses,
                }) => {
                    let Some(mut kept) = held
                        .take(&token)
                        .filter(|kept| kept.server == self.name && kept.tool == tool)
                    else {
                        return Err(failed(
                            "the upstream (of the session era) keeps its question inside its \
                             call, which was held by another process, or past \
                             MCP_V8_SUSPENDED_RUN_TTL_SECS; call the tool again"
                                .to_owned(),
                        ));
                    };
                    let reply = responses
                        .get(HELD_KEY)
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({ "action": "cancel" }));
                    if let Some(waiting) = kept.flight.reply.take() {
                        let _ = waiting.send(reply);
                    }
                    (kept.wrapped, kept.flight)
                }
                answers => {
                    let mut tools = self.tools(false).await?;
                    if !tools.iter().any(|t| t.name == tool) {
                        tools = self.tools(true).await?;
                    }
                    let Some(info) = tools.iter().find(|t| t.name == tool) else {
                        let mut known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                        known.sort_unstable();
                        return Err(CallError::UnknownTool {
                            server: self.name.clone(),
                            tool: tool.to_owned(),
                            known: if known.is_empty() {
                                "(none)".to_owned()
                            } else {
                                known.join(", ")
                            },
                        });
                    };
                    let wrapped = info.wraps_result();
                    let peer = self.peer().await?;
                    let mut params =
                        CallToolRequestParams::new(tool.to_owned()).with_arguments(args.clone());
                    if let Some(Answers {
                        resume: Resume::Retry { request_state },
                        responses,
                    }) = answers
                    {
                        params.input_responses = Some(responses.into_iter().collect());
                        params.request_state = request_state;
                    }
                    match self.send_call(&peer, params, progress.clone()).await {
                        Ok(flight) => (wrapped, flight),
                        Err(error) => return Err(self.cause(tool, &error).await),
                    }
                }
            };
            let answer = loop {
                let params = match flight.next().await {
                    Step::Asked(params) => params,
                    Step::Answered(answer) => match *answer {
                        // A tool that runs only as a task (2025-11-25's
                        // `execution.taskSupport: "required"`, which rmcp's
                        // listing drops) refused the plain call before it
                        // ran: it is called again as a task.
                        refused if !flight.task && requires_task(&refused) => {
                            let peer = self.peer().await?;
                            flight =
                                match self.send_task(&peer, tool, &args, progress.clone()).await {
                                    Ok(flight) => flight,
                                    Err(error) => return Err(self.cause(tool, &error).await),
                                };
                            continue;
                        }
                        answer => break answer,
                    },
                };
                // The upstream asked: the call is held for the answer.
                let mut requests = serde_json::Map::new();
                requests.insert(
                    HELD_KEY.to_owned(),
                    serde_json::json!({ "method": super::asks::ELICIT, "params": params }),
                );
                let token = held.hold(Held {
                    server: self.name.clone(),
                    tool: tool.to_owned(),
                    wrapped,
                    flight,
                });
                return Ok((
                    UpstreamAnswer::Asks(Asks {
                        requests,
                        resume: Resume::Held { token },
                    }),
                    0,
                ));
            };
            let result = match answer {
                Ok(rmcp::model::ServerResult::InputRequiredResult(asked)) => {
                    return asks_of(&self.name, tool, asked)
                        .map(|asks| (UpstreamAnswer::Asks(asks), 0));
                }
                Ok(answer) => tool_result(answer),
                Err(error) => Err(error),
            };
            let result = match result {
                Ok(result) => result,
                Err(error) => return Err(self.cause(tool, &error).await),
            };
            let raw = serde_json::to_value(&result).map_err(|e| failed(e.to_string()))?;
            let bytes = raw.to_string().len() as u64;
            if bytes > (self.max_response_mb * MIB) as u64 {
                return Err(CallError::TooLarge {
                    server: self.name.clone(),
                    tool: tool.to_owned(),
                    max_mb: self.max_response_mb,
                });
            }
            value_of(raw, wrapped)
                .map(|value| (UpstreamAnswer::Value(value), bytes))
                .map_err(|text| CallError::Tool {
                    server: self.name.clone(),
                    tool: tool.to_owned(),
                    text: self.scrub(&text),
                })
        };
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| Err(timed_out()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_output_schema_that_only_wraps_the_result_is_told_apart() {
        let tool = |name: &str, output: Value| ToolInfo {
            name: name.into(),
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: Some(output),
        };
        let result = json!({"result": {"type": "integer"}});
        // FastMCP's mark, and the Python SDK's `<tool>Output` model.
        let marked = tool(
            "add",
            json!({"type": "object", "properties": result, "x-fastmcp-wrap-result": true}),
        );
        let sdk = tool(
            "add",
            json!({"type": "object", "title": "addOutput", "properties": result}),
        );
        assert!(marked.wraps_result() && sdk.wraps_result());
        assert_eq!(sdk.result_schema(), Some(&json!({"type": "integer"})));
        // An object that has a `result` field of its own is left as it is.
        let own = tool(
            "add",
            json!({"type": "object", "title": "Sum", "properties": result}),
        );
        let more = tool(
            "add",
            json!({"type": "object", "properties": {"result": {}, "n": {}}, "x-fastmcp-wrap-result": true}),
        );
        assert!(!own.wraps_result() && !more.wraps_result());
    }

    #[test]
    fn messages_never_hold_the_url_or_header_values() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let server = Server::new(
            "gh",
            &UpstreamServer {
                url: "https://api.example.com/mcp?key=k3y-value".into(),
                headers: [("Authorization".into(), "Bearer tok-123456".into())].into(),
            },
            &UpstreamConfig::off(),
            runtime.handle(),
            &Cancellations::new(runtime.handle().clone()),
        )
        .unwrap();
        let scrubbed = server.scrub(
            "error sending request for url (https://api.example.com/mcp?key=k3y-value): got tok-123456 back",
        );
        assert!(
            !scrubbed.contains("k3y-value") && !scrubbed.contains("tok-123456"),
            "{scrubbed}"
        );
        assert!(scrubbed.contains("[redacted]"));
    }
}
