//! The wire driver: drives a gateway over HTTP with reqwest and eventsource-stream. It knows no
//! gateway types, only the wire contract of an API dialect ([`Dialect`]): DeerFlow's
//! ([`deerflow`]: register → CSRF cookie → thread → `runs/stream` below `/api`, the way its
//! frontend does) and LangGraph's own API server's ([`langgraph`]: no session, an optional static
//! auth header, `POST /assistants/search`, threads and `runs/stream` at the root). A third
//! dialect is one more file implementing [`Dialect`] (`docs/testing-your-own-gateway.md`,
//! "LangGraph's own API server").

pub mod ag_ui;
pub mod deerflow;
pub mod langgraph;

use std::collections::BTreeMap;
use std::fmt;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};

use replay_core::{Framing, Scenario, Shape, Turn, UiMode, first_chars};

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
    #[error("POST /api/v1/auth/register: no csrf_token cookie was set")]
    MissingCsrfCookie,
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
    /// The SSE stream broke.
    #[error("{route}: the event stream broke: {message}")]
    Stream {
        /// Method and path.
        route: String,
        /// What went wrong.
        message: String,
    },
}

pub use crate::transcript::{RunTranscript, SseEvent};

/// The API dialect a gateway speaks (`docs/testing-your-own-gateway.md`, "LangGraph's own API
/// server").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// DeerFlow's gateway API: register, cookie session and CSRF, routes below `/api`.
    #[default]
    Deerflow,
    /// LangGraph's own API server (`langgraph dev`, a LangSmith deployment): no session, routes
    /// at the root, graphs as assistants.
    Langgraph,
}

impl Api {
    /// The prefix of the dialect's routes when none is configured.
    pub fn default_base_path(self) -> &'static str {
        match self {
            Api::Deerflow => "/api",
            Api::Langgraph => "",
        }
    }

    /// The path that answers 2xx once the gateway is ready, when none is configured.
    pub fn default_ready_path(self) -> &'static str {
        match self {
            Api::Deerflow => "/health",
            Api::Langgraph => "/ok",
        }
    }
}

/// The stream modes a run asks for, and so the golden it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamModes {
    /// `["values"]`: Layer 1's golden, every event's shape.
    #[default]
    Values,
    /// The web client's four modes ([`WEB_STREAM_MODES`]): the web golden, runs of chunks of one
    /// message reduced to one entry ([`replay_core::web_shapes`]).
    Web,
}

impl StreamModes {
    /// The `stream_mode` list of the run request.
    pub fn modes(self) -> &'static [&'static str] {
        match self {
            StreamModes::Values => &["values"],
            StreamModes::Web => &WEB_STREAM_MODES,
        }
    }
}

/// How a dialect's streams are framed (`docs/testing-your-own-gateway.md`, "LangGraph's own
/// API server").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FramingRule {
    /// DeerFlow: `metadata` first, `end` last.
    #[default]
    MetadataThenEnd,
    /// LangGraph: each run's first frame is `metadata`, the body closes cleanly (no `end`), and an
    /// `error` frame fails the run unless the fixture records a model error.
    MetadataThenClose,
}

impl FramingRule {
    /// The framing of `runs` under this rule; `model_error_recorded` says whether the fixture
    /// records a failed model call (whose `error` frame the golden then holds).
    pub fn framing(self, runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        match self {
            FramingRule::MetadataThenEnd => {
                let shapes: Vec<Shape> = runs.iter().flat_map(RunTranscript::shapes).collect();
                Framing::of(&shapes)
            }
            FramingRule::MetadataThenClose => {
                for (run, transcript) in runs.iter().enumerate() {
                    let first = transcript.events.first().map(|event| event.event.clone());
                    if first.as_deref() != Some("metadata") {
                        return Framing::NoMetadata { run, first };
                    }
                    let error = transcript.events.iter().find(|e| e.event == "error");
                    if let (Some(error), false) = (error, model_error_recorded) {
                        return Framing::ErrorFrame {
                            run,
                            data: first_chars(error.data(), 300).to_owned(),
                        };
                    }
                }
                Framing::Ok
            }
        }
    }
}

/// The stream modes DeerFlow's web client asks for.
pub const WEB_STREAM_MODES: [&str; 4] = ["messages-tuple", "values", "updates", "custom"];

