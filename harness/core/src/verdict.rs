//! The Layer 1 verdict (`docs/replay-and-fixtures.md` §8.3): one typed answer to "did this replay
//! pass?", computed once and read by every runner (the golden test, the drift tests, `cargo xtask
//! replay`, `cargo xtask fixtures check`) instead of each re-deriving it from text.
//!
//! A replay passes when its stream is framed as its dialect demands, the replay model
//! missed nothing (the gateway's error middleware hides misses from the stream, so the engine's
//! ledger is the gate), no call that named no caller met a key with several different answers
//! (an [`Ambiguity`], never a silent pick), the model side reported no other problem (a model server at the wire can
//! also see a strict-replay mismatch, an ambiguous caller or an unreadable request), and its
//! shapes equal the committed golden. A fixture with no recorded turn fails: its replay proves
//! nothing. So does a run that used none of the fixture's turns, or none of the lead caller's
//! (the caller that drives the conversation): its gateway's model was not the replay (issue 34,
//! finding 1). Other unused turns are reported, not failed (§5.5; DeerFlow's own fixture records
//! a title turn its hermetic configuration never asks for), unless [`UnusedTurns::Strict`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::canonical::DEFAULT_CALLER;
use crate::exchange::{ExchangeMiss, UnusedExchange};
use crate::replay::{Ambiguity, Miss};

/// How a conversation's event streams are framed, judged by its dialect's rule (the runner's
/// `driver::Protocol`; `docs/testing-your-own-gateway.md`, "The dialects"), which names the
/// frames it expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// The stream is framed as its dialect demands.
    Ok,
    /// The dialect's framing rule broken in one run (the first that breaks it).
    Violated {
        /// The run (0: the prompt, then each follow-up).
        run: usize,
        /// What is wrong, in the dialect's words.
        problem: FramingProblem,
    },
}

/// How a run broke its dialect's framing rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingProblem {
    /// The first frame is not the one the dialect opens with.
    First {
        /// The frame(s) it must be, e.g. `start`.
        expected: String,
        /// The frame's name (`None`: no frame, or one without a name).
        got: Option<String>,
    },
    /// The last frame is not the one the dialect closes with.
    Last {
        /// The frame(s) it must be, e.g. `[DONE]`.
        expected: String,
        /// The frame's name.
        got: Option<String>,
    },
    /// A frame came where the protocol does not allow it.
    OutOfOrder {
        /// Its position in the run (0-based).
        position: usize,
        /// Its name.
        frame: String,
        /// What must come before it (or not at all), e.g. `"finish" right before "[DONE]"`.
        expected: String,
    },
    /// The stream carried an error frame or part although the fixture records no model error
    /// (the server failed the run for a reason of its own).
    ErrorFrame {
        /// The frame's name (`error`, `RUN_ERROR`, …).
        frame: String,
        /// Its data, cut short.
        data: String,
    },
    /// A frame the protocol's client rejects (an unknown event type, a missing field, data
    /// that is not JSON).
    Invalid {
        /// What the client would reject, naming the frame.
        problem: String,
    },
    /// A response header the protocol's client relies on is missing or has another value.
    Header {
        /// The header's name.
        name: String,
        /// The value it must have.
        expected: String,
        /// The value it had (`None`: missing).
        got: Option<String>,
    },
}

impl fmt::Display for FramingProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingProblem::First { expected, got } => {
                write!(f, "the first frame is {got:?}, expected {expected}")
            }
            FramingProblem::Last { expected, got } => {
                write!(f, "the last frame is {got:?}, expected {expected}")
            }
            FramingProblem::OutOfOrder {
                position,
                frame,
                expected,
            } => write!(f, "frame {position} {frame:?} is out of order: {expected}"),
            FramingProblem::ErrorFrame { frame, data } => write!(
                f,
                "the server sent an {frame:?} frame although the fixture records no model \
                 error: {data}"
            ),
            FramingProblem::Invalid { problem } => f.write_str(problem),
            FramingProblem::Header {
                name,
                expected,
                got: None,
            } => write!(
                f,
                "the response has no {name} header (expected {expected:?})"
            ),
            FramingProblem::Header {
                name,
                expected,
                got: Some(got),
            } => write!(
                f,
                "the response's {name} header is {got:?}, expected {expected:?}"
            ),
        }
    }
}

impl Framing {
    /// Whether the stream is framed as its dialect demands.
    pub(crate) fn is_ok(&self) -> bool {
        matches!(self, Framing::Ok)
    }
}

