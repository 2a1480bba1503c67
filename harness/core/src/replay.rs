//! The replay engine (`docs/replay-and-fixtures.md` §5): serves recorded AI outputs by replay key
//! and keeps a ledger of misses.
//!
//! The engine is independent of any gateway: a gateway's replay model computes nothing itself, it
//! hands the caller and the model-facing messages to [`ReplayEngine::lookup`] and turns the
//! returned `output` into its own message type. Each engine owns its miss ledger (DeerFlow's is
//! process-wide), so several gateways can replay in one test process without seeing each other's
//! misses.
//!
//! A [`ReplayObserver`] hears of every lookup the moment it is decided: a replay gateway that a
//! browser drives logs with it, so a miss shows while the page is still open instead of at the
//! end of a run.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::canonical::{
    DEFAULT_CALLER, ReplayKey, canonical_conversation, conversation_hash, input_hash,
    normalize_caller, replay_key,
};
use super::diff::{Difference, first_difference};
use super::fixture::{Answer, Fixture, FixtureError, LoadedFixture};
use super::protocol::CALLER_HEADER;
use super::pyjson::{python_repr, to_python_json};
use super::text::{cut_text, first_chars, shorten};
use super::wire::name_free_entries;

/// How many characters of the canonical text DeerFlow's miss message shows.
const MISS_CANONICAL_CHARS: usize = 800;

/// How many characters of a differing value the diagnostics show.
const DIAGNOSTIC_VALUE_CHARS: usize = 120;

/// A recorded output served for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// Index of the served turn in the fixture's `turns`.
    pub turn_index: usize,
    /// What the call answered when it was recorded: an AI message or a failure.
    pub answer: Answer,
    /// The key the call was computed to have.
    pub key: ReplayKey,
}

/// A call for which no recorded output was left.
///
/// Its `Display` is DeerFlow's exact miss message, followed by this crate's diagnostics on new
/// lines (the nearest recorded turn and, when the fixture stores canonical texts, the first
/// differing field). It serialises to JSON field by field, so a model server can hand it to a
/// driver in another process.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Miss {
    /// The normalised caller of the call.
    pub caller: String,
    /// The key recorded for the miss: the caller-aware input hash, or the legacy conversation
    /// hash when that key exists in the table but its queue is exhausted (§5.4 step 1).
    pub input_hash: String,
    /// The call's conversation hash.
    pub conversation_hash: String,
    /// The call's normalised canonical conversation text.
    pub canonical: String,
    /// The fixture the engine replays, as given to the engine.
    pub fixture_path: PathBuf,
    /// The table's keys when the miss happened, in order of first appearance in the fixture.
    pub known_hashes: Vec<String>,
    /// The recorded turn closest to the call, if any turn has the same caller.
    pub nearest: Option<NearestTurn>,
}

/// The recorded turn that most resembles a missed call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NearestTurn {
    /// Index of the turn in the fixture's `turns`.
    pub turn_index: usize,
    /// The turn's `input_hash`.
    pub(crate) input_hash: String,
    /// Whether the turn had already been served.
    pub(crate) served: bool,
    /// How many leading canonical entries (messages) the turn shares with the call; `None` when
    /// the turn stores no `canonical`.
    pub(crate) common_prefix: Option<usize>,
    /// The first difference between the turn's recorded canonical conversation and the call's;
    /// `None` when the turn stores no `canonical` (or, rarely, when both are equal and only the
    /// caller differs).
    pub difference: Option<Difference>,
    /// The turn's stored `canonical` is not the text its key was hashed from (its conversation
    /// hash says so): recording redacted a credential-shaped value in it, so equal texts do not
    /// mean equal conversations.
    #[serde(default)]
    pub(crate) canonical_rewritten: bool,
}

/// A call that named no caller, whose key is recorded for several turns that answer differently
/// (`docs/replay-and-fixtures.md` §5.6): the engine serves none of them, since picking one would
/// silently hand one node another node's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ambiguity {
    /// The caller the call was taken for (inferred, not named).
    pub caller: String,
    /// The shared key.
    pub input_hash: String,
    /// The fixture, as given to the engine.
    pub fixture_path: PathBuf,
    /// Every turn recorded under the key, in file order.
    pub turns: Vec<usize>,
    /// What each of those turns answers, one line each (`text "…"`, `tool_calls [...]`).
    pub answers: Vec<String>,
}

impl fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let turns: Vec<String> = self
            .turns
            .iter()
            .zip(&self.answers)
            .map(|(turn, answer)| format!("turn {turn}: {answer}"))
            .collect();
        write!(
            f,
            "replay ambiguous: the call's input hash {} (caller {}) is recorded for {} turns of \
             {} that answer differently ({}), and the call names no caller, so which answer it \
             should get cannot be told. Nodes that call the model with the same conversation \
             must name themselves: send the {} header (one value per node) on each model call, \
             or a caller tag or run name in process, and record again",
            self.input_hash,
            python_repr(&self.caller),
            self.turns.len(),
            python_repr(&self.fixture_path.display().to_string()),
            turns.join("; "),
            CALLER_HEADER,
        )
    }
}

impl std::error::Error for Ambiguity {}

/// Why a lookup served nothing: the one error of every lookup that can fail more than one way.
#[derive(Debug, Clone, PartialEq)]
pub enum LookupError {
    /// No recorded output for the call (also in the engine's miss ledger).
    Miss(Box<Miss>),
    /// The call named no caller and its key has several different recorded answers (parallel
    /// nodes sending one conversation); also in the engine's ambiguity ledger.
    Ambiguous(Box<Ambiguity>),
    /// A call at the wire named no caller and its conversation is recorded for several callers,
    /// so which output it should get cannot be told.
    AmbiguousCaller {
        /// The callers whose key for this conversation is recorded, in fixture order.
        callers: Vec<String>,
        /// The call's conversation hash.
        conversation_hash: String,
        /// The fixture, as given to the engine.
        fixture_path: PathBuf,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::Miss(miss) => miss.fmt(f),
            LookupError::Ambiguous(ambiguity) => ambiguity.fmt(f),
            LookupError::AmbiguousCaller {
                callers,
                conversation_hash,
                fixture_path,
            } => {
                let quoted: Vec<String> = callers.iter().map(|c| python_repr(c)).collect();
                write!(
                    f,
                    "replay caller ambiguous: the conversation {conversation_hash} is recorded \
                     for {} callers in {} ({}); the request must name its caller",
                    callers.len(),
                    python_repr(&fixture_path.display().to_string()),
                    quoted.join(", "),
                )
            }
        }
    }
}

impl std::error::Error for LookupError {}

#[derive(Debug)]
struct QueueState {
    /// input_hash → FIFO queue of turn indexes, in file order.
    queues: HashMap<String, VecDeque<usize>>,
    /// `served[i]` is true once turn `i` has been handed out.
    served: Vec<bool>,
}

/// Hears of each lookup of a [`ReplayEngine`] as it is decided, on the calling thread, after the
/// engine has released its locks (an observer may take its time, or look at the engine).
pub trait ReplayObserver: Send + Sync + fmt::Debug {
    /// A recorded turn was served.
    fn served(&self, served: &Served);
    /// A call missed (the miss is in the engine's ledger as well).
    fn missed(&self, miss: &Miss);
    /// A call named no caller and its key has several different answers (in the engine's
    /// ambiguity ledger as well). Ignored unless an observer cares.
    fn ambiguous(&self, ambiguity: &Ambiguity) {
        let _ = ambiguity;
    }
}

