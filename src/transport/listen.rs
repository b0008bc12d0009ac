//! `serve`'s HTTP/1.1 listener, which sheds what does not finish: a
//! connection has a bounded time to send each request's headers (also the
//! longest an idle keep-alive connection stays open) and its body, and past
//! a cap derived from the process's file descriptors a new connection takes
//! the place of the one that has waited longest without finishing a request
//! (`shedding`), so slow or idle clients never hold the descriptors every
//! other client needs. (Under Lambda the function URL does all of this; the
//! router is the same.)

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;
use tower_http::timeout::{RequestBodyTimeout, RequestBodyTimeoutLayer};

use super::shedding::{Connections, Received, Slot, WatchedBody};

/// What a connection may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Longest a client may take to send a request's headers, and longest a
    /// kept-alive connection waits idle for the next request.
    pub header_timeout: Duration,
    /// Longest a client may take to send a request's body.
    pub body_timeout: Duration,
    /// Connections open at once; past it a new one takes the place of the
    /// one waiting longest, or is answered 503 when every one is serving.
    pub max_connections: usize,
    /// Connections one address may hold that have not finished a request;
    /// past it, its own oldest gives way.
    pub max_waiting_per_address: usize,
}

/// Descriptors kept for everything but client connections: the stores'
/// files and sockets, upstream and fetch connections, logs.
const RESERVED_DESCRIPTORS: usize = 128;
/// Descriptors an engine worker takes: its four pipes (stdin, stdout,
/// stderr and the snapshot pipe its forked copies write).
const DESCRIPTORS_PER_WORKER: usize = 4;

/// Connections `serve` may hold: `set` when the operator chose, else what
/// the process's descriptor limit leaves after the reserve and the
/// workers' pipes. Raises the soft descriptor limit to the hard one first,
/// as servers commonly do (the soft one is often 1024).
pub fn max_connections(set: Option<usize>, workers: usize) -> usize {
    if let Some(set) = set {
        return set;
    }
    let descriptors = raise_descriptor_limit();
    descriptors
        .saturating_sub(RESERVED_DESCRIPTORS + DESCRIPTORS_PER_WORKER * workers)
        .max(16)
}

/// The soft `RLIMIT_NOFILE` after raising it to the hard one.
fn raise_descriptor_limit() -> usize {
    let raised = rlimit::increase_nofile_limit(u64::MAX).or_else(|error| {
        tracing::warn!(%error, "the file-descriptor limit could not be read or raised");
        rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft)
    });
    raised.map_or(1024, |soft| usize::try_from(soft).unwrap_or(usize::MAX))
}

/// Serves `router` on `listener` until `shutdown`, then lets open requests
/// finish for up to 30 s.
pub async fn serve_http(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let service = tower::ServiceBuilder::new()
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout))
        .service(router);
    let connections = Connections::new(limits.max_connections, limits.max_waiting_per_address);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors (EMFILE) or a connection reset before
                // it was taken: wait a moment rather than spin.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // No Nagle: a streamed answer ends with two small writes (the last
        // event, the end of the body), and Nagle holds the second for the
        // client's delayed ACK, 40 ms on Linux.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
        let connections = connections.clone();
        let service = service.clone();
        let http = http.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Ok(slot) = connections.admit(peer.ip()).await else {
                return refuse(tcp, connections.max()).await;
            };
            let connection = http.serve_connection(TokioIo::new(tcp), tracked(service, &slot));
            let connection = watcher.watch(connection);
            // A client that stalls or goes away ends its own connection; one
            // shed to make room is dropped here, which closes its socket.
            tokio::select! {
                _ = connection => {}
                () = slot.conn().shed() => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(30)) => {
            tracing::warn!("connections still open 30 s after the shutdown signal were dropped");
        }
    }
    Ok(())
}

/// `service` for one connection, which tells the connection's slot when a
/// request is complete (its body's end read) and when its answer is written.
fn tracked(
    service: RequestBodyTimeout<Router>,
    slot: &Slot,
) -> impl hyper::service::Service<
    http::Request<Incoming>,
    Response = http::Response<axum::body::Body>,
    Error = Infallible,
    Future: Send,
> {
    let conn = slot.conn().clone();
    hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let conn = conn.clone();
        let service = service.clone();
        async move {
            let request = request.map(|body| Received::new(body, conn.clone()));
            let response = service.oneshot(request).await?;
            Ok(response.map(|body| axum::body::Body::new(WatchedBody::new(body, conn))))
        }
    })
}

/// Answers a connection that found every other one serving with 503 and
/// closes it; a client that does not read gets a second, then is dropped.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = format!(
        "{{\"error\":\"the server has {max} connections open, its limit \
         (MCP_V8_MAX_CONNECTIONS, else from the file-descriptor limit), each serving a \
         request; try again shortly\"}}"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await
    })
    .await;
}