/// How a run's golden document compares with the committed golden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldenStatus {
    /// Identical.
    Ok,
    /// Different: the contract drifted, or the golden must be reviewed.
    Changed,
    /// No golden committed for this fixture.
    Missing,
    /// The golden file is not one keyless reads: a link, a special file, a binary snapshot or
    /// a file insta cannot parse (the runner's error names it and says which). It fails.
    Refused,
}

impl GoldenStatus {
    /// `ok`, `changed` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            GoldenStatus::Ok => "ok",
            GoldenStatus::Changed => "changed",
            GoldenStatus::Missing => "missing",
            GoldenStatus::Refused => "refused",
        }
    }
}

/// Whether a fixture without a golden fails: it does in the test suite and in a full replay, and
/// it does not while a new fixture's golden is being made (`cargo xtask replay --fixture NEW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingGolden {
    /// A missing golden is a failure.
    Fails,
    /// A missing golden is reported, not failed.
    Allowed,
}

/// Which unused recorded turns fail a run (`keyless test --strict-unused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnusedTurns {
    /// A run that used none of the fixture's turns, or none of the lead caller's, fails; other
    /// unused turns are reported.
    #[default]
    Lenient,
    /// Every unused turn fails.
    Strict,
    /// Every unused turn fails: the run was driven as a client that makes every request the
    /// recording saw (DeerFlow's chat page, its suggestions included), so it must reach them all.
    Client,
}

/// Recorded turns whose not being used fails a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnusedFailure {
    /// No call was answered from the fixture: the gateway's model is not the replay.
    NoneUsed {
        /// Every turn.
        turns: Vec<usize>,
    },
    /// None of the lead caller's turns was used: the conversation was not driven by the replay.
    LeadUnused {
        /// The lead caller ([`DEFAULT_CALLER`] when a turn names it, else the first turn's).
        caller: String,
        /// Its turns.
        turns: Vec<usize>,
    },
    /// [`UnusedTurns::Strict`]: these turns were not used.
    Unused {
        /// The unused turns.
        turns: Vec<usize>,
    },
    /// [`UnusedTurns::Client`]: the client's flow never asked for these turns.
    NotReached {
        /// The unused turns.
        turns: Vec<usize>,
    },
}

impl UnusedFailure {
    /// Judges a run's unused turns: `callers` holds each recorded turn's caller (`None` in a
    /// legacy fixture, which is the lead's), `unused` the indexes no call used.
    pub fn judge(
        callers: &[Option<&str>],
        unused: &[usize],
        rule: UnusedTurns,
    ) -> Option<UnusedFailure> {
        if callers.is_empty() || unused.is_empty() {
            return None;
        }
        if unused.len() >= callers.len() {
            return Some(UnusedFailure::NoneUsed {
                turns: unused.to_vec(),
            });
        }
        let caller_of = |turn: usize| callers[turn].unwrap_or(DEFAULT_CALLER);
        let lead = if (0..callers.len()).any(|turn| caller_of(turn) == DEFAULT_CALLER) {
            DEFAULT_CALLER
        } else {
            caller_of(0)
        };
        let lead_turns: Vec<usize> = (0..callers.len())
            .filter(|&turn| caller_of(turn) == lead)
            .collect();
        if lead_turns.iter().all(|turn| unused.contains(turn)) {
            return Some(UnusedFailure::LeadUnused {
                caller: lead.to_owned(),
                turns: lead_turns,
            });
        }
        let turns = unused.to_vec();
        match rule {
            UnusedTurns::Lenient => None,
            UnusedTurns::Strict => Some(UnusedFailure::Unused { turns }),
            UnusedTurns::Client => Some(UnusedFailure::NotReached { turns }),
        }
    }
}

impl UnusedFailure {
    /// The turns it names.
    pub fn turns(&self) -> &[usize] {
        match self {
            UnusedFailure::NoneUsed { turns }
            | UnusedFailure::LeadUnused { turns, .. }
            | UnusedFailure::Unused { turns }
            | UnusedFailure::NotReached { turns } => turns,
        }
    }
}