/// Serves a fixture's recorded outputs by replay key, each turn at most once.
#[derive(Debug)]
pub struct ReplayEngine {
    /// Shared with whoever loaded it (a Layer 1 run keeps the same fixture in its result).
    fixture: Arc<Fixture>,
    path: PathBuf,
    /// The table's keys in order of first appearance in the file (Python dict order).
    known_hashes: Vec<String>,
    /// The distinct callers of the turns, in order of first appearance.
    callers: Vec<String>,
    state: Mutex<QueueState>,
    /// input_hash → every turn of a key whose turns answer differently (§5.6).
    shared_keys: HashMap<String, Vec<usize>>,
    misses: Mutex<Vec<Miss>>,
    ambiguities: Mutex<Vec<Ambiguity>>,
    observer: Option<Arc<dyn ReplayObserver>>,
}

impl ReplayEngine {
    /// Builds an engine over `fixture`, validating (as DeerFlow does at construction) that every
    /// turn's output is an AI message. `path` names the fixture in messages. A fixture already
    /// in an [`Arc`] is shared, not copied.
    pub fn new(
        fixture: impl Into<Arc<Fixture>>,
        path: impl Into<PathBuf>,
    ) -> Result<ReplayEngine, FixtureError> {
        let fixture = fixture.into();
        let path = path.into();
        fixture.validate(&path)?;
        Ok(ReplayEngine::unchecked(fixture, path))
    }

    /// An engine over a fixture [`LoadedFixture::load`] validated already: nothing is parsed or
    /// validated again, and the fixture is shared, not copied.
    pub fn over(loaded: &LoadedFixture) -> ReplayEngine {
        ReplayEngine::unchecked(Arc::clone(loaded.fixture()), loaded.path())
    }

    /// The engine over a fixture its caller validated.
    fn unchecked(fixture: Arc<Fixture>, path: impl Into<PathBuf>) -> ReplayEngine {
        let path = path.into();
        let mut queues: HashMap<String, VecDeque<usize>> = HashMap::new();
        let mut known_hashes = Vec::new();
        for (index, turn) in fixture.turns.iter().enumerate() {
            let queue = queues.entry(turn.input_hash.clone()).or_insert_with(|| {
                known_hashes.push(turn.input_hash.clone());
                VecDeque::new()
            });
            queue.push_back(index);
        }
        let served = vec![false; fixture.turns.len()];
        let mut callers: Vec<String> = Vec::new();
        for caller in fixture.turns.iter().filter_map(|t| t.caller.as_ref()) {
            if !callers.contains(caller) {
                callers.push(caller.clone());
            }
        }
        let shared_keys = fixture
            .shared_keys()
            .into_iter()
            .map(|shared| (shared.input_hash, shared.turns))
            .collect();
        ReplayEngine {
            fixture,
            path,
            known_hashes,
            callers,
            state: Mutex::new(QueueState { queues, served }),
            shared_keys,
            misses: Mutex::new(Vec::new()),
            ambiguities: Mutex::new(Vec::new()),
            observer: None,
        }
    }

    /// This engine, telling `observer` of every lookup from now on.
    pub fn with_observer(mut self, observer: Arc<dyn ReplayObserver>) -> ReplayEngine {
        self.observer = Some(observer);
        self
    }

