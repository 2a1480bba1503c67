//! Recording an MCP server: keyless relays each JSON-RPC message between the gateway and the
//! real server ([`McpUpstream`]: a Streamable HTTP `url`, or a `command` started per session
//! whose stdin and stdout carry one message per line) and writes every request with what came
//! back through [`RecordingSink::write_exchange`] (redacted there). The client is answered with
//! the exchange as written, so a live run goes on with what its replay will serve.
//!
//! To a client that accepts SSE, a `url` server's SSE answer and a `command` server's messages
//! are streamed ([`McpRecorder::relay_live`]): the messages before the response reach the
//! client as they come, so a server that sends the client a request (sampling, elicitation) in
//! the middle of a call and waits for its answer is recorded; the response follows as written.
//! To a client that takes only JSON, an answer is relayed once the response arrived, and a
//! server waiting on that client fails the call after [`RELAY_TIME_LIMIT`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use replay_core::Exchange;
use replay_core::recording::{RecordingFileError, RecordingSink};

use super::message::{
    AnswerForm, McpAnswer, McpBoundary, McpCall, SESSION_HEADER, error_response, response_message,
};

/// How long a relayed call may take before it fails.
pub const RELAY_TIME_LIMIT: Duration = Duration::from_secs(120);

/// The headers relayed to a Streamable HTTP server as the client sent them.
/// The stateless revision's `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` go too: the server
/// checks them against the body.
const RELAYED_HEADERS: [&str; 7] = [
    "accept",
    "content-type",
    "authorization",
    SESSION_HEADER,
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

/// The stateless revision's headers mirroring tool arguments (`x-mcp-header`).
const RELAYED_PARAM_PREFIX: &str = "mcp-param-";

/// The real server a recording talks to (`[mcp.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpUpstream {
    /// A Streamable HTTP endpoint.
    Url(String),
    /// A program and its arguments, started once per session with `env` added to keyless's
    /// environment, in `cwd` when given.
    Command {
        /// The program and its arguments.
        argv: Vec<String>,
        /// Variables added to its environment (secrets: known to the run's redaction check).
        env: BTreeMap<String, String>,
        /// Its working folder.
        cwd: Option<PathBuf>,
    },
}

