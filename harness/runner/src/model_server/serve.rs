//! The model server's connection loop: what stands between a request and the routes, and how
//! the server stops (issue 34, findings 4, 8 and 9).
//!
//! - **Only this machine's own clients.** A request whose `Host` is not the bound address
//!   (`127.0.0.1:<port>` or `localhost:<port>`), or that carries a foreign `Origin` or a
//!   cross-site `Sec-Fetch-Site`, is refused with a 403 before any route sees it: a web page in
//!   the developer's browser (DNS rebinding included, whose `Host` is the page's own name) can
//!   neither reach the upstream with the key through the recording proxy nor touch a replay.
//!   A request without `Host` or `Origin` (no browser sends one without) is served.
//! - **Bounded reads.** A request's headers must arrive within [`ServeLimits::header_read_timeout`]
//!   (hyper's header read timeout, which also ends idle keep-alive connections); its body must
//!   be complete within [`ServeLimits::body_deadline`] (else 408) and is at most
//!   [`ServeLimits::max_body_bytes`] (else a 413 naming the limit, and a `body_too_large`
//!   problem): a client holding half a request holds nothing for long.
//! - **A bounded stop.** Stopping lets open requests finish for [`ServeLimits::stop_grace`],
//!   then drops every connection still open (an endless stream, a half-sent request), so
//!   `keyless test` and `keyless model-server` end promptly after their work or a signal.
//!
//! HTTP/1.1 only, as the gateway's own loop (`gateway-under-test/src/serve.rs`, which says why):
//! the SDK clients speak HTTP/1.1 over `http://`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::backend::Shared;
use super::problems::Problem;
use super::proxy;
use super::request::Wire;
use super::routes::wire_of;
use super::wires::wire_error;

/// How long a request's headers may take to arrive.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's whole body may take to arrive once its headers have.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);
/// The largest request body accepted. A long conversation is large, yet 16 MiB is far past
/// any real one (a model's context window in text is a few MiB at most), and eight parallel
/// 60 MiB bodies once took 1.7 GB.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// How long a stop waits for open requests before it drops their connections.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long a failed `accept` (out of descriptors) pauses the loop, so it does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// The model server's read and stop bounds; [`ServeLimits::default`] holds the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// How long a request's headers may take.
    pub header_read_timeout: Duration,
    /// How long a request's body may take after its headers.
    pub body_deadline: Duration,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long a stop waits for open requests.
    pub stop_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_deadline: BODY_DEADLINE,
            max_body_bytes: MAX_BODY_BYTES,
            stop_grace: STOP_GRACE,
        }
    }
}