    /// Serves the next recorded output for a call by `caller` (raw; normalised here) with the
    /// model-facing `messages`; the call names its caller, so several different answers recorded
    /// under its key are served in recorded order (§5.6).
    ///
    /// Tries the caller-aware input hash first, then the legacy bare conversation hash (§5.3).
    /// Duplicate keys are served in file order, each turn once. On a miss the [`Miss`] is also
    /// appended to this engine's ledger.
    #[expect(
        clippy::result_large_err,
        reason = "a miss carries its diagnostics by value; misses are rare and end the test"
    )]
    pub fn lookup(&self, caller: &str, messages: &[Value]) -> Result<Served, Miss> {
        self.serve(replay_key(caller, messages))
    }

    /// Serves a call that names no caller (a gateway's lead agent, which carries no caller tag
    /// or run name): the caller is `lead_agent`, and a key recorded with several different
    /// answers is an [`Ambiguity`] instead of a pick (§5.6).
    pub fn lookup_unnamed(&self, messages: &[Value]) -> Result<Served, LookupError> {
        self.lookup_inferred(replay_key("", messages))
    }

    /// The lookup of a call whose caller was inferred or defaulted, with the key already
    /// computed (the wire lookup computes the conversation's part once to find the caller): only
    /// a named caller may be served one of several different answers recorded under its key.
    pub(crate) fn lookup_inferred(&self, key: ReplayKey) -> Result<Served, LookupError> {
        self.lookup_inferred_compared(key, Comparison::AsHashed)
    }

    /// [`ReplayEngine::lookup_inferred`], a miss's nearest turn found as `comparison` says.
    pub(crate) fn lookup_inferred_compared(
        &self,
        key: ReplayKey,
        comparison: Comparison,
    ) -> Result<Served, LookupError> {
        if let Some(ambiguity) = self.ambiguity(&key) {
            self.ambiguities.lock().push(ambiguity.clone());
            if let Some(observer) = &self.observer {
                observer.ambiguous(&ambiguity);
            }
            return Err(LookupError::Ambiguous(Box::new(ambiguity)));
        }
        self.serve_compared(key, comparison)
            .map_err(|miss| LookupError::Miss(Box::new(miss)))
    }

    /// The ambiguity of serving `key` to a call that names no caller: the key it would be
    /// served from (the caller-aware one, else the legacy one) has different recorded answers.
    fn ambiguity(&self, key: &ReplayKey) -> Option<Ambiguity> {
        let recorded_key = if self.shared_keys.contains_key(&key.input_hash) {
            &key.input_hash
        } else if !self.is_recorded(&key.input_hash) {
            &key.conversation_hash
        } else {
            return None;
        };
        let turns = self.shared_keys.get(recorded_key)?;
        Some(Ambiguity {
            caller: key.caller.clone(),
            input_hash: recorded_key.clone(),
            fixture_path: self.path.clone(),
            turns: turns.clone(),
            answers: turns
                .iter()
                .map(|&turn| self.fixture.turns[turn].answer.describe())
                .collect(),
        })
    }

    /// Serves the next turn of `key` in recorded order, or records and returns the miss.
    #[expect(
        clippy::result_large_err,
        reason = "a miss carries its diagnostics by value; misses are rare and end the test"
    )]
    pub(crate) fn serve(&self, key: ReplayKey) -> Result<Served, Miss> {
        self.serve_compared(key, Comparison::AsHashed)
    }

    /// [`ReplayEngine::serve`], a miss's nearest turn found by comparing as `comparison` says.
    #[expect(
        clippy::result_large_err,
        reason = "a miss carries its diagnostics by value; misses are rare and end the test"
    )]
    pub(crate) fn serve_compared(
        &self,
        key: ReplayKey,
        comparison: Comparison,
    ) -> Result<Served, Miss> {
        let mut state = self.state.lock();
        let mut recorded_key = &key.input_hash;
        let mut found = state
            .queues
            .get_mut(&key.input_hash)
            .and_then(VecDeque::pop_front);
        if found.is_none()
            && let Some(legacy) = state.queues.get_mut(&key.conversation_hash)
        {
            // As in DeerFlow, an existing legacy key (even exhausted) becomes the reported key.
            recorded_key = &key.conversation_hash;
            found = legacy.pop_front();
        }

        if let Some(turn_index) = found {
            state.served[turn_index] = true;
            drop(state);
            let served = Served {
                turn_index,
                answer: self.fixture.turns[turn_index].answer.clone(),
                key,
            };
            if let Some(observer) = &self.observer {
                observer.served(&served);
            }
            return Ok(served);
        }

        let nearest = self.nearest_turn(&key, &state.served, comparison);
        drop(state);
        let miss = Miss {
            caller: key.caller.clone(),
            input_hash: recorded_key.clone(),
            conversation_hash: key.conversation_hash.clone(),
            canonical: key.canonical.clone(),
            fixture_path: self.path.clone(),
            known_hashes: self.known_hashes.clone(),
            nearest,
        };
        self.misses.lock().push(miss.clone());
        if let Some(observer) = &self.observer {
            observer.missed(&miss);
        }
        Err(miss)
    }

    /// A copy of this engine's ambiguity ledger (§5.6), oldest first.
    pub fn ambiguities(&self) -> Vec<Ambiguity> {
        self.ambiguities.lock().clone()
    }

    /// Returns this engine's ambiguities and clears the ledger.
    pub fn take_ambiguities(&self) -> Vec<Ambiguity> {
        std::mem::take(&mut *self.ambiguities.lock())
    }

    /// A copy of this engine's miss ledger, oldest first.
    pub fn misses(&self) -> Vec<Miss> {
        self.misses.lock().clone()
    }

    /// Returns this engine's misses and clears the ledger.
    pub fn take_misses(&self) -> Vec<Miss> {
        std::mem::take(&mut *self.misses.lock())
    }

    /// Puts a served turn back at the front of its key's queue, unserved: the call it was
    /// served to failed on purpose (a fault scenario's refused or cut call), so the call's
    /// retry is served it again, as the provider would have answered the retry.
    pub fn give_back(&self, turn_index: usize) {
        let Some(turn) = self.fixture.turns.get(turn_index) else {
            return;
        };
        let mut state = self.state.lock();
        let queue = state.queues.entry(turn.input_hash.clone()).or_default();
        if !queue.contains(&turn_index) {
            queue.push_front(turn_index);
        }
        state.served[turn_index] = false;
    }

    /// Indexes of the turns never served, in file order. Unused turns are not an error (§5.5).
    pub fn unused_turns(&self) -> Vec<usize> {
        let state = self.state.lock();
        (0..state.served.len())
            .filter(|&index| !state.served[index])
            .collect()
    }

    /// The table's keys, in order of first appearance in the file (the order of DeerFlow's
    /// dict), including keys whose queues are exhausted.
    #[cfg(test)]
    pub(crate) fn known_hashes(&self) -> Vec<String> {
        self.known_hashes.clone()
    }

    /// Whether `key` is in the table (its queue may be exhausted).
    pub(crate) fn is_recorded(&self, key: &str) -> bool {
        self.state.lock().queues.contains_key(key)
    }

    /// The distinct callers of the fixture's turns, in order of first appearance (legacy turns
    /// without a caller add none).
    pub(crate) fn callers(&self) -> &[String] {
        &self.callers
    }

    /// The fixture being replayed.
    pub fn fixture(&self) -> &Fixture {
        &self.fixture
    }

    /// The fixture path the engine was built with.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Among the turns of the same caller (a turn without caller matches any), the one whose
    /// stored canonical conversation shares the longest prefix of entries with the call; ties go
    /// to unserved turns, then file order. Without stored canonicals that is the first unserved
    /// turn of the caller.
    fn nearest_turn(
        &self,
        key: &ReplayKey,
        served: &[bool],
        comparison: Comparison,
    ) -> Option<NearestTurn> {
        let parse_entries = |canonical: &str| comparison.entries(canonical);
        let incoming: Option<Vec<Value>> = parse_entries(&key.canonical);
        let mut best: Option<(usize, Option<usize>)> = None;
        for (index, turn) in self.fixture.turns.iter().enumerate() {
            if turn.caller.as_ref().is_some_and(|c| *c != key.caller) {
                continue;
            }
            let prefix = turn.canonical.as_deref().map(|recorded| {
                match (parse_entries(recorded), &incoming) {
                    (Some(recorded), Some(incoming)) => recorded
                        .iter()
                        .zip(incoming)
                        .take_while(|(a, b)| a == b)
                        .count(),
                    _ => 0,
                }
            });
            let better = match best {
                None => true,
                // Strictly longer prefix wins (`None` sorts below `Some(0)`); on a tie an unserved
                // turn beats a served one; otherwise the earlier turn stays.
                Some((best_index, best_prefix)) => {
                    prefix > best_prefix
                        || (prefix == best_prefix && served[best_index] && !served[index])
                }
            };
            if better {
                best = Some((index, prefix));
            }
        }
        let (turn_index, common_prefix) = best?;
        let turn = &self.fixture.turns[turn_index];
        let difference = turn
            .canonical
            .as_deref()
            .and_then(|recorded| match comparison {
                Comparison::AsHashed => canonical_difference(recorded, &key.canonical),
                Comparison::WithoutNames => {
                    let (recorded, incoming) = (parse_entries(recorded)?, incoming.clone()?);
                    first_difference(&Value::Array(recorded), &Value::Array(incoming), &[])
                }
            });
        // A miss report compares what was hashed: the stored text stands for the hashed one only
        // when it hashes to the turn's conversation hash.
        let canonical_rewritten = match (&turn.canonical, &turn.conversation_hash) {
            (Some(canonical), Some(hash)) => conversation_hash(canonical) != *hash,
            _ => false,
        };
        Some(NearestTurn {
            turn_index,
            input_hash: turn.input_hash.clone(),
            served: served[turn_index],
            common_prefix,
            difference,
            canonical_rewritten,
        })
    }
}

/// Lookups of calls that arrived at the model's wire (`docs/replay-and-fixtures.md` §11): the
/// conversation comes from the request body (`crate::wire` rebuilds the messages), and the caller,
/// which nothing on the wire names, is found among the fixture's callers when the request does not
/// carry it.
impl ReplayEngine {
    /// Serves a call that arrived at the wire: `messages` as
    /// the request's wire reads them (`model_wire::Wire::conversation`),
    /// `caller` when the request named one.
    ///
    /// With a caller this is [`ReplayEngine::lookup`]. Without one, the key is computed for each
    /// of the fixture's callers and the one whose key is recorded is
    /// used (a legacy, caller-less key serves any caller). When several are recorded the call is
    /// [`LookupError::AmbiguousCaller`]; when none is, the call misses under the caller of the
    /// recorded turn nearest to it, so the miss names the turn the run diverged from. A call
    /// without a caller whose key holds several different answers is
    /// [`LookupError::Ambiguous`], never a pick (§5.6).
    pub fn lookup_at_wire(
        &self,
        caller: Option<&str>,
        messages: &[Value],
    ) -> Result<Served, LookupError> {
        self.lookup_at_wire_compared(caller, messages, Comparison::AsHashed)
    }

    /// [`ReplayEngine::lookup_at_wire`], a miss's nearest turn (and the caller a call that
    /// names none misses under) found by comparing as `comparison` says.
    fn lookup_at_wire_compared(
        &self,
        caller: Option<&str>,
        messages: &[Value],
        comparison: Comparison,
    ) -> Result<Served, LookupError> {
        if let Some(caller) = caller {
            return self
                .serve_compared(replay_key(caller, messages), comparison)
                .map_err(|miss| LookupError::Miss(Box::new(miss)));
        }
        let canonical = canonical_conversation(messages);
        let conversation = conversation_hash(&canonical);
        self.lookup_conversation(None, canonical, conversation, comparison)
    }