/// Why a message could not be relayed.
#[derive(Debug, thiserror::Error)]
pub enum McpRecordError {
    /// The HTTP server could not be reached or its answer read.
    #[error("MCP server at {url}: {source}")]
    Http {
        /// Its URL.
        url: String,
        /// What failed.
        source: reqwest::Error,
    },
    /// The command could not be started or talked to.
    #[error("MCP server command `{command}`: {source}")]
    Process {
        /// The program.
        command: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The server ended or answered something else before answering the call.
    #[error("MCP server `{server}` sent no response to `{label}`{detail}")]
    NoResponse {
        /// The server's name.
        server: String,
        /// The call.
        label: String,
        /// What happened instead.
        detail: String,
    },
    /// A stdio call in a session this recorder did not start.
    #[error("MCP session `{0}` is unknown: send `initialize` first")]
    UnknownSession(String),
    /// The recording file could not be written.
    #[error(transparent)]
    Recording(#[from] replay_core::recording::RecordingFileError),
}

/// What a Streamable HTTP server answered a call: the form, its messages, the session header,
/// and the status of a refusal carrying a JSON-RPC error (`None`: answered).
type HttpAnswer = (AnswerForm, Vec<Value>, Option<String>, Option<StatusCode>);

/// A server's messages for one call being read, in a task of their own while the client gets
/// them live ([`McpRecorder::relay_live`]); `Err` inside: a refusal relayed as it is.
type Reading = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<Result<HttpAnswer, Box<Response>>, McpRecordError>>
            + Send,
    >,
>;

/// What relaying a request gave.
#[derive(Debug)]
pub enum Relayed {
    /// The server answered; the answer as recorded, and the session header to hand the client.
    Answered {
        /// The answer, as written to the recording.
        answer: McpAnswer,
        /// The `Mcp-Session-Id` to answer with.
        session: Option<String>,
    },
    /// The HTTP server refused the request (a status other than 2xx): relayed as it is, not
    /// recorded.
    Refused(Response),
    /// The server's SSE answer, streamed to the client as it comes; the exchange is recorded
    /// when the response arrives, and the response sent as written ([`McpRecorder::relay_live`]).
    Streamed(Response),
}

/// One started stdio server: one session.
#[derive(Debug)]
struct StdioServer {
    child: tokio::sync::Mutex<Child>,
    /// Taken briefly for each line written: a call's request, and the client's answers to what
    /// the server asked mid-call ([`McpRecorder::forward`]), which must get through while the
    /// call waits for its response.
    stdin: tokio::sync::Mutex<ChildStdin>,
    /// Held for a whole call (its request written, its messages read up to its response): the
    /// calls of one session are relayed one at a time, so each reads only its own messages.
    lines: tokio::sync::Mutex<Lines<BufReader<ChildStdout>>>,
}

/// Where a recorder writes exchanges: the model server's recorder (which also keeps the secrets
/// requests carried, so none is left in any form) or a recording sink.
pub trait WriteExchange: Send + Sync + std::fmt::Debug {
    /// Writes `exchange` redacted and returns it as written.
    fn write_exchange(&self, exchange: Exchange) -> Result<Exchange, RecordingFileError>;
    /// Remembers a secret the run uses (an `Authorization` header, a stdio server's `env`
    /// value): no form of it may be written.
    fn learn_secret(&self, secret: &str);
}

impl WriteExchange for RecordingSink {
    fn write_exchange(&self, exchange: Exchange) -> Result<Exchange, RecordingFileError> {
        RecordingSink::write_exchange(self, &exchange)
    }

    /// A bare sink redacts by its rules only.
    fn learn_secret(&self, _secret: &str) {}
}

/// Relays a server's messages to the real server and records its exchanges.
#[derive(Debug)]
pub struct McpRecorder {
    upstream: McpUpstream,
    client: reqwest::Client,
    /// Each stdio session's process, by the session id this recorder issued.
    stdio: Mutex<HashMap<String, Arc<StdioServer>>>,
}

impl McpRecorder {
    /// A recorder relaying to `upstream`.
    pub fn new(upstream: McpUpstream) -> McpRecorder {
        McpRecorder {
            upstream,
            client: reqwest::Client::new(),
            stdio: Mutex::new(HashMap::new()),
        }
    }

    /// Relays a notification or a client's response (not recorded): the status to answer.
    pub async fn forward(
        &self,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<StatusCode, McpRecordError> {
        match &self.upstream {
            McpUpstream::Url(url) => {
                let response = self.post(url, headers, body).await?;
                Ok(StatusCode::from_u16(response.status().as_u16())
                    .unwrap_or(StatusCode::BAD_GATEWAY))
            }
            McpUpstream::Command { argv, .. } => {
                let server = self.stdio_session(headers)?;
                write_line(&mut *server.stdin.lock().await, &body)
                    .await
                    .map_err(|source| process_error(argv, source))?;
                Ok(StatusCode::ACCEPTED)
            }
        }
    }

    /// Opens the server's standalone stream (`GET`, sessionful dialect) for the client and
    /// relays it as it comes, for as long as either side keeps it: what a server pushes outside
    /// a call (`notifications/tools/list_changed`, …) reaches the gateway while recording. It is
    /// not recorded (no request keys it), so a replay answers `GET` with `405`. A `command`
    /// server's stream is not relayed (`405`).
    pub async fn open_stream(&self, headers: &HeaderMap) -> Result<Response, McpRecordError> {
        let McpUpstream::Url(url) = &self.upstream else {
            return Ok((
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "POST, DELETE")],
                "keyless relays no standalone stream of a stdio server",
            )
                .into_response());
        };
        let mut request = self.client.get(url);
        for name in RELAYED_HEADERS.iter().chain(&["last-event-id"]) {
            if let Some(value) = headers.get(*name) {
                request = request.header(*name, value.as_bytes());
            }
        }
        let response = request
            .send()
            .await
            .map_err(|source| McpRecordError::Http {
                url: url.to_owned(),
                source,
            })?;
        let status =
            StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let mut relayed = Response::builder().status(status);
        for name in [header::CONTENT_TYPE, header::CACHE_CONTROL, header::ALLOW] {
            if let Some(value) = response.headers().get(name.as_str()) {
                relayed = relayed.header(name, value.as_bytes());
            }
        }
        let body = axum::body::Body::from_stream(response.bytes_stream());
        Ok(relayed
            .body(body)
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response()))
    }

