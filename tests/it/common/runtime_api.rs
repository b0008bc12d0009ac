//! A minimal Lambda Runtime API on loopback, for starting the binary as a
//! Lambda function without the emulator: it hands out the events it is
//! given, one per `next` poll in order (later polls wait, as Lambda's do),
//! and reports each answer with the moment it arrived.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use tokio::sync::{Notify, mpsc};

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

#[derive(Clone)]
struct Shared {
    pending: Arc<Mutex<VecDeque<(String, String)>>>,
    arrived: Arc<Notify>,
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
            pending: Arc::default(),
            arrived: Arc::default(),
            answers: sender,
        };
        let app = axum::Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/{outcome}",
                post(answer),
            )
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

    /// Queues a function URL event; returns its request id.
    pub fn give(&mut self, event: String) -> String {
        let id = format!("invocation-{}", self.given);
        self.given += 1;
        self.shared
            .pending
            .lock()
            .unwrap()
            .push_back((id.clone(), event));
        self.shared.arrived.notify_waiters();
        id
    }

    /// Waits until the function has taken every event given; panics after
    /// `limit`.
    pub async fn all_taken(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.shared.pending.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the function stopped polling");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
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
        self.server.abort();
    }
}

async fn next(State(shared): State<Shared>) -> impl axum::response::IntoResponse {
    let (id, event) = loop {
        // Registered before looking, so an event given in between wakes it.
        let arrived = shared.arrived.notified();
        if let Some(found) = shared.pending.lock().unwrap().pop_front() {
            break found;
        }
        arrived.await;
    };
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 300_000;
    (
        [
            ("lambda-runtime-aws-request-id", id),
            ("lambda-runtime-deadline-ms", deadline.to_string()),
            (
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:mcp-v8-lambda".to_owned(),
            ),
            ("content-type", "application/json".to_owned()),
        ],
        event,
    )
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
