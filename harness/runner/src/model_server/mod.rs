//! The model server: a server on 127.0.0.1 that replays at the model's wire (OpenAI's Chat
//! Completions, Anthropic's Messages and OpenAI's Responses API, `Wire`), so a gateway in any
//! language, running in its own process, can be tested by pointing its OpenAI (or Anthropic)
//! base URL here. Every call, at any wire and in any mode, goes through `serve`: the request is
//! parsed at its wire, handed to the mode's backend (`backend::Backend`), and what the backend
//! answered (`backend::Answered`: events, a recorded failure, a problem, or the proxy's live
//! stream) is rendered here in the wire's shape. This file holds the routes and that HTTP edge
//! only; each mode is one backend in its own file:
//!
//! - **fixture replay** (`fixtures`): the replay key is computed from the request body with the
//!   same canonical projection and normalisation as in-process replay
//!   (`replay_core::lookup_at_wire`); the caller comes from the [`CALLER_HEADER`] when the
//!   gateway sends it, else it is the one caller among the fixture's callers whose key is
//!   recorded. The recorded answer goes back as one completion or streamed as content and
//!   tool-call deltas; a miss answers an OpenAI error whose message is the miss diagnostic, and
//!   so does a request without the header whose key holds several different answers (an
//!   ambiguity, never a pick). Several fixtures may be loaded (each once, shared with the runner:
//!   [`Mode::LoadedFixtures`]); one is active at a time, chosen with `POST /_harness/reset`;
//! - **strict recording replay** (`strict`): a recording made by this server in record mode,
//!   served call by call with the existing strict replay (each request compared field by field
//!   in its wire's own terms; Chat Completions chunks as recorded);
//! - **record** (`record`): a proxy to a real endpoint of the request's wire that writes the
//!   versioned, redacted recording, the wire named in each call, and, when the server stops,
//!   builds the fixture from the calls it recorded, held in memory.
//!
//! Routes (`Route`, the one list of what is served): `POST /v1/chat/completions` (also
//! `/chat/completions`), `POST /v1/messages` and `POST /v1/responses` (Anthropic's Messages and
//! OpenAI's Responses API: `wires`), `GET /v1/models`, `GET /health`, and the driver's `GET /_harness/misses`
//! (every [`Problem`] so far, as JSON), `GET /_harness/state` and `POST /_harness/reset`
//! (`{"fixture": "<stem>"}` selects a fixture; either way the replay starts afresh and the problem
//! ledger is cleared, and a reply that discarded problems no driver had read says how many). Any
//! other request (`POST /v1/embeddings`, a wrong method) answers an OpenAI error
//! naming the route and is an `unserved_route` problem: a gateway that calls something no
//! recording answers is not a clean run. Problems are also handed to [`ServerOptions::on_problem`]
//! the moment they happen; the ledger is bounded (`problems::Ledger`). [`ModelServerClient`] is
//! the driver's side of those routes.

mod answer;
mod assemble;
mod backend;
mod client;
mod eventstream;
mod fixtures;
mod problems;
mod reach;
mod record;
mod request;
mod serve;
mod strict;
mod wires;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use replay_core::recording::RecordingFileError;
use replay_core::{BuildError, FixtureError, LoadedFixture, ReplayObserver};

use answer::{AnswerId, Completion, WireError, completion, error_body};
use backend::{Answered, Backend, Call, ResetDone};
use replay_core::recording::RecordedEvent;
use request::{Target, Wire, WireRequest};

pub use backend::RecordedFixture;
pub use client::{ClientError, ModelServerClient, ResetReply, ServerState};
use problems::Ledger;
pub use problems::Problem;
pub use reach::{Unreached, UpstreamReach};
pub use record::{
    AwsCredentials, DEFAULT_CALL_TIME_LIMIT, DEFAULT_RECORDING_MAX_BYTES, RecordConfig,
    RecordLimits,
};
pub use request::normalized;
pub use serve::ServeLimits;

/// The request header that carries the reset token on `POST /_harness/reset`: only the process
/// that started the server (and whoever it hands [`ModelServer::reset_token`] to) may clear the
/// problem ledger, never the gateway under test.
pub const RESET_TOKEN_HEADER: &str = "x-keyless-reset-token";

