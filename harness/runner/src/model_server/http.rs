//! The HTTP boundary (`docs/replay-and-fixtures.md` §12.4): an HTTP API a tool calls
//! (`[http.<name>]` in `keyless.toml`), served at `/_keyless/http/<name>/…` on the model server
//! itself, the base URL `{http_url:<name>}` stands for.
//!
//! - **Canonical form** ([`HttpBoundary::canonical`]): the method, the path after the base, the
//!   query as sorted name → values, and the body: JSON canonicalised (`{"json": …}`), a form body
//!   as sorted name → values (`{"form": …}`), any other as text (`{"text": …}`) or, when it is not
//!   UTF-8, base64 (`{"base64": …}`); the upstream's `ignore` entries left out; every secret
//!   field (the redaction pass's names, `key`, and the upstream's `secret_fields`) replaced by
//!   the placeholder, so the key does not depend on a key. Headers are not part of it.
//! - **Answer form** ([`HttpAnswer`]): the status, the headers that matter ([`KEPT_HEADERS`]:
//!   `content-type`, which the client parses by, `retry-after`, which its backoff reads, and
//!   `location`, where a redirect points; never a cookie or a credential), and the body as its
//!   chunks: as they came for a streamed type (SSE, NDJSON), else one.
//! - **Replay** answers from the active fixture's exchanges; a call nothing answers gets `502`
//!   with an [`MISS_HEADER`] header and a JSON body naming it, and the engine's ledger fails the
//!   run.
//! - **Recording** forwards the call to the upstream (its real key taken from the gateway's own
//!   request, never written: each secret value it carries is handed to the recorder, which
//!   removes every form of it), reads the answer within [`MAX_ANSWER_BYTES`], and answers the
//!   gateway with the exchange as written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt;
use replay_core::recording::{SECRET_PLACEHOLDER, redact};
use replay_core::{Boundary, BoundaryKind, Exchange, ExchangeCall};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::backend::Shared;
use super::exchanges::{ExchangeRecorder, Exchanges};
use super::problems::Problem;
use crate::boundary::{BOUNDARY_ROUTE_PREFIX, HttpUpstream, IgnoredField};

/// The header a replayed call no recording answers carries, with the miss in one line.
pub(crate) const MISS_HEADER: &str = "x-keyless-miss";

/// The answer headers kept in an exchange: what a client acts on, never a cookie or a
/// credential.
pub(crate) const KEPT_HEADERS: [&str; 3] = ["content-type", "retry-after", "location"];

/// The most of one upstream answer recorded; past it the call fails (a tool API's answer is
/// kilobytes; an endless stream must not fill memory or the recording).
pub(crate) const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How long the upstream may take to connect, and then between two reads of its answer.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(120);

/// Request headers never forwarded upstream: the connection's own, and keyless's.
const HOP_HEADERS: [&str; 10] = [
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "accept-encoding",
    "proxy-connection",
];

/// Names whose value is a secret in a query, a form or a JSON body, besides the redaction
/// pass's own (`api_key`, `token`, `…_key`, …): `key` (Google's APIs, Brave's `key=`).
const MORE_SECRET_NAMES: [&str; 2] = ["key", "x-subscription-token"];

/// One call to an HTTP API, as the route read it.
#[derive(Debug)]
pub(crate) struct HttpRequest<'a> {
    /// The path after the API's base (`/search`; empty for the base itself).
    pub(crate) path: &'a str,
    /// The query string, as sent.
    pub(crate) query: Option<&'a str>,
    /// The method.
    pub(crate) method: &'a Method,
    /// The request's headers.
    pub(crate) headers: &'a HeaderMap,
    /// The body.
    pub(crate) body: &'a [u8],
}

/// An HTTP API's rules for reading its calls ([`Boundary`]).
#[derive(Debug)]
pub(crate) struct HttpBoundary<'a> {
    /// The configured name.
    pub(crate) name: &'a str,
    /// Its table.
    pub(crate) upstream: &'a HttpUpstream,
}