    /// [`ReplayEngine::lookup_at_wire`] for a wire that carries no message names (Anthropic's
    /// Messages API, OpenAI's Responses API; `docs/replay-and-fixtures.md` §11.1). When the
    /// request's own key is recorded it is served as at any wire. Otherwise its **name-free key**
    /// is tried: the turn whose stored canonical conversation, with the messages' names left out
    /// (tool names stay: the wires carry them), equals the request's is served under its own
    /// recorded key. No such turn, or several different conversations that read the same
    /// without names, is the miss of the request's own key;
    /// [`name_free_key`](crate::name_free_key) says which name-free key was tried.
    pub fn lookup_at_wire_without_names(
        &self,
        caller: Option<&str>,
        messages: &[Value],
    ) -> Result<Served, LookupError> {
        let canonical = canonical_conversation(messages);
        let conversation = conversation_hash(&canonical);
        let recorded = self.is_recorded(&conversation)
            || match caller {
                Some(caller) => self.is_recorded(&input_hash(caller, &conversation)),
                None => self
                    .callers()
                    .iter()
                    .any(|caller| self.is_recorded(&input_hash(caller, &conversation))),
            };
        if recorded {
            return self.lookup_at_wire(caller, messages);
        }
        let wanted = name_free_entries(&canonical);
        let mut matches: Vec<(String, String)> = Vec::new();
        for turn in &self.fixture().turns {
            let Some(stored) = &turn.canonical else {
                continue;
            };
            if wanted.is_some() && name_free_entries(stored) == wanted {
                let hash = turn
                    .conversation_hash
                    .clone()
                    .unwrap_or_else(|| conversation_hash(stored));
                if !matches.iter().any(|(_, h)| *h == hash) {
                    matches.push((stored.clone(), hash));
                }
            }
        }
        match matches.as_slice() {
            [(stored, hash)] => {
                self.lookup_conversation(caller, stored.clone(), hash.clone(), Comparison::AsHashed)
            }
            // The miss (or ambiguity) of the request's own key, its report comparing without
            // names: the recorded turn's names are not what made it miss at this wire.
            _ => self.lookup_at_wire_compared(caller, messages, Comparison::WithoutNames),
        }
    }

    /// Serves the conversation `canonical` (hashed `conversation`) for `caller`, or for the one
    /// caller whose key is recorded when the request named none (see
    /// [`ReplayEngine::lookup_at_wire`]).
    fn lookup_conversation(
        &self,
        caller: Option<&str>,
        canonical: String,
        conversation: String,
        comparison: Comparison,
    ) -> Result<Served, LookupError> {
        if let Some(caller) = caller {
            let caller = normalize_caller(caller);
            let key = ReplayKey {
                input_hash: input_hash(&caller, &conversation),
                caller,
                canonical,
                conversation_hash: conversation,
            };
            return self
                .serve_compared(key, comparison)
                .map_err(|miss| LookupError::Miss(Box::new(miss)));
        }
        let recorded: Vec<&String> = self
            .callers()
            .iter()
            .filter(|caller| self.is_recorded(&input_hash(caller, &conversation)))
            .collect();
        let chosen = match recorded.as_slice() {
            [one] => (*one).clone(),
            [] if self.is_recorded(&conversation) => DEFAULT_CALLER.to_owned(),
            [] => self.nearest_caller(&canonical, comparison),
            _ => {
                return Err(LookupError::AmbiguousCaller {
                    callers: recorded.into_iter().cloned().collect(),
                    conversation_hash: conversation,
                    fixture_path: self.path().to_path_buf(),
                });
            }
        };
        // The conversation's part of the key is done: only the caller's part remains.
        let caller = normalize_caller(&chosen);
        let key = ReplayKey {
            input_hash: input_hash(&caller, &conversation),
            caller,
            canonical,
            conversation_hash: conversation,
        };
        self.lookup_inferred_compared(key, comparison)
    }

    /// The caller of the recorded turn whose canonical conversation shares the most leading
    /// messages with `canonical` (the first such turn on a tie); without stored canonical texts,
    /// `lead_agent` when the fixture has it, else its first caller.
    fn nearest_caller(&self, canonical: &str, comparison: Comparison) -> String {
        let entries = |text: &str| comparison.entries(text).unwrap_or_default();
        let incoming = entries(canonical);
        let mut best: Option<(usize, &str)> = None;
        for turn in &self.fixture().turns {
            let (Some(caller), Some(recorded)) = (&turn.caller, &turn.canonical) else {
                continue;
            };
            let common = entries(recorded)
                .iter()
                .zip(&incoming)
                .take_while(|(a, b)| a == b)
                .count();
            if best.is_none_or(|(longest, _)| common > longest) {
                best = Some((common, caller));
            }
        }
        if let Some((_, caller)) = best {
            return caller.to_owned();
        }
        let callers = self.callers();
        if callers.is_empty() || callers.iter().any(|c| c == DEFAULT_CALLER) {
            DEFAULT_CALLER.to_owned()
        } else {
            callers[0].clone()
        }
    }
}

/// How a miss's report compares the call with the recorded turns: as the key hashed them, or,
/// at a wire that carries no message names, with the messages' names left out on both sides
/// (the recorded turn's `name: "user-input"` is not the difference that made it miss there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Comparison {
    /// The canonical entries as hashed.
    AsHashed,
    /// The canonical entries with the messages' names left out (a tool's name stays).
    WithoutNames,
}

impl Comparison {
    /// The canonical text's entries as this comparison reads them; `None` when it is not a list.
    pub(crate) fn entries(self, canonical: &str) -> Option<Vec<Value>> {
        match self {
            Comparison::AsHashed => parse_entries(canonical),
            Comparison::WithoutNames => name_free_entries(canonical),
        }
    }
}

fn parse_entries(canonical: &str) -> Option<Vec<Value>> {
    match serde_json::from_str(canonical) {
        Ok(Value::Array(entries)) => Some(entries),
        _ => None,
    }
}

/// The first differing field of two canonical texts. Normalisation rule 8 can, rarely, eat a
/// backslash and leave invalid JSON; then the first differing character is reported instead.
fn canonical_difference(recorded: &str, incoming: &str) -> Option<Difference> {
    match (
        serde_json::from_str::<Value>(recorded),
        serde_json::from_str::<Value>(incoming),
    ) {
        (Ok(recorded), Ok(incoming)) => first_difference(&recorded, &incoming, &[]),
        _ => {
            let offset = recorded
                .chars()
                .zip(incoming.chars())
                .take_while(|(a, b)| a == b)
                .count();
            if recorded == incoming {
                return None;
            }
            let tail = |text: &str| Value::String(text.chars().skip(offset).collect());
            Some(Difference {
                path: format!("<character {offset}>"),
                recorded: Some(tail(recorded)),
                incoming: Some(tail(incoming)),
            })
        }
    }
}

/// A value shown in diagnostics: compact Python-style JSON, cut to a readable length.
fn short_value(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "<missing>".to_owned();
    };
    shorten(&to_python_json(value), DIAGNOSTIC_VALUE_CHARS).into_owned()
}

impl Miss {
    /// Bounds the miss for a ledger that keeps many (issue 34, finding 9): its key, caller,
    /// fixture and nearest turn (with its first difference's path) stay whole; the canonical
    /// conversation, a difference value and the known keys past `max` bytes are cut, saying so.
    pub fn cut_to(&mut self, max: usize) {
        self.canonical = cut_text(&self.canonical, max);
        let keys: usize = self.known_hashes.iter().map(String::len).sum();
        if keys > max {
            let kept = self
                .known_hashes
                .iter()
                .scan(0usize, |bytes, key| {
                    *bytes += key.len();
                    Some(*bytes <= max)
                })
                .take_while(|fits| *fits)
                .count();
            let cut = self.known_hashes.len() - kept;
            self.known_hashes.truncate(kept);
            self.known_hashes.push(format!("[{cut} more keys cut]"));
        }
        if let Some(difference) = self.nearest.as_mut().and_then(|n| n.difference.as_mut()) {
            difference.cut_to(max);
        }
    }
}