/// The request header a gateway may send to name the caller of a model call (`lead_agent`,
/// `middleware:title`, `suggest_agent`, `subagent:<name>`, or a run name the caller rules of
/// `docs/replay-and-fixtures.md` normalise). Without it the server infers the caller.
pub const CALLER_HEADER: &str = "x-harness-caller";

/// Every route the model server serves; any other request is an `unserved_route` problem. A new
/// wire becomes served by a variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `POST /chat/completions`, for clients whose base URL has no `/v1`.
    ChatCompletionsUnversioned,
    /// `POST /v1/messages`, Anthropic's Messages API (`wires.rs`).
    AnthropicMessages,
    /// `POST /v1/responses`, OpenAI's Responses API (`wires.rs`).
    Responses,
    /// `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`, Google's
    /// Gemini API (`wires.rs`).
    Gemini,
    /// The same at `/v1/`.
    GeminiV1,
    /// `POST /model/{modelId}/converse`, AWS Bedrock's Converse API (`wires.rs`).
    BedrockConverse,
    /// `POST /model/{modelId}/converse-stream`.
    BedrockConverseStream,
    /// `GET /v1/models`.
    Models,
    /// `GET /models`.
    ModelsUnversioned,
    /// `GET /health`.
    Health,
    /// `GET /_harness/misses`.
    Misses,
    /// `GET /_harness/state`.
    State,
    /// `POST /_harness/reset`.
    Reset,
}

impl Route {
    /// Every served route.
    pub(crate) const ALL: [Route; 14] = [
        Route::ChatCompletions,
        Route::ChatCompletionsUnversioned,
        Route::AnthropicMessages,
        Route::Responses,
        Route::Gemini,
        Route::GeminiV1,
        Route::BedrockConverse,
        Route::BedrockConverseStream,
        Route::Models,
        Route::ModelsUnversioned,
        Route::Health,
        Route::Misses,
        Route::State,
        Route::Reset,
    ];

    /// Its method and path.
    pub(crate) fn method_and_path(self) -> (Method, &'static str) {
        match self {
            Route::ChatCompletions => (Method::POST, "/v1/chat/completions"),
            Route::ChatCompletionsUnversioned => (Method::POST, "/chat/completions"),
            Route::AnthropicMessages => (Method::POST, "/v1/messages"),
            Route::Responses => (Method::POST, "/v1/responses"),
            Route::Gemini => (Method::POST, "/v1beta/models/{model_action}"),
            Route::GeminiV1 => (Method::POST, "/v1/models/{model_action}"),
            Route::BedrockConverse => (Method::POST, "/model/{model_id}/converse"),
            Route::BedrockConverseStream => (Method::POST, "/model/{model_id}/converse-stream"),
            Route::Models => (Method::GET, "/v1/models"),
            Route::ModelsUnversioned => (Method::GET, "/models"),
            Route::Health => (Method::GET, "/health"),
            Route::Misses => (Method::GET, "/_harness/misses"),
            Route::State => (Method::GET, "/_harness/state"),
            Route::Reset => (Method::POST, "/_harness/reset"),
        }
    }

    /// Its handler.
    fn handler(self) -> MethodRouter<Arc<Shared>> {
        match self {
            Route::ChatCompletions | Route::ChatCompletionsUnversioned => post(complete),
            Route::AnthropicMessages => post(wires::anthropic),
            Route::Responses => post(wires::responses),
            Route::Gemini | Route::GeminiV1 => post(wires::gemini),
            Route::BedrockConverse => post(wires::converse),
            Route::BedrockConverseStream => post(wires::converse_stream),
            Route::Models | Route::ModelsUnversioned => get(models),
            Route::Health => get(|| async { Json(json!({"status": "ok"})) }),
            Route::Misses => get(misses),
            Route::State => get(state),
            Route::Reset => post(reset),
        }
    }

