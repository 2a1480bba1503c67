//! The HTTP side of a session, knowing no dialect ([`HttpClient`]): the cookie jar, the static
//! auth header ([`AuthHeader`]) and a dialect's session header; page requests as [`Exchange`]s,
//! each bounded ([`MAX_EXCHANGE_BYTES`]), and a run's event stream read within
//! [`MAX_FRAME_BYTES`], [`MAX_STREAM_BYTES`] and [`MAX_PARSED_BYTES`] into a
//! [`RunTranscript`].

use std::fmt;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use replay_core::{FailedRequest, first_chars};

use super::api::{Api, StreamModes};
use super::error::DriverError;
use super::parsed_size;
use super::transcript::{RunTranscript, SseEvent};

/// The longest SSE frame (and line) the driver reads: far above any gateway's frame (the
/// gateway's own answer bound is 32 MiB, a frame holds one state), far below memory trouble.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// The longest whole event stream of one run the driver reads.
pub const MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;

/// The most one run's frames may hold as kept, their text and their parse estimated together
/// (`parsed_size`): within the byte bounds, 240 frames of 1 MB of `[0,0,…]` once held 3 GB, a
/// parse costing 16 times its text (issue 45, finding 4). A frame that would pass it is refused
/// before it is parsed.
pub const MAX_PARSED_BYTES: usize = 160 * 1024 * 1024;

/// Why reading a run's body stopped below the SSE parser.
#[derive(Debug, thiserror::Error)]
enum BodyFailure {
    /// The body could not be read.
    #[error(transparent)]
    Http(reqwest::Error),
    /// A line had no end within [`MAX_FRAME_BYTES`].
    #[error(transparent)]
    LineTooLong(#[from] transport::LineTooLong),
    /// The body passed [`MAX_STREAM_BYTES`].
    #[error("the event stream is longer than {MAX_STREAM_BYTES} bytes")]
    StreamTooLong,
    /// A CR in an AG-UI stream, which `@ag-ui/client` cannot read.
    #[error(
        "a CR ends a line of the event stream: @ag-ui/client splits events at \"\\n\\n\" \
         and lines at \"\\n\" only, so it cannot read a stream framed with CR or CRLF"
    )]
    CarriageReturn,
}
/// One request of a driven page and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// `GET` or `POST`.
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The status received.
    pub status: u16,
    /// The body, as JSON when it parses, else as a string.
    pub body: Value,
}

impl Exchange {
    /// Whether the status is 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

impl From<&Exchange> for FailedRequest {
    fn from(exchange: &Exchange) -> FailedRequest {
        FailedRequest {
            method: exchange.method.clone(),
            path: exchange.path.clone(),
            status: exchange.status,
            body: exchange.body.to_string(),
        }
    }
}

/// One run's request: where it is posted, its JSON body, and the extra headers the dialect's
/// client sends (AG-UI's `Accept: text/event-stream`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// The path (below the gateway's URL) the run is posted to.
    pub path: String,
    /// The body.
    pub body: Value,
    /// Extra request headers, `(name, value)`.
    pub headers: Vec<(&'static str, String)>,
}

/// The HTTP side of a session against one gateway, knowing no dialect: a cookie jar, the static
/// auth header when one is configured, and the header a dialect's session adds to every request
/// once it is open (DeerFlow's CSRF token, [`deerflow`](super::deerflow)).
#[derive(Debug)]
pub struct HttpClient {
    base: String,
    http: reqwest::Client,
    session_header: Option<(&'static str, String)>,
    /// The static auth header, set by the session from its options.
    pub(super) auth: Option<AuthHeader>,
}

/// A static auth header sent with every request (a LangSmith deployment's `x-api-key`, a custom
/// auth's header), its value read from an environment variable and never written: `Debug` shows
/// the header's name only.
#[derive(Clone)]
pub struct AuthHeader {
    name: reqwest::header::HeaderName,
    value: SecretString,
}

/// Why the auth header could not be built; names the header and the variable, never the value.
#[derive(Debug, thiserror::Error)]
pub enum AuthHeaderError {
    /// The header name is not a valid HTTP header name.
    #[error("--auth-header {0:?} is not a valid HTTP header name")]
    BadName(String),
    /// The variable is unset or empty.
    #[error("--auth-header {header}: set {var} to its value (--auth-env names another variable)")]
    Unset {
        /// The header.
        header: String,
        /// The variable.
        var: String,
    },
    /// The value holds characters a header cannot carry.
    #[error("--auth-header {header}: the value in {var} is not a valid header value")]
    BadValue {
        /// The header.
        header: String,
        /// The variable.
        var: String,
    },
}

impl AuthHeader {
    /// The header `name` with the value of the environment variable `var`.
    pub fn from_env(name: &str, var: &str) -> Result<AuthHeader, AuthHeaderError> {
        Self::from_value(name, var, std::env::var(var).ok())
    }