impl std::fmt::Display for UnusedFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnusedFailure::NoneUsed { turns } => write!(
                f,
                "no recorded turn was used (turns {turns:?}): the gateway never asked the model \
                 server, so this run proves nothing; point the gateway's model base URL at the \
                 model server keyless started ({{model_base_url}} or $KEYLESS_MODEL_BASE_URL)"
            ),
            UnusedFailure::LeadUnused { caller, turns } => write!(
                f,
                "none of the turns of '{caller}', the caller that drives the conversation, was \
                 used (turns {turns:?}): the gateway's main model calls did not reach the model \
                 server"
            ),
            UnusedFailure::Unused { turns } => write!(
                f,
                "recorded turns {turns:?} were not used, and --strict-unused (strict_unused in \
                 keyless.toml) makes every unused turn a failure"
            ),
            UnusedFailure::NotReached { turns } => write!(
                f,
                "recorded turns {turns:?} were never asked for: the web client's flow did not \
                 reach them"
            ),
        }
    }
}

/// A failure the model side reported besides a miss or an ambiguity: a model server at the wire
/// can also see a strict-replay mismatch, an ambiguous caller, an unreadable request (the
/// in-process replay model can only miss).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelProblem {
    /// A problem the model server reported during this run.
    Reported {
        /// Which problem.
        kind: ModelProblemKind,
        /// Its diagnostic.
        message: String,
    },
    /// A problem of an earlier run that nobody read, cleared by this run's reset: reported, so
    /// a run never inherits a clean ledger it did not earn.
    DiscardedAtReset {
        /// Which problem.
        kind: ModelProblemKind,
        /// Its diagnostic.
        message: String,
    },
    /// The gateway process exited before the runner stopped it (a gateway that crashed after
    /// its last answer would otherwise pass); its diagnostic names the status and the log.
    GatewayExited {
        /// What happened.
        message: String,
    },
    /// The reset cleared more unread problems than the model server kept in full.
    DiscardedUnkept {
        /// How many were cleared.
        count: usize,
        /// How many of them were not kept in full.
        not_kept: usize,
    },
}

/// The kinds of problem a model server reports (its `/_keyless/state` `kind` field): the model
/// server's problem names its kind with this type, so the name ([`ModelProblemKind::as_str`],
/// the Display) is its serde form, the `kind` tag of the problem's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelProblemKind {
    /// No recorded output for the call's key.
    Miss,
    /// The request named no caller and its conversation is recorded for several.
    AmbiguousCaller,
    /// The request named no caller and its key has several different recorded answers.
    AmbiguousAnswer,
    /// Strict replay: the request differs from the recorded one.
    Mismatch,
    /// Strict replay: the recorded call cannot be served.
    Recording,
    /// The request is not one the server can key.
    BadRequest,
    /// Recording: a call could not be written.
    RecordingWrite,
    /// A route the server does not serve.
    UnservedRoute,
    /// A request body past the server's bound.
    BodyTooLarge,
    /// Recording: the recording or a call reached its limit.
    RecordingLimit,
    /// The ledger overflowed and dropped problems.
    Overflow,
    /// A model call arrived between two runs of a reused gateway (after one run's end, before
    /// the next run's start): refused, never answered from either fixture.
    CallBetweenRuns,
    /// A fault scenario's fault matched no call: the gateway took another path than the one
    /// under test (issue 42).
    FaultNotFired,
    /// A call at another boundary (an HTTP API, an MCP server) no recorded exchange answered.
    ExchangeMiss,
}

impl ModelProblemKind {
    /// The name the model server reports (`miss`, `ambiguous_caller`, …), its serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelProblemKind::Miss => "miss",
            ModelProblemKind::AmbiguousCaller => "ambiguous_caller",
            ModelProblemKind::AmbiguousAnswer => "ambiguous_answer",
            ModelProblemKind::Mismatch => "mismatch",
            ModelProblemKind::Recording => "recording",
            ModelProblemKind::BadRequest => "bad_request",
            ModelProblemKind::RecordingWrite => "recording_write",
            ModelProblemKind::UnservedRoute => "unserved_route",
            ModelProblemKind::BodyTooLarge => "body_too_large",
            ModelProblemKind::RecordingLimit => "recording_limit",
            ModelProblemKind::Overflow => "overflow",
            ModelProblemKind::CallBetweenRuns => "call_between_runs",
            ModelProblemKind::FaultNotFired => "fault_not_fired",
            ModelProblemKind::ExchangeMiss => "exchange_miss",
        }
    }
}

impl fmt::Display for ModelProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ModelProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelProblem::Reported { kind, message } => write!(f, "{kind}: {message}"),
            ModelProblem::DiscardedAtReset { kind, message } => {
                write!(f, "discarded_at_reset: {kind}: {message}")
            }
            ModelProblem::GatewayExited { message } => f.write_str(message),
            ModelProblem::DiscardedUnkept { count, not_kept } => write!(
                f,
                "discarded_at_reset: {count} problem(s) nobody had read were cleared by the reset \
                 before this run ({not_kept} not kept in full)"
            ),
        }
    }
}