/// Why a request is not from this machine's own client, if it is not: a `Host` that is not the
/// bound address, a foreign `Origin`, a cross-site `Sec-Fetch-Site`.
fn foreign(headers: &HeaderMap, port: u16) -> Option<String> {
    let ours = |authority: &str| {
        let authority = authority.to_ascii_lowercase();
        authority == format!("127.0.0.1:{port}") || authority == format!("localhost:{port}")
    };
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !ours(host) {
            return Some(format!(
                "the Host {host:?} is not this server's address (127.0.0.1:{port} or \
                 localhost:{port}); the model server answers only clients on this machine that \
                 call it by its address"
            ));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let same = origin.strip_prefix("http://").is_some_and(ours);
        if !same {
            return Some(format!(
                "the Origin {origin:?} is a web page's, not this server's; the model server \
                 answers no browser page"
            ));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("");
        if !matches!(site, "same-origin" | "none") {
            return Some(format!(
                "the request came from another site (Sec-Fetch-Site {site:?}); the model server \
                 answers no browser page"
            ));
        }
    }
    None
}

/// The 413 for a body over the limit, and its problem.
fn too_large(
    shared: &Shared,
    wire: Wire,
    path: &str,
    limit: usize,
    declared: Option<u64>,
) -> Response {
    let size = declared.map_or_else(|| "more".to_owned(), |bytes| format!("{bytes}"));
    let message = format!(
        "the request body to {path} is {size} bytes, over the model server's limit of {limit} \
         bytes; the call was not served"
    );
    shared.report(Problem::BodyTooLarge {
        message: message.clone(),
        path: path.to_owned(),
        limit,
    });
    wire_error(
        wire,
        StatusCode::PAYLOAD_TOO_LARGE,
        &message,
        "body_too_large",
    )
}

/// One request: refused when foreign, its body read within the bounds, then routed.
async fn admit(
    request: Request<Incoming>,
    router: Router,
    shared: &Shared,
    limits: ServeLimits,
    port: u16,
) -> Response {
    let path = request.uri().path().to_owned();
    let wire = wire_of(&path);
    if let Some(reason) = foreign(request.headers(), port) {
        tracing::warn!(
            "model server: refused {} {path}: {reason}",
            request.method()
        );
        return wire_error(wire, StatusCode::FORBIDDEN, &reason, "foreign_request");
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if declared.is_some_and(|bytes| bytes > limits.max_body_bytes as u64) {
        return too_large(shared, wire, &path, limits.max_body_bytes, declared);
    }
    let (parts, body) = request.into_parts();
    let read = Limited::new(body, limits.max_body_bytes).collect();
    let bytes = match tokio::time::timeout(limits.body_deadline, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(err)) if err.downcast_ref::<LengthLimitError>().is_some() => {
            return too_large(shared, wire, &path, limits.max_body_bytes, declared);
        }
        Ok(Err(err)) => {
            let message = format!("the request body to {path} could not be read: {err}");
            return wire_error(wire, StatusCode::BAD_REQUEST, &message, "body_unreadable");
        }
        Err(_) => {
            let message = format!(
                "the request body to {path} was not complete within {}s",
                limits.body_deadline.as_secs()
            );
            return wire_error(wire, StatusCode::REQUEST_TIMEOUT, &message, "body_timeout");
        }
    };
    match router
        .oneshot(Request::from_parts(parts, Body::from(bytes)))
        .await
    {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// One connection of a server in the forward-proxy mode ([`proxy`]): served with upgrades (a
/// `CONNECT` becomes a tunnel), a proxy request handed to [`proxy::serve`], any other admitted
/// as usual; at `stop` it is shut down gracefully by hand (hyper-util's `GracefulShutdown`
/// cannot watch an upgradeable connection), and the loop's grace and abort still bound it.
async fn serve_proxying(
    stream: tokio::net::TcpStream,
    router: Router,
    shared: Arc<Shared>,
    limits: ServeLimits,
    port: u16,
    stop: CancellationToken,
) {
    let admit_one: proxy::Admit = {
        let shared = shared.clone();
        Arc::new(move |request: Request<Incoming>| {
            let (router, shared) = (router.clone(), shared.clone());
            Box::pin(async move { admit(request, router, &shared, limits, port).await })
        })
    };
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (admit_one, shared) = (admit_one.clone(), shared.clone());
        async move {
            let response = if proxy::is_proxied(&request) {
                let timeout = limits.header_read_timeout;
                proxy::serve(request, admit_one, shared, timeout, port).await
            } else {
                admit_one(request).await
            };
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = served {
        tracing::trace!("model server connection ended: {err}");
    }
}

/// Serves `router` on `listener` until `stop` is cancelled; then stops accepting, lets open
/// requests finish for the grace period and drops the connections still open.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    shared: Arc<Shared>,
    limits: ServeLimits,
    stop: CancellationToken,
) {
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                tracing::warn!("model server: accept failed: {err}");
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        // SSE chunks are many small writes (see the gateway's loop).
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let shared = shared.clone();
        if shared.boundaries.proxy.is_some() {
            connections.spawn(serve_proxying(
                stream,
                router,
                shared,
                limits,
                port,
                stop.clone(),
            ));
            continue;
        }
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let router = router.clone();
            let shared = shared.clone();
            async move { Ok::<_, Infallible>(admit(request, router, &shared, limits, port).await) }
        });
        let served = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        connections.spawn(async move {
            if let Err(err) = served.await {
                tracing::trace!("model server connection ended: {err}");
            }
        });
    }
    drop(listener);
    // The forward-proxy mode's connections are not watched by `graceful` (they stop themselves
    // at `stop`): the grace waits for them as well.
    let drained = async {
        graceful.shutdown().await;
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(limits.stop_grace, drained)
        .await
        .is_err()
    {
        tracing::warn!(
            "model server: {} connection(s) still open {}s after the stop; dropped",
            connections.len(),
            limits.stop_grace.as_secs()
        );
    }
    shared.aborted.cancel();
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bound_address_and_no_foreign_page_is_served() {
        // (headers, served)
        let cases: [(&[(&str, &str)], bool); 12] = [
            (&[], true),
            (&[("host", "127.0.0.1:8090")], true),
            (&[("host", "localhost:8090")], true),
            (&[("host", "LOCALHOST:8090")], true),
            (
                &[
                    ("host", "127.0.0.1:8090"),
                    ("origin", "http://127.0.0.1:8090"),
                ],
                true,
            ),
            (
                &[
                    ("host", "127.0.0.1:8090"),
                    ("sec-fetch-site", "same-origin"),
                ],
                true,
            ),
            (&[("host", "evil.example:8090")], false),
            (&[("host", "127.0.0.1:9999")], false),
            (&[("host", "127.0.0.1")], false),
            (
                &[
                    ("host", "127.0.0.1:8090"),
                    ("origin", "http://evil.example"),
                ],
                false,
            ),
            (&[("host", "127.0.0.1:8090"), ("origin", "null")], false),
            (
                &[("host", "127.0.0.1:8090"), ("sec-fetch-site", "cross-site")],
                false,
            ),
        ];
        for (headers, served) in cases {
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                map.insert(
                    header::HeaderName::from_static(name),
                    value.parse().expect("value"),
                );
            }
            assert_eq!(foreign(&map, 8090).is_none(), served, "{headers:?}");
        }
    }
}
