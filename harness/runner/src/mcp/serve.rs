//! The MCP route `/_keyless/mcp/{name}`: Streamable HTTP (protocol versions 2025-03-26 to
//! 2025-11-25) for every configured server, in replay or in record mode ([`McpSource`]).
//!
//! - `POST` one JSON-RPC message. A request is answered in the form the recording used when the
//!   client's `Accept` allows it (a JSON body, or an SSE stream carrying the recorded
//!   notifications and server requests before the response), else in the other. A notification
//!   or a client's response to a server request is accepted with `202` and not keyed.
//! - `initialize` issues an `Mcp-Session-Id`; every later request must carry a session this
//!   route issued (`400` without one, `404` for an unknown one, as the specification says).
//! - `DELETE` ends the session; `GET` (the server's own stream) answers `405` in replay: a
//!   replay has no messages the server sends outside a call; while recording it is relayed to
//!   the real server as it comes, not recorded.
//! - The stateless revision (2026-07-28, `super::stateless`) on the same route: no session,
//!   headers checked against the body.
//!
//! `initialize` is recorded and replayed like any call: its result carries the server's
//! capabilities and protocol version, which depend on what the client announced, so a client
//! announcing something else is a miss rather than an answer picked for another client.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use parking_lot::Mutex;
use serde_json::{Value, json};

use replay_core::{ExchangeMiss, ExchangeReplay};

use super::message::{
    AnswerForm, Incoming, McpAnswer, McpBoundary, McpCall, SESSION_HEADER, error_response,
};
use super::record::{McpRecorder, McpUpstream, Relayed, WriteExchange};
use super::stateless::{HEADER_MISMATCH_CODE, check_headers, is_modern};

/// The route every configured MCP server is served at.
pub const MCP_ROUTE: &str = "/_keyless/mcp/{name}";

/// The fixture whose exchanges a replay serves now: the one active fixture of a model server
/// that loaded several, or a fixed one.
pub trait ActiveExchanges: Send + Sync + fmt::Debug {
    /// The active fixture's exchange replay (`None`: no fixture is active).
    fn active(&self) -> Option<Arc<ExchangeReplay>>;
}

impl ActiveExchanges for Arc<ExchangeReplay> {
    fn active(&self) -> Option<Arc<ExchangeReplay>> {
        Some(Arc::clone(self))
    }
}

/// Where a standalone route's answers come from ([`mcp_router`]).
#[derive(Debug, Clone)]
pub enum McpSource {
    /// The recorded exchanges, never the server.
    Replay(Arc<dyn ActiveExchanges>),
    /// The real server, each exchange written here.
    Record(Arc<dyn WriteExchange>),
}