    /// `POST /v1/chat/completions, GET /v1/models, …`: what the server serves, for messages.
    fn listed() -> String {
        let routes: Vec<String> = Route::ALL
            .iter()
            .map(|route| {
                let (method, path) = route.method_and_path();
                format!("{method} {path}")
            })
            .collect();
        routes.join(", ")
    }
}

/// What the server serves.
#[derive(Debug)]
pub enum Mode {
    /// Replay the fixtures at these paths by key (each loaded once, here); the first is active
    /// until a driver selects another.
    Fixtures(Vec<PathBuf>),
    /// The same, with fixtures loaded already: the runner that judges each run shares them
    /// (`keyless test` loads every fixture once).
    LoadedFixtures(Vec<LoadedFixture>),
    /// Strictly replay a recording made by a model server in record mode.
    Recording(PathBuf),
    /// Proxy to an upstream and record.
    Record(Box<RecordConfig>),
}

/// Called with every problem the moment it happens (the CLI prints it).
pub(crate) type ProblemHook = Arc<dyn Fn(&Problem) + Send + Sync>;

/// How the server runs.
#[derive(Clone, Default)]
pub struct ServerOptions {
    /// The port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Called with every problem as it happens.
    pub on_problem: Option<ProblemHook>,
    /// Fixture replay: told of every turn served, every miss and every ambiguity the moment the
    /// engine decides it, whichever fixture is active (`keyless serve --replay-log`).
    pub observer: Option<Arc<dyn ReplayObserver>>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("port", &self.port)
            .field("on_problem", &self.on_problem.is_some())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// Why the server could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ModelServerError {
    /// Fixture mode was given no fixture.
    #[error("the model server needs at least one fixture")]
    NoFixture,
    /// A fixture could not be loaded.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// Two fixtures have the same file name, so a driver could not tell them apart.
    #[error("fixtures {} and {} have the same name {stem:?}; a driver selects fixtures by name", .first.display(), .second.display())]
    DuplicateFixture {
        /// The name.
        stem: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// The recording could not be read, written or finished.
    #[error(transparent)]
    Recording(#[from] RecordingFileError),
    /// The recording was made at a gateway's provider boundary, not at the wire.
    #[error(
        "recording {}: call 0 was recorded at a gateway's provider boundary (cargo xtask record, cargo xtask recordings), not at the model's wire; the model server strictly replays recordings it made itself (cargo xtask model-server --record)",
        .0.display()
    )]
    NotAWireRecording(PathBuf),
    /// The finished recording holds a form of the proxy's API key (checked before it is kept).
    #[error(
        "recording {}: call {call} holds a form of the API key (in one string or across its \
         deltas); {}",
        .path.display(),
        if *.removed { "the recording was deleted, since a key must not reach a file" }
        else { "the recording could not be deleted: delete it yourself" }
    )]
    SecretInRecording {
        /// The recording.
        path: PathBuf,
        /// The call's index.
        call: usize,
        /// Whether the file was deleted.
        removed: bool,
    },
    /// The upstream URL or HTTP client is unusable.
    #[error("upstream: {0}")]
    Upstream(String),
    /// The fixture could not be built from the recording.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The listener could not bind 127.0.0.1.
    #[error("listen on 127.0.0.1:{port}: {source}")]
    Listen {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
}

/// State shared by the handlers.
struct Shared {
    /// What it serves: fixture replay, strict replay or the recording proxy.
    backend: Box<dyn Backend>,
    problems: Mutex<Ledger>,
    on_problem: Option<ProblemHook>,
    answers: AtomicU64,
    /// The per-run secret `POST /_harness/reset` must carry ([`RESET_TOKEN_HEADER`]).
    reset_token: String,
    /// Cancelled once a stop's grace has run out: work outside a connection (the recording
    /// proxy's pump) ends then too.
    aborted: CancellationToken,
}

impl Shared {
    fn report(&self, problem: Problem) {
        if let Some(hook) = &self.on_problem {
            hook(&problem);
        }
        self.problems.lock().push(problem);
    }

