//! What the model server serves, behind one trait: [`Backend`], implemented by fixture replay
//! (`fixtures`), strict recording replay (`strict`) and the recording proxy (`record`). The
//! server's routes (`super`) parse the request, hand it to the backend, and turn what it
//! answered ([`Answered`]) into the wire's HTTP answer; a backend knows no route and no HTTP
//! framing but the recording proxy's live stream. The handlers' state, [`Shared`], holds the
//! backend with the problem ledger and the reset token.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use parking_lot::Mutex;
use replay_core::{Fixture, TurnSummary};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::answer::{AnswerId, WireError};
use super::client::ServerState;
use super::exchanges::Exchanges;
use super::problems::{Ledger, Problem};
use super::reach::UpstreamReach;
use super::request::{Wire, WireRequest};
use super::shared::{ModelServerError, ProblemHook, RESET_TOKEN_HEADER};
use crate::boundary::Boundaries;
use replay_core::recording::RecordedEvent;

/// State shared by the handlers.
pub(super) struct Shared {
    /// What it serves: fixture replay, strict replay or the recording proxy.
    pub(super) backend: Box<dyn Backend>,
    pub(super) problems: Mutex<Ledger>,
    pub(super) on_problem: Option<ProblemHook>,
    pub(super) answers: AtomicU64,
    /// No run is open (`{"between_runs": true}` until the next reset): every model call is
    /// refused and reported.
    pub(super) closed: AtomicBool,
    /// The per-run secret `POST /_keyless/reset` must carry ([`RESET_TOKEN_HEADER`]).
    pub(super) reset_token: String,
    /// Cancelled once a stop's grace has run out: work outside a connection (the recording
    /// proxy's pump) ends then too.
    pub(super) aborted: CancellationToken,
    /// The fault scenarios, and the active one's counts (`faulted`).
    pub(super) faults: super::faulted::Faults,
    /// The other boundaries served on this server's routes (`[http.<name>]`, …).
    pub(super) boundaries: Arc<Boundaries>,
    /// The configured MCP servers and what serving them keeps between calls (sessions, the
    /// stdio processes a recording started).
    pub(super) mcp: Arc<crate::mcp::McpServers>,
}

impl Shared {
    pub(super) fn report(&self, problem: Problem) {
        if let Some(hook) = &self.on_problem {
            hook(&problem);
        }
        self.problems.lock().push(problem);
    }

    /// The identity of the next answer at `wire`, numbered across the server's answers.
    pub(super) fn answer_id(&self, wire: Wire, model: &str) -> AnswerId {
        let number = self.answers.fetch_add(1, Ordering::Relaxed) + 1;
        AnswerId {
            id: wire.replay_answer_id(number),
            model: model.to_owned(),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|elapsed| elapsed.as_secs())
                .unwrap_or(0),
        }
    }
}

/// Whether `headers` carry the server's reset token, compared in constant time.
pub(super) fn holds_reset_token(shared: &Shared, headers: &HeaderMap) -> bool {
    use subtle::ConstantTimeEq;
    let Some(given) = headers.get(RESET_TOKEN_HEADER) else {
        return false;
    };
    let expected = shared.reset_token.as_bytes();
    given.as_bytes().len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected))
}

/// One model call as a backend gets it.
pub(super) struct Call<'a> {
    /// The server's shared state: its problem ledger, answer ids, the stop signal.
    pub(super) shared: &'a Arc<Shared>,
    /// The request, parsed at its wire.
    pub(super) request: &'a WireRequest,
    /// The caller the gateway named in [`CALLER_HEADER`](super::shared::CALLER_HEADER), if any.
    pub(super) caller: Option<String>,
    /// The request's headers (the proxy passes some on).
    pub(super) headers: &'a HeaderMap,
}