/// The run request of DeerFlow's web client, in its exact form: the prompt as a text block,
/// `recursion_limit: 1000`, the context the client builds for `mode` (the picked model when there
/// is one, the mode, its `reasoning_effort` unless flash, its three flags, the thread id), the
/// four web stream modes, `stream_resumable: false` (the LangGraph SDK always sends it),
/// `assistant_id` and `on_disconnect: "continue"`.
///
/// The web client builds the same body (`gateway-under-test/web/src/chat/run-request.ts`), and
/// both are held to `gateway-under-test/web/src/chat/run-requests/run-request.<mode>.json`, so
/// a run recorded through this driver replays in the browser without a miss.
pub fn web_run_request(
    prompt: &str,
    mode: UiMode,
    model_name: Option<&str>,
    thread_id: &str,
) -> Value {
    let mut context = Map::new();
    if let Some(model_name) = model_name {
        context.insert("model_name".into(), json!(model_name));
    }
    context.insert("mode".into(), json!(mode.as_str()));
    if let Some(effort) = mode.reasoning_effort() {
        context.insert("reasoning_effort".into(), json!(effort));
    }
    let flags = mode.context();
    for flag in ["thinking_enabled", "is_plan_mode", "subagent_enabled"] {
        context.insert(flag.into(), flags[flag].clone());
    }
    context.insert("thread_id".into(), json!(thread_id));
    json!({
        "input": {"messages": [{"type": "human", "content": [{"type": "text", "text": prompt}],
                                "additional_kwargs": {}}]},
        "config": {"recursion_limit": 1000},
        "context": context,
        "stream_mode": WEB_STREAM_MODES,
        "stream_resumable": false,
        "assistant_id": "lead_agent",
        "on_disconnect": "continue",
    })
}

/// A scenario driven the way the web client drives it ([`Driver::run_scenario_as_web_client`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WebClientRuns {
    /// The thread the runs went to.
    pub thread_id: String,
    /// One transcript per prompt.
    pub transcripts: Vec<RunTranscript>,
    /// The suggestions answer after each run (none while suggestions are off).
    pub suggestions: Vec<Value>,
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

/// A browser-like session against one gateway: a cookie jar, the CSRF token once DeerFlow's
/// registration set one, and the static auth header when one is configured.
#[derive(Debug)]
pub struct Driver {
    base: String,
    http: reqwest::Client,
    csrf: Option<String>,
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

/// How a session drives a gateway: the dialect, its routes' prefix, the assistant, the auth
/// header and the stream modes (`keyless test --api …`, `keyless.toml`'s keys).
#[derive(Debug, Clone, Default)]
pub struct DriveOptions {
    /// The API dialect.
    pub api: Api,
    /// The prefix of the dialect's routes [default: [`Api::default_base_path`]].
    pub base_path: Option<String>,
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
            .unwrap_or(self.api.default_base_path())
            .trim_end_matches('/');
        match path {
            "" => String::new(),
            path if path.starts_with('/') => path.to_owned(),
            path => format!("/{path}"),
        }
    }
}

/// One API dialect: how a session opens, where threads and runs are, what a run request holds
/// and how its stream is framed. [`deerflow::DeerFlow`] and [`langgraph::LangGraph`] implement
/// it; [`Session`] drives any of them.
#[async_trait::async_trait]
pub trait Dialect: fmt::Debug + Send + Sync {
    /// Opens the session before the first thread (DeerFlow registers; LangGraph lists its
    /// assistants when none is configured).
    async fn open(&mut self, driver: &mut Driver) -> Result<(), DriverError>;

    /// The path that creates a thread (`POST`, `{"thread_id", "metadata"}`, 200); its runs
    /// stream at `<path>/<thread id>/runs/stream`.
    fn threads_path(&self) -> String;

    /// The run request of `prompt` in `scenario`'s thread `thread_id`, `recorded` being the
    /// fixture's turns (none while recording).
    fn run_request(
        &self,
        scenario: &Scenario,
        prompt: &str,
        thread_id: &str,
        recorded: &[Turn],
        modes: StreamModes,
    ) -> Result<Value, DriverError>;

    /// How its streams are framed.
    fn framing_rule(&self) -> FramingRule;
}

/// A driver opened in a dialect: runs a scenario's prompt and follow-ups in one thread.
#[derive(Debug)]
pub struct Session {
    driver: Driver,
    dialect: Box<dyn Dialect>,
    modes: StreamModes,
}

