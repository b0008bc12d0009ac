//! Requests of one run: started from the isolate's thread, carried out on
//! the runtime the host passes in, each step reported to the function the
//! run gave (the engine hands it to the run's event loop).
//!
//! # Contract
//! - A request goes out only after [`Policy::check_url`] passed for its URL
//!   and, for a name, [`Policy::check_resolved`] for the addresses it is
//!   sent to: the resolver reqwest connects with is the one that checks, so
//!   the checked address is the address used.
//! - Redirects are followed here, hop by hop, each hop checked again, with
//!   the injected headers of the new origin only.
//! - Headers from `MCP_V8_FETCH_HEADERS` are added here and override the
//!   code's own; they never travel back to the isolate.
//! - A run makes at most `max_requests` requests, `concurrency` at once,
//!   reads at most `max_response_bytes` of bodies, and nothing outlives it:
//!   dropping [`Egress`] aborts every request.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use url::Url;

use super::FetchConfig;
use super::policy::{Policy, PolicyError};

/// Requests and response bytes of one run, for its outcome.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct FetchCount {
    /// Requests started.
    pub count: u32,
    /// Response body bytes read, all requests together.
    pub bytes: u64,
}

/// `redirect` of a `Request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirectMode {
    Follow,
    Error,
    Manual,
}

/// What the code asked for (the code's headers only).
#[derive(Debug)]
pub(crate) struct RequestParts {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) redirect: RedirectMode,
}

/// The response line and headers, as the code sees them.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) status_text: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) url: String,
    pub(crate) redirected: bool,
    /// `redirect: "manual"` met a redirect: an opaque-redirect response.
    pub(crate) opaque_redirect: bool,
}

/// One step of one request, for the run's event loop.
#[derive(Debug)]
pub(crate) enum Completion {
    Head {
        id: u32,
        result: Result<Head, String>,
    },
    Body {
        id: u32,
        result: Result<Vec<u8>, String>,
    },
}

/// Why a run's egress could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    /// The allow list does not make a policy.
    #[error("{0}")]
    Policy(#[from] PolicyError),
    /// reqwest could not build the client (its TLS roots, its resolver).
    #[error("fetch is unavailable: the HTTP client could not be built: {0}")]
    Client(String),
}

/// A request's failure was already sent to the run as its completion.
struct Delivered;

/// A request could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Launch {
    #[error("{0}")]
    Policy(#[from] PolicyError),
    #[error("fetch refused: this run already made its {0} requests (MCP_V8_FETCH_MAX_REQUESTS)")]
    TooMany(u32),
    #[error("fetch: {0}")]
    Invalid(String),
    #[error(
        "fetch: the header '{0}' cannot be set: a request goes to its URL's host, and headers \
         that would route it elsewhere (Host, Forwarded, X-Forwarded-*, X-Original-URL, \
         X-Rewrite-URL) are refused, as the Fetch Standard forbids Host; put the host you mean \
         in the URL"
    )]
    Rerouting(String),
}

/// Whether a request header would route the request to another host or
/// path than its URL's, at the origin or at a proxy in front of it: such a
/// request could carry the credentials the operator injects for one origin
/// to a virtual host the operator never named.
fn reroutes(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "host"
            | "forwarded"
            | "x-original-url"
            | "x-rewrite-url"
            | "x-host"
            | "x-http-host-override"
            | "x-original-host"
    ) || name.starts_with("x-forwarded-")
        || name.starts_with(':')
}

