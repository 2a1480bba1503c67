//! The Layer 1 verdict (`docs/replay-and-fixtures.md` §8.3): one typed answer to "did this replay
//! pass?", computed once and read by every runner (the golden test, the drift tests, `cargo xtask
//! replay`, `cargo xtask fixtures check`) instead of each re-deriving it from text.
//!
//! A replay passes when its stream is framed (`metadata` first, `end` last), the replay model
//! missed nothing (the gateway's error middleware hides misses from the stream, so the engine's
//! ledger is the gate), no call that named no caller met a key with several different answers
//! (an [`Ambiguity`], never a silent pick), the model side reported no other problem (a model server at the wire can
//! also see a strict-replay mismatch, an ambiguous caller or an unreadable request), and its
//! shapes equal the committed golden. A fixture with no recorded turn fails: its replay proves
//! nothing. Turns no replay used are reported, never failed (§5.5).

use std::fmt;

use crate::replay::{Ambiguity, Miss};
use crate::shapes::Shape;

/// How a run's event stream is framed. DeerFlow's rule is [`Framing::of`] (`metadata` first,
/// `end` last); LangGraph's server sends no `end` (the body just closes), so its rule
/// (`docs/testing-your-own-gateway.md`, "LangGraph's own API server") is checked per run by the
/// driver and fails with [`Framing::NoMetadata`] or [`Framing::ErrorFrame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// The stream is framed as its dialect demands.
    Ok,
    /// DeerFlow's rule broken: the first event is not `metadata` or the last is not `end`.
    Broken {
        /// The first event's name (`None`: no event, or one without a name).
        first: Option<String>,
        /// The last event's name.
        last: Option<String>,
    },
    /// LangGraph's rule broken: a run's first frame is not `metadata`.
    NoMetadata {
        /// The run (0: the prompt, then each follow-up).
        run: usize,
        /// Its first event's name (`None`: no event).
        first: Option<String>,
    },
    /// LangGraph's rule broken: a run sent an `error` frame although the fixture records no
    /// model error (the server failed the run for a reason of its own).
    ErrorFrame {
        /// The run (0: the prompt, then each follow-up).
        run: usize,
        /// The frame's data, cut short.
        data: String,
    },
    /// The framing rule of a dialect whose frames name themselves (the AI SDK's UI message
    /// stream, AG-UI, the OpenAI-style endpoints) broken in one run
    /// (`docs/testing-your-own-gateway.md`, "The dialects").
    Violated {
        /// The run (0: the prompt, then each follow-up).
        run: usize,
        /// What is wrong.
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
    /// The framing of a shape sequence.
    pub fn of(shapes: &[Shape]) -> Framing {
        let first = shapes.first().and_then(|shape| shape.event.clone());
        let last = shapes.last().and_then(|shape| shape.event.clone());
        if first.as_deref() == Some("metadata") && last.as_deref() == Some("end") {
            Framing::Ok
        } else {
            Framing::Broken { first, last }
        }
    }

    /// Whether the stream starts with `metadata` and ends with `end`.
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
}

impl GoldenStatus {
    /// `ok`, `changed` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            GoldenStatus::Ok => "ok",
            GoldenStatus::Changed => "changed",
            GoldenStatus::Missing => "missing",
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
    /// Other failures the model side reported, as their messages (empty for the in-process
    /// replay model, which can only miss).
    pub model_errors: Vec<String>,
    /// The shapes against the committed golden.
    pub golden: GoldenStatus,
    /// Indexes of the turns no call used (information, not failure).
    pub unused_turns: Vec<usize>,
    /// How many turns the fixture recorded: a fixture with none proves nothing, and fails.
    pub recorded_turns: usize,
}

impl Verdict {
    /// The verdict on a run's shapes, its model side's misses, other errors and unused turns,
    /// and its golden.
    pub fn new(
        shapes: &[Shape],
        misses: Vec<Miss>,
        ambiguities: Vec<Ambiguity>,
        model_errors: Vec<String>,
        golden: GoldenStatus,
        unused_turns: Vec<usize>,
        recorded_turns: usize,
    ) -> Verdict {
        Verdict {
            framing: Framing::of(shapes),
            misses,
            ambiguities,
            model_errors,
            golden,
            unused_turns,
            recorded_turns,
        }
    }