impl Miss {
    /// The miss in the words of the installed `keyless` command, to a user of any gateway
    /// (issue 47): which call missed (the caller as the gateway named it, or its own request
    /// when it sent no caller header), the first differing field with the messages' roles as a
    /// chat API names them, and the next step. No DeerFlow vocabulary and no canonical text: the
    /// JSON output and the model server's ledger keep DeerFlow's message ([`Miss`]'s `Display`).
    pub fn in_plain_words(&self) -> String {
        let caller = if self.caller == DEFAULT_CALLER {
            format!(
                "the gateway's request (it sent no {CALLER_HEADER} header naming another caller)"
            )
        } else {
            format!("{} (its {CALLER_HEADER} header)", python_repr(&self.caller))
        };
        let mut out = format!(
            "replay miss: no recorded output in {} for a model call of {caller}, key {}",
            self.fixture_path.display(),
            first_chars(&self.input_hash, 16),
        );
        let Some(nearest) = &self.nearest else {
            out.push_str(
                "\nthe fixture records no call of this caller: the gateway calls its model \
                 where it did not when the fixture was recorded; record the fixture again \
                 (keyless record) if that is intended",
            );
            return out;
        };
        let turn = format!(
            "recorded turn {} ({})",
            nearest.turn_index,
            if nearest.served {
                "already answered in this run"
            } else {
                "not yet answered"
            }
        );
        match (&nearest.difference, nearest.common_prefix) {
            (None, Some(_)) if nearest.canonical_rewritten => out.push_str(&format!(
                "\nthe nearest {turn} reads the same, but recording redacted a credential-shaped \
                 value in it: the conversations differ where the recording shows \
                 \"[secret removed]\""
            )),
            (Some(difference), _) => out.push_str(&format!(
                "\nfirst differing field: {} (against the nearest {turn}): recorded {}, \
                 incoming {}",
                plain_path(&difference.path),
                plain_value(&difference.path, difference.recorded.as_ref()),
                plain_value(&difference.path, difference.incoming.as_ref()),
            )),
            (None, Some(_)) => out.push_str(&format!(
                "\nthe conversation is the one of the nearest {turn}, but that turn was recorded \
                 for another caller"
            )),
            (None, None) => out.push_str(&format!(
                "\nthe nearest is {turn}, but the fixture stores no conversation text to compare \
                 with: record it again (keyless record) to see the first differing field"
            )),
        }
        out.push_str(
            "\nnext: if the gateway changed that on purpose, record the fixture again (keyless \
             record); otherwise fix what changed it",
        );
        out
    }

    /// Whether this call's conversation carries on from `earlier`'s (it starts with every
    /// message `earlier` sent): after `earlier` missed, the gateway went on with whatever it
    /// did instead of the recorded answer, so this call could not match the recording either.
    /// It is a consequence of `earlier`, and fixing `earlier` fixes it.
    pub fn continues(&self, earlier: &Miss) -> bool {
        match (
            parse_entries(&self.canonical),
            parse_entries(&earlier.canonical),
        ) {
            (Some(later), Some(earlier)) => {
                !earlier.is_empty() && later.len() > earlier.len() && later.starts_with(&earlier)
            }
            _ => false,
        }
    }
}

/// The roles a chat API names, for the canonical conversation's message types (LangChain's).
const PLAIN_ROLES: [(&str, &str); 4] = [
    ("human", "user"),
    ("ai", "assistant"),
    ("system", "system"),
    ("tool", "tool"),
];

/// A canonical field path with a message's `type` named `role`, as a chat API names it.
fn plain_path(path: &str) -> String {
    match path.strip_suffix(".type") {
        Some(message) => format!("{message}.role"),
        None => path.to_owned(),
    }
}

/// A differing value at `path` as [`short_value`] shows it (as JSON), a message's `type`
/// shown as its `role`.
fn plain_value(path: &str, value: Option<&Value>) -> String {
    fn plain(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| {
                        let role = (PLAIN_ROLES.iter())
                            .find(|(kind, _)| key == "type" && value.as_str() == Some(kind));
                        match role {
                            Some((_, role)) => ("role".to_owned(), Value::from(*role)),
                            None => (key.clone(), plain(value)),
                        }
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(plain).collect()),
            other => other.clone(),
        }
    }
    let Some(value) = value else {
        return "<missing>".to_owned();
    };
    let role = (value.as_str().filter(|_| path.ends_with(".type")))
        .and_then(|text| PLAIN_ROLES.iter().find(|(kind, _)| *kind == text));
    if let Some((_, role)) = role {
        return format!("{role:?}");
    }
    shorten(&plain(value).to_string(), DIAGNOSTIC_VALUE_CHARS).into_owned()
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<String> = self.known_hashes.iter().map(|k| python_repr(k)).collect();
        write!(
            f,
            "replay miss: no recorded output for input hash {} in {}. The replayed run diverged \
             from the recording (graph changed, a non-deterministic tool result altered a \
             downstream input, or a volatile field slipped past normalization). Caller: {}. \
             Known hashes: [{}]. Normalized input (first 800 chars): {}",
            self.input_hash,
            python_repr(&self.fixture_path.display().to_string()),
            python_repr(&self.caller),
            known.join(", "),
            python_repr(first_chars(&self.canonical, MISS_CANONICAL_CHARS)),
        )?;
        let Some(nearest) = &self.nearest else {
            return write!(
                f,
                "\nno recorded turn for caller {}",
                python_repr(&self.caller)
            );
        };
        write!(
            f,
            "\nnearest recorded turn for caller {}: turn {} (input hash {}…, {}",
            python_repr(&self.caller),
            nearest.turn_index,
            first_chars(&nearest.input_hash, 12),
            if nearest.served {
                "already served"
            } else {
                "unused"
            },
        )?;
        if let Some(prefix) = nearest.common_prefix {
            write!(f, ", {prefix} leading message(s) in common")?;
        }
        f.write_str(")")?;
        match (&nearest.difference, nearest.common_prefix) {
            (None, Some(_)) if nearest.canonical_rewritten => f.write_str(
                "\nthe turn's stored \"canonical\" reads the same, but it is not the text its key \
                 was hashed from (recording redacted a credential-shaped value in it), so the \
                 conversations differ where the recording shows \"[secret removed]\"",
            ),
            (Some(difference), _) => write!(
                f,
                "\nfirst differing field: {}: recorded {}, incoming {}",
                difference.path,
                short_value(difference.recorded.as_ref()),
                short_value(difference.incoming.as_ref()),
            ),
            (None, Some(_)) => {
                f.write_str("\nthe recorded conversation is identical; only the caller differs")
            }
            (None, None) => f.write_str(
                "\nthe turn stores no \"canonical\"; rebuild the fixture to see the first \
                 differing field",
            ),
        }
    }
}

impl std::error::Error for Miss {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::{canonical_conversation, conversation_hash};
    use crate::fixture::Turn;
    use crate::scenario::{Scenario, UiMode};
    use serde_json::json;

    fn human(text: &str) -> Value {
        json!({"type": "human", "content": text, "name": "user-input"})
    }

    fn ai_output(text: &str) -> Value {
        json!({"type": "ai", "data": {"content": text, "type": "ai", "tool_calls": []}})
    }