    /// Relays `call` (its raw `body`), records the exchange and returns the answer as written.
    pub async fn relay(
        &self,
        writer: &dyn WriteExchange,
        boundary: &McpBoundary,
        call: &McpCall,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Relayed, McpRecordError> {
        let no_response = |detail: String| McpRecordError::NoResponse {
            server: boundary.server.clone(),
            label: boundary.call(call).label().to_owned(),
            detail,
        };
        let relayed = tokio::time::timeout(RELAY_TIME_LIMIT, async {
            match &self.upstream {
                McpUpstream::Url(url) => self.relay_http(url, call, headers, body).await,
                McpUpstream::Command { argv, .. } => {
                    let (server, session) = self.stdio_server(call, headers)?;
                    (read_stdio(argv, &server, call, &body, None).await)
                        .map(|(form, messages)| Ok((form, messages, session, None)))
                }
            }
        })
        .await
        .map_err(|_| no_response(format!(" within {}s", RELAY_TIME_LIMIT.as_secs())))??;
        let parts = match relayed {
            Ok(parts) => parts,
            Err(refused) => return Ok(Relayed::Refused(*refused)),
        };
        let session = parts.2.clone();
        let answer = written(writer, boundary, call, &self.secrets(headers), parts)?;
        Ok(Relayed::Answered { answer, session })
    }

    /// The secrets a relayed call carries: the `Authorization` value (and its token), a stdio
    /// server's configured `env` values.
    fn secrets(&self, headers: &HeaderMap) -> Vec<String> {
        let mut secrets = Vec::new();
        if let McpUpstream::Command { env, .. } = &self.upstream {
            secrets.extend(env.values().cloned());
        }
        if let Some(auth) = (headers.get(header::AUTHORIZATION)).and_then(|v| v.to_str().ok()) {
            secrets.push(auth.to_owned());
            if let Some((_, token)) = auth.split_once(' ') {
                secrets.push(token.to_owned());
            }
        }
        secrets
    }

    /// [`McpRecorder::relay`] for a client that takes an SSE answer: each message the server
    /// sends before its response reaches the client as it comes (a server request mid-call,
    /// sampling or elicitation, is answered by the client before the server sends the
    /// response), and the response follows as written once the exchange is recorded. So from a
    /// `url` server answering with an SSE stream, and from a `command` server (stdio). Messages
    /// streamed this way are the server's own (the client would get them from the server); the
    /// recording has them redacted.
    pub async fn relay_live(
        &self,
        writer: &Arc<dyn WriteExchange>,
        boundary: &McpBoundary,
        call: &McpCall,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Relayed, McpRecordError> {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Value>();
        let live = sender.clone();
        let (session, reading): (Option<HeaderValue>, Reading) = match &self.upstream {
            McpUpstream::Url(url) => {
                let response = self.post(url, headers, body).await?;
                let streamed = response.status().is_success()
                    && (response.headers().get(header::CONTENT_TYPE.as_str()))
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.starts_with("text/event-stream"));
                if !streamed {
                    let parts = match read_http(url, response, call, None).await? {
                        Ok(parts) => parts,
                        Err(refused) => return Ok(Relayed::Refused(*refused)),
                    };
                    let session = parts.2.clone();
                    let answer = written(
                        writer.as_ref(),
                        boundary,
                        call,
                        &self.secrets(headers),
                        parts,
                    )?;
                    return Ok(Relayed::Answered { answer, session });
                }
                let session = (response.headers().get(SESSION_HEADER)).cloned();
                let (url, call) = (url.clone(), call.clone());
                let reading = async move { read_http(&url, response, &call, Some(&live)).await };
                (session, Box::pin(reading))
            }
            McpUpstream::Command { argv, .. } => {
                let (server, session) = self.stdio_server(call, headers)?;
                let session = session.and_then(|session| HeaderValue::from_str(&session).ok());
                let (argv, call) = (argv.clone(), call.clone());
                let reading = async move {
                    let (form, messages) =
                        read_stdio(&argv, &server, &call, &body, Some(&live)).await?;
                    Ok(Ok((form, messages, None, None)))
                };
                (session, Box::pin(reading))
            }
        };
        let (writer, boundary, call) = (Arc::clone(writer), boundary.clone(), call.clone());
        let secrets = self.secrets(headers);
        tokio::spawn(async move {
            let outcome = match tokio::time::timeout(RELAY_TIME_LIMIT, reading).await {
                Ok(Ok(Ok(parts))) => written(writer.as_ref(), &boundary, &call, &secrets, parts)
                    .map(|answer| response_message(&call.id, &answer.response))
                    .map_err(|err| err.to_string()),
                Ok(Ok(Err(_))) => Err(format!(
                    "MCP server `{}` refused `{}`",
                    boundary.server, call.method
                )),
                Ok(Err(err)) => Err(err.to_string()),
                Err(_) => Err(format!(
                    "MCP server `{}` sent no response to `{}` within {}s",
                    boundary.server,
                    call.method,
                    RELAY_TIME_LIMIT.as_secs()
                )),
            };
            let last = match outcome {
                Ok(message) => message,
                Err(message) => {
                    tracing::warn!("{message}");
                    error_response(&call.id, &message)
                }
            };
            let _ = sender.send(last);
        });
        let events = futures::stream::unfold(receiver, |mut receiver| async move {
            let message = receiver.recv().await?;
            let event = format!("event: message\ndata: {message}\n\n");
            Some((Ok::<_, std::convert::Infallible>(event), receiver))
        });
        let mut relayed = (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            axum::body::Body::from_stream(events),
        )
            .into_response();
        if let Some(session) = session {
            relayed.headers_mut().insert(SESSION_HEADER, session);
        }
        Ok(Relayed::Streamed(relayed))
    }

    async fn post(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<reqwest::Response, McpRecordError> {
        let mut request = self.client.post(url).body(body);
        for name in RELAYED_HEADERS {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value.as_bytes());
            }
        }
        for (name, value) in headers {
            if name.as_str().starts_with(RELAYED_PARAM_PREFIX) {
                request = request.header(name.as_str(), value.as_bytes());
            }
        }
        request.send().await.map_err(|source| McpRecordError::Http {
            url: url.to_owned(),
            source,
        })
    }

