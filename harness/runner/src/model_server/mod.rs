//! The model server: a server on 127.0.0.1 that replays at the model's wire (OpenAI's Chat
//! Completions, Anthropic's Messages and OpenAI's Responses API, `Wire`), so a gateway in any
//! language, running in its own process, can be tested by pointing its OpenAI (or Anthropic)
//! base URL here. Every call, at any wire and in any mode, goes through `serve`.
//!
//! Three modes ([`Mode`]):
//!
//! - **fixture replay**: the replay key is computed from the request body with the same canonical
//!   projection and normalisation as in-process replay (`replay_core::lookup_at_wire`); the
//!   caller comes from the [`CALLER_HEADER`] when the gateway sends it, else it is the one
//!   caller among the fixture's callers whose key is recorded. The recorded answer goes back as
//!   one completion or streamed as content and tool-call deltas; a miss answers an OpenAI error
//!   whose message is the miss diagnostic, and so does a request without the header whose key
//!   holds several different answers (an ambiguity, never a pick). Several fixtures may be loaded; one is active at a
//!   time, chosen with `POST /_harness/reset`;
//! - **strict recording replay**: a recording made by this server in record mode, served call by
//!   call with the existing strict replay (each request compared field by field in its wire's
//!   own terms; Chat Completions chunks as recorded);
//! - **record**: a proxy to a real endpoint of the request's wire that writes the versioned,
//!   redacted recording, the wire named in each call, and, when the server stops, builds the
//!   fixture (see `record`).
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
mod client;
mod eventstream;
mod problems;
mod record;
mod request;
mod serve;
mod wires;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
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
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use replay_core::recording::{
    Access, Outcome, RecordedEvent, Recording, RecordingFileError, StrictReplayError,
    StrictReplayer, read_recording,
};
use replay_core::{
    Answer, BuildError, DEFAULT_CALLER, Fixture, FixtureError, LookupError, ReplayEngine,
    ReplayObserver, name_free_key,
};

use crate::golden::stem_of;
use answer::{
    AnswerId, Completion, WireError, completion, error_body, events_from_error, events_from_message,
};
use request::{Target, Wire, WireRequest};