    /// The header `name` with `value` (read from `var`, which errors name).
    pub(super) fn from_value(
        name: &str,
        var: &str,
        value: Option<String>,
    ) -> Result<AuthHeader, AuthHeaderError> {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| AuthHeaderError::BadName(name.to_owned()))?;
        let value = value
            .filter(|value| !value.trim().is_empty())
            .ok_or_else(|| AuthHeaderError::Unset {
                header: name.to_owned(),
                var: var.to_owned(),
            })?;
        if reqwest::header::HeaderValue::from_str(&value).is_err() {
            return Err(AuthHeaderError::BadValue {
                header: name.to_owned(),
                var: var.to_owned(),
            });
        }
        Ok(AuthHeader {
            name: header,
            value: value.into(),
        })
    }

    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match reqwest::header::HeaderValue::from_str(self.value.expose_secret()) {
            Ok(mut value) => {
                // reqwest then keeps it out of its own Debug output too.
                value.set_sensitive(true);
                request.header(self.name.clone(), value)
            }
            // Checked when built.
            Err(_) => request,
        }
    }
}

impl fmt::Debug for AuthHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuthHeader({}: [redacted])", self.name)
    }
}
/// Creates a thread with a fresh UUID id at `threads_path` (`POST`, `{"thread_id", "metadata"}`,
/// 200), as DeerFlow's and LangGraph's clients do.
pub(crate) async fn create_thread(
    client: &HttpClient,
    threads_path: &str,
) -> Result<String, DriverError> {
    let thread_id = uuid::Uuid::new_v4().to_string();
    let body = json!({"thread_id": thread_id, "metadata": {}});
    client.post_json(threads_path, &body, 200).await?;
    Ok(thread_id)
}