/// The operator's settings made into a client: the policy, reqwest's
/// client with the checking resolver, the injected headers and the limits.
/// Building one loads the system's root certificates, too slow to do per
/// run: the host keeps one for as long as its settings hold.
pub(crate) struct Client {
    pub(super) policy: Arc<Policy>,
    pub(super) client: reqwest::Client,
    pub(super) headers: BTreeMap<String, BTreeMap<String, String>>,
    pub(super) max_requests: u32,
    pub(super) max_bytes: u64,
    pub(super) concurrency: u32,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the headers: they are secrets.
        f.debug_struct("Client")
            .field("max_requests", &self.max_requests)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `config`, whose connections run on `runtime`.
    pub(crate) fn new(
        config: &FetchConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Arc<Self>, SetupError> {
        let policy = Arc::new(Policy::new(&config.allow, config.runtime_api.as_deref())?);
        let resolver = Arc::new(CheckingResolver {
            policy: policy.clone(),
            pinned: config.resolve.clone(),
        });
        let client = {
            let _entered = runtime.enter();
            reqwest::Client::builder()
                // The proxy variables would send requests around the policy.
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .dns_resolver(resolver)
                .user_agent(concat!("mcp-v8-lambda/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| SetupError::Client(e.to_string()))?
        };
        Ok(Arc::new(Self {
            policy,
            client,
            headers: config.headers.clone(),
            max_requests: config.max_requests,
            max_bytes: config.max_response_bytes,
            concurrency: config.concurrency.max(1),
        }))
    }
}

/// Resolves names (pinned ones first) and keeps only the addresses the
/// policy allows; reqwest connects to what this returns.
struct CheckingResolver {
    policy: Arc<Policy>,
    pinned: BTreeMap<String, Vec<IpAddr>>,
}

impl reqwest::dns::Resolve for CheckingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_ascii_lowercase();
        let pinned = self.pinned.get(&host).cloned();
        Box::pin(async move {
            let allowed = resolve_checked(&policy, &host, pinned).await?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The addresses of `host` (`pinned` ones instead of DNS, when given) that
/// `policy` lets a request connect to; an error naming the refusal when it
/// allows none. Every client that reaches out of a run resolves through
/// this, so the checked address is the one connected to.
pub(crate) async fn resolve_checked(
    policy: &Policy,
    host: &str,
    pinned: Option<Vec<IpAddr>>,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    let found: Vec<IpAddr> = match pinned {
        Some(addresses) => addresses,
        None => tokio::net::lookup_host((host, 0))
            .await?
            .map(|a| a.ip())
            .collect(),
    };
    let mut allowed = Vec::new();
    let mut refusal = None;
    for address in found {
        match policy.check_resolved(host, address) {
            Ok(()) => allowed.push(SocketAddr::new(address, 0)),
            Err(e) => refusal = Some(e),
        }
    }
    if allowed.is_empty() {
        return Err(match refusal {
            Some(refusal) => Box::new(refusal),
            None => format!("{host} has no address").into(),
        });
    }
    Ok(allowed)
}

struct Flight {
    head: bool,
    body: bool,
    task: tokio::task::AbortHandle,
}

/// Where a run's request steps go: called on the runtime, once per step.
pub(crate) type Report = Arc<dyn Fn(Completion) + Send + Sync>;

/// The requests of one run.
pub(crate) struct Egress {
    client: Arc<Client>,
    runtime: tokio::runtime::Handle,
    deadline: Instant,
    slots: Arc<tokio::sync::Semaphore>,
    bytes: Arc<AtomicU64>,
    started: u32,
    next_id: u32,
    flights: HashMap<u32, Flight>,
    report: Report,
}

impl Egress {
    /// `deadline`: when the run's time is up; no request lasts past it.
    /// Requests run on `runtime`; their steps go to `report`.
    pub(crate) fn new(
        client: Arc<Client>,
        runtime: tokio::runtime::Handle,
        deadline: Instant,
        report: Report,
    ) -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(client.concurrency as usize)),
            client,
            runtime,
            deadline,
            bytes: Arc::new(AtomicU64::new(0)),
            started: 0,
            next_id: 0,
            flights: HashMap::new(),
            report,
        }
    }

    /// Starts a request; its head and then its body go to the run's
    /// report. Refused at once when the URL is not allowed or the run has
    /// made all its requests.
    pub(crate) fn start(&mut self, parts: RequestParts) -> Result<u32, Launch> {
        let url = Url::parse(&parts.url).map_err(|e| Launch::Invalid(e.to_string()))?;
        if let Some((name, _)) = parts.headers.iter().find(|(name, _)| reroutes(name)) {
            return Err(Launch::Rerouting(name.clone()));
        }
        if let Err(refusal) = self.client.policy.check_url(&url) {
            tracing::warn!(target: "mcp_v8_lambda::fetch", method = %parts.method,
                origin = %url.origin().ascii_serialization(), "fetch refused by the egress policy");
            return Err(refusal.into());
        }
        let max_requests = self.client.max_requests;
        if self.started >= max_requests {
            return Err(Launch::TooMany(max_requests));
        }
        self.started += 1;
        self.next_id += 1;
        let id = self.next_id;
        let request = Request {
            id,
            client: self.client.clone(),
            slots: self.slots.clone(),
            bytes: self.bytes.clone(),
            deadline: tokio::time::Instant::from_std(self.deadline),
            report: self.report.clone(),
        };
        let task = self.runtime.spawn(request.run(parts, url)).abort_handle();
        self.flights.insert(
            id,
            Flight {
                head: true,
                body: true,
                task,
            },
        );
        Ok(id)
    }

    /// Stops a request (its signal aborted); says whether its head and its
    /// body were still to come.
    pub(crate) fn abort(&mut self, id: u32) -> (bool, bool) {
        match self.flights.remove(&id) {
            Some(flight) => {
                flight.task.abort();
                (flight.head, flight.body)
            }
            None => (false, false),
        }
    }

    /// Steps still to come, over all requests.
    pub(crate) fn pending(&self) -> usize {
        self.flights
            .values()
            .map(|f| usize::from(f.head) + usize::from(f.body))
            .sum()
    }

    /// Books a step that arrived; `false` when its request was aborted
    /// meanwhile, so the step is dropped.
    pub(crate) fn arrived(&mut self, completion: &Completion) -> bool {
        let (id, head_ok) = match completion {
            Completion::Head { id, result } => (*id, result.is_ok()),
            Completion::Body { id, .. } => (*id, false),
        };
        let Some(flight) = self.flights.get_mut(&id) else {
            return false;
        };
        match completion {
            Completion::Head { .. } if head_ok => flight.head = false,
            // A failed request has no body to wait for; a body ends it.
            Completion::Head { .. } | Completion::Body { .. } => {
                self.flights.remove(&id);
            }
        }
        true
    }

    pub(crate) fn count(&self) -> FetchCount {
        FetchCount {
            count: self.started,
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        for flight in self.flights.values() {
            flight.task.abort();
        }
    }
}

/// One request's task.
pub(super) struct Request {
    pub(super) id: u32,
    pub(super) client: Arc<Client>,
    pub(super) slots: Arc<tokio::sync::Semaphore>,
    pub(super) bytes: Arc<AtomicU64>,
    pub(super) deadline: tokio::time::Instant,
    pub(super) report: Report,
}

const MAX_REDIRECTS: usize = 20;

fn redirect_status(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// An error and its causes in one line: reqwest's own message alone hides
/// the policy's refusal that the resolver gave.
/// The message of a request to an allowed origin that got no response:
/// what happened in a person's words, what to check, then the client's
/// own chain for the details.
fn failed(url: &Url, error: &reqwest::Error) -> String {
    let mut io = None;
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(cause) = source {
        if let Some(found) = cause.downcast_ref::<std::io::Error>() {
            io = Some(found.kind());
        }
        source = cause.source();
    }
    let details = chain(error);
    let origin = url.origin().ascii_serialization();
    let what = match io {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            "the connection was refused: nothing listens there"
        }
        Some(std::io::ErrorKind::TimedOut) => "connecting timed out",
        Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted) => {
            "the connection was reset"
        }
        _ if details.contains("dns error") => "its host name did not resolve",
        _ if error.is_timeout() => "the request timed out",
        _ if error.is_connect() => "the connection failed",
        _ => "the request failed before a response",
    };
    format!(
        "fetch failed: {origin} is allowed, but {what}. Check the URL's host and port; if the \
         service may be down, retry later or catch the error and go on without it ({details})"
    )
}

pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}

impl Request {
    pub(super) async fn run(self, parts: RequestParts, url: Url) {
        let started = std::time::Instant::now();
        let method = parts.method.clone();
        let origin = url.origin().ascii_serialization();
        let outcome = self.exchange(parts, url).await;
        let (status, bytes) = match &outcome {
            Ok((status, bytes)) => (*status, *bytes),
            Err(_) => (0, 0),
        };
        // Never headers or bodies: they may carry what was injected.
        tracing::info!(target: "mcp_v8_lambda::fetch", %method, %origin, status, bytes,
            ms = started.elapsed().as_millis() as u64, failed = outcome.is_err(), "fetch");
    }