    fn answer_id(&self, model: &str) -> AnswerId {
        let number = self.answers.fetch_add(1, Ordering::Relaxed) + 1;
        AnswerId {
            id: format!("chatcmpl-replay-{number}"),
            model: model.to_owned(),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|elapsed| elapsed.as_secs())
                .unwrap_or(0),
        }
    }
}

/// A running model server. Stop it with [`ModelServer::stop`] (dropping it also stops serving).
pub struct ModelServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A fresh reset token: 32 random bytes, in hex.
fn new_reset_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether `headers` carry the server's reset token, compared in constant time.
fn holds_reset_token(shared: &Shared, headers: &HeaderMap) -> bool {
    use subtle::ConstantTimeEq;
    let Some(given) = headers.get(RESET_TOKEN_HEADER) else {
        return false;
    };
    let expected = shared.reset_token.as_bytes();
    given.as_bytes().len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected))
}

impl ModelServer {
    /// Loads what `mode` serves (every fixture or the whole recording is validated first, so a
    /// bad file fails here) and starts serving on 127.0.0.1.
    pub async fn start(
        mode: Mode,
        options: ServerOptions,
    ) -> Result<ModelServer, ModelServerError> {
        ModelServer::start_with_limits(mode, options, ServeLimits::default()).await
    }

