//! Fixture replay (`Mode::Fixtures`): one or more fixtures, each loaded and validated once
//! ([`LoadedFixture`], shared with whoever else replays it), one active at a time. Every call is
//! looked up by the replay key computed from the request body with the same canonical projection
//! and normalisation as in-process replay (`replay_core::lookup_at_wire`): the named key where
//! the wire carries names, the name-free key where it does not (`docs/replay-and-fixtures.md`
//! §11.1). A miss or an ambiguity is a problem, answered as an error in the wire's shape.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use axum::http::StatusCode;
use parking_lot::Mutex;

use replay_core::{Answer, LoadedFixture, LookupError, ReplayEngine, ReplayObserver};
use replay_core::{ExchangeReplay, FixtureError, Miss, name_free_key};

use super::answer::{events_from_error, events_from_message};
use super::backend::{Answered, Backend, Call, ResetDone, ResetRefused};
use super::client::ServerState;
use super::exchanges::Exchanges;
use super::problems::Problem;
use super::request::WireRequest;
use super::shared::{CALLER_HEADER, ModelServerError};
use crate::golden::stem_of;

/// One fixture the server serves, by its name.
#[derive(Debug)]
struct Named {
    stem: String,
    loaded: LoadedFixture,
}

/// The active fixture, the engine replaying its turns and the replay of its other boundaries'
/// exchanges (both made afresh at every reset, so their ledgers are the run's).
#[derive(Debug)]
struct Active {
    index: usize,
    engine: Arc<ReplayEngine>,
    exchanges: Arc<ExchangeReplay>,
}

impl Active {
    /// The replay of `loaded`, the fixture at `index`, from its start.
    fn of(
        index: usize,
        loaded: &LoadedFixture,
        observer: Option<&Arc<dyn ReplayObserver>>,
    ) -> Active {
        Active {
            index,
            engine: engine_for(loaded, observer),
            exchanges: Arc::new(ExchangeReplay::new(
                loaded.path(),
                loaded.fixture().exchanges.clone(),
            )),
        }
    }
}

/// Fixture replay.
#[derive(Debug)]
pub(super) struct FixtureReplay {
    fixtures: Vec<Named>,
    active: Mutex<Active>,
    /// Told of every turn served, every miss and every ambiguity, whichever fixture is active.
    observer: Option<Arc<dyn ReplayObserver>>,
}

impl FixtureReplay {
    /// Serves `fixtures`, the first active; two with one name are refused (a driver selects
    /// fixtures by name).
    pub(super) fn new(
        fixtures: Vec<LoadedFixture>,
        observer: Option<Arc<dyn ReplayObserver>>,
    ) -> Result<FixtureReplay, ModelServerError> {
        FixtureReplay::from_loading(fixtures.into_iter().map(Ok), observer)
    }

    /// Loads the fixture at each of `paths`, in order, and serves them ([`FixtureReplay::new`]).
    pub(super) fn load(
        paths: Vec<PathBuf>,
        observer: Option<Arc<dyn ReplayObserver>>,
    ) -> Result<FixtureReplay, ModelServerError> {
        let loading = (paths.into_iter())
            .map(|path| crate::faults::load_fixture_or_scenario(&path).map(|(loaded, _)| loaded));
        FixtureReplay::from_loading(loading, observer)
    }

    /// Serves the fixtures `loading` yields, stopping at the first that failed to load or
    /// repeats a name.
    fn from_loading(
        loading: impl Iterator<Item = Result<LoadedFixture, FixtureError>>,
        observer: Option<Arc<dyn ReplayObserver>>,
    ) -> Result<FixtureReplay, ModelServerError> {
        let mut named: Vec<Named> = Vec::new();
        for loaded in loading {
            let loaded = loaded?;
            let stem = stem_of(loaded.path());
            if let Some(other) = named.iter().find(|f| f.stem == stem) {
                return Err(ModelServerError::DuplicateFixture {
                    stem,
                    first: other.loaded.path().to_path_buf(),
                    second: loaded.path().to_path_buf(),
                });
            }
            named.push(Named { stem, loaded });
        }
        let Some(first) = named.first() else {
            return Err(ModelServerError::NoFixture);
        };
        let active = Active::of(0, &first.loaded, observer.as_ref());
        Ok(FixtureReplay {
            fixtures: named,
            active: Mutex::new(active),
            observer,
        })
    }
}

/// A fresh engine over a loaded fixture (validated when it was loaded, so nothing can fail).
fn engine_for(
    loaded: &LoadedFixture,
    observer: Option<&Arc<dyn ReplayObserver>>,
) -> Arc<ReplayEngine> {
    let engine = ReplayEngine::over(loaded);
    Arc::new(match observer {
        Some(observer) => engine.with_observer(observer.clone()),
        None => engine,
    })
}

