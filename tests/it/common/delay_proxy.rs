//! An HTTP proxy on loopback in front of moto that can hold back `PUT`
//! requests (heap and chunk writes to S3) for a while, a store whose writes
//! are slow, for the paths where an answer goes before its save; and that
//! can add a first-byte latency to every request, as S3 and DynamoDB have
//! over a network (the benchmarks' latency model).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;

#[derive(Clone)]
struct Shared {
    upstream: String,
    delay_ms: Arc<AtomicU64>,
    latency_ms: Arc<AtomicU64>,
    client: reqwest::Client,
}

pub struct DelayProxy {
    pub endpoint: String,
    delay_ms: Arc<AtomicU64>,
    latency_ms: Arc<AtomicU64>,
    server: tokio::task::JoinHandle<()>,
}

impl DelayProxy {
    /// A proxy to `upstream` (`http://host:port`), holding back nothing yet.
    pub async fn start(upstream: &str) -> DelayProxy {
        let delay_ms = Arc::new(AtomicU64::new(0));
        let latency_ms = Arc::new(AtomicU64::new(0));
        let shared = Shared {
            upstream: upstream.to_owned(),
            delay_ms: delay_ms.clone(),
            latency_ms: latency_ms.clone(),
            client: reqwest::Client::new(),
        };
        let app = axum::Router::new().fallback(forward).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        DelayProxy {
            endpoint,
            delay_ms,
            latency_ms,
            server,
        }
    }

    /// Adds `latency` before every request from now on.
    pub fn latency(&self, latency: Duration) {
        self.latency_ms
            .store(latency.as_millis() as u64, Ordering::SeqCst);
    }

    /// Holds each `PUT` that arrives from now on back for `delay`.
    pub fn delay_puts(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn forward(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let mut delay = shared.latency_ms.load(Ordering::SeqCst);
    if parts.method == axum::http::Method::PUT {
        delay += shared.delay_ms.load(Ordering::SeqCst);
    }
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let url = format!(
        "{}{}",
        shared.upstream,
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut headers = parts.headers.clone();
    headers.remove(axum::http::header::HOST);
    let answered = shared
        .client
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .send()
        .await
        .expect("moto answers the proxy");
    let mut response = Response::builder().status(answered.status());
    for (name, value) in answered.headers() {
        if name != axum::http::header::TRANSFER_ENCODING && name != axum::http::header::CONNECTION {
            response = response.header(name, value);
        }
    }
    let body = answered.bytes().await.unwrap();
    response.body(Body::from(body)).unwrap()
}
