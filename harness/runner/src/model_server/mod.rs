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
//!   [`Mode::LoadedFixtures`]); one is active at a time, chosen with `POST /_keyless/reset`;
//! - **strict recording replay** (`strict`): a recording made by this server in record mode,
//!   served call by call with the existing strict replay (each request compared field by field
//!   in its wire's own terms; Chat Completions chunks as recorded);
//! - **record** (`record`): a proxy to a real endpoint of the request's wire that writes the
//!   versioned, redacted recording, the wire named in each call, and, when the server stops,
//!   builds the fixture from the calls it recorded, held in memory.
//!
//! Routes (`Route`, the one list of what is served): `POST /v1/chat/completions` (also
//! `/chat/completions`), `POST /v1/messages` and `POST /v1/responses` (Anthropic's Messages and
//! OpenAI's Responses API: `wires`), `GET /v1/models`, `GET /health`, and the driver's `GET /_keyless/misses`
//! (every [`Problem`] so far, as JSON), `GET /_keyless/state` and `POST /_keyless/reset`
//! (`{"fixture": "<stem>"}` selects a fixture; either way the replay starts afresh and the problem
//! ledger is cleared, and a reply that discarded problems no driver had read says how many;
//! `{"between_runs": true}` ends the run instead: until the next reset every model call is
//! refused as a `call_between_runs` problem, so a call a reused gateway makes after its run is
//! credited to no fixture). The
//! providers' embeddings routes are the `embeddings` boundary's (`embeddings.rs`). Any
//! other request (`POST /v1/audio/speech`, a wrong method) answers an OpenAI error
//! naming the route and is an `unserved_route` problem: a gateway that calls something no
//! recording answers is not a clean run. Problems are also handed to [`ServerOptions::on_problem`]
//! the moment they happen; the ledger is bounded (`problems::Ledger`). [`ModelServerClient`] is
//! the driver's side of those routes.

mod answer;
mod assemble;
mod backend;
mod client;
mod discovery;
mod embeddings;
mod exchanges;
mod faulted;
mod fixtures;
mod http;
mod mcp_route;
mod problems;
mod proxy;
mod reach;
mod record;
mod render;
mod request;
mod routes;
mod serve;
mod shared;
mod strict;
mod upstream;
mod wires;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get, post};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use replay_core::{LoadedFixture, ReplayObserver};

use crate::boundary::Boundaries;
use backend::{Backend, ResetDone, Shared, holds_reset_token};
use request::Wire;
use routes::Route;
use shared::ProblemHook;
pub use shared::{CALLER_HEADER, ModelServerError, RESET_TOKEN_HEADER};
use wires::{serve, unserved_response};

pub use backend::RecordedFixture;
pub use client::{ClientError, ModelServerClient, ResetReply, ServerState};
pub use faulted::FaultFired;
use problems::Ledger;
pub use problems::Problem;
pub use reach::{Unreached, UpstreamReach};
pub use record::{
    AwsCredentials, DEFAULT_CALL_TIME_LIMIT, DEFAULT_RECORDING_MAX_BYTES, RecordConfig,
    RecordLimits,
};
pub use request::normalized;
pub use serve::ServeLimits;

/// A route's handler.
fn handler(route: Route) -> MethodRouter<Arc<Shared>> {
    match route {
        Route::ChatCompletions | Route::ChatCompletionsUnversioned => post(complete),
        Route::AnthropicMessages => post(wires::anthropic),
        Route::Responses => post(wires::responses),
        Route::Gemini | Route::GeminiV1 => post(wires::gemini),
        Route::BedrockConverse => post(wires::converse),
        Route::BedrockConverseStream => post(wires::converse_stream),
        Route::OllamaChat => post(wires::ollama_chat),
        Route::OllamaGenerate => post(wires::ollama_generate),
        Route::OllamaTags => get(ollama_tags),
        Route::OllamaShow => post(ollama_show),
        Route::OllamaVersion => {
            get(|| async { Json(json!({"version": discovery::OLLAMA_VERSION})) })
        }
        Route::Embeddings | Route::EmbeddingsUnversioned => post(embeddings::openai),
        Route::OllamaEmbed => post(embeddings::ollama_embed),
        Route::OllamaEmbeddings => post(embeddings::ollama_embeddings),
        Route::BedrockInvoke => post(embeddings::bedrock_invoke),
        Route::Models | Route::ModelsUnversioned => get(models),
        Route::Health => get(|| async { Json(json!({"status": "ok"})) }),
        Route::Misses => get(misses),
        Route::State => get(state),
        Route::Reset => post(reset),
        Route::HttpBoundary | Route::HttpBoundaryRoot => any(http::serve),
        Route::McpBoundary => any(mcp_route::serve),
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
    /// Fault scenarios (issue 42), each under its name (`<scenario>.<mode>@<fault-name>`, the
    /// name a driver selects it by): while it is the active fixture, its faults apply.
    pub faults: Vec<(String, crate::faults::FaultPlan)>,
    /// The other boundaries this server records and replays on its own port
    /// (`/_keyless/http/<name>`, …), as `keyless.toml` configures them.
    pub boundaries: Arc<Boundaries>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("port", &self.port)
            .field("on_problem", &self.on_problem.is_some())
            .field("observer", &self.observer.is_some())
            .field("faults", &self.faults)
            .field("boundaries", &self.boundaries)
            .finish()
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
            closed: AtomicBool::new(false),
            reset_token: new_reset_token(),
            aborted: CancellationToken::new(),
            faults: faulted::Faults::new(options.faults),
            mcp: Arc::new(mcp_route::servers(&options.boundaries)),
            boundaries: options.boundaries,
        });
        let first = shared.backend.active_fixture().map(|(name, _)| name);
        shared.faults.select(first.as_deref());
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
            router = router.route(route.method_and_path().1, handler(route));
            for alias in route.aliases() {
                router = router.route(alias, handler(route));
            }
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

    /// The secret `POST /_keyless/reset` must carry in [`RESET_TOKEN_HEADER`], made at random
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
        self.shared.faults.stop();
        if let Some(task) = self.task.take()
            && let Err(err) = task.await
        {
            tracing::warn!("model server task: {err}");
        }
        self.shared.backend.finish()
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    serve(Wire::ChatCompletions, &shared, &headers, &body, None).await
}