    fn send(&self, completion: Completion) {
        (self.report)(completion);
    }

    fn fail_head(&self, message: String) -> Result<(u16, u64), Delivered> {
        self.send(Completion::Head {
            id: self.id,
            result: Err(message),
        });
        Err(Delivered)
    }

    async fn exchange(&self, parts: RequestParts, mut url: Url) -> Result<(u16, u64), Delivered> {
        let Ok(_slot) = self.slots.acquire().await else {
            return self.fail_head("fetch: the run is over".into());
        };
        let mut method = parts.method;
        let mut body = parts.body;
        let mut headers = parts.headers;
        let mut redirected = false;
        let first_origin = url.origin();
        for _ in 0..=MAX_REDIRECTS {
            if let Err(refusal) = self.client.policy.check_url(&url) {
                return self.fail_head(refusal.to_string());
            }
            let origin = url.origin().ascii_serialization();
            let injected = self.client.headers.get(&origin);
            let Ok(method_value) = reqwest::Method::from_bytes(method.as_bytes()) else {
                return self.fail_head(format!("fetch: {method:?} is not a method"));
            };
            let mut request = self.client.client.request(method_value, url.clone());
            for (name, value) in &headers {
                if injected.is_some_and(|i| i.contains_key(&name.to_ascii_lowercase())) {
                    continue;
                }
                request = request.header(name, value);
            }
            for (name, value) in injected.into_iter().flatten() {
                request = request.header(name, value);
            }
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let sent = tokio::time::timeout_at(self.deadline, request.send()).await;
            let response = match sent {
                Err(_) => {
                    return self
                        .fail_head("fetch: the run's time ran out before the response".into());
                }
                Ok(Err(error)) => {
                    return self.fail_head(failed(&url, &error));
                }
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            if redirect_status(status)
                && let Some(location) = location
            {
                match parts.redirect {
                    RedirectMode::Error => {
                        return self.fail_head(format!(
                            "fetch: {url} redirected and the request's redirect mode is \"error\""
                        ));
                    }
                    RedirectMode::Manual => {
                        self.send(Completion::Head {
                            id: self.id,
                            result: Ok(Head {
                                status: 0,
                                status_text: String::new(),
                                headers: Vec::new(),
                                url: url.to_string(),
                                redirected,
                                opaque_redirect: true,
                            }),
                        });
                        self.send(Completion::Body {
                            id: self.id,
                            result: Ok(Vec::new()),
                        });
                        return Ok((status, 0));
                    }
                    RedirectMode::Follow => {
                        let Ok(next) = url.join(&location) else {
                            return self.fail_head(format!(
                                "fetch: the redirect to {location:?} is not a URL"
                            ));
                        };
                        // Fetch Standard, HTTP-redirect fetch: 303, and POST on 301/302, become GET without a body.
                        if status == 303 && method != "HEAD"
                            || (matches!(status, 301 | 302) && method == "POST")
                        {
                            method = "GET".into();
                            body = None;
                            headers.retain(|(n, _)| {
                                !matches!(
                                    n.to_ascii_lowercase().as_str(),
                                    "content-type"
                                        | "content-length"
                                        | "content-encoding"
                                        | "content-language"
                                        | "content-location"
                                )
                            });
                        }
                        if next.origin() != first_origin {
                            headers.retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
                        }
                        url = next;
                        redirected = true;
                        continue;
                    }
                }
            }
            let head = Head {
                status,
                status_text: response
                    .status()
                    .canonical_reason()
                    .unwrap_or("")
                    .to_owned(),
                headers: response
                    .headers()
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                url: url.to_string(),
                redirected,
                opaque_redirect: false,
            };
            self.send(Completion::Head {
                id: self.id,
                result: Ok(head),
            });
            return self.read_body(response, status).await;
        }
        self.fail_head(format!("fetch: more than {MAX_REDIRECTS} redirects"))
    }

    async fn read_body(
        &self,
        mut response: reqwest::Response,
        status: u16,
    ) -> Result<(u16, u64), Delivered> {
        let mut body = Vec::new();
        loop {
            let chunk = tokio::time::timeout_at(self.deadline, response.chunk()).await;
            let chunk = match chunk {
                Err(_) => Err("fetch: the run's time ran out while reading the body".to_owned()),
                Ok(Err(error)) => Err(format!("fetch: reading the body failed: {}", chain(&error))),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => {
                    let total = self.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed)
                        + chunk.len() as u64;
                    if total > self.client.max_bytes {
                        Err(format!(
                            "fetch: the run's responses passed {} bytes (MCP_V8_FETCH_MAX_RESPONSE_BYTES)",
                            self.client.max_bytes
                        ))
                    } else {
                        body.extend_from_slice(&chunk);
                        Ok(())
                    }
                }
            };
            if let Err(message) = chunk {
                self.send(Completion::Body {
                    id: self.id,
                    result: Err(message),
                });
                return Err(Delivered);
            }
        }
        let read = body.len() as u64;
        self.send(Completion::Body {
            id: self.id,
            result: Ok(body),
        });
        Ok((status, read))
    }
}
