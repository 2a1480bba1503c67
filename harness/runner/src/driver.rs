//! The wire driver: drives a gateway over HTTP with reqwest and eventsource-stream. It knows no
//! gateway types, only the wire contract of an API dialect ([`Dialect`]), one file each:
//! DeerFlow's ([`deerflow`]: register → CSRF cookie → thread → `runs/stream` below `/api`, the
//! way its frontend does), LangGraph's own API server's ([`langgraph`]: no session, an optional
//! static auth header, `POST /assistants/search`, threads and `runs/stream` at the root), and the
//! dialects whose frames name themselves in their JSON (`docs/testing-your-own-gateway.md`, "The
//! dialects"): a dialect owns its routes, its run request, what a follow-up carries
//! ([`Dialect::read_run`]), and in its [`Protocol`] its default paths, its framing rule and how
//! its stream reduces to shapes. A new dialect is one more file implementing [`Dialect`] and
//! declaring its `PROTOCOL`, and one [`Api`] variant.

pub mod ag_ui;
pub mod ai_sdk;
pub mod deerflow;
pub mod langgraph;
pub mod openai_chat;
pub mod openai_responses;
mod parsed_size;
pub mod schema_enums;
pub mod transcript;

use std::collections::BTreeMap;
use std::fmt;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use replay_core::{FailedRequest, Framing, FramingProblem, Scenario, Shape, Turn, first_chars};

use crate::ignored::IgnoredEvents;

/// A failed step of the drive, naming the route.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The request could not be sent or its body not read.
    #[error("{route}: {source}")]
    Http {
        /// Method and path.
        route: String,
        /// What reqwest said.
        source: reqwest::Error,
    },
    /// The gateway answered with an unexpected status.
    #[error("{route}: expected {expected}, got {status}: {body}")]
    Status {
        /// Method and path.
        route: String,
        /// The expected status.
        expected: u16,
        /// The status received.
        status: u16,
        /// The response body (truncated).
        body: String,
    },
    /// Registration set no `csrf_token` cookie.
    #[error("{route}: no csrf_token cookie was set")]
    MissingCsrfCookie {
        /// Method and path.
        route: String,
    },
    /// A request of a driven page did not answer 2xx.
    #[error("{route} answered {status}: {body}")]
    PageRequest {
        /// Method and path.
        route: String,
        /// The status received.
        status: u16,
        /// The response body (truncated).
        body: String,
    },
    /// The LangGraph server lists no graph, or several, and no `--assistant` chose one.
    #[error(
        "POST {route}: {}; choose one with --assistant ID (or `assistant` in keyless.toml)",
        if .graphs.is_empty() { "the server lists no graph".to_owned() } else {
            format!("the server lists several graphs ({})", .graphs.join(", ")) }
    )]
    NoSingleAssistant {
        /// Method and path.
        route: String,
        /// The graph ids listed.
        graphs: Vec<String>,
    },
    /// An answer was not what the dialect expects.
    #[error("{route}: {message}")]
    Unexpected {
        /// Method and path.
        route: String,
        /// What was wrong.
        message: String,
    },
    /// One frame (or one line of it) of the event stream is longer than the driver reads.
    #[error(
        "{route}: SSE frame {frame} (counting from 0) is longer than {limit} bytes, which the \
         driver does not read (no gateway frame should be near it)"
    )]
    FrameTooLong {
        /// Method and path.
        route: String,
        /// The frame's index in the stream.
        frame: usize,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The whole event stream is longer than the driver reads.
    #[error(
        "{route}: the event stream is longer than {limit} bytes, which the driver does not read"
    )]
    StreamTooLong {
        /// Method and path.
        route: String,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The run's frames, as kept (their text and their parse), would pass what the driver holds.
    #[error(
        "{route}: SSE frame {frame} (counting from 0) takes the run's frames past {} MiB as \
         parsed JSON (estimated), which the driver does not hold",
        .limit / (1024 * 1024)
    )]
    ParsedTooLarge {
        /// Method and path.
        route: String,
        /// The frame's index in the stream.
        frame: usize,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The dialect is not driven by this build yet.
    #[error("--api {api}: this dialect is not implemented yet")]
    Unsupported {
        /// The dialect.
        api: Api,
    },
    /// The fixture's mode is a label, where the dialect needs one of DeerFlow's UI modes.
    #[error(
        "the fixture's mode {mode:?} is a label; --api deerflow drives one of DeerFlow's UI modes \
         (flash, thinking, pro, ultra)"
    )]
    NoUiMode {
        /// The mode.
        mode: String,
    },
    /// The stream broke the protocol where its client would fail to read it.
    #[error("{route}: {message}")]
    Protocol {
        /// Method and path.
        route: String,
        /// What was wrong, naming the frame.
        message: String,
    },
    /// The SSE stream broke.
    #[error("{route}: the event stream broke: {message}")]
    Stream {
        /// Method and path.
        route: String,
        /// What went wrong.
        message: String,
    },
}

