//! A Lambda Runtime API on loopback, for starting the binary as a Lambda
//! function without the emulator, with the parts of Lambda's execution
//! environment that a function's correctness depends on:
//!
//! - the Runtime API (`next`, `response`, `error`) and the Extensions API
//!   (`register`, `event/next`), each INVOKE given to every registered
//!   extension with the event;
//! - an event is handed only to an idle environment: the runtime waits on
//!   `next` and every registered extension on `event/next` (the
//!   post-response phase of the last invocation is over);
//! - with [`RuntimeApi::freeze`], the function's whole process group
//!   (engine workers included) is stopped with SIGSTOP as soon as it is idle
//!   and no event is queued, and continued with SIGCONT when the next event
//!   is given, as Lambda freezes and thaws an environment;
//! - an invocation whose post-response phase is not over by its deadline
//!   ends the environment (SIGKILL of the group), as Lambda does.
//!
//! Each answer is reported with the moment it arrived, and each
//! invocation's post-response phase with the moment it ended.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use tokio::sync::{Notify, mpsc, oneshot};

/// One answer the function posted for an invocation.
#[derive(Debug)]
pub struct Answer {
    /// `invocation-N`, N counting the events from 0 in the order given.
    pub request_id: String,
    /// `response` or `error`.
    pub outcome: String,
    pub body: String,
    pub at: Instant,
}

/// How long an invocation may take, answer and post-response phase, unless
/// [`RuntimeApi::give_with_deadline`] says otherwise.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);

/// An event waiting for an idle environment.
struct Given {
    id: String,
    body: String,
    deadline: Duration,
}

/// What the Runtime API knows of its environment.
#[derive(Default)]
struct Environment {
    queue: VecDeque<Given>,
    /// The runtime's `next` polls waiting for an event.
    runtime: VecDeque<oneshot::Sender<(String, String, u128)>>,
    /// Registered extensions by id: the `event/next` poll waiting, if any.
    extensions: Vec<(String, Option<oneshot::Sender<String>>)>,
    /// Invocations handed out whose post-response phase is not over.
    running: HashMap<String, Instant>,
    /// Post-response phases over: request id → when.
    phases: HashMap<String, Instant>,
    /// The process group stopped between invocations.
    group: Option<i32>,
    frozen: bool,
    /// Invocations whose deadline ended the environment.
    timed_out: Vec<String>,
    freezes: usize,
}

impl Environment {
    fn extensions_waiting(&mut self) -> bool {
        self.extensions
            .iter()
            .all(|(_, poll)| poll.as_ref().is_some_and(|poll| !poll.is_closed()))
    }

    fn idle(&mut self) -> bool {
        self.runtime.retain(|poll| !poll.is_closed());
        !self.runtime.is_empty() && self.extensions_waiting()
    }

    /// Hands queued events to an idle environment, marks post-response
    /// phases over, and freezes the group once nothing is left to do.
    fn pump(&mut self, shared: &Shared) {
        if self.extensions_waiting() {
            let now = Instant::now();
            for (id, _) in self.running.drain() {
                self.phases.insert(id, now);
            }
            shared.changed.notify_waiters();
        }
        while !self.queue.is_empty() && self.idle() {
            if self.frozen {
                signal(self.group, libc::SIGCONT);
                self.frozen = false;
            }
            let given = self.queue.pop_front().unwrap();
            let deadline_ms = (std::time::SystemTime::now() + given.deadline)
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis();
            let invoke = serde_json::json!({
                "eventType": "INVOKE",
                "deadlineMs": deadline_ms as u64,
                "requestId": given.id,
                "invokedFunctionArn": FUNCTION_ARN,
                "tracing": {"type": "X-Amzn-Trace-Id", "value": "Root=1-00000000-000000000000000000000000"},
            })
            .to_string();
            for (_, poll) in &mut self.extensions {
                let _ = poll.take().unwrap().send(invoke.clone());
            }
            let runtime = self.runtime.pop_front().unwrap();
            let _ = runtime.send((given.id.clone(), given.body, deadline_ms));
            self.running.insert(given.id.clone(), Instant::now());
            tokio::spawn(deadline(shared.clone(), given.id, given.deadline));
        }
        if self.group.is_some() && !self.frozen && self.queue.is_empty() && self.idle() {
            signal(self.group, libc::SIGSTOP);
            self.frozen = true;
            self.freezes += 1;
        }
    }
}