    /// The checks before the golden comparison: a recorded turn, framed, no miss, no ambiguity,
    /// no other model error.
    pub fn replayed_cleanly(&self) -> bool {
        self.recorded_turns > 0
            && self.framing.is_ok()
            && self.misses.is_empty()
            && self.ambiguities.is_empty()
            && self.model_errors.is_empty()
    }

    /// Whether every check passes; a missing golden counts as `missing` says.
    /// Decided from the fields, without formatting a problem line: [`Verdict::problems`] is
    /// empty exactly when this is true (a test holds the two together).
    pub fn passes(&self, missing: MissingGolden) -> bool {
        let golden_ok = match self.golden {
            GoldenStatus::Ok => true,
            GoldenStatus::Changed => false,
            GoldenStatus::Missing => missing == MissingGolden::Allowed,
        };
        self.replayed_cleanly() && golden_ok
    }

    /// One line per failed check, in §8.3's order: framing, misses (then the model side's other
    /// errors), golden.
    pub fn problems(&self, missing: MissingGolden) -> Vec<String> {
        let mut problems = Vec::new();
        if self.recorded_turns == 0 {
            problems.push(
                "the fixture has no recorded turn: a replay of it proves nothing (record it again)"
                    .to_owned(),
            );
        }
        match &self.framing {
            Framing::Ok => {}
            Framing::Broken { first, last } => {
                if first.as_deref() != Some("metadata") {
                    problems.push(format!(
                        "the first event is {first:?}, expected \"metadata\""
                    ));
                }
                if last.as_deref() != Some("end") {
                    problems.push(format!("the last event is {last:?}, expected \"end\""));
                }
            }
            Framing::NoMetadata { run, first } => problems.push(format!(
                "run {run}: the first event is {first:?}, expected \"metadata\""
            )),
            Framing::ErrorFrame { run, data } => problems.push(format!(
                "run {run}: the server sent an error frame although the fixture records no model \
                 error: {data}"
            )),
            Framing::Violated { run, problem } => problems.push(format!("run {run}: {problem}")),
        }
        if !self.misses.is_empty() {
            let hashes: Vec<&str> = self.misses.iter().map(|m| m.input_hash.as_str()).collect();
            problems.push(format!(
                "replay miss ({}): the fixture is stale vs the current gateway; re-record it \
                 (keyless record; in this workspace cargo xtask record) or fix the drift. \
                 Missed hashes: {hashes:?}",
                self.misses.len()
            ));
        }
        for ambiguity in &self.ambiguities {
            problems.push(ambiguity.to_string());
        }
        if !self.model_errors.is_empty() {
            problems.push(format!(
                "the model server reported {} problem(s): {:?}",
                self.model_errors.len(),
                self.model_errors
            ));
        }
        match (self.golden, missing) {
            (GoldenStatus::Changed, _) => problems.push(
                "the SSE shape differs from the golden (review it with `keyless review`; in this \
                 workspace `cargo insta review`)"
                    .into(),
            ),
            (GoldenStatus::Missing, MissingGolden::Fails) => problems.push(
                "no golden is committed for this fixture (accept the pending one with `keyless \
                 accept`; in this workspace run `cargo test -p harness --test golden`, then \
                 `cargo insta review`)"
                    .into(),
            ),
            _ => {}
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn shapes(events: &[Option<&str>]) -> Vec<Shape> {
        events
            .iter()
            .map(|event| Shape {
                event: event.map(str::to_owned),
                keys: None,
                message_type: None,
                chunk_position: None,
            })
            .collect()
    }

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

    #[test]
    fn framing_needs_metadata_first_and_end_last() {
        let framed = [Some("metadata"), Some("values"), Some("end")];
        assert_eq!(Framing::of(&shapes(&framed)), Framing::Ok);
        /// (events, first, last)
        type Case<'a> = (&'a [Option<&'a str>], Option<&'a str>, Option<&'a str>);
        let cases: [Case; 3] = [
            (&[], None, None),
            (&[Some("values"), Some("end")], Some("values"), Some("end")),
            (&[Some("metadata"), None], Some("metadata"), None),
        ];
        for (events, first, last) in cases {
            assert_eq!(
                Framing::of(&shapes(events)),
                Framing::Broken {
                    first: first.map(str::to_owned),
                    last: last.map(str::to_owned),
                },
                "{events:?}"
            );
        }
    }

    /// The verdict of a run with these event names, one recorded turn, all used, no miss, no
    /// ambiguity, no model error and its golden unchanged: only the framing can fail it.
    fn plain_verdict(events: &[Option<&str>]) -> Verdict {
        Verdict::new(
            &shapes(events),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            GoldenStatus::Ok,
            Vec::new(),
            1,
        )
    }

    #[test]
    fn a_broken_langgraph_framing_is_one_problem_naming_the_run() {
        let clean = plain_verdict(&[Some("metadata"), Some("end")]);
        let cases = [
            (
                Framing::NoMetadata {
                    run: 1,
                    first: Some("values".into()),
                },
                "run 1: the first event is Some(\"values\"), expected \"metadata\"",
            ),
            (
                Framing::ErrorFrame {
                    run: 0,
                    data: "{\"error\":\"APIConnectionError\"}".into(),
                },
                "run 0: the server sent an error frame although the fixture records no model \
                 error: {\"error\":\"APIConnectionError\"}",
            ),
        ];
        for (framing, problem) in cases {
            let verdict = Verdict {
                framing,
                ..clean.clone()
            };
            assert!(!verdict.replayed_cleanly());
            assert_eq!(verdict.problems(MissingGolden::Fails), [problem]);
        }
    }

    #[test]
    fn each_failed_check_is_one_problem_in_order() {
        let clean = Verdict::new(
            &shapes(&[Some("metadata"), Some("end")]),
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
            model_errors: vec!["strict replay mismatch: row 2".into()],
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
            &shapes(&[Some("values")]),
            vec![miss("abc")],
            vec![Ambiguity {
                caller: "lead_agent".into(),
                input_hash: "k".into(),
                fixture_path: PathBuf::from("f.json"),
                turns: vec![0, 1],
                answers: vec!["text \"a\"".into(), "text \"b\"".into()],
            }],
            vec!["ambiguous caller".into()],
            GoldenStatus::Changed,
            Vec::new(),
            0,
        );
        assert!(!broken.replayed_cleanly());
        assert_eq!(
            broken.problems(MissingGolden::Allowed),
            [
                "the fixture has no recorded turn: a replay of it proves nothing (record it again)",
                "the first event is Some(\"values\"), expected \"metadata\"",
                "the last event is Some(\"values\"), expected \"end\"",
                "replay miss (1): the fixture is stale vs the current gateway; re-record it \
                 (keyless record; in this workspace cargo xtask record) or fix the drift. \
                 Missed hashes: [\"abc\"]",
                "replay ambiguous: the call's input hash k (caller 'lead_agent') is recorded \
                 for 2 turns of 'f.json' that answer differently (turn 0: text \"a\"; turn 1: \
                 text \"b\"), and the call names no caller, so which answer it should get \
                 cannot be told. Nodes that call the model with the same conversation must name \
                 themselves: send the X-Harness-Caller header (one value per node) on each model \
                 call, or a caller tag or run name in process, and record again",
                "the model server reported 1 problem(s): [\"ambiguous caller\"]",
                "the SSE shape differs from the golden (review it with `keyless review`; in this \
                 workspace `cargo insta review`)",
            ]
        );
    }
    #[test]
    fn passes_exactly_when_no_problem_line_is_written() {
        let clean = plain_verdict(&[Some("metadata"), Some("end")]);
        let broken = plain_verdict(&[Some("values")]);
        let variants = [
            clean.clone(),
            broken,
            Verdict {
                misses: vec![miss("abc")],
                ..clean.clone()
            },
            Verdict {
                model_errors: vec!["x".into()],
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
        ];
        for verdict in &variants {
            for missing in [MissingGolden::Fails, MissingGolden::Allowed] {
                assert_eq!(
                    verdict.passes(missing),
                    verdict.problems(missing).is_empty(),
                    "{verdict:?} with {missing:?}"
                );
            }
        }
    }
}