pub use client::{ClientError, ModelServerClient, ResetReply, ServerState};
use problems::Ledger;
pub use problems::Problem;
pub use record::{
    AwsCredentials, DEFAULT_CALL_TIME_LIMIT, DEFAULT_RECORDING_MAX_BYTES, RecordConfig,
    RecordLimits, RecordedFixture,
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
    /// Replay fixtures by key; the first is active until a driver selects another.
    Fixtures(Vec<PathBuf>),
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

/// One loaded fixture.
#[derive(Debug)]
struct LoadedFixture {
    stem: String,
    path: PathBuf,
    /// Shared with each engine that replays it (one per reset).
    fixture: Arc<Fixture>,
}

/// The active fixture and the engine replaying it.
#[derive(Debug)]
struct ActiveFixture {
    index: usize,
    engine: Arc<ReplayEngine>,
}

#[derive(Debug)]
enum Backend {
    Fixtures {
        fixtures: Vec<LoadedFixture>,
        active: Mutex<ActiveFixture>,
    },
    Recording {
        recording: Recording,
        replayer: Mutex<Arc<StrictReplayer>>,
    },
    Record(Box<record::Recorder>),
}

/// State shared by the handlers.
struct Shared {
    backend: Backend,
    problems: Mutex<Ledger>,
    on_problem: Option<ProblemHook>,
    observer: Option<Arc<dyn ReplayObserver>>,
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

fn load_fixtures(paths: Vec<PathBuf>) -> Result<Vec<LoadedFixture>, ModelServerError> {
    if paths.is_empty() {
        return Err(ModelServerError::NoFixture);
    }
    let mut loaded: Vec<LoadedFixture> = Vec::new();
    for path in paths {
        let fixture = Arc::new(Fixture::load(&path)?);
        let stem = stem_of(&path);
        if let Some(other) = loaded.iter().find(|f| f.stem == stem) {
            return Err(ModelServerError::DuplicateFixture {
                stem,
                first: other.path.clone(),
                second: path,
            });
        }
        loaded.push(LoadedFixture {
            stem,
            path,
            fixture,
        });
    }
    Ok(loaded)
}

fn engine_for(
    loaded: &LoadedFixture,
    observer: Option<&Arc<dyn ReplayObserver>>,
) -> Result<Arc<ReplayEngine>, FixtureError> {
    let engine = ReplayEngine::new(loaded.fixture.clone(), &loaded.path)?;
    Ok(Arc::new(match observer {
        Some(observer) => engine.with_observer(observer.clone()),
        None => engine,
    }))
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

/// Reads a recording for strict replay and checks it was made at the wire.
fn wire_recording(path: &Path) -> Result<Recording, ModelServerError> {
    let recording = read_recording(path, Access::External)?;
    let at_wire = recording.calls.first().is_none_or(|call| {
        call.request
            .model
            .get("api")
            .and_then(Value::as_str)
            .and_then(Wire::from_api)
            .is_some()
    });
    if !at_wire {
        return Err(ModelServerError::NotAWireRecording(path.to_path_buf()));
    }
    Ok(recording)
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
        let backend = match mode {
            Mode::Fixtures(paths) => {
                let fixtures = load_fixtures(paths)?;
                let engine = engine_for(&fixtures[0], options.observer.as_ref())?;
                Backend::Fixtures {
                    fixtures,
                    active: Mutex::new(ActiveFixture { index: 0, engine }),
                }
            }
            Mode::Recording(path) => {
                let recording = wire_recording(&path)?;
                let replayer = StrictReplayer::new(recording.clone());
                Backend::Recording {
                    recording,
                    replayer: Mutex::new(Arc::new(replayer)),
                }
            }
            Mode::Record(config) => Backend::Record(Box::new(record::Recorder::new(*config)?)),
        };
        let shared = Arc::new(Shared {
            backend,
            problems: Mutex::new(Ledger::default()),
            on_problem: options.on_problem,
            observer: options.observer,
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
        match &self.shared.backend {
            Backend::Fixtures { fixtures, active } => {
                let active = active.lock();
                Some((
                    fixtures[active.index].stem.clone(),
                    active.engine.unused_turns(),
                ))
            }
            Backend::Recording { .. } | Backend::Record(_) => None,
        }
    }

    /// Stops serving: open requests may finish for the grace period ([`ServeLimits::stop_grace`]),
    /// then their connections are dropped. In record mode, reads the finished recording back
    /// and builds the fixture from it.
    pub async fn stop(mut self) -> Result<Option<RecordedFixture>, ModelServerError> {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(err) = task.await
        {
            tracing::warn!("model server task: {err}");
        }
        match &self.shared.backend {
            Backend::Record(recorder) => Ok(Some(recorder.build()?)),
            _ => Ok(None),
        }
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
fn respond(shared: &Shared, request: &WireRequest, events: &[Value]) -> Response {
    let identity = shared.answer_id(&request.model);
    let failed_at_start = events
        .iter()
        .find(|e| e.get("type").and_then(Value::as_str) != Some("start"))
        .is_some_and(|e| {
            e.get("type").and_then(Value::as_str) == Some("error")
                && e.get("in_stream").and_then(Value::as_bool) != Some(true)
        });
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
fn respond_at(shared: &Shared, request: &WireRequest, events: &[Value]) -> Response {
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
    match &shared.backend {
        Backend::Fixtures { active, .. } => {
            let engine = active.lock().engine.clone();
            replay_fixture(shared, &engine, caller.as_deref(), &request)
        }
        Backend::Recording {
            recording,
            replayer,
        } => {
            let replayer = replayer.lock().clone();
            let caller = caller.as_deref().unwrap_or(DEFAULT_CALLER);
            replay_strictly(shared, recording, &replayer, caller, &request)
        }
        Backend::Record(recorder) => {
            record::proxy(shared, recorder, caller, headers, request).await
        }
    }
}

/// Fixture replay at the request's wire: the named key where the wire carries names, the
/// name-free key where it does not (`docs/replay-and-fixtures.md` §11.1); a miss or an
/// ambiguity is a problem and an error in the wire's shape.
fn replay_fixture(
    shared: &Shared,
    engine: &ReplayEngine,
    caller: Option<&str>,
    request: &WireRequest,
) -> Response {
    let wire = request.wire;
    let looked_up = if wire.carries_names() {
        engine.lookup_at_wire(caller, &request.messages)
    } else {
        engine.lookup_at_wire_without_names(caller, &request.messages)
    };
    if looked_up.is_err() {
        // The server's bounded ledger is the one record of what went wrong: the engine's own
        // ledgers (unbounded, for an in-process run) would keep every miss of a long run.
        engine.take_misses();
        engine.take_ambiguities();
    }
    let (problem, code) = match looked_up {
        Ok(served) => {
            let events = match &served.answer {
                Answer::Output(output) => events_from_message(output),
                Answer::Error(recorded) => events_from_error(recorded),
            };
            return respond_at(shared, request, &events);
        }
        Err(LookupError::Miss(miss)) if wire.carries_names() => {
            (Problem::miss(*miss), "replay_miss")
        }
        Err(LookupError::Miss(miss)) => {
            let message = format!(
                "{miss}\nthe {} request carries no message names, so its name-free key {} was \
                 tried too and matches no recorded turn's name-free conversation",
                wire.name(),
                name_free_key(&request.messages)
            );
            (Problem::Miss { message, miss }, "replay_miss")
        }
        Err(LookupError::Ambiguous(ambiguity)) => (
            Problem::ambiguous_answer(*ambiguity),
            "replay_answer_ambiguous",
        ),
        Err(ref error @ LookupError::AmbiguousCaller { ref callers, .. }) => (
            Problem::AmbiguousCaller {
                message: format!("{error} (send it in the {CALLER_HEADER} header)"),
                callers: callers.clone(),
            },
            "replay_caller_ambiguous",
        ),
    };
    let message = problem.message().to_owned();
    shared.report(problem);
    wire_error(wire, StatusCode::BAD_REQUEST, &message, code)
}

/// Recorded events in the form the answers are rendered from.
fn event_values(events: &[RecordedEvent]) -> Vec<Value> {
    events.iter().map(RecordedEvent::to_value).collect()
}

/// Strict replay at the request's wire: the request, in the wire's own terms
/// (`WireRequest::recorded`), compared field by field with the next recorded call.
fn replay_strictly(
    shared: &Shared,
    recording: &Recording,
    replayer: &StrictReplayer,
    caller: &str,
    request: &WireRequest,
) -> Response {
    match replayer.next_call(&request.recorded(caller)) {
        Ok(events) => respond_at(shared, request, &event_values(&events)),
        Err(StrictReplayError::Mismatch(mismatch)) => {
            let message = mismatch.to_string();
            shared.report(Problem::Mismatch {
                message: message.clone(),
                call_index: mismatch.call_index,
                field_path: mismatch.public_path(),
            });
            wire_error(
                request.wire,
                StatusCode::BAD_REQUEST,
                &message,
                "replay_mismatch",
            )
        }
        Err(StrictReplayError::Recording(error)) => {
            // A call that failed while recording is served as the same failure: that is what
            // was recorded, not a problem of the replay.
            let failed = error
                .call_index
                .and_then(|index| recording.calls.get(index))
                .filter(|call| call.outcome == Outcome::Error)
                .and_then(|call| {
                    call.events
                        .iter()
                        .find(|e| matches!(e, RecordedEvent::Error { .. }))
                });
            if let Some(event) = failed {
                // Reported inside the answer: its recorded chunks, then the error, in a 200.
                if matches!(
                    event,
                    RecordedEvent::Error {
                        in_stream: true,
                        ..
                    }
                ) && let Some(call) = error.call_index.and_then(|i| recording.calls.get(i))
                {
                    return respond_at(shared, request, &event_values(&call.events));
                }
                return failure_at(shared, request, &WireError::from_event(&event.to_value()));
            }
            let message = error.to_string();
            shared.report(Problem::Recording {
                message: message.clone(),
            });
            wire_error(
                request.wire,
                StatusCode::INTERNAL_SERVER_ERROR,
                &message,
                "replay_recording",
            )
        }
    }
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let mut ids: Vec<String> = match &shared.backend {
        Backend::Fixtures { fixtures, .. } => fixtures
            .iter()
            .map(|f| f.fixture.scenario.model.clone())
            .collect(),
        Backend::Recording { recording, .. } => recording
            .calls
            .iter()
            .filter_map(|call| call.request.model.get("model").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
        Backend::Record(recorder) => vec![recorder.model_hint()],
    };
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
    let state = match &shared.backend {
        Backend::Fixtures { fixtures, active } => {
            let active = active.lock();
            ServerState {
                mode: "fixture".into(),
                fixture: Some(fixtures[active.index].stem.clone()),
                fixtures: fixtures.iter().map(|f| f.stem.clone()).collect(),
                served_calls: active.engine.fixture().turns.len()
                    - active.engine.unused_turns().len(),
                unused_turns: active.engine.unused_turns(),
                recorded_calls: None,
                problems,
            }
        }
        Backend::Recording {
            recording,
            replayer,
        } => ServerState {
            mode: "recording".into(),
            fixture: None,
            fixtures: Vec::new(),
            served_calls: replayer.lock().call_count(),
            unused_turns: Vec::new(),
            recorded_calls: Some(recording.calls.len()),
            problems,
        },
        Backend::Record(recorder) => ServerState {
            mode: "record".into(),
            fixture: None,
            fixtures: Vec::new(),
            served_calls: recorder.calls(),
            unused_turns: Vec::new(),
            recorded_calls: Some(recorder.calls()),
            problems,
        },
    };
    Json(state).into_response()
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
    let wanted = match serde_json::from_slice::<Value>(&body) {
        _ if body.iter().all(u8::is_ascii_whitespace) => None,
        Ok(Value::Object(fields)) => match fields.get("fixture") {
            None | Some(Value::Null) => None,
            Some(Value::String(stem)) => Some(stem.clone()),
            Some(_) => {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "\"fixture\" must be a string"})),
                )
                    .into_response();
            }
        },
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "the body must be empty or {\"fixture\": \"<name>\"}"})),
            )
                .into_response();
        }
    };
    let selected = match &shared.backend {
        Backend::Fixtures { fixtures, active } => {
            let index = match &wanted {
                None => active.lock().index,
                Some(stem) => match fixtures.iter().position(|f| &f.stem == stem) {
                    Some(index) => index,
                    None => {
                        let loaded: Vec<&str> = fixtures.iter().map(|f| f.stem.as_str()).collect();
                        return (
                            StatusCode::NOT_FOUND,
                            Json(json!({"error": format!(
                                "no fixture named {stem:?} is loaded; loaded: {}",
                                loaded.join(", ")
                            )})),
                        )
                            .into_response();
                    }
                },
            };
            // The fixture was validated at start, so a fresh engine over it cannot fail.
            let engine = match engine_for(&fixtures[index], shared.observer.as_ref()) {
                Ok(engine) => engine,
                Err(err) => {
                    return (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Json(json!({"error": err.to_string()})),
                    )
                        .into_response();
                }
            };
            *active.lock() = ActiveFixture { index, engine };
            json!({"mode": "fixture", "fixture": fixtures[index].stem, "turns": fixtures[index].fixture.turns.len()})
        }
        Backend::Recording {
            recording,
            replayer,
        } => {
            *replayer.lock() = Arc::new(StrictReplayer::new(recording.clone()));
            json!({"mode": "recording", "fixture": null, "calls": recording.calls.len()})
        }
        Backend::Record(_) => {
            return (
                StatusCode::CONFLICT,
                Json(json!({"error": "a recording cannot be reset; stop the server to finish it"})),
            )
                .into_response();
        }
    };
    let discarded = shared.problems.lock().clear();
    let mut reply = selected;
    if discarded.count > 0 {
        let warning = format!(
            "the reset discarded {} problem(s) no driver had read (GET /_harness/misses \
             reads them)",
            discarded.count
        );
        tracing::warn!("model server: {warning}");
        reply["discarded_unread_problems"] = json!(discarded.count);
        reply["discarded"] = json!(discarded.problems);
        reply["warning"] = json!(warning);
    }
    Json(reply).into_response()
}

#[cfg(test)]
mod hardening;
