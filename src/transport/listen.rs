//! `serve`'s HTTP/1.1 listener, which sheds what does not finish: a
//! connection has a bounded time to send each request's headers (also the
//! longest an idle keep-alive connection stays open) and its body, and past
//! a cap derived from the process's file descriptors a new connection is
//! answered 503 at once and closed, so slow or idle clients never hold the
//! descriptors every other client needs. (Under Lambda the function URL
//! does all of this; the router is the same.)

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// What a connection may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Longest a client may take to send a request's headers, and longest a
    /// kept-alive connection waits idle for the next request.
    pub header_timeout: Duration,
    /// Longest a client may take to send a request's body.
    pub body_timeout: Duration,
    /// Connections open at once; past it a new one is answered 503.
    pub max_connections: usize,
}

/// Descriptors kept for everything but client connections: the stores'
/// files and sockets, upstream and fetch connections, logs.
const RESERVED_DESCRIPTORS: usize = 128;
/// Descriptors an engine worker takes: its three pipes.
const DESCRIPTORS_PER_WORKER: usize = 3;

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
    let open = Arc::new(Semaphore::new(limits.max_connections));
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
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
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
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(refuse(tcp, limits.max_connections));
            continue;
        };
        let connection =
            http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that stalls or goes away ends its own connection.
            let _ = connection.await;
            drop(permit);
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

/// Answers a connection past the cap with 503 and closes it; a client that
/// does not read gets a second, then is dropped.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = format!(
        "{{\"error\":\"the server has {max} connections open, its limit \
         (MCP_V8_MAX_CONNECTIONS, else from the file-descriptor limit); try again shortly\"}}"
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