/// A request of a driven page that did not answer 2xx (the web client's flow fails on it: a
/// browser shows an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRequest {
    /// `GET` or `POST`.
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The status received.
    pub status: u16,
    /// The body, as received (JSON text when it was JSON).
    pub body: String,
}

impl fmt::Display for FailedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} answered {}: {}",
            self.method, self.path, self.status, self.body
        )
    }
}

/// Whose words a problem line speaks in, and so which next step it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Voice {
    /// This workspace's own harness: DeerFlow's miss message, and the workspace's commands
    /// beside keyless's (`cargo xtask record`, `cargo insta review`).
    #[default]
    Workspace,
    /// The installed `keyless` command, to a user of any gateway (issue 47): its own commands
    /// only, no DeerFlow or LangChain vocabulary, and a next step only where one exists: a run
    /// that failed before its golden could be judged writes no pending golden, so it names no
    /// `keyless review`.
    Keyless,
}

/// Everything Layer 1 concludes about one replayed scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the stream is framed by `metadata` and `end`.
    pub framing: Framing,
    /// The model calls that had no recorded answer, oldest first.
    pub misses: Vec<Miss>,
    /// The model calls that named no caller and whose key has several different recorded
    /// answers, so none was served (`docs/replay-and-fixtures.md` §5.6), oldest first.
    pub ambiguities: Vec<Ambiguity>,
    /// Other failures the model side reported (empty for the in-process replay model, which can
    /// only miss).
    pub model_errors: Vec<ModelProblem>,
    /// The requests of a driven page that did not answer 2xx, in order (empty for a drive that
    /// only streams runs).
    pub failed_requests: Vec<FailedRequest>,
    /// The shapes against the committed golden.
    pub golden: GoldenStatus,
    /// Why the golden is [`GoldenStatus::Refused`], naming its file.
    pub golden_refusal: Option<String>,
    /// Indexes of the turns no call used (information, unless [`Verdict::unused_failure`]).
    pub unused_turns: Vec<usize>,
    /// The unused turns that fail the run ([`Verdict::judge_unused`]; `None` until judged).
    pub unused_failure: Option<UnusedFailure>,
    /// How many turns the fixture recorded: a fixture with none proves nothing, and fails.
    pub recorded_turns: usize,
    /// The calls at the other boundaries (MCP, HTTP, embeddings) no recorded exchange answered
    /// ([`Verdict::with_exchanges`]), oldest first.
    pub exchange_misses: Vec<ExchangeMiss>,
    /// The recorded exchanges no call asked for: the backend took another path.
    pub unused_exchanges: Vec<UnusedExchange>,
}

impl Verdict {
    /// The verdict on a run's framing (judged by its dialect), its model side's misses, other
    /// errors and unused turns, and its golden.
    pub fn new(
        framing: Framing,
        misses: Vec<Miss>,
        ambiguities: Vec<Ambiguity>,
        model_errors: Vec<ModelProblem>,
        golden: GoldenStatus,
        unused_turns: Vec<usize>,
        recorded_turns: usize,
    ) -> Verdict {
        Verdict {
            framing,
            misses,
            ambiguities,
            model_errors,
            failed_requests: Vec::new(),
            golden,
            golden_refusal: None,
            unused_failure: None,
            unused_turns,
            recorded_turns,
            exchange_misses: Vec::new(),
            unused_exchanges: Vec::new(),
        }
    }

    /// Adds the ledger of the other boundaries' replay ([`ExchangeReplay`](crate::ExchangeReplay)):
    /// a miss or an unused exchange fails the run as a model miss does.
    pub fn with_exchanges(
        mut self,
        misses: Vec<ExchangeMiss>,
        unused: Vec<UnusedExchange>,
    ) -> Verdict {
        self.exchange_misses = misses;
        self.unused_exchanges = unused;
        self
    }

    /// Judges the unused turns under `rule`; `callers` holds each recorded turn's caller.
    pub fn judge_unused(mut self, callers: &[Option<&str>], rule: UnusedTurns) -> Verdict {
        self.unused_failure = UnusedFailure::judge(callers, &self.unused_turns, rule);
        self
    }