    /// The server's messages for `call` (`Err`: a refusal to relay as it is).
    async fn relay_http(
        &self,
        url: &str,
        call: &McpCall,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Result<HttpAnswer, Box<Response>>, McpRecordError> {
        let response = self.post(url, headers, body).await?;
        read_http(url, response, call, None).await
    }

    /// The stdio server a call goes to, and the session issued with it: `initialize` starts a
    /// new process and session, any other call goes to its session's.
    fn stdio_server(
        &self,
        call: &McpCall,
        headers: &HeaderMap,
    ) -> Result<(Arc<StdioServer>, Option<String>), McpRecordError> {
        if call.method != "initialize" {
            return Ok((self.stdio_session(headers)?, None));
        }
        let server = Arc::new(self.start()?);
        let session = uuid::Uuid::new_v4().simple().to_string();
        self.stdio
            .lock()
            .insert(session.clone(), Arc::clone(&server));
        Ok((server, Some(session)))
    }

    fn start(&self) -> Result<StdioServer, McpRecordError> {
        let McpUpstream::Command { argv, env, cwd } = &self.upstream else {
            unreachable!("only a command server is started");
        };
        let Some((program, args)) = argv.split_first() else {
            return Err(process_error(
                argv,
                std::io::Error::other("`command` is empty"),
            ));
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let mut child = command
            .spawn()
            .map_err(|source| process_error(argv, source))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(process_error(argv, std::io::Error::other("no pipes")));
        };
        Ok(StdioServer {
            child: tokio::sync::Mutex::new(child),
            stdin: tokio::sync::Mutex::new(stdin),
            lines: tokio::sync::Mutex::new(BufReader::new(stdout).lines()),
        })
    }

    fn stdio_session(&self, headers: &HeaderMap) -> Result<Arc<StdioServer>, McpRecordError> {
        let session = (headers.get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        (self.stdio.lock().get(session).cloned())
            .ok_or_else(|| McpRecordError::UnknownSession(session.to_owned()))
    }

    /// Ends a session: relays `DELETE` to an HTTP server, stops a stdio server's process.
    pub async fn end_session(&self, headers: &HeaderMap) -> StatusCode {
        match &self.upstream {
            McpUpstream::Url(url) => {
                let mut request = self.client.delete(url);
                for name in RELAYED_HEADERS {
                    if let Some(value) = headers.get(name) {
                        request = request.header(name, value.as_bytes());
                    }
                }
                match request.send().await {
                    Ok(response) => StatusCode::from_u16(response.status().as_u16())
                        .unwrap_or(StatusCode::BAD_GATEWAY),
                    Err(_) => StatusCode::BAD_GATEWAY,
                }
            }
            McpUpstream::Command { .. } => {
                let session = (headers.get(SESSION_HEADER)).and_then(|v| v.to_str().ok());
                let removed = session.and_then(|session| self.stdio.lock().remove(session));
                match removed {
                    Some(server) => {
                        // Closing stdin is the stdio transport's shutdown; the kill is for a
                        // server that ignores it.
                        let _ = server.stdin.lock().await.shutdown().await;
                        let _ = server.child.lock().await.start_kill();
                        StatusCode::OK
                    }
                    None => StatusCode::NOT_FOUND,
                }
            }
        }
    }
}

/// A stdio server's messages for `call` (its raw `body`), up to its response; with `live`, each
/// message before the response is also sent there as it arrives (the client may have to answer
/// it, through [`McpRecorder::forward`], before the server sends the response).
async fn read_stdio(
    argv: &[String],
    server: &StdioServer,
    call: &McpCall,
    body: &[u8],
    live: Option<&tokio::sync::mpsc::UnboundedSender<Value>>,
) -> Result<(AnswerForm, Vec<Value>), McpRecordError> {
    let io = |source| process_error(argv, source);
    let mut lines = server.lines.lock().await;
    write_line(&mut *server.stdin.lock().await, body)
        .await
        .map_err(io)?;
    let mut messages = Vec::new();
    while let Some(line) = lines.next_line().await.map_err(io)? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if take_message(message, call, live, &mut messages) {
            break;
        }
    }
    let form = if messages.len() > 1 {
        AnswerForm::Sse
    } else {
        AnswerForm::Json
    };
    Ok((form, messages))
}

async fn write_line(stdin: &mut ChildStdin, body: &[u8]) -> std::io::Result<()> {
    // One message per line: a pretty-printed body is made compact first.
    let compact = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value.to_string().into_bytes(),
        Err(_) => body.to_vec(),
    };
    stdin.write_all(&compact).await?;
    stdin.write_all(b"\n").await?;
    stdin.flush().await
}

