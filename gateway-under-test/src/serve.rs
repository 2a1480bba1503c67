//! Serving the HTTP API on a listener, with the limits a server facing slow or hostile clients
//! needs (`[server]` in the configuration):
//!
//! - **Header read timeout**: a connection that has not sent a request's complete headers within
//!   `header_read_timeout_secs` of the server waiting for them is closed (hyper's
//!   `header_read_timeout`, which also ends idle keep-alive connections).
//! - **Request-body timeout and deadline**: a request body that sends nothing for
//!   `request_body_timeout_secs` ([`tower_http::timeout::TimeoutBody`]), or has not ended
//!   `request_body_deadline_secs` after the request arrived (`body_deadline`, against a body
//!   that trickles just inside the timeout), fails the request; the handler answers 408 (the
//!   body extractors of `http` tell a timeout from bad content) and the connection, whose body
//!   was not read to the end, is closed.
//! - **Connection bound**: at most `max_connections` connections are served at once; the loop
//!   accepts the next one only when one has closed, so further clients wait in the listen
//!   backlog instead of costing memory and descriptors.
//!
//! `axum::serve` offers none of these (its hyper builder has no timer, so the header timeout is
//! off), which is why this loop drives hyper's HTTP/1 connection itself: `ConnectInfo<SocketAddr>`
//! for the handlers, `TCP_NODELAY`, and graceful shutdown that lets open requests finish.
//!
//! **HTTP/1.1 only.** `axum::serve` also sniffs for cleartext HTTP/2 (h2c with prior knowledge),
//! but that sniffing waits for the first 24 bytes without any timeout, so a client that sends
//! nothing, or `P`, would hold its connection forever. Browsers never speak h2c and the SDK
//! clients use HTTP/1.1 over `http://`; behind a TLS proxy the proxy speaks HTTP/1.1 to the
//! gateway. There are no protocol upgrades (no WebSocket routes).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower_http::timeout::TimeoutBody;

use crate::body_deadline::DeadlineBody;
use crate::config::ServerConfig;

/// How long the loop pauses after a failed `accept` (e.g. out of file descriptors), so that a
/// persistent failure does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// The limits of [`serve`], from `[server]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServeLimits {
    /// Time allowed for a request's headers.
    pub(crate) header_read_timeout: Duration,
    /// Time a request body may stay silent.
    pub(crate) request_body_timeout: Duration,
    /// Time a whole request body may take.
    pub(crate) request_body_deadline: Duration,
    /// Connections served at once (at least 1).
    pub(crate) max_connections: usize,
}

impl From<&ServerConfig> for ServeLimits {
    fn from(server: &ServerConfig) -> ServeLimits {
        ServeLimits {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            request_body_timeout: Duration::from_secs(server.request_body_timeout_secs),
            request_body_deadline: Duration::from_secs(server.request_body_deadline_secs),
            max_connections: server.max_connections.max(1),
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then stops accepting and waits
/// for the open connections to finish their requests.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = shutdown.cancelled() => break,
        };
        // The semaphore is never closed, so this only satisfies the types.
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!("accept failed: {err}");
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        // SSE frames are many small writes; without TCP_NODELAY, Nagle's algorithm and the
        // peer's delayed ACK stall a stream by about 40 ms at a time.
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
        let router = router.clone();
        let body_timeout = limits.request_body_timeout;
        let body_deadline = limits.request_body_deadline;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(|body| {
                let idle_limited = TimeoutBody::new(body_timeout, body);
                Body::new(DeadlineBody::new(body_deadline, idle_limited))
            });
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::trace!(%peer, "connection ended: {err}");
            }
            // The slot frees only once the connection is closed.
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
