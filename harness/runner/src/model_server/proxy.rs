//! The forward-proxy mode (`[proxy] hosts`, `docs/replay-and-fixtures.md` §12.4): the model
//! server is the gateway's HTTP(S) proxy on its own port, for tool clients that cannot be given
//! another base URL.
//!
//! - `CONNECT <host>:443` to a listed host: answered `200`, then TLS is terminated with a leaf
//!   certificate for the host signed by the run's CA ([`crate::run_ca::RunCa`]), and each
//!   decrypted request is rewritten to `/_keyless/http/<name>/<path>` (the `[http.<name>]` whose
//!   upstream has the host) and handed to the connection loop's own admission and router: the
//!   same HTTP boundary as base-URL mode, so one key, one recording, one redaction, one miss.
//! - An absolute-form request (`GET http://<host>/<path>`) to a listed host: rewritten the same.
//! - Any other host, in every mode: refused `403` with a JSON body naming the host, and reported
//!   as a problem, which fails the run (a call the recording cannot hold is never let through;
//!   while recording it would go out live and unrecorded).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;

use super::backend::Shared;
use super::problems::Problem;
use crate::boundary::{BOUNDARY_ROUTE_PREFIX, BoundaryName};

/// The error type of a refused proxy request's JSON body.
pub(crate) const REFUSED_TYPE: &str = "keyless_proxy_refused";

/// How the connection loop admits and routes one request (its body limits, its router): what
/// every request to a listed host goes through once rewritten.
pub(super) type Admit =
    Arc<dyn Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Response> + Send>> + Send + Sync>;

/// Whether `request` asks the server as a proxy: a `CONNECT`, or an absolute-form target.
pub(super) fn is_proxied(request: &Request<Incoming>) -> bool {
    request.method() == Method::CONNECT || request.uri().scheme().is_some()
}

/// Serves one proxy request (see the module's doc).
pub(super) async fn serve(
    request: Request<Incoming>,
    admit: Admit,
    shared: Arc<Shared>,
    header_read_timeout: Duration,
    port: u16,
) -> Response {
    let method = request.method().clone();
    let target = request.uri().authority().map(|a| a.as_str().to_owned());
    let Some(target) = target else {
        return refuse(&shared, &method, "", "the request names no host".to_owned());
    };
    let host = request.uri().host().unwrap_or_default().to_owned();
    let Some(mode) = shared.boundaries.proxy.as_ref() else {
        let reason = format!(
            "{method} {target}: this model server is no proxy (keyless.toml lists no [proxy] \
             hosts)"
        );
        return refuse(&shared, &method, &target, reason);
    };
    let Some(api) = mode.api_of(&host).cloned() else {
        let listed: Vec<&str> = mode.hosts.keys().map(String::as_str).collect();
        let reason = format!(
            "{method} {target}: the host {host:?} is not listed in [proxy] hosts in {} \
             (listed: {}); the call was refused, not sent. List it and give it an \
             [http.<name>] table to record it",
            shared.boundaries.configured_in,
            listed.join(", ")
        );
        return refuse(&shared, &method, &target, reason);
    };
    if method != Method::CONNECT {
        return admit(rewritten(request, &api, port)).await;
    }
    let config = match mode.ca.server_config(&host) {
        Ok(config) => config,
        Err(err) => {
            let reason = format!("CONNECT {target}: {err}");
            return refuse(&shared, &method, &target, reason);
        }
    };
    let stop = shared.aborted.clone();
    tokio::spawn(async move {
        let upgraded = match hyper::upgrade::on(request).await {
            Ok(upgraded) => upgraded,
            Err(err) => {
                tracing::warn!("model server proxy: CONNECT {target} was not upgraded: {err}");
                return;
            }
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let tls = match acceptor.accept(TokioIo::new(upgraded)).await {
            Ok(tls) => tls,
            Err(err) => {
                // Most often the client does not trust the run's CA: say where it is.
                tracing::warn!(
                    "model server proxy: TLS with the client for {target} failed: {err} (does \
                     the gateway trust the run's CA, SSL_CERT_FILE?)"
                );
                return;
            }
        };
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let answered = admit(rewritten(request, &api, port));
            async move { Ok::<_, std::convert::Infallible>(answered.await) }
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_read_timeout);
        let connection = builder.serve_connection(TokioIo::new(tls), service);
        tokio::pin!(connection);
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(err) = served {
                    tracing::trace!("model server proxy connection ended: {err}");
                }
            }
            () = stop.cancelled() => {}
        }
    });
    StatusCode::OK.into_response()
}

/// `request` (to a listed host) as the call to the HTTP boundary `api` on this server: its
/// path and query after `/_keyless/http/<api>`, its `Host` this server's.
fn rewritten(request: Request<Incoming>, api: &BoundaryName, port: u16) -> Request<Incoming> {
    let (mut parts, body) = request.into_parts();
    let path_and_query = (parts.uri.path_and_query())
        .map(|pq| pq.as_str())
        .filter(|pq| pq.starts_with('/'))
        .unwrap_or("/");
    let local = format!("{BOUNDARY_ROUTE_PREFIX}/http/{api}{path_and_query}");
    // The path came from a parsed URI, so it parses again; the base path is the fallback.
    parts.uri = local
        .parse::<Uri>()
        .unwrap_or_else(|_| Uri::from_static("/"));
    if let Ok(value) = HeaderValue::from_str(&format!("127.0.0.1:{port}")) {
        parts.headers.insert(header::HOST, value);
    }
    Request::from_parts(parts, body)
}

/// A proxy request refused: reported (it fails the run) and answered `403` naming why.
fn refuse(shared: &Shared, method: &Method, target: &str, reason: String) -> Response {
    shared.report(Problem::UnservedRoute {
        message: reason.clone(),
        method: method.to_string(),
        path: target.to_owned(),
    });
    (
        StatusCode::FORBIDDEN,
        Json(json!({"error": {"type": REFUSED_TYPE, "host": target, "message": reason}})),
    )
        .into_response()
}