impl HttpBoundary<'_> {
    /// Whether `name` (a query parameter, a form field, a JSON key, a header) holds a secret.
    fn is_secret_name(&self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        MORE_SECRET_NAMES.contains(&lower.as_str())
            || self.upstream.secret_fields.contains(&lower)
            || redact(&json!({ name: 1 }))[name] != json!(1)
    }

    /// Sorted name → sorted values, a secret's values replaced and ignored names left out
    /// (`ignored` says which names the upstream's `ignore` entries drop).
    fn pairs(&self, encoded: &str, ignored: impl Fn(&str) -> bool) -> Value {
        let mut pairs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in form_urlencoded::parse(encoded.as_bytes()) {
            if ignored(&name) {
                continue;
            }
            pairs
                .entry(name.into_owned())
                .or_default()
                .push(value.into_owned());
        }
        // A secret's values become the placeholder whole, as the redaction pass does.
        let map: Map<String, Value> = (pairs.into_iter())
            .map(|(name, mut values)| match self.is_secret_name(&name) {
                true => (name, json!(SECRET_PLACEHOLDER)),
                false => {
                    values.sort();
                    (name, json!(values))
                }
            })
            .collect();
        Value::Object(map)
    }

    /// The body's canonical form (`None`: no body).
    fn body(&self, request: &HttpRequest<'_>) -> Option<Value> {
        if request.body.is_empty() {
            return None;
        }
        let content_type = (request.headers.get("content-type"))
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("application/x-www-form-urlencoded")
            && let Ok(text) = std::str::from_utf8(request.body)
        {
            let ignored = |name: &str| {
                (self.upstream.ignore.iter()).any(
                    |field| matches!(field, IgnoredField::Body(path) if path.join(".") == name),
                )
            };
            return Some(json!({"form": self.pairs(text, ignored)}));
        }
        if let Ok(mut parsed) = serde_json::from_slice::<Value>(request.body) {
            for field in &self.upstream.ignore {
                if let IgnoredField::Body(path) = field {
                    remove_path(&mut parsed, path);
                }
            }
            self.hide_secret_fields(&mut parsed);
            return Some(json!({"json": parsed}));
        }
        Some(match std::str::from_utf8(request.body) {
            Ok(text) => json!({"text": text}),
            Err(_) => json!({"base64": STANDARD.encode(request.body)}),
        })
    }

    /// `value` with the upstream's own secret fields replaced, at any depth (the redaction
    /// pass replaces the common names).
    fn hide_secret_fields(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if self.is_secret_name(key) {
                        *item = json!(SECRET_PLACEHOLDER);
                    } else {
                        self.hide_secret_fields(item);
                    }
                }
            }
            Value::Array(items) => items
                .iter_mut()
                .for_each(|item| self.hide_secret_fields(item)),
            _ => {}
        }
    }
}

/// `value` without the field at `path` (a dotted path of object keys).
fn remove_path(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = value;
    for key in parents {
        match current.get_mut(key) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Value::Object(map) = current {
        map.shift_remove(last);
    }
}

impl<'a> Boundary for HttpBoundary<'a> {
    type Request = HttpRequest<'a>;

    fn kind(&self) -> BoundaryKind {
        BoundaryKind::Http
    }

    fn caller(&self, _request: &HttpRequest<'a>) -> String {
        self.name.to_owned()
    }

    fn label(&self, request: &HttpRequest<'a>) -> String {
        format!("{} {}", request.method, canonical_path(request.path))
    }

    fn canonical(&self, request: &HttpRequest<'a>) -> Value {
        let mut canonical = Map::new();
        canonical.insert("method".into(), json!(request.method.as_str()));
        canonical.insert("path".into(), json!(canonical_path(request.path)));
        if let Some(query) = request.query.filter(|query| !query.is_empty()) {
            let ignored = |name: &str| {
                (self.upstream.ignore.iter())
                    .any(|field| matches!(field, IgnoredField::Query(ignored) if ignored == name))
            };
            canonical.insert("query".into(), self.pairs(query, ignored));
        }
        if let Some(body) = self.body(request) {
            canonical.insert("body".into(), body);
        }
        // The same pass the recording applies, so what replay keys is what was written.
        redact(&Value::Object(canonical))
    }
}

/// The path as the canonical form and the label show it: `/` for the base itself.
fn canonical_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// What an HTTP API answered, as an exchange records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpAnswer {
    /// The status.
    pub(crate) status: u16,
    /// The headers kept ([`KEPT_HEADERS`]), by lowercase name.
    pub(crate) headers: BTreeMap<String, String>,
    /// The body's chunks, in order.
    pub(crate) body: Vec<Chunk>,
}