/// What a call reaches in the serving mode: the model server's mode, or a standalone route's
/// source.
#[derive(Debug, Clone, Copy)]
pub enum McpExchanges<'a> {
    /// Replay these exchanges (`None`: no fixture is active).
    Replay(Option<&'a Arc<ExchangeReplay>>),
    /// Relay to the real server and write each exchange here (owned by the relay of a streamed
    /// answer, which outlives the request's handler).
    Record(&'a Arc<dyn WriteExchange>),
    /// A mode that serves no boundary; its name.
    Unserved(&'static str),
}

/// One configured server as served.
#[derive(Debug)]
struct Served {
    boundary: McpBoundary,
    /// The real server, relayed to while recording.
    recorder: McpRecorder,
    /// The sessions a replay issued and not ended.
    sessions: Mutex<HashSet<String>>,
}

/// Every configured MCP server, by name, with what serving it keeps between calls (replayed
/// sessions, recorded stdio processes).
#[derive(Debug, Default)]
pub struct McpServers {
    servers: BTreeMap<String, Served>,
}

impl McpServers {
    /// No servers.
    pub fn new() -> McpServers {
        McpServers::default()
    }

    /// `name`, whose real server is `upstream`.
    pub fn with(mut self, name: &str, upstream: McpUpstream) -> McpServers {
        self.servers.insert(
            name.to_owned(),
            Served {
                boundary: McpBoundary {
                    server: name.to_owned(),
                },
                recorder: McpRecorder::new(upstream),
                sessions: Mutex::new(HashSet::new()),
            },
        );
        self
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Answers one HTTP request to the server `name` (`POST` a message, `DELETE` the session,
    /// `GET` the server's stream).
    pub async fn handle(
        &self,
        name: &str,
        method: &Method,
        headers: &HeaderMap,
        body: Bytes,
        exchanges: McpExchanges<'_>,
        on_miss: &(dyn Fn(ExchangeMiss) + Sync),
    ) -> Response {
        let Some(served) = self.servers.get(name) else {
            return unknown_server(self, name);
        };
        if let McpExchanges::Unserved(mode) = exchanges {
            return refused(
                StatusCode::NOT_FOUND,
                &Value::Null,
                &format!(
                    "MCP server `{name}`: the model server in {mode} mode serves no MCP server"
                ),
            );
        }
        match *method {
            Method::POST => post_message(served, headers, body, exchanges, on_miss).await,
            Method::DELETE => end_session(served, headers, exchanges).await,
            Method::GET => match exchanges {
                McpExchanges::Record(_) => match served.recorder.open_stream(headers).await {
                    Ok(response) => response,
                    Err(err) => refused(StatusCode::BAD_GATEWAY, &Value::Null, &err.to_string()),
                },
                _ => server_stream(),
            },
            _ => server_stream(),
        }
    }
}

/// The router serving [`MCP_ROUTE`] for `servers` from `source`, standalone (tests, the
/// benchmark); the model server serves the same route from its own mode.
pub fn mcp_router<S: Clone + Send + Sync + 'static>(
    servers: Arc<McpServers>,
    source: McpSource,
) -> Router<S> {
    Router::new()
        .route(MCP_ROUTE, any(standalone))
        .with_state((servers, source))
}

/// A standalone route's miss: the replay's own ledger keeps it; it is logged too.
fn logged(miss: ExchangeMiss) {
    tracing::warn!("{miss}");
}

async fn standalone(
    State((servers, source)): State<(Arc<McpServers>, McpSource)>,
    Path(name): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match &source {
        McpSource::Replay(active) => {
            let replay = active.active();
            let exchanges = McpExchanges::Replay(replay.as_ref());
            servers
                .handle(&name, &method, &headers, body, exchanges, &logged)
                .await
        }
        McpSource::Record(writer) => {
            let exchanges = McpExchanges::Record(writer);
            servers
                .handle(&name, &method, &headers, body, exchanges, &logged)
                .await
        }
    }
}

/// What the client's `Accept` allows.
#[derive(Debug, Clone, Copy)]
struct Accepts {
    json: bool,
    sse: bool,
}

impl Accepts {
    fn of(headers: &HeaderMap) -> Accepts {
        let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
            return Accepts {
                json: true,
                sse: true,
            };
        };
        let any = accept.contains("*/*");
        Accepts {
            json: any || accept.contains("application/json"),
            sse: any || accept.contains("text/event-stream"),
        }
    }

    /// The form to answer in: the recorded one when allowed, else the other.
    fn pick(self, recorded: AnswerForm) -> AnswerForm {
        match recorded {
            AnswerForm::Sse if self.sse => AnswerForm::Sse,
            AnswerForm::Json if self.json => AnswerForm::Json,
            AnswerForm::Sse => AnswerForm::Json,
            AnswerForm::Json => AnswerForm::Sse,
        }
    }
}

/// `messages` as one HTTP answer in `form`; a JSON body carries the last message (the
/// response) only.
pub(crate) fn rendered(form: AnswerForm, messages: &[Value], session: Option<&str>) -> Response {
    let mut response = match form {
        AnswerForm::Json => {
            let last = messages.last().cloned().unwrap_or(Value::Null);
            (
                [(header::CONTENT_TYPE, "application/json")],
                last.to_string(),
            )
                .into_response()
        }
        AnswerForm::Sse => {
            let mut body = String::new();
            for message in messages {
                body.push_str("event: message\ndata: ");
                body.push_str(&message.to_string());
                body.push_str("\n\n");
            }
            (
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                body,
            )
                .into_response()
        }
    };
    if let Some(value) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// `response` with the status a recorded refusal came with (`None`: as it is).
fn with_status(mut response: Response, status: Option<u16>) -> Response {
    if let Some(status) = status.and_then(|s| StatusCode::from_u16(s).ok()) {
        *response.status_mut() = status;
    }
    response
}

/// A JSON-RPC error answered with `status`.
fn refused(status: StatusCode, id: &Value, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        error_response(id, message).to_string(),
    )
        .into_response()
}

fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

fn unknown_server(servers: &McpServers, name: &str) -> Response {
    let known: Vec<&str> = servers.servers.keys().map(String::as_str).collect();
    refused(
        StatusCode::NOT_FOUND,
        &Value::Null,
        &format!(
            "keyless serves no MCP server `{name}` (configured: {}); add `[mcp.{name}]` to keyless.toml",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ),
    )
}

async fn post_message(
    served: &Served,
    headers: &HeaderMap,
    body: Bytes,
    exchanges: McpExchanges<'_>,
    on_miss: &(dyn Fn(ExchangeMiss) + Sync),
) -> Response {
    let name = &served.boundary.server;
    let incoming = match Incoming::read(&body) {
        Ok(incoming) => incoming,
        Err(err) => {
            return refused(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                &format!("MCP server `{name}`: {err}"),
            );
        }
    };
    if let Incoming::Request(call) = &incoming
        && is_modern(call, headers)
        && let Err(mismatch) = check_headers(call, headers)
    {
        let error = json!({"code": HEADER_MISMATCH_CODE, "message": format!("MCP server `{name}`: {mismatch}")});
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"jsonrpc": "2.0", "id": call.id, "error": error}).to_string(),
        )
            .into_response();
    }
    match exchanges {
        McpExchanges::Record(writer) => {
            let recorder = &served.recorder;
            let call = match incoming {
                Incoming::Request(call) => call,
                Incoming::Notification { .. } | Incoming::Response => {
                    return match recorder.forward(headers, body).await {
                        Ok(status) => status.into_response(),
                        Err(err) => {
                            refused(StatusCode::BAD_GATEWAY, &Value::Null, &err.to_string())
                        }
                    };
                }
            };
            let relayed = if Accepts::of(headers).sse {
                (recorder.relay_live(writer, &served.boundary, &call, headers, body)).await
            } else {
                (recorder.relay(writer.as_ref(), &served.boundary, &call, headers, body)).await
            };
            match relayed {
                Ok(Relayed::Answered { answer, session }) => with_status(
                    rendered(
                        Accepts::of(headers).pick(answer.form),
                        &answer.messages_for(&call),
                        session.as_deref(),
                    ),
                    answer.status,
                ),
                Ok(Relayed::Refused(response) | Relayed::Streamed(response)) => response,
                Err(err) => refused(StatusCode::BAD_GATEWAY, &call.id, &err.to_string()),
            }
        }
        McpExchanges::Replay(replay) => replay_message(served, replay, incoming, headers, on_miss),
        McpExchanges::Unserved(_) => server_stream(),
    }
}

