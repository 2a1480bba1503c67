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
//! - **Write timeout**: a connection whose response writes make no progress for
//!   `write_timeout_secs` (a client that stopped reading) is closed (`write_timeout`).
//! - **Connection bounds**: at most `max_connections` connections are served at once, and one
//!   peer address holds at most `max_connections_per_client` (trusted proxies exempt). At a
//!   bound the oldest idle connection is closed to make room (`connections`); when every
//!   connection is busy, a new client waits in the listen backlog (the global bound) or is
//!   refused with a 503 (its own bound), instead of costing memory and descriptors.
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

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower_http::timeout::TimeoutBody;

use crate::body_deadline::DeadlineBody;
use crate::config::Config;
use crate::connections::{ConnectionTable, TrackedBody};
use crate::write_timeout::WriteTimeout;

/// How long the loop pauses after a failed `accept` (e.g. out of file descriptors), so that a
/// persistent failure does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// The body of the answer to a connection over its peer's bound.
const TOO_MANY_CONNECTIONS: &str = r#"{"detail": "Too many connections from this client"}"#;

/// The limits of [`serve`], from `[server]` (and `auth.trusted_proxies`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServeLimits {
    /// Time allowed for a request's headers.
    pub(crate) header_read_timeout: Duration,
    /// Time a request body may stay silent.
    pub(crate) request_body_timeout: Duration,
    /// Time a whole request body may take.
    pub(crate) request_body_deadline: Duration,
    /// Time a response write may make no progress.
    pub(crate) write_timeout: Duration,
    /// Connections served at once (at least 1).
    pub(crate) max_connections: usize,
    /// Connections one peer may hold (at least 1).
    pub(crate) max_connections_per_client: usize,
    /// Peers exempt from `max_connections_per_client`.
    pub(crate) trusted_proxies: Vec<String>,
}

impl From<&Config> for ServeLimits {
    fn from(config: &Config) -> ServeLimits {
        let server = &config.server;
        ServeLimits {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            request_body_timeout: Duration::from_secs(server.request_body_timeout_secs),
            request_body_deadline: Duration::from_secs(server.request_body_deadline_secs),
            write_timeout: Duration::from_secs(server.write_timeout_secs),
            max_connections: server.max_connections.max(1),
            max_connections_per_client: server.max_connections_per_client.max(1),
            trusted_proxies: config.auth.trusted_proxies.clone(),
        }
    }
}

/// Refuses a connection over its peer's bound with a 503 and [`TOO_MANY_CONNECTIONS`], written
/// without waiting (a client that does not read it loses nothing); dropping the stream closes it.
fn refuse(stream: TcpStream, peer: SocketAddr) {
    tracing::debug!(%peer, "connection refused: too many connections from this client");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{TOO_MANY_CONNECTIONS}",
        TOO_MANY_CONNECTIONS.len()
    );
    let _ = stream.try_write(answer.as_bytes());
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
    let table = Arc::new(ConnectionTable::new(
        limits.max_connections_per_client,
        limits.trusted_proxies.clone(),
    ));
    let graceful = GracefulShutdown::new();
    loop {
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
        if !table.admit(peer.ip()) {
            refuse(stream, peer);
            continue;
        }
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                // Every slot is taken: the oldest idle connection makes room; when all are
                // busy, this client waits for one to close.
                table.evict_oldest_idle();
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        // The semaphore is never closed, so this only satisfies the types.
                        Err(_) => break,
                    },
                    () = shutdown.cancelled() => break,
                }
            }
        };
        // SSE frames are many small writes; without TCP_NODELAY, Nagle's algorithm and the
        // peer's delayed ACK stall a stream by about 40 ms at a time.
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
        let connection = Arc::new(table.register(peer.ip()));
        let router = router.clone();
        let body_timeout = limits.request_body_timeout;
        let body_deadline = limits.request_body_deadline;
        let tracker = connection.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let in_flight = tracker.request();
            let mut request = request.map(|body| {
                let idle_limited = TimeoutBody::new(body_timeout, body);
                Body::new(DeadlineBody::new(body_deadline, idle_limited))
            });
            request.extensions_mut().insert(ConnectInfo(peer));
            let response = router.clone().oneshot(request);
            async move {
                let response = response.await?;
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| Body::new(TrackedBody::new(body, in_flight))),
                )
            }
        });
        let io = TokioIo::new(WriteTimeout::new(stream, limits.write_timeout));
        let served = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            tokio::select! {
                result = served => if let Err(err) = result {
                    tracing::trace!(%peer, "connection ended: {err}");
                },
                // Dropping the connection closes its socket.
                () = connection.closed().cancelled() => {
                    tracing::debug!(%peer, "idle connection closed to make room");
                }
            }
            // The slot frees only once the connection is closed.
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