/// One chunk of a body: text, or base64 when it is not UTF-8.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Chunk {
    /// UTF-8 text.
    Text(String),
    /// Other bytes.
    Bytes {
        /// The bytes, base64.
        base64: String,
    },
}

impl Chunk {
    fn of(bytes: &[u8]) -> Chunk {
        match std::str::from_utf8(bytes) {
            Ok(text) => Chunk::Text(text.to_owned()),
            Err(_) => Chunk::Bytes {
                base64: STANDARD.encode(bytes),
            },
        }
    }

    fn bytes(&self) -> Bytes {
        match self {
            Chunk::Text(text) => Bytes::from(text.clone()),
            Chunk::Bytes { base64 } => Bytes::from(STANDARD.decode(base64).unwrap_or_default()),
        }
    }
}

impl HttpAnswer {
    /// The answer as the gateway gets it: the status, the kept headers, the chunks streamed.
    fn response(&self) -> Response {
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> =
            self.body.iter().map(|chunk| Ok(chunk.bytes())).collect();
        let mut response = Response::new(Body::from_stream(futures::stream::iter(chunks)));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_GATEWAY);
        for (name, value) in &self.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

/// `ANY /_keyless/http/<name>/<rest>`: one call to the API named `<name>`.
pub(super) async fn serve(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let prefix = format!("{BOUNDARY_ROUTE_PREFIX}/http/");
    let after = uri.path().strip_prefix(&prefix).unwrap_or_default();
    let (name, path) = match after.find('/') {
        Some(slash) => (&after[..slash], &after[slash..]),
        None => (after, ""),
    };
    let Some((configured, upstream)) =
        (shared.boundaries.http.iter()).find(|(configured, _)| configured.as_str() == name)
    else {
        let names: Vec<&str> = shared.boundaries.http.keys().map(|n| n.as_str()).collect();
        let message = format!(
            "{method} {}: no HTTP API named {name:?} is configured (configured: {}); add an \
             [http.{name}] table to keyless.toml",
            uri.path(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            },
        );
        return unserved(&shared, &method, &uri, message);
    };
    if shared.closed.load(std::sync::atomic::Ordering::SeqCst) {
        // As a model call then: credited to no fixture, never answered from either.
        let message = format!(
            "{method} {} arrived between two runs: the gateway reused across fixtures              (--reuse-gateway) made it after its run, e.g. from a background task",
            uri.path()
        );
        shared.report(Problem::CallBetweenRuns {
            message: message.clone(),
        });
        return (
            StatusCode::CONFLICT,
            Json(json!({"error": {"type": "keyless_call_between_runs", "message": message}})),
        )
            .into_response();
    }
    let boundary = HttpBoundary {
        name: configured.as_str(),
        upstream,
    };
    let request = HttpRequest {
        path,
        query: uri.query(),
        method: &method,
        headers: &headers,
        body: &body,
    };
    let call = ExchangeCall::read(&boundary, &request);
    match shared.backend.exchanges() {
        Exchanges::Replay(replay) => match replay.lookup(&call) {
            Ok(served) => answer_of(&served.exchange.answer),
            Err(miss) => {
                let message = miss.to_string();
                // The run's ledger (and `keyless serve`'s tally) hears of it as of a model miss.
                shared.report(Problem::exchange_miss(*miss));
                miss_response(&message, name, call.label())
            }
        },
        Exchanges::Record(recorder) => record(&shared, &recorder, &boundary, &request, call).await,
        Exchanges::Unserved(mode) => {
            let message = format!(
                "{method} {}: the model server in {mode} mode records and replays no HTTP API",
                uri.path()
            );
            unserved(&shared, &method, &uri, message)
        }
    }
}

/// A call no configuration or mode serves: reported, and answered `404` with the reason.
fn unserved(shared: &Shared, method: &Method, uri: &Uri, message: String) -> Response {
    shared.report(Problem::UnservedRoute {
        message: message.clone(),
        method: method.to_string(),
        path: uri.path().to_owned(),
    });
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"type": "keyless_unserved", "message": message}})),
    )
        .into_response()
}