/// Sends `request` for `route` (`METHOD path`, which errors name) and expects `expected`.
async fn send_expecting(
    route: &str,
    request: reqwest::RequestBuilder,
    expected: u16,
) -> Result<reqwest::Response, DriverError> {
    let response = request.send().await.map_err(|source| DriverError::Http {
        route: route.to_string(),
        source,
    })?;
    if response.status().as_u16() == expected {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let body = error_excerpt(response).await;
    Err(DriverError::Status {
        route: route.to_string(),
        expected,
        status,
        body,
    })
}

/// The characters of an unexpected answer's body an error shows.
pub(super) const EXCERPT_CHARS: usize = 2000;

/// The first [`EXCERPT_CHARS`] characters of an unexpected answer's body, reading at most the
/// bytes they can take (4 a character) and dropping the connection there: a body written 1 MB
/// at a time once took keyless to 2 GB (issue 45, finding 3).
async fn error_excerpt(response: reqwest::Response) -> String {
    let read = transport::read_capped(response.bytes_stream(), 4 * EXCERPT_CHARS).await;
    let bytes = read.map(|(bytes, _)| bytes).unwrap_or_default();
    first_chars(&String::from_utf8_lossy(&bytes), EXCERPT_CHARS).to_owned()
}

/// The most of a page request's answer ([`HttpClient::exchange`]) the driver reads and holds,
/// as text and as parsed (estimated before it is parsed): a page keeps every answer, and a
/// thread's state, the largest of them, is kilobytes.
pub const MAX_EXCHANGE_BYTES: usize = 4 * 1024 * 1024;

impl HttpClient {
    /// POSTs `body` to `path` (with the session's header once set) and expects `expected`.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        body: &Value,
        expected: u16,
    ) -> Result<reqwest::Response, DriverError> {
        let route = format!("POST {path}");
        send_expecting(&route, self.post(path).json(body), expected).await
    }

    /// A client for the gateway at `base` (`http://127.0.0.1:<port>`).
    pub fn new(base: &str) -> Result<HttpClient, DriverError> {
        let mut builder = reqwest::Client::builder().cookie_store(true).no_proxy();
        if base.starts_with("http://") {
            // Plain http needs no TLS roots, and loading the system's roots costs about 4 ms per
            // client, a quarter of a whole scenario.
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|source| DriverError::Http {
            route: "client".into(),
            source,
        })?;
        Ok(HttpClient {
            base: base.trim_end_matches('/').to_string(),
            http,
            session_header: None,
            auth: None,
        })
    }

    /// `request` with the static auth header, when one is configured.
    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            Some(auth) => auth.apply(request),
            None => request,
        }
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self.authorized(self.http.post(format!("{}{path}", self.base)));
        self.with_session_header(request)
    }

    /// `request` with the session's header, once the dialect set one.
    fn with_session_header(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.session_header {
            Some((name, value)) => request.header(*name, value),
            None => request,
        }
    }

    /// Sends `(name, value)` with every later request (DeerFlow's `X-CSRF-Token`).
    pub(crate) fn set_session_header(&mut self, name: &'static str, value: String) {
        self.session_header = Some((name, value));
    }

    /// Sends a request (with the session's header once set) and returns whatever the gateway
    /// answered; only a transport failure is an error.
    pub async fn exchange(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Exchange, DriverError> {
        let route = format!("{method} {path}");
        let mut request = self.with_session_header(
            self.authorized(
                self.http
                    .request(method.clone(), format!("{}{path}", self.base)),
            ),
        );
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|source| DriverError::Http {
            route: route.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        let (bytes, whole) = transport::read_capped(response.bytes_stream(), MAX_EXCHANGE_BYTES)
            .await
            .map_err(|source| DriverError::Http {
                route: route.clone(),
                source,
            })?;
        if !whole {
            return Err(DriverError::Unexpected {
                route,
                message: format!(
                    "the answer is longer than {MAX_EXCHANGE_BYTES} bytes, which the driver does \
                     not read"
                ),
            });
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let values = parsed_size::json_value_count(&text);
        if values.saturating_mul(std::mem::size_of::<Value>()) + text.len() > MAX_EXCHANGE_BYTES {
            return Err(DriverError::Unexpected {
                route,
                message: format!(
                    "the answer holds more than {MAX_EXCHANGE_BYTES} bytes as parsed JSON \
                     (estimated), which the driver does not hold"
                ),
            });
        }
        Ok(Exchange {
            method: method.to_string(),
            path: path.to_string(),
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        })
    }

    /// Posts `request` and reads the whole stream (which must close cleanly: a broken body is
    /// [`DriverError::Stream`]), keeping the response headers `api`'s framing rule reads.
    pub(crate) async fn stream(
        &self,
        request: RunRequest,
        modes: StreamModes,
        api: Api,
    ) -> Result<RunTranscript, DriverError> {
        let keep = api.protocol().headers;
        let route = format!("POST {}", request.path);
        let mut builder = self.post(&request.path).json(&request.body);
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let response = send_expecting(&route, builder, 200).await?;
        let headers = keep
            .iter()
            .filter_map(|name| {
                let value = response.headers().get(*name)?.to_str().ok()?;
                Some(((*name).to_owned(), value.to_owned()))
            })
            .collect();
        // Read linearly and bounded (issue 34, finding 10): eventsource-stream parses an
        // incomplete line again on every piece of it that arrives, so a long line is cut whole
        // first (`whole_lines`, as the recording proxy does), a line past the bound ends the
        // stream, and so does a stream past its bound.
        let mut read = 0usize;
        // AG-UI's own client reads LF line ends only, where SSE (and the AI SDK's client) allow
        // CR and CRLF too: a CR there is refused rather than read as the stricter client cannot.
        let lf_only = api.protocol().lf_only;
        let body = response.bytes_stream().map(move |piece| {
            let piece = piece.map_err(BodyFailure::Http)?;
            read += piece.len();
            if read > MAX_STREAM_BYTES {
                return Err(BodyFailure::StreamTooLong);
            }
            if lf_only && piece.contains(&b'\r') {
                return Err(BodyFailure::CarriageReturn);
            }
            Ok(piece)
        });
        // Each frame's data is parsed once, here (`SseEvent::new`); no copy of the raw bytes.
        // Lines are read as the protocols' own clients read them (issue 45, finding 11): a CR
        // alone ends a line, which eventsource-stream holds back at the end of a stream, and an
        // invalid UTF-8 byte is U+FFFD (`TextDecoder`), not the stream's end.
        let mut stream = Box::pin(transport::decoded_lines(body, MAX_FRAME_BYTES).eventsource());
        let mut events = Vec::new();
        let mut held = 0usize;
        while let Some(event) = stream.next().await {
            let frame_too_long = |frame: usize| DriverError::FrameTooLong {
                route: route.clone(),
                frame,
                limit: MAX_FRAME_BYTES,
            };
            let event = event.map_err(|err| match err {
                EventStreamError::Transport(BodyFailure::LineTooLong(_)) => {
                    frame_too_long(events.len())
                }
                EventStreamError::Transport(BodyFailure::StreamTooLong) => {
                    DriverError::StreamTooLong {
                        route: route.clone(),
                        limit: MAX_STREAM_BYTES,
                    }
                }
                other => DriverError::Stream {
                    route: route.clone(),
                    message: other.to_string(),
                },
            })?;
            // A frame of many lines, each within the bound.
            if event.data.len() > MAX_FRAME_BYTES {
                return Err(frame_too_long(events.len()));
            }
            // Counted from the text, so a frame too large to hold is never parsed.
            let values = parsed_size::json_value_count(&event.data);
            held = held
                .saturating_add(event.data.len())
                .saturating_add(values.saturating_mul(std::mem::size_of::<Value>()));
            if held > MAX_PARSED_BYTES {
                return Err(DriverError::ParsedTooLarge {
                    route: route.clone(),
                    frame: events.len(),
                    limit: MAX_PARSED_BYTES,
                });
            }
            events.push(SseEvent::new(
                event.event,
                event.data,
                (!event.id.is_empty()).then_some(event.id),
            ));
        }
        Ok(RunTranscript {
            request: request.body,
            events,
            modes,
            api,
            headers,
            history: None,
        })
    }
}