const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:mcp-v8-lambda";

fn signal(group: Option<i32>, signal: i32) {
    if let Some(group) = group {
        // SAFETY: kill(2) on a process group this test started.
        unsafe { libc::kill(-group, signal) };
    }
}

/// Ends the environment if `id`'s phase is not over by its deadline.
async fn deadline(shared: Shared, id: String, after: Duration) {
    tokio::time::sleep(after).await;
    let mut environment = shared.environment.lock().unwrap();
    if environment.running.contains_key(&id) {
        signal(environment.group, libc::SIGKILL);
        environment.running.remove(&id);
        environment.timed_out.push(id);
        shared.changed.notify_waiters();
    }
}

#[derive(Clone)]
struct Shared {
    environment: Arc<Mutex<Environment>>,
    changed: Arc<Notify>,
    answers: mpsc::UnboundedSender<Answer>,
}

pub struct RuntimeApi {
    pub address: SocketAddr,
    shared: Shared,
    given: usize,
    answers: mpsc::UnboundedReceiver<Answer>,
    server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start() -> RuntimeApi {
        let (sender, answers) = mpsc::unbounded_channel();
        let shared = Shared {
            environment: Arc::default(),
            changed: Arc::default(),
            answers: sender,
        };
        let app = axum::Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/{outcome}",
                post(answer),
            )
            .route("/2020-01-01/extension/register", post(register))
            .route("/2020-01-01/extension/event/next", get(extension_next))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        RuntimeApi {
            address,
            shared,
            given: 0,
            answers,
            server,
        }
    }

    /// Freezes the process group `group` (a function started with
    /// `process_group(0)`: its pid) whenever the environment is idle.
    pub fn freeze(&self, group: u32) {
        let mut environment = self.shared.environment.lock().unwrap();
        environment.group = Some(group as i32);
        environment.pump(&self.shared);
    }

    /// Queues a function URL event; returns its request id.
    pub fn give(&mut self, event: String) -> String {
        self.give_with_deadline(event, DEFAULT_DEADLINE)
    }

    /// Queues an event that must be done, post-response phase included,
    /// within `deadline` of being handed out.
    pub fn give_with_deadline(&mut self, event: String, deadline: Duration) -> String {
        let id = format!("invocation-{}", self.given);
        self.given += 1;
        let mut environment = self.shared.environment.lock().unwrap();
        environment.queue.push_back(Given {
            id: id.clone(),
            body: event,
            deadline,
        });
        environment.pump(&self.shared);
        id
    }

    /// Whether the environment would take an event now.
    pub fn idle(&self) -> bool {
        self.shared.environment.lock().unwrap().idle()
    }

    /// How often the environment was frozen.
    pub fn freezes(&self) -> usize {
        self.shared.environment.lock().unwrap().freezes
    }

    /// Registered extensions.
    pub fn extensions(&self) -> usize {
        self.shared.environment.lock().unwrap().extensions.len()
    }

    /// Invocations whose deadline ended the environment.
    pub fn timed_out(&self) -> Vec<String> {
        self.shared.environment.lock().unwrap().timed_out.clone()
    }

    /// Waits until the function has taken every event given; panics after
    /// `limit`.
    pub async fn all_taken(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.shared.environment.lock().unwrap().queue.is_empty() {
            assert!(Instant::now() < deadline, "the function stopped polling");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// When the post-response phase of `request_id` ended (every extension
    /// asked for the next event); panics after `limit`.
    pub async fn phase_over(&self, request_id: &str, limit: Duration) -> Instant {
        let wait = async {
            loop {
                let changed = self.shared.changed.notified();
                if let Some(at) = self
                    .shared
                    .environment
                    .lock()
                    .unwrap()
                    .phases
                    .get(request_id)
                {
                    return *at;
                }
                changed.await;
            }
        };
        tokio::time::timeout(limit, wait)
            .await
            .expect("the post-response phase did not end in time")
    }

    /// The next answer to arrive; panics after `limit`.
    pub async fn answer(&mut self, limit: Duration) -> Answer {
        tokio::time::timeout(limit, self.answers.recv())
            .await
            .expect("the function did not answer in time")
            .expect("the Runtime API stopped")
    }

    /// What a Lambda function finds in its environment, besides its own
    /// configuration.
    pub fn function_env(&self) -> Vec<(String, String)> {
        [
            ("AWS_LAMBDA_RUNTIME_API", self.address.to_string()),
            ("AWS_LAMBDA_FUNCTION_NAME", "mcp-v8-lambda".to_owned()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024".to_owned()),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                "/aws/lambda/mcp-v8-lambda".to_owned(),
            ),
            ("AWS_LAMBDA_LOG_STREAM_NAME", "local".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        // A frozen group would outlive the test stopped.
        let environment = self.shared.environment.lock().unwrap();
        if environment.frozen {
            signal(environment.group, libc::SIGCONT);
        }
        self.server.abort();
    }
}

async fn next(State(shared): State<Shared>) -> impl axum::response::IntoResponse {
    let (sender, receiver) = oneshot::channel();
    {
        let mut environment = shared.environment.lock().unwrap();
        environment.runtime.push_back(sender);
        environment.pump(&shared);
    }
    let Ok((id, event, deadline)) = receiver.await else {
        return Err(axum::http::StatusCode::GONE);
    };
    Ok((
        [
            ("lambda-runtime-aws-request-id", id),
            ("lambda-runtime-deadline-ms", deadline.to_string()),
            (
                "lambda-runtime-invoked-function-arn",
                FUNCTION_ARN.to_owned(),
            ),
            ("content-type", "application/json".to_owned()),
        ],
        event,
    ))
}

async fn answer(
    State(shared): State<Shared>,
    Path((request_id, outcome)): Path<(String, String)>,
    body: String,
) -> axum::http::StatusCode {
    let _ = shared.answers.send(Answer {
        request_id,
        outcome,
        body,
        at: Instant::now(),
    });
    axum::http::StatusCode::ACCEPTED
}

async fn register(
    State(shared): State<Shared>,
    headers: HeaderMap,
) -> impl axum::response::IntoResponse {
    let name = headers
        .get("lambda-extension-name")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unnamed")
        .to_owned();
    let id = format!("{name}-{}", uuid::Uuid::new_v4().simple());
    shared
        .environment
        .lock()
        .unwrap()
        .extensions
        .push((id.clone(), None));
    (
        [("lambda-extension-identifier", id)],
        axum::Json(serde_json::json!({
            "functionName": "mcp-v8-lambda",
            "functionVersion": "$LATEST",
            "handler": "bootstrap",
        })),
    )
}

async fn extension_next(
    State(shared): State<Shared>,
    headers: HeaderMap,
) -> Result<String, axum::http::StatusCode> {
    let id = headers
        .get("lambda-extension-identifier")
        .and_then(|v| v.to_str().ok())
        .ok_or(axum::http::StatusCode::FORBIDDEN)?
        .to_owned();
    let (sender, receiver) = oneshot::channel();
    {
        let mut environment = shared.environment.lock().unwrap();
        let slot = environment
            .extensions
            .iter_mut()
            .find(|(known, _)| *known == id)
            .ok_or(axum::http::StatusCode::FORBIDDEN)?;
        slot.1 = Some(sender);
        environment.pump(&shared);
    }
    receiver.await.map_err(|_| axum::http::StatusCode::GONE)
}