impl Session {
    /// Opens a session on the gateway at `url` as `options` say.
    pub async fn open(url: &str, options: &DriveOptions) -> Result<Session, DriverError> {
        let mut driver = Driver::new(url)?;
        driver.auth = options.auth.clone();
        let base = options.base_path();
        let mut dialect: Box<dyn Dialect> = match options.api {
            Api::Deerflow => Box::new(deerflow::DeerFlow::new(base)),
            Api::Langgraph => Box::new(langgraph::LangGraph::new(
                base,
                options.assistant.clone(),
                options.assistants.clone(),
            )),
        };
        dialect.open(&mut driver).await?;
        Ok(Session {
            driver,
            dialect,
            modes: options.stream_modes,
        })
    }

    /// Creates a thread with a fresh UUID id.
    pub async fn create_thread(&self) -> Result<String, DriverError> {
        let thread_id = uuid::Uuid::new_v4().to_string();
        let body = json!({"thread_id": thread_id, "metadata": {}});
        self.driver
            .post_json(&self.dialect.threads_path(), &body, 200)
            .await?;
        Ok(thread_id)
    }

    /// Creates a thread and streams the scenario's prompt and each follow-up in it, one run after
    /// another; `recorded` is the fixture's turns (none while recording).
    pub async fn run_scenario(
        &self,
        scenario: &Scenario,
        recorded: &[Turn],
    ) -> Result<Vec<RunTranscript>, DriverError> {
        let thread_id = self.create_thread().await?;
        let path = format!("{}/{thread_id}/runs/stream", self.dialect.threads_path());
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            let request = self
                .dialect
                .run_request(scenario, prompt, &thread_id, recorded, self.modes)?;
            let rule = self.dialect.framing_rule();
            transcripts.push(
                self.driver
                    .stream_at(&path, request, self.modes, rule)
                    .await?,
            );
        }
        Ok(transcripts)
    }
}

/// The prefix of DeerFlow's routes, as its frontend calls them.
const DEERFLOW_BASE: &str = "/api";

/// The password every driven user registers with.
pub const DRIVER_PASSWORD: &str = "very-strong-password-123";

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
    let body = response.text().await.unwrap_or_default();
    let body = first_chars(&body, 2000).to_owned();
    Err(DriverError::Status {
        route: route.to_string(),
        expected,
        status,
        body,
    })
}