/// The problem of a lookup that found no single answer, and its error code.
fn lookup_problem(error: LookupError, request: &WireRequest) -> (Problem, &'static str) {
    let wire = request.wire;
    match error {
        LookupError::Miss(miss) if wire.carries_names() => (Problem::miss(*miss), "replay_miss"),
        LookupError::Miss(miss) => (name_free_miss(miss, request), "replay_miss"),
        LookupError::Ambiguous(ambiguity) => (
            Problem::ambiguous_answer(*ambiguity),
            "replay_answer_ambiguous",
        ),
        ref error @ LookupError::AmbiguousCaller { ref callers, .. } => (
            Problem::AmbiguousCaller {
                message: format!("{error} (send it in the {CALLER_HEADER} header)"),
                callers: callers.clone(),
            },
            "replay_caller_ambiguous",
        ),
    }
}

/// A miss at a wire that carries no message names: the name-free key was tried too.
fn name_free_miss(miss: Box<Miss>, request: &WireRequest) -> Problem {
    let message = format!(
        "{miss}\nthe {} request carries no message names, so its name-free key {} was \
         tried too and matches no recorded turn's name-free conversation",
        request.wire.name(),
        name_free_key(&request.messages)
    );
    Problem::Miss { message, miss }
}

#[async_trait]
impl Backend for FixtureReplay {
    fn mode(&self) -> &'static str {
        "fixture"
    }

    async fn answer(&self, call: Call<'_>) -> Answered {
        let engine = self.active.lock().engine.clone();
        let request = call.request;
        let caller = call.caller.as_deref();
        let looked_up = if request.wire.carries_names() {
            engine.lookup_at_wire(caller, &request.messages)
        } else {
            engine.lookup_at_wire_without_names(caller, &request.messages)
        };
        match looked_up {
            Ok(served) => Answered::Served {
                turn: served.turn_index,
                events: match &served.answer {
                    Answer::Output(output) => events_from_message(output),
                    Answer::Error(recorded) => events_from_error(recorded),
                },
            },
            Err(error) => {
                // The server's bounded ledger is the one record of what went wrong: the engine's
                // own ledgers (unbounded, for an in-process run) would keep every miss of a
                // long run.
                engine.take_misses();
                engine.take_ambiguities();
                let (problem, code) = lookup_problem(error, request);
                Answered::Problem {
                    problem,
                    status: StatusCode::BAD_REQUEST,
                    code,
                }
            }
        }
    }

    fn models(&self) -> Vec<String> {
        self.fixtures
            .iter()
            .map(|f| f.loaded.fixture().scenario.model.clone())
            .collect()
    }

    fn state(&self, problems: Vec<Problem>) -> ServerState {
        let active = self.active.lock();
        ServerState {
            mode: self.mode().into(),
            fixture: Some(self.fixtures[active.index].stem.clone()),
            fixtures: self.fixtures.iter().map(|f| f.stem.clone()).collect(),
            served_calls: active.engine.fixture().turns.len() - active.engine.unused_turns().len(),
            unused_turns: active.engine.unused_turns(),
            recorded_calls: None,
            problems,
            faults: Vec::new(),
            unused_exchanges: active.exchanges.unused(),
        }
    }

    fn reset(&self, wanted: Option<&str>) -> Result<ResetDone, ResetRefused> {
        let index = match wanted {
            None => self.active.lock().index,
            Some(stem) => self
                .fixtures
                .iter()
                .position(|f| f.stem == stem)
                .ok_or_else(|| ResetRefused::NoSuchFixture {
                    wanted: stem.to_owned(),
                    loaded: self.fixtures.iter().map(|f| f.stem.clone()).collect(),
                })?,
        };
        let selected = &self.fixtures[index];
        *self.active.lock() = Active::of(index, &selected.loaded, self.observer.as_ref());
        Ok(ResetDone {
            mode: self.mode(),
            fixture: Some(selected.stem.clone()),
            turns: Some(selected.loaded.fixture().turns.len()),
            calls: None,
        })
    }

    fn give_back(&self, turn: usize) {
        self.active.lock().engine.give_back(turn);
    }

    fn exchanges(&self) -> Exchanges {
        Exchanges::Replay(self.active.lock().exchanges.clone())
    }

    fn active_fixture(&self) -> Option<(String, Vec<usize>)> {
        let active = self.active.lock();
        Some((
            self.fixtures[active.index].stem.clone(),
            active.engine.unused_turns(),
        ))
    }
}