    /// [`ModelServer::start`] with other read and stop bounds than the defaults.
    pub async fn start_with_limits(
        mode: Mode,
        options: ServerOptions,
        limits: ServeLimits,
    ) -> Result<ModelServer, ModelServerError> {
        let backend: Box<dyn Backend> = match mode {
            Mode::Fixtures(paths) => {
                Box::new(fixtures::FixtureReplay::load(paths, options.observer)?)
            }
            Mode::LoadedFixtures(loaded) => {
                Box::new(fixtures::FixtureReplay::new(loaded, options.observer)?)
            }
            Mode::Recording(path) => Box::new(strict::StrictReplay::open(&path)?),
            Mode::Record(config) => Box::new(record::Recorder::new(*config)?),
        };
        let shared = Arc::new(Shared {
            backend,
            problems: Mutex::new(Ledger::default()),
            on_problem: options.on_problem,
            answers: AtomicU64::new(0),
            reset_token: new_reset_token(),
            aborted: CancellationToken::new(),
        });
        let listener = TcpListener::bind(("127.0.0.1", options.port))
            .await
            .map_err(|source| ModelServerError::Listen {
                port: options.port,
                source,
            })?;
        let address = listener
            .local_addr()
            .map_err(|source| ModelServerError::Listen {
                port: options.port,
                source,
            })?;
        let mut router = Router::new();
        for route in Route::ALL {
            router = router.route(route.method_and_path().1, route.handler());
        }
        let router = router
            .fallback(unserved)
            .method_not_allowed_fallback(wrong_method)
            // The connection loop bounds the body already (`serve`); this keeps the extractors'
            // own default (2 MB) from refusing below it.
            .layer(DefaultBodyLimit::max(limits.max_body_bytes))
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve::serve(
            listener,
            router,
            shared.clone(),
            limits,
            stop.clone(),
        ));
        Ok(ModelServer {
            address,
            shared,
            stop,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>`: the root of the driver's routes.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `http://127.0.0.1:<port>/v1`: the OpenAI base URL to give the gateway.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The secret `POST /_harness/reset` must carry in [`RESET_TOKEN_HEADER`], made at random
    /// when the server started. Hand it only to the driver, never to the gateway.
    pub fn reset_token(&self) -> &str {
        &self.shared.reset_token
    }

    /// A client of this server's driver routes that holds its reset token.
    pub fn client(&self) -> Result<ModelServerClient, ClientError> {
        Ok(ModelServerClient::new(&self.url())?.with_reset_token(self.reset_token()))
    }

    /// Every problem since the start or the last reset, oldest first (the first ones in full,
    /// then a count of the rest).
    pub fn problems(&self) -> Vec<Problem> {
        self.shared.problems.lock().read()
    }

    /// Fixture replay: the active fixture's name and its turns nobody has asked for yet.
    pub fn active_fixture(&self) -> Option<(String, Vec<usize>)> {
        self.shared.backend.active_fixture()
    }

    /// Stops serving: open requests may finish for the grace period ([`ServeLimits::stop_grace`]),
    /// then their connections are dropped. In record mode, builds the fixture from the calls
    /// recorded.
    pub async fn stop(mut self) -> Result<Option<RecordedFixture>, ModelServerError> {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(err) = task.await
        {
            tracing::warn!("model server task: {err}");
        }
        self.shared.backend.finish()
    }
}

/// An OpenAI error response.
fn error_response(status: StatusCode, message: &str, error_type: &str, code: &str) -> Response {
    (status, Json(error_body(message, error_type, Some(code)))).into_response()
}

/// A recorded failure as the provider answered it.
fn failure_response(error: &WireError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    (status, Json(error.body())).into_response()
}

/// A server-sent event stream body.
fn sse_response(body: impl Into<axum::body::Body>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
        .into_response()
}

/// The answer for a complete event list: one completion, or the stream of chunks. A call whose
/// events fail before any content fails with the recorded status, as a provider refusing a
/// request does, streaming or not; a failure the provider reported inside its answer
/// (`in_stream`) is served inside a 200 answer, as it came.
fn respond(shared: &Shared, request: &WireRequest, events: &[RecordedEvent]) -> Response {
    let identity = shared.answer_id(&request.model);
    let failed_at_start = events
        .iter()
        .find(|event| !matches!(event, RecordedEvent::Start))
        .and_then(answer::failure)
        .is_some_and(|error| !error.in_stream);
    if !request.stream || failed_at_start {
        return match completion(&identity, events) {
            Completion::Message(body) => Json(body).into_response(),
            Completion::Failed(error) => failure_response(&error),
        };
    }
    sse_response(answer::sse_body(identity, events))
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(Wire::ChatCompletions, &shared, &headers, &body, None).await
}

/// An error answer in the wire's shape ([`wires::error`]).
fn wire_error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
    match wire {
        Wire::ChatCompletions => error_response(
            status,
            message,
            model_wire::chat_completions::ErrorBody::kind_for_status(status.as_u16()),
            code,
        ),
        _ => wires::error(wire, status, message, code),
    }
}

/// The answer for a complete event list in the request's wire.
fn respond_at(shared: &Shared, request: &WireRequest, events: &[RecordedEvent]) -> Response {
    match request.wire {
        Wire::ChatCompletions => respond(shared, request, events),
        _ => wires::respond(shared, request, events),
    }
}

/// A recorded failure in the request's wire.
fn failure_at(shared: &Shared, request: &WireRequest, error: &WireError) -> Response {
    match request.wire {
        Wire::ChatCompletions => failure_response(error),
        _ => wires::failure(shared, request, error),
    }
}

/// One model call at `wire`, whatever the mode: fixture replay, strict replay or recording.
/// `target` is what the path says at the wires whose path names the model and the mode.
async fn serve(
    wire: Wire,
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    body: &[u8],
    target: Option<Target>,
) -> Response {
    let parsed = match target {
        Some(target) => WireRequest::parse_at(wire, body, target),
        None => WireRequest::parse(wire, body),
    };
    let request = match parsed {
        Ok(request) => request,
        Err(message) => {
            let message = match wire {
                Wire::ChatCompletions => message.to_string(),
                _ => format!("{} request: {message}", wire.name()),
            };
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            return wire_error(wire, StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    let caller = headers
        .get(CALLER_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let call = Call {
        shared,
        request: &request,
        caller,
        headers,
    };
    match shared.backend.answer(call).await {
        Answered::Events(events) => respond_at(shared, &request, &events),
        Answered::Failure(error) => failure_at(shared, &request, &error),
        Answered::Problem {
            problem,
            status,
            code,
        } => {
            let message = problem.message().to_owned();
            shared.report(problem);
            wire_error(request.wire, status, &message, code)
        }
        Answered::Response(response) => response,
    }
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let mut ids = shared.backend.models();
    ids.retain(|id| !id.is_empty());
    ids.dedup();
    if ids.is_empty() {
        ids.push("replay".to_owned());
    }
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "model-server"}))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// A request no [`Route`] serves: an OpenAI error naming it, and a problem.
fn unserved_response(shared: &Shared, status: StatusCode, method: &Method, uri: &Uri) -> Response {
    // The path only: a query string may carry a credential.
    let path = uri.path();
    let message = format!(
        "{method} {path} is not served by the model server (it serves {}); no recording answers \
         it, so the run that called it is not replayed",
        Route::listed()
    );
    shared.report(Problem::UnservedRoute {
        message: message.clone(),
        method: method.to_string(),
        path: path.to_owned(),
    });
    error_response(status, &message, "invalid_request_error", "unserved_route")
}

async fn unserved(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    unserved_response(&shared, StatusCode::NOT_FOUND, &method, &uri)
}

async fn wrong_method(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    unserved_response(&shared, StatusCode::METHOD_NOT_ALLOWED, &method, &uri)
}

/// The ledger for a reader: marked read only when the reader holds the reset token, so the
/// gateway (or any other process) cannot read problems away before the owner's next reset counts
/// them as discarded.
fn problems_for(shared: &Shared, headers: &HeaderMap) -> Vec<Problem> {
    let mut ledger = shared.problems.lock();
    if holds_reset_token(shared, headers) {
        ledger.read()
    } else {
        ledger.list()
    }
}

async fn misses(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    Json(problems_for(&shared, &headers)).into_response()
}

async fn state(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let problems = problems_for(&shared, &headers);
    let state = shared.backend.state(problems);
    Json(state).into_response()
}

/// The body of `POST /_harness/reset`: empty, or `{"fixture": "<name>"}` (other keys ignored).
#[derive(Debug, Default, Deserialize)]
struct ResetRequest {
    /// The fixture to select; none keeps the active one.
    #[serde(default)]
    fixture: Option<String>,
}

impl ResetRequest {
    /// The request a body holds, or the error to answer with.
    fn parse(body: &[u8]) -> Result<ResetRequest, &'static str> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(ResetRequest::default());
        }
        let fields = serde_json::from_slice::<serde_json::Map<String, Value>>(body)
            .map_err(|_| "the body must be empty or {\"fixture\": \"<name>\"}")?;
        ResetRequest::deserialize(Value::Object(fields)).map_err(|_| "\"fixture\" must be a string")
    }
}

/// What `POST /_harness/reset` answers (the driver reads it as [`ResetReply`]): what the backend
/// selected, and the problems the reset discarded that no driver had read, when there were any.
#[derive(Debug, Serialize)]
struct ResetReplyBody {
    #[serde(flatten)]
    selected: ResetDone,
    #[serde(skip_serializing_if = "Option::is_none")]
    discarded_unread_problems: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    discarded: Option<Vec<Problem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

async fn reset(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !holds_reset_token(&shared, &headers) {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"error": format!(
                "POST /_harness/reset needs the server's reset token in the {RESET_TOKEN_HEADER} \
                 header: only the process that owns the run may start a fresh replay (keyless \
                 model-server prints the token at start and writes it to --reset-token-file)"
            )})),
        )
            .into_response();
    }
    let wanted = match ResetRequest::parse(&body) {
        Ok(request) => request.fixture,
        Err(message) => {
            return (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response();
        }
    };
    let selected = match shared.backend.reset(wanted.as_deref()) {
        Ok(selected) => selected,
        Err(refused) => {
            return (
                refused.status(),
                Json(json!({"error": refused.to_string()})),
            )
                .into_response();
        }
    };
    let discarded = shared.problems.lock().clear();
    let mut reply = ResetReplyBody {
        selected,
        discarded_unread_problems: None,
        discarded: None,
        warning: None,
    };
    if discarded.count > 0 {
        let warning = format!(
            "the reset discarded {} problem(s) no driver had read (GET /_harness/misses \
             reads them)",
            discarded.count
        );
        tracing::warn!("model server: {warning}");
        reply.discarded_unread_problems = Some(discarded.count);
        reply.discarded = Some(discarded.problems);
        reply.warning = Some(warning);
    }
    Json(reply).into_response()
}

#[cfg(test)]
mod hardening;