fn process_error(argv: &[String], source: std::io::Error) -> McpRecordError {
    McpRecordError::Process {
        command: argv.first().cloned().unwrap_or_default(),
        source,
    }
}

/// The server's messages for `call` from its HTTP `response` (`Err`: a refusal to relay as it
/// is); with `live`, each message before the response is also sent there as it arrives.
async fn read_http(
    url: &str,
    response: reqwest::Response,
    call: &McpCall,
    live: Option<&tokio::sync::mpsc::UnboundedSender<Value>>,
) -> Result<Result<HttpAnswer, Box<Response>>, McpRecordError> {
    let http = |source| McpRecordError::Http {
        url: url.to_owned(),
        source,
    };
    let status = response.status();
    let session = (response.headers().get(SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = (response.headers().get(header::CONTENT_TYPE.as_str()))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !status.is_success() {
        let status = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        let body = response.bytes().await.map_err(http)?;
        // A refusal carrying a JSON-RPC error is the server's answer to this call (a
        // sessionful server refusing a stateless `server/discover`, after which the client
        // falls back to `initialize`): recorded, under the call's id, so a replay refuses
        // alike.
        if let Ok(mut message) = serde_json::from_slice::<Value>(&body)
            && message.get("error").is_some_and(Value::is_object)
            && let Some(fields) = message.as_object_mut()
        {
            fields.insert("id".to_owned(), call.id.clone());
            return Ok(Ok((AnswerForm::Json, vec![message], session, Some(status))));
        }
        let mut refused = (status, body).into_response();
        if let Ok(value) = content_type.parse() {
            refused.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        return Ok(Err(Box::new(refused)));
    }
    if !content_type.starts_with("text/event-stream") {
        let message: Value = response.json().await.map_err(http)?;
        return Ok(Ok((AnswerForm::Json, vec![message], session, None)));
    }
    let mut events = response.bytes_stream().eventsource();
    let mut messages = Vec::new();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        // A priming event (2025-11-25) carries an id and no data.
        let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
            continue;
        };
        if take_message(message, call, live, &mut messages) {
            break;
        }
    }
    Ok(Ok((AnswerForm::Sse, messages, session, None)))
}

/// Keeps one message the server sent while answering `call` (over stdio or SSE alike) and says
/// whether it was the response, the last one. Any other (a request or notification of the
/// server's) is also relayed to `live` at once: the client may have to answer it (sampling,
/// elicitation) before the server sends the response, so it cannot wait for the whole answer.
fn take_message(
    message: Value,
    call: &McpCall,
    live: Option<&tokio::sync::mpsc::UnboundedSender<Value>>,
    messages: &mut Vec<Value>,
) -> bool {
    let done = message.get("method").is_none() && message.get("id") == Some(&call.id);
    if let (false, Some(live)) = (done, live) {
        let _ = live.send(message.clone());
    }
    messages.push(message);
    done
}

/// Records the answer the server sent (`parts`) for `call`, its `secrets` learnt first; the
/// answer as written (redacted).
fn written(
    writer: &dyn WriteExchange,
    boundary: &McpBoundary,
    call: &McpCall,
    secrets: &[String],
    (form, messages, _, refused_with): HttpAnswer,
) -> Result<McpAnswer, McpRecordError> {
    let no_response = |detail: String| McpRecordError::NoResponse {
        server: boundary.server.clone(),
        label: boundary.call(call).label().to_owned(),
        detail,
    };
    let count = messages.len();
    let mut answer = McpAnswer::from_messages(form, &call.id, messages).ok_or_else(|| {
        no_response(format!(
            " (it sent {count} other message(s) and ended the answer)"
        ))
    })?;
    answer.status = refused_with.map(|status| status.as_u16());
    secrets
        .iter()
        .for_each(|secret| writer.learn_secret(secret));
    let written = writer.write_exchange(boundary.call(call).answered(answer.to_value()))?;
    McpAnswer::from_value(&written.answer)
        .map_err(|err| no_response(format!(": the recorded answer cannot be read back: {err}")))
}