    /// A turn recorded for `caller` with `messages`, optionally storing the canonical text.
    fn turn(caller: &str, messages: &[Value], answer: &str, with_canonical: bool) -> Turn {
        let key = replay_key(caller, messages);
        Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            answer: Answer::Output(ai_output(answer)),
            canonical: with_canonical.then_some(key.canonical),
        }
    }

    fn fixture(turns: Vec<Turn>) -> Fixture {
        Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            turns,
            provenance: None,
            exchanges: Vec::new(),
        }
    }

    fn engine(turns: Vec<Turn>) -> ReplayEngine {
        ReplayEngine::new(fixture(turns), "fixtures/s.flash.json").expect("valid fixture")
    }

    fn answer(served: &Served) -> &str {
        match &served.answer {
            Answer::Output(output) => output["data"]["content"].as_str().unwrap_or_default(),
            Answer::Error(error) => &error.message,
        }
    }

    #[test]
    fn duplicate_keys_are_served_fifo_then_miss() {
        let hi = [human("hi")];
        let engine = engine(vec![
            turn("lead_agent", &hi, "first", false),
            turn("suggest_agent", &hi, "other caller", false),
            turn("lead_agent", &hi, "second", false),
        ]);
        let first = engine.lookup("", &hi).expect("first");
        assert_eq!((first.turn_index, answer(&first)), (0, "first"));
        let second = engine.lookup("lead_agent", &hi).expect("second");
        assert_eq!((second.turn_index, answer(&second)), (2, "second"));
        let miss = engine.lookup("lead_agent", &hi).expect_err("exhausted");
        assert_eq!(miss.input_hash, replay_key("lead_agent", &hi).input_hash);
        assert_eq!(engine.unused_turns(), vec![1]);
        let suggest = engine
            .lookup("suggest_agent", &hi)
            .expect("caller keeps keys apart");
        assert_eq!(suggest.turn_index, 1);
        assert!(engine.unused_turns().is_empty());
        assert_eq!(engine.misses().len(), 1);
    }

    #[test]
    fn a_turn_given_back_is_served_again_before_the_next_of_its_key() {
        // A fault scenario refused the call turn 0 was served to; its retry gets turn 0 again.
        let hi = [human("hi")];
        let engine = engine(vec![
            turn("lead_agent", &hi, "first", false),
            turn("lead_agent", &hi, "second", false),
        ]);
        let refused = engine.lookup("lead_agent", &hi).expect("first");
        engine.give_back(refused.turn_index);
        assert_eq!(engine.unused_turns(), vec![0, 1]);
        let served: Vec<usize> = (0..2)
            .map(|_| engine.lookup("lead_agent", &hi).expect("served").turn_index)
            .collect();
        assert_eq!(served, [0, 1]);
        engine.give_back(99);
        assert!(
            engine.unused_turns().is_empty(),
            "an unknown turn is ignored"
        );
    }

    /// A turn like [`turn`] with its answer given as JSON (`data` of the output).
    fn turn_saying(caller: &str, messages: &[Value], data: Value) -> Turn {
        Turn {
            answer: Answer::Output(json!({"type": "ai", "data": data})),
            ..turn(caller, messages, "", true)
        }
    }

    #[test]
    fn a_key_with_different_answers_is_ambiguous_unless_the_caller_is_named() {
        let hi = [human("hi")];
        let text = |t: &str| json!({"content": t, "type": "ai", "tool_calls": []});
        let with_id = |t: &str, id: &str| json!({"content": t, "type": "ai", "id": id});
        let call = json!({"content": "", "type": "ai", "tool_calls": [{"name": "ls", "args": {"path": "/"}, "id": "c1"}]});
        let failed = Turn {
            answer: Answer::Error(crate::fixture::RecordedError {
                error_type: "RateLimitError".into(),
                message: "slow down".into(),
                status: Some(429),
                in_stream: false,
            }),
            ..turn("lead_agent", &hi, "", true)
        };
        // (name, the key's turns, ambiguous for a call that names no caller)
        let cases: Vec<(&str, Vec<Turn>, bool)> = vec![
            (
                "two texts",
                vec![
                    turn_saying("lead_agent", &hi, text("a")),
                    turn_saying("lead_agent", &hi, text("b")),
                ],
                true,
            ),
            (
                "a text and a tool call",
                vec![
                    turn_saying("lead_agent", &hi, text("")),
                    turn_saying("lead_agent", &hi, call.clone()),
                ],
                true,
            ),
            (
                "the same answer under other ids",
                vec![
                    turn_saying("lead_agent", &hi, with_id("a", "run-1")),
                    turn_saying("lead_agent", &hi, with_id("a", "run-2")),
                ],
                false,
            ),
            (
                "a failure, then the retry's answer",
                vec![failed.clone(), turn_saying("lead_agent", &hi, text("a"))],
                false,
            ),
            (
                "one answer",
                vec![turn_saying("lead_agent", &hi, text("a"))],
                false,
            ),
        ];
        for (name, turns, ambiguous) in cases {
            let engine = engine(turns);
            let unnamed = engine.lookup_unnamed(&hi);
            match (&unnamed, ambiguous) {
                (Err(LookupError::Ambiguous(ambiguity)), true) => {
                    assert_eq!(ambiguity.turns, [0, 1], "{name}");
                    let message = ambiguity.to_string();
                    assert!(
                        message.contains("turn 0: ")
                            && message.contains("; turn 1: ")
                            && message.contains(CALLER_HEADER),
                        "{name}: {message}"
                    );
                    assert_eq!(engine.ambiguities(), [(**ambiguity).clone()], "{name}");
                    assert_eq!(engine.unused_turns(), [0, 1], "{name}: nothing was served");
                }
                (Ok(served), false) => assert_eq!(served.turn_index, 0, "{name}"),
                other => panic!("{name}: {other:?}"),
            }
            // A named caller is served in recorded order either way.
            let named = engine.lookup("lead_agent", &hi);
            assert!(named.is_ok() || !ambiguous, "{name}: {named:?}");
        }
    }

    #[test]
    fn legacy_fixture_falls_back_to_the_conversation_hash() {
        let hi = [human("hi")];
        let canonical = canonical_conversation(&hi);
        let legacy = Turn {
            caller: None,
            conversation_hash: None,
            input_hash: conversation_hash(&canonical),
            answer: Answer::Output(ai_output("legacy")),
            canonical: None,
        };
        let engine = engine(vec![legacy]);
        let served = engine.lookup("title_agent", &hi).expect("legacy key");
        assert_eq!(answer(&served), "legacy");
        assert_eq!(served.key.caller, "middleware:title");
        // Exhausted legacy key: the miss records the legacy key (§5.4 step 1).
        let miss = engine.lookup("lead_agent", &hi).expect_err("exhausted");
        assert_eq!(miss.input_hash, conversation_hash(&canonical));
        assert!(
            miss.to_string().starts_with(&format!(
                "replay miss: no recorded output for input hash {} in 'fixtures/s.flash.json'.",
                conversation_hash(&canonical)
            )),
            "{miss}"
        );
        // A conversation the table does not know records the caller-aware key.
        let other = [human("other")];
        let miss = engine.lookup("lead_agent", &other).expect_err("unknown");
        assert_eq!(miss.input_hash, replay_key("lead_agent", &other).input_hash);
    }

    #[test]
    fn miss_ledgers_are_per_engine() {
        let hi = [human("hi")];
        let a = engine(vec![turn("lead_agent", &hi, "a", false)]);
        let b = engine(vec![turn("lead_agent", &hi, "b", false)]);
        a.lookup("lead_agent", &[human("nope")])
            .expect_err("miss in a");
        assert_eq!(a.misses().len(), 1);
        assert!(b.misses().is_empty());
        b.lookup("lead_agent", &hi).expect("b unaffected");
        assert!(b.misses().is_empty());
        let taken = a.take_misses();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].canonical, canonical_conversation(&[human("nope")]));
        assert!(a.misses().is_empty());
    }

    /// Writes down what it hears, as `served <turn> <caller>` and `missed <caller>`.
    #[derive(Debug, Default)]
    struct Notes(Mutex<Vec<String>>);

    impl ReplayObserver for Notes {
        fn served(&self, served: &Served) {
            let note = format!("served {} {}", served.turn_index, served.key.caller);
            self.0.lock().push(note);
        }
        fn missed(&self, miss: &Miss) {
            self.0.lock().push(format!("missed {}", miss.caller));
        }
    }

    #[test]
    fn an_observer_hears_each_lookup_as_it_is_decided() {
        let hi = [human("hi")];
        let notes = Arc::new(Notes::default());
        let engine = engine(vec![
            turn("lead_agent", &hi, "a", false),
            turn("suggest_agent", &hi, "b", false),
        ])
        .with_observer(notes.clone());
        engine.lookup("suggest_agent", &hi).expect("hit");
        assert_eq!(*notes.0.lock(), ["served 1 suggest_agent"]);
        engine.lookup("suggest_agent", &hi).expect_err("exhausted");
        engine.lookup("lead_agent", &hi).expect("hit");
        assert_eq!(
            *notes.0.lock(),
            [
                "served 1 suggest_agent",
                "missed suggest_agent",
                "served 0 lead_agent"
            ]
        );
    }

    /// Issue 47: a miss in plain words names the call's caller as the gateway's own request when
    /// no header named one, shows a message's `type` as its `role` and names the next step,
    /// without DeerFlow's vocabulary; a later call whose conversation carries on from a missed
    /// one is its consequence, an unrelated one is not.
    #[test]
    fn a_miss_in_plain_words_and_its_consequences() {
        let recorded = [
            human("hi"),
            json!({"type": "ai", "content": "hello"}),
            human("more"),
        ];
        let engine = engine(vec![
            turn("lead_agent", &recorded[..1], "hello", true),
            turn("lead_agent", &recorded, "ok", true),
        ]);
        let first = [json!({"type": "ai", "content": "hi", "name": "user-input"})];
        let missed = engine.lookup("", &first).expect_err("a miss");
        let words = missed.in_plain_words();
        for says in [
            "no recorded output in fixtures/s.flash.json",
            "the gateway's request (it sent no x-keyless-caller header",
            "first differing field: [0].role (against the nearest recorded turn 0",
            "recorded \"user\", incoming \"assistant\"",
            "record the fixture again (keyless record)",
        ] {
            assert!(words.contains(says), "{says:?} not in {words}");
        }
        for never in ["lead_agent", "graph changed", "'type'", "Normalized input"] {
            assert!(!words.contains(never), "{never:?} in {words}");
        }
        let named = engine.lookup("critic", &first).expect_err("a miss");
        assert!(
            named
                .in_plain_words()
                .contains("'critic' (its x-keyless-caller header)")
        );

        let follow_up = [
            first[0].clone(),
            json!({"type": "ai", "content": "sorry"}),
            human("more"),
        ];
        let later = engine.lookup("", &follow_up).expect_err("a miss");
        assert!(later.continues(&missed));
        assert!(!missed.continues(&later));
        let unrelated = engine.lookup("", &[human("other")]).expect_err("a miss");
        assert!(!unrelated.continues(&missed));
    }

    #[test]
    fn miss_message_is_deerflows_with_diagnostics() {
        let conversation = vec![
            human("write it"),
            json!({"type": "ai", "content": "", "tool_calls": [
                {"name": "write_file", "args": {"path": "/mnt/a.txt", "content": "hi"}, "id": "c1"}
            ]}),
            json!({"type": "tool", "content": "OK", "name": "write_file"}),
        ];
        let mut changed = conversation.clone();
        changed[1]["tool_calls"][0]["args"]["path"] = json!("/mnt/b.txt");
        let engine = engine(vec![
            turn("lead_agent", &conversation[..1], "call", true),
            turn("middleware:title", &conversation, "title", true),
            turn("lead_agent", &conversation, "done", true),
        ]);
        // Turns 0 and 2 both share one leading message with the changed call; serving turn 0
        // first makes the unused turn 2 win the tie.
        engine
            .lookup("lead_agent", &conversation[..1])
            .expect("turn 0");
        let miss = engine
            .lookup("lead_agent", &changed)
            .expect_err("changed args");
        let message = miss.to_string();
        let known = engine.known_hashes();
        let expected_head = format!(
            "replay miss: no recorded output for input hash {} in 'fixtures/s.flash.json'. The replayed run diverged from the recording (graph changed, a non-deterministic tool result altered a downstream input, or a volatile field slipped past normalization). Caller: 'lead_agent'. Known hashes: ['{}', '{}', '{}']. Normalized input (first 800 chars): '{}'",
            miss.input_hash, known[0], known[1], known[2], miss.canonical,
        );
        let mut lines = message.lines();
        assert_eq!(lines.next(), Some(expected_head.as_str()));
        assert_eq!(
            lines.next(),
            Some(
                format!(
                    "nearest recorded turn for caller 'lead_agent': turn 2 (input hash {}…, unused, 1 leading message(s) in common)",
                    &known[2][..12]
                )
                .as_str()
            )
        );
        assert_eq!(
            lines.next(),
            Some(
                "first differing field: [1].tool_calls[0].args.path: recorded \"/mnt/a.txt\", incoming \"/mnt/b.txt\""
            )
        );
        assert_eq!(lines.next(), None);
        let nearest = miss.nearest.expect("nearest");
        assert_eq!(nearest.turn_index, 2);
        assert_eq!(nearest.common_prefix, Some(1));
    }

    #[test]
    fn a_miss_report_compares_what_was_hashed_not_the_redacted_text() {
        // The recorded call saw a credential-shaped value; its stored canonical text was
        // redacted, the key was hashed from the original.
        let lived = [human("the upstream said: Bearer abcd1234efgh5678")];
        let key = replay_key("lead_agent", &lived);
        let stored = crate::recording::redact_text(&key.canonical);
        assert_ne!(stored, key.canonical, "the recording rewrote it");
        let recorded = Turn {
            canonical: Some(stored),
            ..turn("lead_agent", &lived, "x", true)
        };
        let engine = engine(vec![recorded]);
        // A replay that lives the redacted conversation reads the same as the stored text.
        let replayed = [human("the upstream said: [secret removed]")];
        let miss = engine
            .lookup("lead_agent", &replayed)
            .expect_err("other hash");
        let message = miss.to_string();
        assert!(
            !message.contains("the recorded conversation is identical"),
            "{message}"
        );
        assert!(
            message.contains("it is not the text its key was hashed from"),
            "{message}"
        );
    }

    #[test]
    fn miss_message_quotes_and_truncates_like_python() {
        let long = "x".repeat(900);
        let engine = engine(vec![]);
        let miss = engine
            .lookup("it's", &[human(&long)])
            .expect_err("empty fixture");
        let message = miss.to_string();
        assert!(
            message.contains("Caller: \"it's\". Known hashes: []. "),
            "{message}"
        );
        let shown = format!(
            "Normalized input (first 800 chars): '{}'\n",
            first_chars(&miss.canonical, 800)
        );
        assert!(message.contains(&shown), "{message}");
        assert!(
            message.ends_with("\nno recorded turn for caller \"it's\""),
            "{message}"
        );
    }

    #[test]
    fn nearest_turn_choice() {
        let one = [human("q")];
        let two = [human("q"), json!({"type": "ai", "content": "a"})];
        /// (name, turns, serve the first turn recorded for `one` first, query, expected nearest)
        type Case = (&'static str, Vec<Turn>, bool, Vec<Value>, Option<usize>);
        let cases: Vec<Case> = vec![
            (
                "longest common prefix wins",
                vec![
                    turn("lead_agent", &[human("other")], "x", true),
                    turn("lead_agent", &one, "x", true),
                ],
                false,
                vec![human("q"), json!({"type": "ai", "content": "b"})],
                Some(1),
            ),
            (
                "served turns lose ties to unused ones",
                vec![
                    turn("lead_agent", &one, "x", true),
                    turn("lead_agent", &one, "x", true),
                    turn("lead_agent", &[human("zzz")], "x", false),
                ],
                true,
                vec![human("q2")],
                Some(1),
            ),
            (
                "without canonical: first unused turn of the caller",
                vec![
                    turn("suggest_agent", &one, "x", false),
                    turn("lead_agent", &one, "x", false),
                    turn("lead_agent", &two, "x", false),
                ],
                true,
                vec![human("zzz")],
                Some(2),
            ),
        ];
        for (name, turns, serve_first, query, expected) in cases {
            let engine = engine(turns);
            // Optionally serve the first turn recorded for `one` before the miss.
            if serve_first {
                engine.lookup("lead_agent", &one).expect("setup serve");
            }
            let miss = engine.lookup("lead_agent", &query).expect_err(name);
            assert_eq!(miss.nearest.map(|n| n.turn_index), expected, "{name}");
        }
    }

    #[test]
    fn legacy_turns_count_for_any_caller_and_report_missing_canonical() {
        let legacy = Turn {
            caller: None,
            conversation_hash: None,
            input_hash: "deadbeef".to_owned(),
            answer: Answer::Output(ai_output("x")),
            canonical: None,
        };
        let engine = engine(vec![legacy]);
        let miss = engine
            .lookup("suggest_agent", &[human("q")])
            .expect_err("miss");
        let message = miss.to_string();
        assert!(message.contains("Known hashes: ['deadbeef']"), "{message}");
        assert!(
            message.contains("\nnearest recorded turn for caller 'suggest_agent': turn 0 (input hash deadbeef…, unused)\nthe turn stores no \"canonical\""),
            "{message}"
        );
    }

    #[test]
    fn construction_validates_outputs() {
        let mut bad = turn("lead_agent", &[human("q")], "x", false);
        bad.answer = Answer::Output(json!({"type": "human", "data": {"content": "x"}}));
        let err = ReplayEngine::new(fixture(vec![bad]), "f.json").expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "replay fixture 'f.json' turn 0 output is HumanMessage, expected AIMessage"
        );
    }
}