/// What a backend answered one call with; the server renders it in the request's wire.
pub(super) enum Answered {
    /// A complete answer: a fixture's turn or a recorded call, as events.
    Events(Vec<RecordedEvent>),
    /// A fixture's recorded turn (its index), as events: a fault scenario counts it and may
    /// give it back.
    Served {
        /// The turn's index in the fixture.
        turn: usize,
        /// Its answer as events.
        events: Vec<RecordedEvent>,
    },
    /// A failure recorded for this call, answered as the provider answered it.
    Failure(WireError),
    /// The call could not be answered (a miss, an ambiguity, a mismatch, a recording that
    /// cannot be written): the problem is reported, and the gateway gets an error in its wire's
    /// shape with this status and code, carrying the problem's message.
    Problem {
        /// What went wrong.
        problem: Problem,
        /// The HTTP status.
        status: StatusCode,
        /// The error's `code`.
        code: &'static str,
    },
    /// An answer already made: the recording proxy's stream, passed on as it arrives.
    Response(Response),
}

/// The fixture built when a recording server stops ([`ModelServer::stop`](super::ModelServer::stop)).
#[derive(Debug)]
pub struct RecordedFixture {
    /// The fixture.
    pub fixture: Fixture,
    /// One line per recorded call.
    pub summary: Vec<TurnSummary>,
    /// Which calls got an HTTP answer from the upstream.
    pub reach: UpstreamReach,
}

/// Why a backend refused `POST /_keyless/reset`.
#[derive(Debug, thiserror::Error)]
pub(super) enum ResetRefused {
    /// The body named a fixture that is not loaded.
    #[error("no fixture named {wanted:?} is loaded; loaded: {}", .loaded.join(", "))]
    NoSuchFixture {
        /// The name asked for.
        wanted: String,
        /// Every loaded fixture's name.
        loaded: Vec<String>,
    },
    /// A recording in progress cannot start afresh.
    #[error("a recording cannot be reset; stop the server to finish it")]
    Recording,
}

impl ResetRefused {
    /// The status the refusal answers with.
    pub(super) fn status(&self) -> StatusCode {
        match self {
            ResetRefused::NoSuchFixture { .. } => StatusCode::NOT_FOUND,
            ResetRefused::Recording => StatusCode::CONFLICT,
        }
    }
}

/// What a reset selected: `{"mode", "fixture", "turns"}` in fixture mode, `{"mode", "fixture":
/// null, "calls"}` in recording mode (the server adds what the reset discarded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct ResetDone {
    /// [`Backend::mode`].
    pub(super) mode: &'static str,
    /// The fixture now active.
    pub(super) fixture: Option<String>,
    /// How many turns it has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) turns: Option<usize>,
    /// How many calls the recording holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) calls: Option<usize>,
}

/// One thing the model server can serve.
#[async_trait::async_trait]
pub(super) trait Backend: Send + Sync + std::fmt::Debug {
    /// Its name in `GET /_keyless/state`: `fixture`, `recording` or `record`.
    fn mode(&self) -> &'static str;

    /// Answers one call.
    async fn answer(&self, call: Call<'_>) -> Answered;

    /// The model ids `GET /v1/models` lists (empty ones are dropped there).
    fn models(&self) -> Vec<String>;

    /// Its state, with the server's `problems`.
    fn state(&self, problems: Vec<Problem>) -> ServerState;

    /// Starts afresh, on the fixture named `wanted` when there is one.
    fn reset(&self, wanted: Option<&str>) -> Result<ResetDone, ResetRefused>;

    /// Fixture replay: the active fixture's name and its turns nobody has asked for yet.
    fn active_fixture(&self) -> Option<(String, Vec<usize>)> {
        None
    }

    /// Fixture replay: turn `turn` was served to a call a fault refused or broke; the next
    /// call with its key is served it again.
    fn give_back(&self, turn: usize) {
        let _ = turn;
    }

    /// What the other boundaries' routes (HTTP, MCP) reach in this mode: the active fixture's
    /// exchanges, or the recorder.
    fn exchanges(&self) -> Exchanges {
        Exchanges::Unserved(self.mode())
    }

    /// Ends it once the server has stopped: the recording proxy builds its fixture.
    fn finish(&self) -> Result<Option<RecordedFixture>, ModelServerError> {
        Ok(None)
    }
}