/// Answers `incoming` from the recorded exchanges.
fn replay_message(
    served: &Served,
    replay: Option<&Arc<ExchangeReplay>>,
    incoming: Incoming,
    headers: &HeaderMap,
    on_miss: &(dyn Fn(ExchangeMiss) + Sync),
) -> Response {
    let call: McpCall = match incoming {
        Incoming::Request(call) => call,
        Incoming::Notification { .. } | Incoming::Response => {
            return StatusCode::ACCEPTED.into_response();
        }
    };
    let server = &served.boundary.server;
    let issued = if is_modern(&call, headers) {
        // The stateless revision: no session is issued, and one sent is ignored.
        None
    } else if call.method == "initialize" {
        let session = uuid::Uuid::new_v4().simple().to_string();
        served.sessions.lock().insert(session.clone());
        Some(session)
    } else {
        match session_of(headers) {
            None => {
                return refused(
                    StatusCode::BAD_REQUEST,
                    &call.id,
                    &format!(
                        "MCP server `{server}`: `{}` without an Mcp-Session-Id header; send \
                         `initialize` first",
                        call.method
                    ),
                );
            }
            Some(session) if !served.sessions.lock().contains(session) => {
                return refused(
                    StatusCode::NOT_FOUND,
                    &call.id,
                    &format!("MCP server `{server}`: unknown or ended session `{session}`"),
                );
            }
            Some(_) => None,
        }
    };
    let Some(replay) = replay else {
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            &call.id,
            &format!("MCP server `{server}`: no fixture is active"),
        );
    };
    let engine_call = served.boundary.call(&call);
    match replay.lookup(&engine_call) {
        Ok(hit) => match McpAnswer::from_value(&hit.exchange.answer) {
            Ok(answer) => with_status(
                rendered(
                    Accepts::of(headers).pick(answer.form),
                    &answer.messages_for(&call),
                    issued.as_deref(),
                ),
                answer.status,
            ),
            Err(err) => refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                &call.id,
                &format!("MCP server `{server}`: exchange {}: {err}", hit.index),
            ),
        },
        Err(miss) => {
            let message = miss.to_string();
            on_miss(*miss);
            rendered(
                AnswerForm::Json,
                &[error_response(&call.id, &message)],
                issued.as_deref(),
            )
        }
    }
}