pub use transcript::{RunTranscript, SseEvent};

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

/// The API dialect a gateway speaks (`docs/testing-your-own-gateway.md`, "The dialects"): the
/// one list `keyless test --api` and `keyless.toml`'s `api` parse ([`Api::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// DeerFlow's gateway API: register, cookie session and CSRF, routes below `/api`.
    #[default]
    Deerflow,
    /// LangGraph's own API server (`langgraph dev`, a LangSmith deployment): no session, routes
    /// at the root, graphs as assistants.
    Langgraph,
    /// The Vercel AI SDK's UI message stream: a chat route (`POST /api/chat`) that `useChat`'s
    /// `DefaultChatTransport` posts UI messages to.
    AiSdk,
    /// AG-UI: an agent endpoint that takes a `RunAgentInput` and streams typed events.
    AgUi,
    /// An agent served as OpenAI's Responses API (`POST /v1/responses`, streamed).
    OpenaiResponses,
    /// An agent served as OpenAI's Chat Completions API (`POST /v1/chat/completions`,
    /// streamed).
    OpenaiChat,
}

/// A name that is not one of [`Api::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API {0:?}: expected one of {names}", names = Api::names())]
pub struct UnknownApi(pub String);

impl Api {
    /// Every dialect, in the order `--help` lists them.
    pub const ALL: [Api; 6] = [
        Api::Deerflow,
        Api::Langgraph,
        Api::AiSdk,
        Api::AgUi,
        Api::OpenaiResponses,
        Api::OpenaiChat,
    ];

    /// The spelling of `--api` and `keyless.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Deerflow => "deerflow",
            Api::Langgraph => "langgraph",
            Api::AiSdk => "ai-sdk",
            Api::AgUi => "ag-ui",
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiChat => "openai-chat",
        }
    }

    /// The names, comma-separated, for messages.
    pub fn names() -> String {
        Api::ALL.map(Api::as_str).join(", ")
    }

    /// What the dialect knows of its protocol, declared in its own file.
    pub fn protocol(self) -> &'static Protocol {
        match self {
            Api::Deerflow => &deerflow::PROTOCOL,
            Api::Langgraph => &langgraph::PROTOCOL,
            Api::AiSdk => &ai_sdk::PROTOCOL,
            Api::AgUi => &ag_ui::PROTOCOL,
            Api::OpenaiResponses => &openai_responses::PROTOCOL,
            Api::OpenaiChat => &openai_chat::PROTOCOL,
        }
    }

    /// The prefix of the dialect's routes when none is configured.
    pub fn default_base_path(self) -> &'static str {
        self.protocol().base_path
    }

    /// The path that answers 2xx once the gateway is ready, when none is configured.
    pub fn default_ready_path(self) -> &'static str {
        self.protocol().ready_path
    }

    /// The route a run is posted to, below the base path, when no `--endpoint` is configured
    /// (`None`: the dialect's runs stream below its threads).
    pub fn default_endpoint(self) -> Option<&'static str> {
        self.protocol().endpoint
    }

    /// Whether a fixture's mode is one of DeerFlow's UI modes with the run context it implies
    /// (DeerFlow's dialect), or only a label (every other dialect, e.g. `chat`).
    pub fn has_ui_modes(self) -> bool {
        self.protocol().ui_modes
    }

    /// The framing of `runs` under the dialect's rule; `model_error_recorded` says whether the
    /// fixture records a failed model call (whose error frame the golden then holds).
    pub fn framing(self, runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        (self.protocol().framing)(runs, model_error_recorded)
    }

    /// The shapes a run's golden holds in this dialect: for DeerFlow and LangGraph, by the
    /// stream modes the run asked for (every frame's shape for `values`, the web reduction for
    /// the web client's modes); a dialect whose frames name themselves reduces its delta runs
    /// ([`replay_core::delta_run_shapes`]).
    pub fn golden_shapes(self, transcript: &RunTranscript) -> Vec<Shape> {
        self.golden_shapes_without(transcript, &IgnoredEvents::default())
    }

    /// [`Api::golden_shapes`] with the frames of the `ignored` types left out before the
    /// reduction (so a `RAW` frame between two deltas of one message no longer splits their run).
    pub fn golden_shapes_without(
        self,
        transcript: &RunTranscript,
        ignored: &IgnoredEvents,
    ) -> Vec<Shape> {
        match (self.protocol().named, transcript.modes) {
            (Some(named), _) => {
                let mut named = named(transcript);
                named.retain(|(shape, _)| !ignored.contains(shape.event.as_deref()));
                replay_core::delta_run_shapes(named)
            }
            (None, StreamModes::Values) => (transcript.shapes().into_iter())
                .filter(|shape| !ignored.contains(shape.event.as_deref()))
                .collect(),
            (None, StreamModes::Web) => transcript.web_shapes_without(ignored),
        }
    }

    /// Each frame's shape, unreduced, named as the dialect names its frames (for reports).
    pub fn frame_shapes(self, transcript: &RunTranscript) -> Vec<Shape> {
        match self.protocol().named {
            Some(named) => named(transcript)
                .into_iter()
                .map(|(shape, _)| shape)
                .collect(),
            None => transcript.shapes(),
        }
    }
}