    /// The checks before the golden comparison: a recorded turn, framed, no miss, no ambiguity,
    /// no other model error, the turns that must be used used.
    pub fn replayed_cleanly(&self) -> bool {
        self.recorded_turns > 0
            && self.unused_failure.is_none()
            && self.framing.is_ok()
            && self.misses.is_empty()
            && self.ambiguities.is_empty()
            && self.model_errors.is_empty()
            && self.failed_requests.is_empty()
            && self.exchange_misses.is_empty()
            && self.unused_exchanges.is_empty()
    }

    /// Whether every check passes; a missing golden counts as `missing` says.
    /// Decided from the fields, without formatting a problem line: [`Verdict::problems`] is
    /// empty exactly when this is true (a test holds the two together).
    pub fn passes(&self, missing: MissingGolden) -> bool {
        let golden_ok = match self.golden {
            GoldenStatus::Ok => true,
            GoldenStatus::Changed | GoldenStatus::Refused => false,
            GoldenStatus::Missing => missing == MissingGolden::Allowed,
        };
        self.replayed_cleanly() && golden_ok
    }

    /// One line per failed check, in §8.3's order: the page's failed requests, framing, misses
    /// (then the model side's other errors), golden; in the workspace's words
    /// ([`Verdict::problems_in`]).
    pub fn problems(&self, missing: MissingGolden) -> Vec<String> {
        self.problems_in(missing, Voice::Workspace)
    }