/// The recorded answer rendered back; an answer this build cannot read is a `502` naming it.
fn answer_of(recorded: &Value) -> Response {
    match HttpAnswer::deserialize(recorded) {
        Ok(answer) => answer.response(),
        Err(err) => (
            StatusCode::BAD_GATEWAY,
            Json(json!({"error": {"type": "keyless_bad_exchange", "message": format!("the recorded HTTP answer cannot be read: {err}")}})),
        )
            .into_response(),
    }
}

/// What a replayed call nothing answers gets: `502`, the miss in [`MISS_HEADER`] (one line,
/// visible ASCII) and in a JSON body.
fn miss_response(message: &str, upstream: &str, label: &str) -> Response {
    let line: String = (message.chars())
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .take(512)
        .collect();
    let mut response = (
        StatusCode::BAD_GATEWAY,
        Json(json!({"error": {
            "type": "keyless_miss",
            "boundary": "http",
            "upstream": upstream,
            "call": label,
            "message": message,
        }})),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&line) {
        response.headers_mut().insert(MISS_HEADER, value);
    }
    response
}

/// Every secret value `request` carries: a credential header's value (and the token after its
/// scheme), a secret query or form parameter's, a secret JSON field's.
fn secrets_in(boundary: &HttpBoundary<'_>, request: &HttpRequest<'_>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, value) in request.headers {
        if let Ok(value) = value.to_str()
            && boundary.is_secret_name(name.as_str())
        {
            found.push(value.to_owned());
            if let Some((_, token)) = value.split_once(' ') {
                found.push(token.to_owned());
            }
        }
    }
    let mut encoded: Vec<&[u8]> = Vec::new();
    encoded.extend(request.query.map(str::as_bytes));
    encoded.push(request.body);
    for text in encoded {
        for (name, value) in form_urlencoded::parse(text) {
            if boundary.is_secret_name(&name) {
                found.push(value.into_owned());
            }
        }
    }
    if let Ok(body) = serde_json::from_slice::<Value>(request.body) {
        secret_values(boundary, &body, &mut found);
    }
    found
}

fn secret_values(boundary: &HttpBoundary<'_>, value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match (boundary.is_secret_name(key), item) {
                    (true, Value::String(secret)) => found.push(secret.clone()),
                    _ => secret_values(boundary, item, found),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| secret_values(boundary, item, found)),
        _ => {}
    }
}

/// Recording: forwards the call upstream, writes the exchange, answers with what was written.
async fn record(
    shared: &Shared,
    recorder: &ExchangeRecorder,
    boundary: &HttpBoundary<'_>,
    request: &HttpRequest<'_>,
    call: ExchangeCall,
) -> Response {
    for secret in secrets_in(boundary, request) {
        recorder.learn_secret(&secret);
    }
    let answer = forward(boundary, request).await;
    let exchange: Exchange = call.answered(serde_json::to_value(&answer).unwrap_or(Value::Null));
    match recorder.write(exchange) {
        Ok(written) => answer_of(&written.answer),
        Err(err) => {
            let message = format!("the HTTP exchange could not be recorded: {err}");
            shared.report(Problem::RecordingWrite {
                message: message.clone(),
            });
            (
                StatusCode::BAD_GATEWAY,
                Json(json!({"error": {"type": "keyless_recording", "message": message}})),
            )
                .into_response()
        }
    }
}

/// The upstream's answer to `request`; a transport failure is an answer too (`502` with a JSON
/// body naming it), recorded and replayed as the upstream's.
async fn forward(boundary: &HttpBoundary<'_>, request: &HttpRequest<'_>) -> HttpAnswer {
    match try_forward(boundary, request).await {
        Ok(answer) => answer,
        Err(reason) => HttpAnswer {
            status: StatusCode::BAD_GATEWAY.as_u16(),
            headers: BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]),
            body: vec![Chunk::Text(
                json!({"error": {"type": "keyless_upstream", "message": reason}}).to_string(),
            )],
        },
    }
}