/// The models the server replays, each once (`replay` when none is named).
fn replayed_models(shared: &Shared) -> Vec<String> {
    let mut ids = shared.backend.models();
    ids.retain(|id| !id.is_empty());
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    if ids.is_empty() {
        ids.push("replay".to_owned());
    }
    ids
}

/// `GET /api/tags`.
async fn ollama_tags(State(shared): State<Arc<Shared>>) -> Response {
    Json(discovery::tags(&replayed_models(&shared))).into_response()
}

/// `POST /api/show`: a replayed model's facts, else Ollama's 404.
async fn ollama_show(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let model = discovery::shown_model(&body).unwrap_or_default();
    match discovery::show(&replayed_models(&shared), &model) {
        Some(shown) => Json(shown).into_response(),
        None => (StatusCode::NOT_FOUND, Json(discovery::not_found(&model))).into_response(),
    }
}

async fn models(State(shared): State<Arc<Shared>>) -> Response {
    let ids = replayed_models(&shared);
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "model-server"}))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
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
    let mut problems = problems_for(&shared, &headers);
    let (faults, never_fired) = shared.faults.report();
    problems.extend(never_fired);
    let mut state = shared.backend.state(problems);
    state.faults = faults;
    Json(state).into_response()
}

/// The body of `POST /_keyless/reset`: empty, `{"fixture": "<name>"}` or `{"between_runs":
/// true}` (other keys ignored).
#[derive(Debug, Default, Deserialize)]
struct ResetRequest {
    /// The fixture to select; none keeps the active one.
    #[serde(default)]
    fixture: Option<String>,
    /// End the run: refuse every model call until the next reset.
    #[serde(default)]
    between_runs: bool,
}

impl ResetRequest {
    /// The request a body holds, or the error to answer with.
    fn parse(body: &[u8]) -> Result<ResetRequest, &'static str> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(ResetRequest::default());
        }
        let fields = serde_json::from_slice::<serde_json::Map<String, Value>>(body).map_err(
            |_| "the body must be empty, {\"fixture\": \"<name>\"} or {\"between_runs\": true}",
        )?;
        let request = ResetRequest::deserialize(Value::Object(fields))
            .map_err(|_| "\"fixture\" must be a string and \"between_runs\" a boolean")?;
        if request.between_runs && request.fixture.is_some() {
            return Err("\"between_runs\" ends the run: it selects no fixture");
        }
        Ok(request)
    }
}

/// What `POST /_keyless/reset` answers (the driver reads it as [`ResetReply`]): what the backend
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
                "POST /_keyless/reset needs the server's reset token in the {RESET_TOKEN_HEADER} \
                 header: only the process that owns the run may start a fresh replay (keyless \
                 model-server prints the token at start and writes it to --reset-token-file)"
            )})),
        )
            .into_response();
    }
    let (wanted, between_runs) = match ResetRequest::parse(&body) {
        Ok(request) => (request.fixture, request.between_runs),
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
    // Closed before the ledger is cleared, opened after: a call in between is either refused or
    // in the ledger the reply hands back, never answered and then cleared.
    if between_runs {
        shared.closed.store(true, Ordering::SeqCst);
    }
    // Between runs no fault scenario is active: its counts were the run's that just ended.
    shared
        .faults
        .select(selected.fixture.as_deref().filter(|_| !between_runs));
    let discarded = shared.problems.lock().clear();
    if !between_runs {
        shared.closed.store(false, Ordering::SeqCst);
    }
    let mut reply = ResetReplyBody {
        selected,
        discarded_unread_problems: None,
        discarded: None,
        warning: None,
    };
    if discarded.count > 0 {
        let warning = format!(
            "the reset discarded {} problem(s) no driver had read (GET /_keyless/misses \
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
mod embeddings_served;
#[cfg(test)]
mod hardening;
#[cfg(test)]
mod http_served;
#[cfg(test)]
mod proxy_served;