/// What a dialect knows of its protocol (`docs/testing-your-own-gateway.md`, "The dialects";
/// `docs/golden-format.md` §10), declared in its own file as `<dialect>::PROTOCOL`: its default
/// routes, its framing rule and how its frames name themselves. A transcript keeps its run's
/// [`Api`], so a verdict reads it after the session is gone.
#[derive(Debug)]
pub struct Protocol {
    /// The prefix of the routes when none is configured.
    pub base_path: &'static str,
    /// The path that answers 2xx once the gateway is ready, when none is configured.
    pub ready_path: &'static str,
    /// The route a run is posted to, below the base path, when none is configured (`None`: the
    /// runs stream below a thread).
    pub endpoint: Option<&'static str>,
    /// Whether a fixture's mode is one of DeerFlow's UI modes, not only a label.
    pub ui_modes: bool,
    /// The response headers the framing rule reads (lowercase names).
    pub headers: &'static [&'static str],
    /// Whether the protocol's client reads LF line ends only (AG-UI's), so a CR is refused.
    pub lf_only: bool,
    /// The framing of a conversation's runs; the flag says whether the fixture records a model
    /// error.
    pub framing: fn(&[RunTranscript], bool) -> Framing,
    /// A self-naming dialect's frames as shapes, each with the id of the delta run it belongs
    /// to (`None`: the shapes come from the stream modes, DeerFlow's and LangGraph's).
    pub named: Option<fn(&RunTranscript) -> NamedFrames>,
}

/// A self-naming dialect's frames as shapes, each with the id of the delta run it belongs to.
pub type NamedFrames = Vec<(Shape, Option<String>)>;

/// The first run `problem` finds broken, naming it; [`Framing::Ok`] when none is.
pub(crate) fn first_violation(
    runs: &[RunTranscript],
    problem: impl Fn(&RunTranscript) -> Option<FramingProblem>,
) -> Framing {
    (runs.iter().enumerate())
        .find_map(|(run, transcript)| {
            Some(Framing::Violated {
                run,
                problem: problem(transcript)?,
            })
        })
        .unwrap_or(Framing::Ok)
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Api {
    type Err = UnknownApi;

    fn from_str(name: &str) -> Result<Api, UnknownApi> {
        Api::ALL
            .into_iter()
            .find(|api| api.as_str() == name)
            .ok_or_else(|| UnknownApi(name.to_owned()))
    }
}

/// The stream modes a run asks for, and so the golden it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamModes {
    /// `["values"]`: Layer 1's golden, every event's shape.
    #[default]
    Values,
    /// DeerFlow's web client's four modes (`deerflow::WEB_STREAM_MODES`): the web golden, runs of chunks of one
    /// message reduced to one entry ([`replay_core::web_shapes`]).
    Web,
}