async fn try_forward(
    boundary: &HttpBoundary<'_>,
    request: &HttpRequest<'_>,
) -> Result<HttpAnswer, String> {
    let mut url = format!("{}{}", boundary.upstream.upstream, request.path);
    if let Some(query) = request.query {
        url.push('?');
        url.push_str(query);
    }
    let parsed = reqwest::Url::parse(&url).map_err(|err| format!("upstream URL: {err}"))?;
    let mut builder = reqwest::Client::builder()
        .connect_timeout(UPSTREAM_TIMEOUT)
        .read_timeout(UPSTREAM_TIMEOUT)
        // A redirect is recorded as the upstream's answer, never followed with the key.
        .redirect(reqwest::redirect::Policy::none());
    if transport::upstream::is_loopback(&parsed) {
        builder = builder.no_proxy();
    }
    // Test-only: the local HTTPS upstream of the proxy mode's recording test is signed by a
    // test CA; no build but the tests' can trust anything besides the system's roots.
    #[cfg(test)]
    if let Some(pem) = &boundary.upstream.trusted_test_ca {
        let root = reqwest::Certificate::from_pem(pem.as_bytes())
            .map_err(|err| format!("the test CA: {err}"))?;
        builder = builder.add_root_certificate(root);
    }
    let client = builder
        .build()
        .map_err(|err| format!("HTTP client: {err}"))?;
    let mut outgoing = client.request(request.method.clone(), parsed);
    for (name, value) in request.headers {
        let lower = name.as_str();
        if HOP_HEADERS.contains(&lower)
            || lower.starts_with("x-keyless-")
            || lower.starts_with("x-harness-")
            || lower.starts_with("proxy-")
        {
            continue;
        }
        outgoing = outgoing.header(name, value);
    }
    let response = outgoing
        .header("accept-encoding", "identity")
        .body(request.body.to_vec())
        .send()
        .await
        .map_err(|err| {
            format!(
                "{} {}: {}",
                request.method,
                boundary.name,
                without_url(&err)
            )
        })?;
    let status = response.status().as_u16();
    let headers: BTreeMap<String, String> = (KEPT_HEADERS.iter())
        .filter_map(|name| {
            let value = response.headers().get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), value.to_owned()))
        })
        .collect();
    let streamed = headers.get("content-type").is_some_and(|content_type| {
        [
            "text/event-stream",
            "application/x-ndjson",
            "application/jsonl",
        ]
        .iter()
        .any(|streamed| content_type.starts_with(streamed))
    });
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| format!("reading the answer: {}", without_url(&err)))?;
        total += chunk.len();
        if total > MAX_ANSWER_BYTES {
            return Err(format!(
                "the upstream's answer is over {MAX_ANSWER_BYTES} bytes; it was not recorded"
            ));
        }
        match (streamed, chunks.last_mut()) {
            (false, Some(last)) => last.extend_from_slice(&chunk),
            _ => chunks.push(chunk.to_vec()),
        }
    }
    Ok(HttpAnswer {
        status,
        headers,
        body: chunks.iter().map(|chunk| Chunk::of(chunk)).collect(),
    })
}

/// A reqwest error without its URL, whose query may hold a key.
fn without_url(err: &reqwest::Error) -> String {
    let mut err = format!("{}", ReqwestWithoutUrl(err));
    err.truncate(500);
    err
}