impl Driver {
    /// POSTs `body` to `path` (with the CSRF header once known) and expects `expected`.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        body: &Value,
        expected: u16,
    ) -> Result<reqwest::Response, DriverError> {
        let route = format!("POST {path}");
        send_expecting(&route, self.post(path).json(body), expected).await
    }

    /// A session for the gateway at `base` (`http://127.0.0.1:<port>`).
    pub fn new(base: &str) -> Result<Driver, DriverError> {
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
        Ok(Driver {
            base: base.trim_end_matches('/').to_string(),
            http,
            csrf: None,
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
        match &self.csrf {
            Some(token) => request.header("X-CSRF-Token", token),
            None => request,
        }
    }

    /// Sends a request (with the CSRF header once known) and returns whatever the gateway
    /// answered; only a transport failure is an error.
    pub async fn exchange(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Exchange, DriverError> {
        let route = format!("{method} {path}");
        let mut request = self.authorized(
            self.http
                .request(method.clone(), format!("{}{path}", self.base)),
        );
        if let Some(token) = &self.csrf {
            request = request.header("X-CSRF-Token", token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|source| DriverError::Http {
            route: route.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|source| DriverError::Http { route, source })?;
        Ok(Exchange {
            method: method.to_string(),
            path: path.to_string(),
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        })
    }

    /// Streams one run with the web client's request (`web_run_request`).
    pub async fn stream_web_run(
        &self,
        thread_id: &str,
        prompt: &str,
        mode: UiMode,
        model_name: Option<&str>,
    ) -> Result<RunTranscript, DriverError> {
        let request = web_run_request(prompt, mode, model_name, thread_id);
        self.stream_request(thread_id, request).await
    }

    /// Registers `e2e-<8 hex>@example.com` and keeps the `csrf_token` cookie (DeerFlow's
    /// session, [`deerflow::register`]).
    pub async fn register(&mut self) -> Result<(), DriverError> {
        deerflow::register(self, DEERFLOW_BASE).await
    }

    /// Keeps the CSRF token DeerFlow's registration set.
    pub(crate) fn set_csrf(&mut self, token: String) {
        self.csrf = Some(token);
    }

    /// Creates a thread with a fresh UUID id.
    pub async fn create_thread(&self) -> Result<String, DriverError> {
        let thread_id = uuid::Uuid::new_v4().to_string();
        let body = json!({"thread_id": thread_id, "metadata": {}});
        self.post_json("/api/threads", &body, 200).await?;
        Ok(thread_id)
    }

    /// Streams one run with the Layer 1 body (`stream_mode: ["values"]`,
    /// `recursion_limit: 100`) and reads the whole stream.
    pub async fn stream_run(
        &self,
        thread_id: &str,
        prompt: &str,
        context: &Value,
    ) -> Result<RunTranscript, DriverError> {
        let request = deerflow::values_run_request(prompt, context);
        self.stream_request(thread_id, request).await
    }

    /// Streams a run with any request body (other stream modes, for example) and reads the
    /// whole stream.
    pub async fn stream_request(
        &self,
        thread_id: &str,
        request: Value,
    ) -> Result<RunTranscript, DriverError> {
        let path = format!("{DEERFLOW_BASE}/threads/{thread_id}/runs/stream");
        let modes = if request["stream_mode"] == json!(["values"]) {
            StreamModes::Values
        } else {
            StreamModes::Web
        };
        self.stream_at(&path, request, modes, FramingRule::MetadataThenEnd)
            .await
    }

    /// `POST path` with `request`, reading the whole stream (which must close cleanly: a broken
    /// body is [`DriverError::Stream`]).
    async fn stream_at(
        &self,
        path: &str,
        request: Value,
        modes: StreamModes,
        framing_rule: FramingRule,
    ) -> Result<RunTranscript, DriverError> {
        let route = format!("POST {path}");
        let response = self.post_json(path, &request, 200).await?;
        // Each frame's data is parsed once, here (`SseEvent::new`); no copy of the raw bytes.
        let mut stream = response.bytes_stream().eventsource();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.map_err(|err| DriverError::Stream {
                route: route.clone(),
                message: err.to_string(),
            })?;
            events.push(SseEvent::new(
                event.event,
                event.data,
                (!event.id.is_empty()).then_some(event.id),
            ));
        }
        Ok(RunTranscript {
            request,
            events,
            modes,
            framing_rule,
        })
    }

    /// Creates a thread and streams the scenario's prompt and each follow-up in it, one run after
    /// another, with the scenario's context and Layer 1's values-only request.
    /// Returns the thread id and one transcript per prompt.
    pub async fn run_scenario(
        &self,
        scenario: &Scenario,
    ) -> Result<(String, Vec<RunTranscript>), DriverError> {
        let thread_id = self.create_thread().await?;
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            transcripts.push(
                self.stream_run(&thread_id, prompt, &scenario.context)
                    .await?,
            );
        }
        Ok((thread_id, transcripts))
    }

    /// Creates a thread and drives the scenario's prompt and each follow-up in it the way the
    /// web client does (the path of recording): each run with the client's run request
    /// ([`web_run_request`], in the scenario's mode, with `model_name`), and after each run
    /// the follow-up suggestions the client asks for, while `GET /api/suggestions/config` says
    /// they are on (`n = max_suggestions`, the last six visible messages).
    pub async fn run_scenario_as_web_client(
        &self,
        scenario: &Scenario,
        model_name: &str,
    ) -> Result<WebClientRuns, DriverError> {
        let config = self.get_json("/api/suggestions/config").await?;
        let suggestions_on = config["enabled"] != Value::Bool(false);
        let n = config["max_suggestions"].as_u64().unwrap_or(3) as u32;
        let thread_id = self.create_thread().await?;
        let mut runs = WebClientRuns {
            thread_id,
            transcripts: Vec::new(),
            suggestions: Vec::new(),
        };
        for prompt in scenario.prompts() {
            let transcript = self
                .stream_web_run(&runs.thread_id, prompt, scenario.mode, Some(model_name))
                .await?;
            let conversation = transcript
                .final_values()
                .map(|values| visible_conversation(&values))
                .unwrap_or_default();
            runs.transcripts.push(transcript);
            if suggestions_on && n > 0 && !conversation.is_empty() {
                let answer = self.suggestions(&runs.thread_id, &conversation, n).await?;
                runs.suggestions.push(answer);
            }
        }
        Ok(runs)
    }

    /// `GET path`, expecting 200 and a JSON body.
    async fn get_json(&self, path: &str) -> Result<Value, DriverError> {
        let route = format!("GET {path}");
        let request = self.authorized(self.http.get(format!("{}{path}", self.base)));
        send_expecting(&route, request, 200)
            .await?
            .json()
            .await
            .map_err(|source| DriverError::Http { route, source })
    }

    /// `POST /api/threads/{id}/suggestions` with the last six visible messages, as the frontend
    /// does after a run; returns the answer body.
    pub async fn suggestions(
        &self,
        thread_id: &str,
        messages: &[(String, String)],
        n: u32,
    ) -> Result<Value, DriverError> {
        let path = format!("/api/threads/{thread_id}/suggestions");
        let route = format!("POST {path}");
        let body = suggestions_request(messages, n);
        let response = self.post_json(&path, &body, 200).await?;
        response
            .json()
            .await
            .map_err(|source| DriverError::Http { route, source })
    }
}

/// The suggestions request the frontend sends after a run: the last six visible messages as
/// `{"role", "content"}` and `n`.
pub fn suggestions_request(messages: &[(String, String)], n: u32) -> Value {
    let recent: Vec<Value> = messages
        .iter()
        .skip(messages.len().saturating_sub(6))
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    json!({"messages": recent, "n": n})
}

/// The visible human and AI messages of a `values` state as `(role, text)`, the way the frontend
/// builds the suggestions request: hidden messages skipped, AI messages without text skipped.
pub fn visible_conversation(values: &Value) -> Vec<(String, String)> {
    let Some(messages) = values.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter(|message| {
            message.pointer("/additional_kwargs/hide_from_ui") != Some(&Value::Bool(true))
        })
        .filter_map(|message| {
            let role = match message.get("type")?.as_str()? {
                "human" => "user",
                "ai" => "assistant",
                _ => return None,
            };
            let text = match message.get("content")? {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .collect(),
                _ => return None,
            };
            (!text.trim().is_empty()).then(|| (role.to_string(), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(events: &[&str], rule: FramingRule) -> RunTranscript {
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
            framing_rule: rule,
        }
    }

    /// (case, rule, each run's events, the fixture records a model error, expected framing)
    type Case<'a> = (&'a str, FramingRule, &'a [&'a [&'a str]], bool, Framing);

    #[test]
    fn each_dialects_framing_rule_fails_what_it_must() {
        use FramingRule::{MetadataThenClose as Close, MetadataThenEnd as End};
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
                Framing::Broken {
                    first: Some("metadata".into()),
                    last: Some("values".into()),
                },
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
                Framing::NoMetadata {
                    run: 1,
                    first: Some("values".into()),
                },
            ),
            (
                "langgraph empty run",
                Close,
                &[&[]],
                false,
                Framing::NoMetadata {
                    run: 0,
                    first: None,
                },
            ),
            (
                "langgraph error frame, no model error recorded",
                Close,
                &[&["metadata", "values", "error"]],
                false,
                Framing::ErrorFrame {
                    run: 0,
                    data: error,
                },
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

    /// The web client's expected run request bodies, one file per mode:
    /// `{"inputs": {"prompt", "mode", "model_name", "thread_id"}, "body": …}`.
    fn run_request_files() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../gateway-under-test/web/src/chat/run-requests")
    }

    #[test]
    fn the_web_run_request_is_the_web_clients_for_every_mode() {
        let folder = run_request_files();
        let mut problems = Vec::new();
        for mode in UiMode::ALL {
            let path = folder.join(format!("run-request.{mode}.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let file: Value = serde_json::from_str(&text)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let inputs = &file["inputs"];
            assert_eq!(inputs["mode"], mode.as_str(), "{}", path.display());
            let built = web_run_request(
                inputs["prompt"].as_str().expect("inputs.prompt"),
                mode,
                inputs["model_name"].as_str(),
                inputs["thread_id"].as_str().expect("inputs.thread_id"),
            );
            if built != file["body"] {
                problems.push(format!(
                    "{}: the client sends\n  {}\nharness::driver::web_run_request builds\n  {built}",
                    path.display(),
                    file["body"]
                ));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_run_request_file_is_a_mode_the_driver_knows() {
        let mut modes: Vec<String> = std::fs::read_dir(run_request_files())
            .expect("the client's run-requests folder")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .map(|name| {
                let mode = name
                    .strip_prefix("run-request.")
                    .and_then(|rest| rest.strip_suffix(".json"));
                mode.unwrap_or_else(|| panic!("{name}: not run-request.<mode>.json"))
                    .to_owned()
            })
            .collect();
        modes.sort();
        let mut known: Vec<String> = UiMode::ALL.iter().map(|mode| mode.to_string()).collect();
        known.sort();
        assert_eq!(modes, known);
    }
}