async fn end_session(
    served: &Served,
    headers: &HeaderMap,
    exchanges: McpExchanges<'_>,
) -> Response {
    match exchanges {
        McpExchanges::Record(_) => served.recorder.end_session(headers).await.into_response(),
        _ => match session_of(headers) {
            Some(session) if served.sessions.lock().remove(session) => StatusCode::OK,
            Some(_) => StatusCode::NOT_FOUND,
            None => StatusCode::BAD_REQUEST,
        }
        .into_response(),
    }
}

/// `GET`: no server-initiated stream is served.
fn server_stream() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST, DELETE")],
        json!({"error": "keyless serves no server-initiated stream; POST requests"}).to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::mcp::message::Outcome;

    /// Streamable HTTP's rules as the route serves them in replay, each step's status and
    /// what it answered: a session issued on `initialize` and required after, notifications
    /// accepted, the answer in the form `Accept` allows, `GET` refused, `DELETE` ending the
    /// session.
    #[tokio::test]
    async fn sessions_notifications_accept_and_methods_follow_streamable_http() {
        let boundary = McpBoundary {
            server: "time".into(),
        };
        let recorded = |method: &str, form: AnswerForm| {
            let call = McpCall {
                id: json!(1),
                method: method.into(),
                params: Some(json!({})),
            };
            let answer = McpAnswer {
                form,
                before: Vec::new(),
                response: Outcome::Result(json!({"method": method})),
                status: None,
            };
            boundary.call(&call).answered(answer.to_value())
        };
        let replay = Arc::new(ExchangeReplay::new(
            Path::new("f.json"),
            vec![
                recorded("initialize", AnswerForm::Sse),
                recorded("tools/list", AnswerForm::Sse),
            ],
        ));
        let servers =
            Arc::new(McpServers::new().with("time", McpUpstream::Url("http://127.0.0.1:9".into())));
        let source = McpSource::Replay(Arc::new(replay));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/_keyless/mcp/time",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move { axum::serve(listener, mcp_router::<()>(servers, source)).await });
        let client = reqwest::Client::new();
        let message = |id: Option<u64>, method: &str| match id {
            Some(id) => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}),
            None => json!({"jsonrpc": "2.0", "method": method}),
        };
        let post = |body: Value, session: Option<&str>, accept: &str| {
            let mut request = client.post(&url).header("accept", accept).json(&body);
            if let Some(session) = session {
                request = request.header(SESSION_HEADER, session);
            }
            request.send()
        };
        let both = "application/json, text/event-stream";
        let init = post(message(Some(7), "initialize"), None, both)
            .await
            .unwrap();
        assert_eq!(init.status(), 200);
        assert_eq!(init.headers()["content-type"], "text/event-stream");
        let session = init.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
        assert!(init.text().await.unwrap().contains(r#""id":7"#));
        let steps = [
            (
                post(
                    message(None, "notifications/initialized"),
                    Some(&session),
                    both,
                ),
                202,
                "",
            ),
            (
                post(message(Some(8), "tools/list"), None, both),
                400,
                "without an Mcp-Session-Id",
            ),
            (
                post(message(Some(8), "tools/list"), Some("nope"), both),
                404,
                "unknown or ended session",
            ),
            (
                post(
                    message(Some(8), "tools/list"),
                    Some(&session),
                    "application/json",
                ),
                200,
                r#"{"jsonrpc":"2.0","id":8,"result":{"method":"tools/list"}}"#,
            ),
            (post(json!([]), Some(&session), both), 400, "batch"),
        ];
        for (index, (request, status, text)) in steps.into_iter().enumerate() {
            let response = request.await.unwrap();
            assert_eq!(response.status().as_u16(), status, "step {index}");
            let body = response.text().await.unwrap();
            assert!(body.contains(text), "step {index}: {body}");
        }
        assert_eq!(client.get(&url).send().await.unwrap().status(), 405);
        let delete = || client.delete(&url).header(SESSION_HEADER, &session).send();
        assert_eq!(delete().await.unwrap().status(), 200);
        assert_eq!(delete().await.unwrap().status(), 404);
    }

    /// The stateless revision on the same route: `server/discover` and a call answered without
    /// a session (none issued), and a call whose `Mcp-Name` disagrees with its body refused with
    /// `400` and `HeaderMismatch`, naming the header's value and the body's.
    #[tokio::test]
    async fn a_stateless_request_needs_no_session_and_its_headers_must_match_its_body() {
        let boundary = McpBoundary {
            server: "time".into(),
        };
        let meta = json!({crate::mcp::PROTOCOL_VERSION_META: "2026-07-28"});
        let message = |id: u64, method: &str, params: Value| {
            let mut params = params;
            params["_meta"] = meta.clone();
            McpCall {
                id: json!(id),
                method: method.into(),
                params: Some(params),
            }
        };
        let discover = message(1, "server/discover", json!({}));
        let call = message(
            2,
            "tools/call",
            json!({"name": "get_time", "arguments": {}}),
        );
        let recorded = |call: &McpCall| {
            let answer = McpAnswer {
                form: AnswerForm::Json,
                before: Vec::new(),
                response: Outcome::Result(json!({"resultType": "complete"})),
                status: None,
            };
            boundary.call(call).answered(answer.to_value())
        };
        let replay = Arc::new(ExchangeReplay::new(
            Path::new("f.json"),
            vec![recorded(&discover), recorded(&call)],
        ));
        let servers =
            Arc::new(McpServers::new().with("time", McpUpstream::Url("http://127.0.0.1:9".into())));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/_keyless/mcp/time",
            listener.local_addr().unwrap()
        );
        let router = mcp_router::<()>(servers, McpSource::Replay(Arc::new(replay)));
        tokio::spawn(async move { axum::serve(listener, router).await });
        let client = reqwest::Client::new();
        let post = |call: &McpCall, name: Option<&str>| {
            let body = json!({"jsonrpc": "2.0", "id": call.id, "method": call.method,
                "params": call.params});
            let mut request = (client.post(&url))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", call.method.as_str())
                .json(&body);
            if let Some(name) = name {
                request = request.header("mcp-name", name);
            }
            request.send()
        };
        let steps = [
            (post(&discover, None), 200, r#""id":1,"result""#),
            (post(&call, Some("get_time")), 200, r#""id":2,"result""#),
            (
                post(&call, Some("get_date")),
                400,
                r#""code":-32020,"message":"MCP server `time`: header mismatch: Mcp-Name header `get_date` but the body's params.name is `get_time`""#,
            ),
        ];
        for (index, (request, status, text)) in steps.into_iter().enumerate() {
            let response = request.await.unwrap();
            assert_eq!(response.status().as_u16(), status, "step {index}");
            assert!(
                response.headers().get(SESSION_HEADER).is_none(),
                "step {index}"
            );
            let body = response.text().await.unwrap();
            assert!(body.contains(text), "step {index}: {body}");
        }
    }

    /// Writes nothing: a recording route whose calls are not under test.
    #[derive(Debug)]
    struct NoWriter;

    impl WriteExchange for NoWriter {
        fn write_exchange(
            &self,
            exchange: replay_core::Exchange,
        ) -> Result<replay_core::Exchange, replay_core::recording::RecordingFileError> {
            Ok(exchange)
        }

        fn learn_secret(&self, _secret: &str) {}
    }

    /// While recording, `GET` opens the real server's standalone stream with the client's
    /// session and relays each event as it comes: the first event reaches the client while the
    /// server keeps the stream open.
    #[tokio::test]
    async fn recording_relays_the_servers_standalone_stream_as_it_comes() {
        use axum::routing::get;
        use futures::StreamExt;

        let upstream = Router::new().route(
            "/mcp",
            get(|headers: HeaderMap| async move {
                let session = headers.get(SESSION_HEADER).cloned();
                let event = format!(
                    "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{{\"session\":{:?}}}}}\n\n",
                    session.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("")
                );
                let events = futures::stream::once(async move { Ok::<_, std::io::Error>(event) })
                    .chain(futures::stream::pending());
                (
                    [(header::CONTENT_TYPE, "text/event-stream")],
                    axum::body::Body::from_stream(events),
                )
            }),
        );
        let upstream_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_url = format!("http://{}/mcp", upstream_listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(upstream_listener, upstream).await });
        let servers = Arc::new(McpServers::new().with("time", McpUpstream::Url(upstream_url)));
        let router = mcp_router::<()>(servers, McpSource::Record(Arc::new(NoWriter)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/_keyless/mcp/time",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        let mut response = (reqwest::Client::new().get(&url))
            .header("accept", "text/event-stream")
            .header(SESSION_HEADER, "s-1")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), response.chunk())
            .await
            .expect("the first event arrives while the stream stays open")
            .unwrap()
            .unwrap();
        let text = String::from_utf8_lossy(&first);
        assert!(
            text.contains(
                r#""method":"notifications/tools/list_changed","params":{"session":"s-1"}"#
            ),
            "{text}"
        );
    }
}