struct ReqwestWithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Display for ReqwestWithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.0.is_timeout() {
            "timed out"
        } else if self.0.is_connect() {
            "could not connect"
        } else if self.0.is_body() || self.0.is_decode() {
            "the body failed"
        } else {
            "the request failed"
        };
        write!(f, "{kind}")?;
        let mut source = std::error::Error::source(self.0);
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(
        upstream: &HttpUpstream,
        method: Method,
        target: &str,
        content_type: &str,
        body: &[u8],
    ) -> Value {
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        let mut headers = HeaderMap::new();
        if !content_type.is_empty() {
            headers.insert(
                "content-type",
                HeaderValue::from_str(content_type).expect("ascii"),
            );
        }
        let request = HttpRequest {
            path,
            query,
            method: &method,
            headers: &headers,
            body,
        };
        HttpBoundary {
            name: "api",
            upstream,
        }
        .canonical(&request)
    }

    /// The canonical form: the query sorted, the body read by its type, the ignored fields and
    /// every secret left out, so two calls that differ only there have one key.
    #[test]
    fn the_canonical_form_sorts_reads_the_body_by_its_type_and_leaves_out_ignored_and_secret_fields()
     {
        let upstream = HttpUpstream::new(
            "https://api.example.com",
            &["body.meta.request_id".into(), "query.ts".into()],
            &["session".into()],
        )
        .expect("upstream");
        let json_type = "application/json";
        let form_type = "application/x-www-form-urlencoded";
        let removed = SECRET_PLACEHOLDER;
        let cases: [(Method, &str, &str, &[u8], Value); 7] = [
            (
                Method::GET,
                "/search?q=b&q=a&ts=17&key=AIzaSyD-abc123",
                "",
                b"",
                json!({"method": "GET", "path": "/search", "query": {"key": removed, "q": ["a", "b"]}}),
            ),
            (
                Method::POST,
                "/search",
                json_type,
                br#"{"query": "x", "api_key": "tvly-1", "meta": {"request_id": "r-9", "n": 1}, "session": "s"}"#,
                json!({"method": "POST", "path": "/search", "body": {"json": {"query": "x", "api_key": removed, "meta": {"n": 1}, "session": removed}}}),
            ),
            (
                Method::POST,
                "",
                form_type,
                b"b=2&a=1&api_key=k",
                json!({"method": "POST", "path": "/", "body": {"form": {"a": ["1"], "api_key": removed, "b": ["2"]}}}),
            ),
            (
                Method::PUT,
                "/doc",
                "text/plain",
                b"plain words",
                json!({"method": "PUT", "path": "/doc", "body": {"text": "plain words"}}),
            ),
            (
                Method::PUT,
                "/blob",
                "application/octet-stream",
                &[0xff, 0x00, 0x10],
                json!({"method": "PUT", "path": "/blob", "body": {"base64": "/wAQ"}}),
            ),
            (
                Method::POST,
                "/search",
                "",
                br#"{"query": "untyped JSON is still JSON"}"#,
                json!({"method": "POST", "path": "/search", "body": {"json": {"query": "untyped JSON is still JSON"}}}),
            ),
            (
                Method::GET,
                "/r?ts=1",
                "",
                b"",
                json!({"method": "GET", "path": "/r", "query": {}}),
            ),
        ];
        for (method, target, content_type, body, expected) in cases {
            let got = canonical(&upstream, method, target, content_type, body);
            assert_eq!(got, expected, "{target} {content_type}");
        }
        // JSON is canonical: key order and spacing do not change the key.
        let a = canonical(
            &upstream,
            Method::POST,
            "/s",
            json_type,
            br#"{"a":1,"b":[1,2]}"#,
        );
        let b = canonical(
            &upstream,
            Method::POST,
            "/s",
            json_type,
            br#"{ "b": [1, 2], "a": 1 }"#,
        );
        assert_eq!(
            ExchangeCall::new(BoundaryKind::Http, "api", "l", a).key(),
            ExchangeCall::new(BoundaryKind::Http, "api", "l", b).key()
        );
    }

    /// An answer renders back as recorded: status, kept headers, each chunk in order.
    #[tokio::test]
    async fn an_answer_renders_its_status_headers_and_chunks() {
        let answer = HttpAnswer {
            status: 429,
            headers: BTreeMap::from([
                ("content-type".to_owned(), "text/event-stream".to_owned()),
                ("retry-after".to_owned(), "3".to_owned()),
            ]),
            body: vec![
                Chunk::Text("data: 1\n\n".into()),
                Chunk::Bytes {
                    base64: STANDARD.encode([0xff, b'\n']),
                },
            ],
        };
        let value = serde_json::to_value(&answer).expect("serialises");
        assert_eq!(value["body"][0], json!("data: 1\n\n"));
        let response = answer_of(&value);
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["retry-after"], "3");
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], b"data: 1\n\n\xff\n");
    }
}