#[cfg(test)]
mod wire_tests {
    use super::*;
    use crate::fixture::Turn;
    use crate::scenario::{Scenario, UiMode};
    use model_wire::chat_completions::read_conversation as messages_from_chat_completions;
    use serde_json::json;

    fn human(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn turn(caller: &str, wire: &[Value]) -> Turn {
        let key = replay_key(caller, &messages_from_chat_completions(wire));
        Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            answer: Answer::Output(
                json!({"type": "ai", "data": {"content": caller, "type": "ai"}}),
            ),
            canonical: Some(key.canonical),
        }
    }

    fn engine(turns: Vec<Turn>) -> ReplayEngine {
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            turns,
            provenance: None,
            exchanges: Vec::new(),
        };
        ReplayEngine::new(fixture, "fixtures/s.flash.json").expect("valid fixture")
    }

    #[test]
    fn the_caller_is_the_one_whose_key_is_recorded() {
        let engine = engine(vec![
            turn("lead_agent", &[human("q")]),
            turn("middleware:title", &[human("title prompt")]),
            turn("suggest_agent", &[human("suggest prompt")]),
        ]);
        assert_eq!(
            engine.callers(),
            ["lead_agent", "middleware:title", "suggest_agent"]
        );
        for (wire, served_turn) in [("title prompt", 1), ("q", 0), ("suggest prompt", 2)] {
            let messages = messages_from_chat_completions(&[human(wire)]);
            let served = engine.lookup_at_wire(None, &messages).expect(wire);
            assert_eq!(served.turn_index, served_turn, "{wire}");
        }
        assert!(engine.misses().is_empty());
    }

    #[test]
    fn a_named_caller_wins_and_can_miss() {
        let engine = engine(vec![turn("lead_agent", &[human("q")])]);
        let messages = messages_from_chat_completions(&[human("q")]);
        let error = engine
            .lookup_at_wire(Some("suggest_agent"), &messages)
            .expect_err("the key of another caller");
        let LookupError::Miss(miss) = error else {
            panic!("{error}")
        };
        assert_eq!(miss.caller, "suggest_agent");
        assert_eq!(engine.misses().len(), 1);
    }

    #[test]
    fn a_conversation_recorded_for_two_callers_is_ambiguous() {
        let engine = engine(vec![
            turn("lead_agent", &[human("same")]),
            turn("suggest_agent", &[human("same")]),
        ]);
        let messages = messages_from_chat_completions(&[human("same")]);
        let error = engine.lookup_at_wire(None, &messages).expect_err("two");
        let message = error.to_string();
        assert!(
            matches!(&error, LookupError::AmbiguousCaller { callers, .. } if callers == &["lead_agent", "suggest_agent"]),
            "{error:?}"
        );
        assert!(
            message.contains(
                "for 2 callers in 'fixtures/s.flash.json' ('lead_agent', 'suggest_agent')"
            ),
            "{message}"
        );
        assert!(
            engine.misses().is_empty(),
            "an ambiguity is not a miss: nothing was looked up"
        );
        // Naming the caller settles it.
        let served = engine
            .lookup_at_wire(Some("suggest_agent"), &messages)
            .expect("named");
        assert_eq!(served.turn_index, 1);
    }

    fn turn_answering(caller: &str, wire: &[Value], answer: &str) -> Turn {
        Turn {
            answer: Answer::Output(
                json!({"type": "ai", "data": {"content": answer, "type": "ai"}}),
            ),
            ..turn(caller, wire)
        }
    }

    #[test]
    fn one_key_with_two_answers_is_ambiguous_without_a_caller_and_served_with_one() {
        // Two parallel nodes recorded without a caller header: both under `lead_agent`.
        let engine = engine(vec![
            turn_answering("lead_agent", &[human("same")], "from node a"),
            turn_answering("lead_agent", &[human("same")], "from node b"),
        ]);
        let messages = messages_from_chat_completions(&[human("same")]);
        for _ in 0..2 {
            let error = engine
                .lookup_at_wire(None, &messages)
                .expect_err("ambiguous");
            let LookupError::Ambiguous(ambiguity) = &error else {
                panic!("{error:?}")
            };
            assert_eq!(ambiguity.turns, [0, 1]);
            assert!(error.to_string().contains(CALLER_HEADER), "{error}");
        }
        assert_eq!(engine.ambiguities().len(), 2);
        assert!(engine.misses().is_empty());
        let named = engine
            .lookup_at_wire(Some("lead_agent"), &messages)
            .expect("named");
        assert_eq!(named.turn_index, 0);
    }

    #[test]
    fn a_miss_is_reported_under_the_caller_of_the_nearest_turn() {
        let engine = engine(vec![
            turn("lead_agent", &[human("first question")]),
            turn(
                "suggest_agent",
                &[
                    human("suggest"),
                    json!({"role": "assistant", "content": "a"}),
                ],
            ),
        ]);
        let drifted = messages_from_chat_completions(&[
            human("suggest"),
            json!({"role": "assistant", "content": "b"}),
        ]);
        let LookupError::Miss(miss) = engine.lookup_at_wire(None, &drifted).unwrap_err() else {
            panic!("expected a miss")
        };
        assert_eq!(miss.caller, "suggest_agent");
        let text = miss.to_string();
        assert!(
            text.contains("first differing field: [1].content: recorded \"a\", incoming \"b\""),
            "{text}"
        );
        // Served turns stay known: asking again for a served key misses under its caller.
        let question = messages_from_chat_completions(&[human("first question")]);
        engine.lookup_at_wire(None, &question).expect("first time");
        let LookupError::Miss(again) = engine.lookup_at_wire(None, &question).unwrap_err() else {
            panic!("expected a miss")
        };
        assert_eq!(again.caller, "lead_agent");
        assert_eq!(engine.misses().len(), 2);
    }

    #[test]
    fn legacy_keys_serve_any_caller() {
        let key = replay_key("lead_agent", &messages_from_chat_completions(&[human("q")]));
        let legacy = Turn {
            caller: None,
            conversation_hash: None,
            input_hash: key.conversation_hash,
            answer: Answer::Output(json!({"type": "ai", "data": {"content": "x", "type": "ai"}})),
            canonical: None,
        };
        let engine = engine(vec![legacy]);
        let messages = messages_from_chat_completions(&[human("q")]);
        assert_eq!(
            engine
                .lookup_at_wire(None, &messages)
                .expect("legacy")
                .turn_index,
            0
        );
    }
}