    /// [`Verdict::problems`] in `voice`'s words.
    pub fn problems_in(&self, missing: MissingGolden, voice: Voice) -> Vec<String> {
        let mut problems: Vec<String> = (self.failed_requests.iter())
            .map(ToString::to_string)
            .collect();
        if self.recorded_turns == 0 {
            problems.push(
                "the fixture has no recorded turn: a replay of it proves nothing (record it again)"
                    .to_owned(),
            );
        }
        match &self.framing {
            Framing::Ok => {}
            Framing::Violated { run, problem } => problems.push(format!("run {run}: {problem}")),
        }
        if !self.misses.is_empty() {
            let hashes: Vec<&str> = self.misses.iter().map(|m| m.input_hash.as_str()).collect();
            problems.push(match voice {
                Voice::Workspace => format!(
                    "replay miss ({}): the fixture is stale vs the current gateway; re-record it \
                     (keyless record; in this workspace cargo xtask record) or fix the drift. \
                     Missed hashes: {hashes:?}",
                    self.misses.len()
                ),
                Voice::Keyless => format!(
                    "replay miss ({}): the gateway asked its model something the recording has \
                     no answer for: its conversation with the model changed since the fixture \
                     was recorded (each miss below names the first differing field). If the \
                     change is a mistake, fix the gateway; if it is intended, record the fixture \
                     again (keyless record)",
                    self.misses.len()
                ),
            });
        }
        for ambiguity in &self.ambiguities {
            problems.push(ambiguity.to_string());
        }
        if let Some(failure) = &self.unused_failure {
            problems.push(match (voice, self.misses.is_empty()) {
                // The calls did reach the model server, and missed: not "never asked".
                (Voice::Keyless, false) => format!(
                    "recorded turns {:?} were not used, a consequence of the miss above",
                    failure.turns()
                ),
                // `lead_agent` is only keyless's name for a call that names no caller.
                (Voice::Keyless, true) => match failure {
                    UnusedFailure::LeadUnused { caller, turns } if caller == DEFAULT_CALLER => {
                        format!(
                            "none of the turns recorded for the gateway's own requests (those \
                             without an x-keyless-caller header) was used (turns {turns:?}): the \
                             gateway's main model calls did not reach the model server"
                        )
                    }
                    other => other.to_string(),
                },
                (Voice::Workspace, _) => failure.to_string(),
            });
        }
        problems.extend(self.exchange_misses.iter().map(ToString::to_string));
        if !self.unused_exchanges.is_empty() && self.exchange_misses.is_empty() {
            problems.extend(self.unused_exchanges.iter().map(ToString::to_string));
        } else if !self.unused_exchanges.is_empty() {
            let labels: Vec<&str> = (self.unused_exchanges.iter())
                .map(|u| u.label.as_str())
                .collect();
            problems.push(format!(
                "recorded exchanges {labels:?} were not asked for, a consequence of the miss above"
            ));
        }
        if !self.model_errors.is_empty() {
            let lines: Vec<String> = self.model_errors.iter().map(ToString::to_string).collect();
            problems.push(format!(
                "the model server reported {} problem(s): {lines:?}",
                self.model_errors.len(),
            ));
        }
        let judged = self.replayed_cleanly();
        match (self.golden, missing) {
            (GoldenStatus::Changed, _) => problems.push(match (voice, judged) {
                (Voice::Workspace, _) => "the SSE shape differs from the golden (review it with \
                     `keyless review`; in this workspace `cargo insta review`)"
                    .into(),
                (Voice::Keyless, true) => "the SSE shape differs from the golden (the diff is \
                     below; `keyless review` shows it again and accepts or rejects it)"
                    .into(),
                (Voice::Keyless, false) => "the SSE shape differs from the golden too, a \
                     consequence of the failure above: no pending golden is written for a run \
                     that did not replay cleanly, so fix that first"
                    .into(),
            }),
            (GoldenStatus::Refused, _) => problems.push(
                self.golden_refusal
                    .clone()
                    .unwrap_or_else(|| "the golden file cannot be read".into()),
            ),
            (GoldenStatus::Missing, MissingGolden::Fails) => problems.push(match (voice, judged) {
                (Voice::Workspace, _) => "no golden is committed for this fixture (accept the \
                     pending one with `keyless accept`; in this workspace run `cargo test -p \
                     harness --test golden`, then `cargo insta review`)"
                    .into(),
                (Voice::Keyless, true) => "no golden is committed for this fixture (accept the \
                     pending one with `keyless accept`)"
                    .into(),
                (Voice::Keyless, false) => "no golden is committed for this fixture, and none \
                     is written until the run replays cleanly"
                    .into(),
            }),
            _ => {}
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn miss(hash: &str) -> Miss {
        Miss {
            caller: "lead_agent".into(),
            input_hash: hash.into(),
            conversation_hash: "c".into(),
            canonical: "[]".into(),
            fixture_path: PathBuf::from("f.json"),
            known_hashes: Vec::new(),
            nearest: None,
        }
    }

    /// The verdict of a run with this framing, one recorded turn, all used, no miss, no
    /// ambiguity, no model error and its golden unchanged: only the framing can fail it.
    fn plain_verdict(framing: Framing) -> Verdict {
        Verdict::new(
            framing,
            Vec::new(),
            Vec::new(),
            Vec::new(),
            GoldenStatus::Ok,
            Vec::new(),
            1,
        )
    }

    #[test]
    fn a_broken_framing_is_one_problem_naming_the_run_and_the_expected_frame() {
        let cases = [
            (
                FramingProblem::First {
                    expected: "\"metadata\"".into(),
                    got: Some("values".into()),
                },
                "run 1: the first frame is Some(\"values\"), expected \"metadata\"",
            ),
            (
                FramingProblem::ErrorFrame {
                    frame: "error".into(),
                    data: "{\"error\":\"APIConnectionError\"}".into(),
                },
                "run 1: the server sent an \"error\" frame although the fixture records no model \
                 error: {\"error\":\"APIConnectionError\"}",
            ),
        ];
        for (problem, line) in cases {
            let verdict = plain_verdict(Framing::Violated { run: 1, problem });
            assert!(!verdict.replayed_cleanly());
            assert_eq!(verdict.problems(MissingGolden::Fails), [line]);
        }
    }

    #[test]
    fn each_failed_check_is_one_problem_in_order() {
        let clean = Verdict::new(
            Framing::Ok,
            Vec::new(),
            Vec::new(),
            Vec::new(),
            GoldenStatus::Ok,
            vec![3],
            4,
        );
        assert!(clean.replayed_cleanly() && clean.passes(MissingGolden::Fails));
        assert!(clean.problems(MissingGolden::Fails).is_empty());

        let missing = Verdict {
            golden: GoldenStatus::Missing,
            ..clean.clone()
        };
        assert!(missing.passes(MissingGolden::Allowed));
        assert!(!missing.passes(MissingGolden::Fails));

        let model_error = Verdict {
            model_errors: vec![ModelProblem::Reported {
                kind: ModelProblemKind::Mismatch,
                message: "replay mismatch at call 2".into(),
            }],
            ..clean.clone()
        };
        assert!(!model_error.replayed_cleanly());
        assert!(!model_error.passes(MissingGolden::Allowed));

        let no_turn = Verdict {
            recorded_turns: 0,
            ..clean.clone()
        };
        assert!(!no_turn.replayed_cleanly());
        assert!(!no_turn.passes(MissingGolden::Allowed));

        let broken = Verdict::new(
            Framing::Violated {
                run: 0,
                problem: FramingProblem::First {
                    expected: "\"metadata\"".into(),
                    got: Some("values".into()),
                },
            },
            vec![miss("abc")],
            vec![Ambiguity {
                caller: "lead_agent".into(),
                input_hash: "k".into(),
                fixture_path: PathBuf::from("f.json"),
                turns: vec![0, 1],
                answers: vec!["text \"a\"".into(), "text \"b\"".into()],
            }],
            vec![ModelProblem::Reported {
                kind: ModelProblemKind::AmbiguousCaller,
                message: "name the caller".into(),
            }],
            GoldenStatus::Changed,
            Vec::new(),
            0,
        );
        assert!(!broken.replayed_cleanly());
        assert_eq!(
            broken.problems(MissingGolden::Allowed),
            [
                "the fixture has no recorded turn: a replay of it proves nothing (record it again)",
                "run 0: the first frame is Some(\"values\"), expected \"metadata\"",
                "replay miss (1): the fixture is stale vs the current gateway; re-record it \
                 (keyless record; in this workspace cargo xtask record) or fix the drift. \
                 Missed hashes: [\"abc\"]",
                "replay ambiguous: the call's input hash k (caller 'lead_agent') is recorded \
                 for 2 turns of 'f.json' that answer differently (turn 0: text \"a\"; turn 1: \
                 text \"b\"), and the call names no caller, so which answer it should get \
                 cannot be told. Nodes that call the model with the same conversation must name \
                 themselves: send the x-keyless-caller header (one value per node) on each model \
                 call, or a caller tag or run name in process, and record again",
                "the model server reported 1 problem(s): [\"ambiguous_caller: name the caller\"]",
                "the SSE shape differs from the golden (review it with `keyless review`; in this \
                 workspace `cargo insta review`)",
            ]
        );
    }
    #[test]
    fn passes_exactly_when_no_problem_line_is_written() {
        let clean = plain_verdict(Framing::Ok);
        let broken = plain_verdict(Framing::Violated {
            run: 0,
            problem: FramingProblem::Last {
                expected: "\"end\"".into(),
                got: None,
            },
        });
        let variants = [
            clean.clone(),
            broken,
            Verdict {
                misses: vec![miss("abc")],
                ..clean.clone()
            },
            Verdict {
                model_errors: vec![ModelProblem::DiscardedUnkept {
                    count: 2,
                    not_kept: 1,
                }],
                ..clean.clone()
            },
            Verdict {
                failed_requests: vec![FailedRequest {
                    method: "GET".into(),
                    path: "/api/models".into(),
                    status: 404,
                    body: "{}".into(),
                }],
                ..clean.clone()
            },
            Verdict {
                recorded_turns: 0,
                ..clean.clone()
            },
            Verdict {
                golden: GoldenStatus::Changed,
                ..clean.clone()
            },
            Verdict {
                golden: GoldenStatus::Missing,
                ..clean.clone()
            },
            Verdict {
                golden: GoldenStatus::Refused,
                golden_refusal: Some("golden/x.snap: is a symbolic link".into()),
                ..clean.clone()
            },
            Verdict {
                unused_failure: Some(UnusedFailure::NoneUsed { turns: vec![0] }),
                ..clean.clone()
            },
            clean
                .clone()
                .with_exchanges(vec![exchange_miss()], Vec::new()),
            clean
                .clone()
                .with_exchanges(Vec::new(), vec![unused_exchange()]),
            clean
                .clone()
                .with_exchanges(vec![exchange_miss()], vec![unused_exchange()]),
        ];
        for verdict in &variants {
            for missing in [MissingGolden::Fails, MissingGolden::Allowed] {
                for voice in [Voice::Workspace, Voice::Keyless] {
                    assert_eq!(
                        verdict.passes(missing),
                        verdict.problems_in(missing, voice).is_empty(),
                        "{verdict:?} with {missing:?} in {voice:?}"
                    );
                }
            }
        }
    }

    fn exchange_miss() -> ExchangeMiss {
        let call = crate::ExchangeCall::new(
            crate::BoundaryKind::Mcp,
            "files",
            "tools/call read",
            serde_json::json!({"name": "read"}),
        );
        *crate::ExchangeReplay::new(Path::new("f.json"), Vec::new())
            .lookup(&call)
            .expect_err("nothing recorded")
    }

    fn unused_exchange() -> UnusedExchange {
        UnusedExchange {
            index: 0,
            boundary: crate::BoundaryKind::Http,
            caller: "tavily".into(),
            label: "POST /search".into(),
        }
    }

    /// A call at another boundary that missed, or a recorded exchange nobody asked for, fails
    /// the run and says which.
    #[test]
    fn an_exchange_miss_or_an_unused_exchange_fails_the_run_naming_it() {
        let clean = Verdict::new(
            Framing::Ok,
            vec![],
            vec![],
            vec![],
            GoldenStatus::Ok,
            vec![],
            1,
        );
        let cases = [
            (
                vec![exchange_miss()],
                vec![],
                "mcp miss: `tools/call read` from `files`",
            ),
            (
                vec![],
                vec![unused_exchange()],
                "recorded http exchange 0 `POST /search` from `tavily` was never asked for",
            ),
            (
                vec![exchange_miss()],
                vec![unused_exchange()],
                "[\"POST /search\"] were not asked for, a consequence of the miss above",
            ),
        ];
        for (misses, unused, expected) in cases {
            let verdict = clean.clone().with_exchanges(misses, unused);
            assert!(!verdict.passes(MissingGolden::Allowed), "{verdict:?}");
            let problems = verdict
                .problems_in(MissingGolden::Allowed, Voice::Keyless)
                .join("\n");
            assert!(
                problems.contains(expected),
                "{problems}\nexpected: {expected}"
            );
        }
    }

    /// Issue 34, finding 1: a run that used none of the turns, or none of the lead caller's,
    /// fails naming them; another unused turn fails only under the strict rule.
    #[test]
    fn unused_turns_fail_when_none_or_none_of_the_lead_callers_were_used() {
        let lead = Some(DEFAULT_CALLER);
        let deerflow = [lead, Some("middleware:title"), Some("suggest_agent")];
        /// (callers, unused, rule, failure)
        type Case<'a> = (
            &'a str,
            &'a [Option<&'a str>],
            &'a [usize],
            UnusedTurns,
            Option<UnusedFailure>,
        );
        let cases: [Case; 9] = [
            ("all used", &deerflow, &[], UnusedTurns::Strict, None),
            (
                "the title turn unused by a client's flow",
                &deerflow,
                &[1],
                UnusedTurns::Client,
                Some(UnusedFailure::NotReached { turns: vec![1] }),
            ),
            (
                "the title turn unused",
                &deerflow,
                &[1],
                UnusedTurns::Lenient,
                None,
            ),
            (
                "the title turn unused, strict",
                &deerflow,
                &[1],
                UnusedTurns::Strict,
                Some(UnusedFailure::Unused { turns: vec![1] }),
            ),
            (
                "none used",
                &deerflow,
                &[0, 1, 2],
                UnusedTurns::Lenient,
                Some(UnusedFailure::NoneUsed {
                    turns: vec![0, 1, 2],
                }),
            ),
            (
                "the lead's one turn unused",
                &deerflow,
                &[0],
                UnusedTurns::Lenient,
                Some(UnusedFailure::LeadUnused {
                    caller: DEFAULT_CALLER.into(),
                    turns: vec![0],
                }),
            ),
            (
                "one of the lead's two turns unused",
                &[lead, lead, Some("suggest_agent")],
                &[1],
                UnusedTurns::Lenient,
                None,
            ),
            (
                "no lead_agent: the first turn's caller leads",
                &[Some("writer"), Some("critic")],
                &[0],
                UnusedTurns::Lenient,
                Some(UnusedFailure::LeadUnused {
                    caller: "writer".into(),
                    turns: vec![0],
                }),
            ),
            (
                "a legacy fixture's turns are the lead's",
                &[None, None],
                &[1],
                UnusedTurns::Lenient,
                None,
            ),
        ];
        for (name, callers, unused, rule, expected) in cases {
            assert_eq!(
                UnusedFailure::judge(callers, unused, rule),
                expected,
                "{name}"
            );
        }
        let verdict = plain_verdict(Framing::Ok);
        let verdict = Verdict {
            unused_turns: vec![0],
            ..verdict
        }
        .judge_unused(&[lead], UnusedTurns::Lenient);
        assert!(!verdict.passes(MissingGolden::Allowed));
        let problems = verdict.problems(MissingGolden::Allowed);
        assert!(
            problems.len() == 1 && problems[0].contains("no recorded turn was used (turns [0])"),
            "{problems:?}"
        );
        let lead_unused = Verdict {
            unused_failure: Some(UnusedFailure::LeadUnused {
                caller: DEFAULT_CALLER.into(),
                turns: vec![0],
            }),
            ..verdict
        };
        let words = lead_unused.problems_in(MissingGolden::Allowed, Voice::Keyless);
        assert!(
            words.len() == 1
                && words[0].contains("the gateway's own requests")
                && !words[0].contains(DEFAULT_CALLER),
            "{words:?}"
        );
    }
}
