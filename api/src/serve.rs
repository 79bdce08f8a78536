//! The HTTP listener: connections up to a cap, each served over HTTP/1.1
//! with a deadline for its request headers, and a graceful stop.
//!
//! - Past `max_connections` a connection is answered `503` with
//!   `Retry-After` at once and closed: the excess is refused quickly instead
//!   of queueing until descriptors run out.
//! - hyper starts the header deadline whenever it waits for a request,
//!   including between requests on a kept-alive connection, so it is also
//!   the idle keep-alive timeout: a client that sends headers slowly, or
//!   nothing at all, holds its connection at most that long. Bodies have a
//!   deadline of their own (`guard::BODY_READ_TIMEOUT`).
//! - Each request carries its peer's address (`ConnectInfo`), for the
//!   per-address limit on unauthenticated requests (`guard`).

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How connections are bounded.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Connections served at once; more are refused.
    pub max_connections: usize,
    /// Longest wait for a request's headers, and between requests.
    pub header_read_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            // Well under the 20,000 descriptors the process may hold, which
            // the data dir, the journal and webhook connections share.
            max_connections: 10_000,
            header_read_timeout: Duration::from_secs(10),
        }
    }
}

/// How long a stop waits for requests in progress before closing their connections.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// A wait after a failed `accept` (descriptors exhausted, say) before the
/// next, so a failing accept does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a refused connection is told before it is closed.
const REFUSAL: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// Connection counts, for `/metrics`.
#[derive(Default)]
pub struct ConnectionStats {
    /// Connections being served.
    pub open: AtomicUsize,
    /// Connections refused at the cap since start.
    pub refused: AtomicU64,
}

/// Serves `router` on `listener` until `stop` completes; then stops taking
/// connections, lets requests in progress finish (at most `STOP_GRACE`)
/// and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stats: Arc<ConnectionStats>,
    stop: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            refuse(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut request: axum::http::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        let stats = stats.clone();
        stats.open.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            // A connection's error (a client gone, a header deadline) is its own.
            let _ = connection.await;
            stats.open.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(STOP_GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!("requests still in progress at stop; their connections are closed");
    }
}

/// Tells a connection over the cap to come back later, without reading
/// from it or waiting on it, and closes it.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(REFUSAL);
}