impl StreamModes {
    /// The `stream_mode` list of the run request.
    pub fn modes(self) -> &'static [&'static str] {
        match self {
            StreamModes::Values => &["values"],
            StreamModes::Web => &deerflow::WEB_STREAM_MODES,
        }
    }
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

/// The HTTP side of a session against one gateway, knowing no dialect: a cookie jar, the static
/// auth header when one is configured, and the header a dialect's session adds to every request
/// once it is open (DeerFlow's CSRF token, [`deerflow`]).
#[derive(Debug)]
pub struct HttpClient {
    base: String,
    http: reqwest::Client,
    session_header: Option<(&'static str, String)>,
    auth: Option<AuthHeader>,
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
    fn from_value(
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

/// How a session drives a gateway: the dialect, its routes' prefix, its endpoint, the
/// assistant, the auth header and the stream modes (`keyless test --api …`, `keyless.toml`'s
/// keys).
#[derive(Debug, Clone, Default)]
pub struct DriveOptions {
    /// The API dialect.
    pub api: Api,
    /// The prefix of the dialect's routes [default: [`Api::default_base_path`]].
    pub base_path: Option<String>,
    /// The route runs are posted to, below the base path, for a dialect with one endpoint
    /// [default: [`Api::default_endpoint`]].
    pub endpoint: Option<String>,
    /// LangGraph: the assistant (or graph id) every run goes to [default: the only graph the
    /// server lists].
    pub assistant: Option<String>,
    /// LangGraph: the assistant of each scenario id, over `assistant`.
    pub assistants: BTreeMap<String, String>,
    /// A static auth header for every request.
    pub auth: Option<AuthHeader>,
    /// The stream modes of every run.
    pub stream_modes: StreamModes,
}

impl DriveOptions {
    /// The prefix of the dialect's routes, without a trailing `/` (`""` for the root).
    pub fn base_path(&self) -> String {
        let path = self
            .base_path
            .as_deref()
            .unwrap_or(self.api.default_base_path());
        route_path(path)
    }

    /// The path runs are posted to: the base path, then the endpoint (configured, else the
    /// dialect's); `/` when both are the root. `None` for a dialect without one endpoint.
    pub fn endpoint(&self) -> Option<String> {
        let endpoint = self.endpoint.as_deref().or(self.api.default_endpoint())?;
        match format!("{}{}", self.base_path(), route_path(endpoint)) {
            path if path.is_empty() => Some("/".to_owned()),
            path => Some(path),
        }
    }
}

/// `path` with a leading `/` and no trailing one (`""` for the root).
fn route_path(path: &str) -> String {
    match path.trim_end_matches('/') {
        "" => String::new(),
        path if path.starts_with('/') => path.to_owned(),
        path => format!("/{path}"),
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

/// One API dialect: how a session opens, how a conversation starts, what each run's request
/// holds, what a finished run leaves for the next one, and how its stream is framed.
/// [`deerflow::DeerFlow`] and [`langgraph::LangGraph`] start a thread and post to its
/// `runs/stream`; a dialect with one JSON endpoint per turn (the AI SDK's chat route, AG-UI, an
/// OpenAI-style endpoint) starts nothing on the server, keeps the conversation itself and sends
/// it back with each follow-up, built from the streams it read ([`Dialect::read_run`]).
/// [`Session`] drives any of them; a dialect value drives one conversation at a time.
#[async_trait::async_trait]
pub trait Dialect: fmt::Debug + Send + Sync {
    /// Opens the session before the first conversation (DeerFlow registers; LangGraph lists its
    /// assistants when none is configured).
    async fn open(&mut self, client: &mut HttpClient) -> Result<(), DriverError> {
        let _ = client;
        Ok(())
    }

    /// Starts `scenario`'s conversation, forgetting the last one's (DeerFlow and LangGraph create
    /// a thread; a dialect without threads mints its ids and empties its history).
    async fn begin(&mut self, start: Begin<'_>) -> Result<(), DriverError>;

    /// The request of the run's prompt in the conversation begun.
    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError>;

    /// Reads a finished run into the conversation, as the dialect's client does before the next
    /// prompt (the AI SDK's assistant message assembled from the stream, AG-UI's messages and
    /// state). Fails, naming the frame, where that client would fail to read the stream.
    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        let _ = transcript;
        Ok(())
    }

    /// The conversation as the dialect's client holds it after the runs read so far (the UI
    /// messages the next request carries), for a cross-check against the protocol's own
    /// client; `None` for a dialect whose server keeps the conversation.
    fn history(&self) -> Option<Value> {
        None
    }
}

/// What a conversation starts from: the session's HTTP side (for a dialect that creates a
/// thread) and the scenario (for one that takes its model from it).
#[derive(Debug, Clone, Copy)]
pub struct Begin<'a> {
    /// The session's HTTP side.
    pub client: &'a HttpClient,
    /// The scenario the conversation drives.
    pub scenario: &'a Scenario,
}

/// What a run's request is built from, as the session hands it to its dialect.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// The scenario the conversation drives.
    pub scenario: &'a Scenario,
    /// This run's prompt (the scenario's, then each follow-up).
    pub prompt: &'a str,
    /// The fixture's turns (none while recording).
    pub recorded: &'a [Turn],
    /// The stream modes of the run.
    pub modes: StreamModes,
}

#[cfg(test)]
impl<'a> RunContext<'a> {
    /// A run of `prompt` in `scenario`, nothing recorded, in the `values` mode.
    pub(crate) fn values(scenario: &'a Scenario, prompt: &'a str) -> RunContext<'a> {
        RunContext {
            scenario,
            prompt,
            recorded: &[],
            modes: StreamModes::Values,
        }
    }
}

/// A driver opened in a dialect: runs a scenario's prompt and follow-ups in one conversation.
#[derive(Debug)]
pub struct Session {
    client: HttpClient,
    api: Api,
    dialect: Box<dyn Dialect>,
    modes: StreamModes,
}

impl Session {
    /// Opens a session on the gateway at `url` as `options` say.
    pub async fn open(url: &str, options: &DriveOptions) -> Result<Session, DriverError> {
        let mut client = HttpClient::new(url)?;
        client.auth = options.auth.clone();
        let base = options.base_path();
        let mut dialect: Box<dyn Dialect> = match options.api {
            Api::Deerflow => Box::new(deerflow::DeerFlow::new(base)),
            Api::Langgraph => Box::new(langgraph::LangGraph::new(
                base,
                options.assistant.clone(),
                options.assistants.clone(),
            )),
            Api::AiSdk => Box::new(ai_sdk::AiSdk::new(endpoint(options)?)),
            Api::OpenaiResponses => {
                Box::new(openai_responses::OpenaiResponses::new(endpoint(options)?))
            }
            Api::OpenaiChat => Box::new(openai_chat::OpenaiChat::new(endpoint(options)?)),
            Api::AgUi => Box::new(ag_ui::AgUi::new(endpoint(options)?)),
        };
        dialect.open(&mut client).await?;
        Ok(Session {
            client,
            api: options.api,
            dialect,
            modes: options.stream_modes,
        })
    }

    /// Starts a conversation and streams the scenario's prompt and each follow-up in it, one run
    /// after another, each run read into the conversation before the next; `recorded` is the
    /// fixture's turns (none while recording).
    pub async fn run_scenario(
        &mut self,
        scenario: &Scenario,
        recorded: &[Turn],
    ) -> Result<Vec<RunTranscript>, DriverError> {
        self.begin(scenario).await?;
        self.runs(scenario, recorded).await
    }

    /// The first half of [`Session::run_scenario`]: starts the conversation (a dialect's thread),
    /// sending no run yet.
    pub async fn begin(&mut self, scenario: &Scenario) -> Result<(), DriverError> {
        let start = Begin {
            client: &self.client,
            scenario,
        };
        self.dialect.begin(start).await
    }

    /// The second half of [`Session::run_scenario`]: the runs, in the conversation
    /// [`Session::begin`] started.
    pub async fn runs(
        &mut self,
        scenario: &Scenario,
        recorded: &[Turn],
    ) -> Result<Vec<RunTranscript>, DriverError> {
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            let run = RunContext {
                scenario,
                prompt,
                recorded,
                modes: self.modes,
            };
            let request = self.dialect.run_request(&run)?;
            let mut transcript = self.client.stream(request, self.modes, self.api).await?;
            self.dialect.read_run(&transcript)?;
            transcript.history = self.dialect.history();
            transcripts.push(transcript);
        }
        Ok(transcripts)
    }
}

/// The path a dialect with one endpoint posts its runs to.
fn endpoint(options: &DriveOptions) -> Result<String, DriverError> {
    options
        .endpoint()
        .ok_or(DriverError::Unsupported { api: options.api })
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
const EXCERPT_CHARS: usize = 2000;

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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn transcript(events: &[&str], api: Api) -> RunTranscript {
        RunTranscript {
            request: Value::Null,
            events: (events.iter())
                .map(|event| {
                    SseEvent::new(
                        (*event).to_owned(),
                        r#"{"error":"APIConnectionError","message":"boom"}"#.to_owned(),
                        None,
                    )
                })
                .collect(),
            modes: StreamModes::Values,
            api,
            headers: Vec::new(),
            history: None,
        }
    }

    /// (case, rule, each run's events, the fixture records a model error, expected framing)
    type Case<'a> = (&'a str, Api, &'a [&'a [&'a str]], bool, Framing);

    #[test]
    fn each_dialects_framing_rule_fails_what_it_must() {
        use Api::{Deerflow as End, Langgraph as Close};
        let violated = |run, problem| Framing::Violated { run, problem };
        let first = |got: Option<&str>| FramingProblem::First {
            expected: "\"metadata\"".into(),
            got: got.map(str::to_owned),
        };
        let error = r#"{"error":"APIConnectionError","message":"boom"}"#.to_owned();
        let cases: [Case; 7] = [
            (
                "deerflow framed",
                End,
                &[&["metadata", "values", "end"]],
                false,
                Framing::Ok,
            ),
            (
                "deerflow without end",
                End,
                &[&["metadata", "values"]],
                false,
                violated(
                    0,
                    FramingProblem::Last {
                        expected: "\"end\"".into(),
                        got: Some("values".into()),
                    },
                ),
            ),
            (
                "langgraph closes without end",
                Close,
                &[&["metadata", "values"], &["metadata"]],
                false,
                Framing::Ok,
            ),
            (
                "langgraph follow-up without metadata",
                Close,
                &[&["metadata"], &["values"]],
                false,
                violated(1, first(Some("values"))),
            ),
            (
                "langgraph empty run",
                Close,
                &[&[]],
                false,
                violated(0, first(None)),
            ),
            (
                "langgraph error frame, no model error recorded",
                Close,
                &[&["metadata", "values", "error"]],
                false,
                violated(
                    0,
                    FramingProblem::ErrorFrame {
                        frame: "error".into(),
                        data: error,
                    },
                ),
            ),
            (
                "langgraph error frame of a recorded model error",
                Close,
                &[&["metadata", "values", "error"]],
                true,
                Framing::Ok,
            ),
        ];
        for (case, rule, runs, model_error, expected) in cases {
            let runs: Vec<RunTranscript> = runs.iter().map(|run| transcript(run, rule)).collect();
            assert_eq!(rule.framing(&runs, model_error), expected, "{case}");
        }
    }

    #[test]
    fn the_auth_header_value_is_read_from_the_environment_and_never_shown() {
        let header =
            AuthHeader::from_value("x-api-key", "MY_KEY", Some("sk-secret-1".into())).unwrap();
        let options = DriveOptions {
            auth: Some(header.clone()),
            ..DriveOptions::default()
        };
        let shown = format!("{header:?} {options:?}");
        assert!(
            !shown.contains("sk-secret-1") && shown.contains("x-api-key"),
            "{shown}"
        );
        // (case, name, value, the error names)
        let cases = [
            ("unset", "x-api-key", None, "set MY_KEY"),
            ("empty", "x-api-key", Some(" "), "set MY_KEY"),
            (
                "bad name",
                "x api key",
                Some("v"),
                "not a valid HTTP header name",
            ),
            (
                "bad value",
                "x-api-key",
                Some("a\nb"),
                "MY_KEY is not a valid header value",
            ),
        ];
        for (case, name, value, names) in cases {
            let err = AuthHeader::from_value(name, "MY_KEY", value.map(str::to_owned)).unwrap_err();
            assert!(err.to_string().contains(names), "{case}: {err}");
        }
    }

    #[test]
    fn the_base_path_defaults_to_the_dialects_and_is_normalised() {
        let cases = [
            (Api::Deerflow, None, "/api"),
            (Api::Langgraph, None, ""),
            (Api::Langgraph, Some("/"), ""),
            (Api::Langgraph, Some("agents/"), "/agents"),
            (Api::Deerflow, Some("/gw/api/"), "/gw/api"),
        ];
        for (api, base_path, expected) in cases {
            let options = DriveOptions {
                api,
                base_path: base_path.map(str::to_owned),
                ..DriveOptions::default()
            };
            assert_eq!(options.base_path(), expected, "{api:?} {base_path:?}");
        }
    }

    /// A server answering every request `status` with an endless body, written 1 MB at a time.
    async fn serve_endless(status: u16) -> String {
        let app = axum::Router::new().fallback(move || async move {
            let piece = axum::body::Bytes::from(vec![b'x'; 1024 * 1024]);
            let body = futures::stream::repeat_with(move || Ok::<_, std::io::Error>(piece.clone()));
            let status = axum::http::StatusCode::from_u16(status).unwrap();
            (status, axum::body::Body::from_stream(body))
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Issue 45, finding 3: an unexpected status's endless body is read to the excerpt's bound
    /// and dropped (it was read whole: 2 GB), and a page request's answer to its own bound; an
    /// answer within it whose parse would pass it is refused unparsed.
    #[tokio::test]
    async fn an_endless_error_body_or_page_answer_is_read_only_to_its_bound() {
        let url = serve_endless(500).await;
        let client = HttpClient::new(&url).unwrap();
        let deadline = Duration::from_secs(30);
        let sent = tokio::time::timeout(deadline, client.post_json("/t", &json!({}), 200)).await;
        match sent.expect("the error body was read within 30 s") {
            Err(DriverError::Status { status, body, .. }) => {
                assert_eq!(status, 500);
                assert_eq!(body.chars().count(), EXCERPT_CHARS, "the excerpt");
            }
            other => panic!("{other:?}"),
        }
        let page = client.exchange(reqwest::Method::GET, "/p", None);
        match tokio::time::timeout(deadline, page)
            .await
            .expect("read within 30 s")
        {
            Err(DriverError::Unexpected { route, message }) => {
                assert_eq!(route, "GET /p");
                assert!(message.contains("longer than"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let zeros = format!("[{}0]", "0,".repeat(512 * 1024));
        let app = axum::Router::new().fallback(move || std::future::ready(zeros.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = HttpClient::new(&url).unwrap();
        match client.exchange(reqwest::Method::GET, "/p", None).await {
            Err(DriverError::Unexpected { message, .. }) => {
                assert!(message.contains("as parsed JSON"), "{message}");
            }
            other => panic!("{:?}", other.map(|exchange| exchange.status)),
        }
    }

    /// A server whose `runs/stream` answers `metadata`, one `values` frame whose data is a JSON
    /// string of `size` bytes, and `end`, in 16 KiB pieces as a socket delivers them.
    async fn serve_one_frame(size: usize) -> String {
        let mut body = b"event: metadata\ndata: {}\n\nevent: values\ndata: \"".to_vec();
        body.resize(body.len() + size, b'x');
        body.extend_from_slice(b"\"\n\nevent: end\ndata: null\n\n");
        let pieces: Vec<Vec<u8>> = body.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
        let app = axum::Router::new().route(
            "/t/runs/stream",
            axum::routing::post(move || {
                let pieces = pieces.clone();
                async move {
                    let pieces = pieces.into_iter().map(Ok::<_, std::io::Error>);
                    axum::body::Body::from_stream(futures::stream::iter(pieces))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Issue 45, finding 4: frames of 1 MB of `[0,0,…]`, each within the byte bounds, are refused
    /// once their parse would pass the run's bound (each costs 43 MB parsed), naming the frame.
    #[tokio::test]
    async fn frames_whose_parse_passes_the_bound_are_refused_before_they_are_parsed() {
        let mut frame = br#"data: {"type":"data-x","data":["#.to_vec();
        frame.extend(b"0,".repeat(512 * 1024));
        frame.extend_from_slice(b"0]}\n\n");
        let body = frame.repeat(12);
        let app = axum::Router::new().route(
            "/chat",
            axum::routing::post(move || {
                let pieces: Vec<Vec<u8>> = body.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
                let pieces = pieces.into_iter().map(Ok::<_, std::io::Error>);
                async move { axum::body::Body::from_stream(futures::stream::iter(pieces)) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let request = RunRequest {
            path: "/chat".to_owned(),
            body: json!({}),
            headers: Vec::new(),
        };
        let client = HttpClient::new(&url).unwrap();
        let read = client
            .stream(request, StreamModes::Values, Api::Deerflow)
            .await;
        match read {
            Err(error @ DriverError::ParsedTooLarge { frame: 4, .. }) => {
                assert!(error.to_string().contains("past 160 MiB"), "{error}");
            }
            other => panic!("{:?}", other.map(|transcript| transcript.events.len())),
        }
    }

    /// Reads the one-frame stream of `size` bytes, and how long that took.
    async fn read_one_frame(size: usize) -> (Result<RunTranscript, DriverError>, Duration) {
        let url = serve_one_frame(size).await;
        let client = HttpClient::new(&url).unwrap();
        let started = std::time::Instant::now();
        let request = RunRequest {
            path: "/t/runs/stream".to_owned(),
            body: json!({"stream_mode": ["values"]}),
            headers: Vec::new(),
        };
        let read = client
            .stream(request, StreamModes::Values, Api::Deerflow)
            .await;
        (read, started.elapsed())
    }

    /// Issue 34, finding 10: a long frame is read in one linear pass, and a frame past the
    /// bound is an error naming it. Before the fix a 16 MiB frame took minutes, in one poll a
    /// timer cannot interrupt: the read runs on a thread of its own, and the test gives up on
    /// it after a deadline.
    #[test]
    fn a_long_frame_is_read_linearly_and_one_past_the_bound_is_named() {
        // (size of the frame's data, the frames read or the frame named)
        let cases = [(1024 * 1024, Ok(3)), (MAX_FRAME_BYTES + 1, Err(1))];
        for (size, expected) in cases {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = sender.send(runtime.block_on(read_one_frame(size)));
            });
            let (read, took) = receiver
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("a {size}-byte frame was not read within 120 s"));
            match (read, expected) {
                (Ok(transcript), Ok(frames)) => assert_eq!(transcript.events.len(), frames),
                (Err(DriverError::FrameTooLong { frame, route, .. }), Err(named)) => {
                    assert_eq!(frame, named, "{size}");
                    assert!(route.ends_with("/t/runs/stream"), "{route}");
                }
                (read, _) => panic!("{size}: {read:?}"),
            }
            eprintln!("a {size}-byte frame: {took:?}");
        }
    }

    /// Issue 45, finding 11: lines end as each protocol's client ends them. An AG-UI stream
    /// framed with CRLF or CR fails the drive (`@ag-ui/client` splits at LF only), where the same
    /// stream is read whole as the AI SDK's (`eventsource-parser` takes any SSE line end).
    #[tokio::test]
    async fn an_ag_ui_stream_with_a_cr_fails_and_another_dialect_reads_it() {
        let run = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
        let finished = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;
        for (line_end, rule, read) in [
            ("\n", Api::AgUi, true),
            ("\r\n", Api::AgUi, false),
            ("\r", Api::AgUi, false),
            ("\r", Api::AiSdk, true),
        ] {
            let body =
                format!("data: {run}{line_end}{line_end}data: {finished}{line_end}{line_end}");
            let app = axum::Router::new().route("/", axum::routing::post(move || async { body }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await });
            let client = HttpClient::new(&url).unwrap();
            let request = RunRequest {
                path: "/".to_owned(),
                body: json!({}),
                headers: Vec::new(),
            };
            let result = client.stream(request, StreamModes::Values, rule).await;
            match (result, read) {
                (Ok(transcript), true) => assert_eq!(transcript.events.len(), 2, "{line_end:?}"),
                (Err(DriverError::Stream { message, .. }), false) => {
                    assert!(message.contains("@ag-ui/client splits"), "{message}")
                }
                (other, _) => panic!("{line_end:?} {rule:?}: {other:?}"),
            }
        }
    }
}
