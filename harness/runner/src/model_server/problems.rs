//! What went wrong on the model side of a replay, as the model server reports it: printed the
//! moment it happens, kept in a ledger, and served as JSON on `GET /_keyless/misses` so a driver
//! in any language can assert there was none.
//!
//! Every problem serialises as an object with a `kind` and a `message` (the full, human-readable
//! diagnostic); a miss also carries the whole [`Miss`], so a Rust driver gets back the value the
//! in-process replay model would have given it.
//!
//! The ledger is bounded ([`Ledger`]): a run that misses thousands of times must not grow the
//! server without limit (3,000 misses once took 312 MB). It keeps the first [`KEPT_PROBLEMS`]
//! problems in full and counts the rest by kind; a last [`Problem::Overflow`] entry says how many
//! were not kept, so the list a driver reads is never shorter than the truth makes it look.
//!
//! It is bounded by bytes too (issue 34, finding 9: 40 misses of 10 MB once made the ledger
//! 800 MB): each problem is cut to [`MAX_PROBLEM_BYTES`] per field before it is kept (a miss keeps
//! its key, caller, nearest turn and first difference; its message loses its middle, never its
//! head or its end, and says how much), and past [`MAX_LEDGER_BYTES`] in all, later problems
//! are counted by kind only, as past the count.

use std::collections::BTreeMap;

use replay_core::{Ambiguity, ExchangeMiss, Miss, ModelProblemKind};
use serde::{Deserialize, Serialize};

/// How many problems the ledger keeps in full; later ones are counted by kind only.
pub(crate) const KEPT_PROBLEMS: usize = 100;

/// The most bytes one field of a kept problem holds (a message, a canonical conversation, a
/// difference's value).
pub(crate) const MAX_PROBLEM_BYTES: usize = 16 * 1024;

/// The most bytes the kept problems hold in all, as JSON.
pub(crate) const MAX_LEDGER_BYTES: usize = 4 * 1024 * 1024;

/// `text` without its middle when it is over `max` bytes: its head and its end (where a miss
/// names its nearest turn and first difference) stay, and the cut says how many bytes went.
fn cut_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// One problem a model call met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// Fixture replay: no recorded output for the call's key.
    Miss {
        /// The miss message: DeerFlow's text, the nearest recorded turn, the first differing
        /// field.
        message: String,
        /// The miss itself.
        miss: Box<Miss>,
    },
    /// Fixture replay: the request named no caller and its conversation is recorded for several.
    AmbiguousCaller {
        /// What to do about it.
        message: String,
        /// The callers whose key is recorded.
        callers: Vec<String>,
    },
    /// Fixture replay: the request named no caller and its key is recorded for several turns
    /// that answer differently (parallel nodes sending one conversation), so none was served.
    AmbiguousAnswer {
        /// The ambiguity's diagnostic, naming the turns and the caller header.
        message: String,
        /// The ambiguity itself.
        ambiguity: Box<Ambiguity>,
    },
    /// Strict replay: the request differs from the recorded one at this call, or the recording
    /// has no call left.
    Mismatch {
        /// `replay mismatch at call <i>, field <path>`.
        message: String,
        /// The call being compared.
        call_index: usize,
        /// The first differing field (redacted, escaped and capped; values are never shown).
        field_path: String,
    },
    /// Strict replay: the recorded call cannot be served (it was cancelled or abandoned).
    Recording {
        /// The recording file error.
        message: String,
    },
    /// The request is not a Chat Completions request the server can key.
    BadRequest {
        /// What is wrong with it.
        message: String,
    },
    /// Recording: a call could not be written to the recording.
    RecordingWrite {
        /// The recording file error.
        message: String,
    },
    /// A request to a route the server does not serve (`POST /v1/embeddings`, `/v1/audio/speech`,
    /// a wrong method, …): the gateway called something no recording answers.
    UnservedRoute {
        /// What was asked and what the server serves.
        message: String,
        /// The request's method.
        method: String,
        /// The request's path (without its query, which may hold a credential).
        path: String,
    },
    /// Recording: the recording reached its size limit, or a call its time limit; the call was
    /// cut there.
    RecordingLimit {
        /// Which limit, and the flag that sets it.
        message: String,
    },
    /// A request body over the server's limit (`ServeLimits::max_body_bytes`), refused with a
    /// 413 before it was read whole.
    BodyTooLarge {
        /// The route, the size and the limit.
        message: String,
        /// The request's path.
        path: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A model call that arrived while no run was open (`POST /_keyless/reset` with
    /// `{"between_runs": true}`, until the next reset): under `--reuse-gateway`, a call the last
    /// run's gateway made after that run ended. It was refused, so it is neither answered from
    /// the fixture that ran last nor credited to the next.
    CallBetweenRuns {
        /// The call and why it was refused.
        message: String,
    },
    /// Fixture replay: a call at another boundary (an HTTP API, an MCP server) that no recorded
    /// exchange answered (`docs/replay-and-fixtures.md` §12.1).
    ExchangeMiss {
        /// The miss's diagnostic: the boundary, the call, the nearest exchange, the first
        /// differing field.
        message: String,
        /// The miss itself.
        miss: Box<ExchangeMiss>,
    },
    /// The ledger's bound was reached: these problems happened but are not kept in full.
    Overflow {
        /// How many, and of which kinds.
        message: String,
        /// How many problems are not in the list.
        not_kept: usize,
        /// Those problems, counted by kind.
        by_kind: BTreeMap<String, usize>,
    },
    /// A fault scenario's fault matched no call of the run: the gateway took another path than
    /// the one under test.
    FaultNotFired {
        /// Which fault, and what the run did instead.
        message: String,
    },
}

impl Problem {
    /// The problem with every field cut to [`MAX_PROBLEM_BYTES`].
    pub(crate) fn bounded(mut self) -> Problem {
        let max = MAX_PROBLEM_BYTES;
        match &mut self {
            Problem::Miss { message, miss } => {
                *message = cut_middle(message, max);
                miss.cut_to(max);
            }
            Problem::ExchangeMiss { message, miss } => {
                *message = cut_middle(message, max);
                miss.cut_to(max);
            }
            Problem::AmbiguousAnswer { message, ambiguity } => {
                *message = cut_middle(message, max);
                for answer in &mut ambiguity.answers {
                    *answer = cut_middle(answer, max);
                }
            }
            Problem::AmbiguousCaller { message, .. }
            | Problem::Mismatch { message, .. }
            | Problem::Recording { message }
            | Problem::BadRequest { message }
            | Problem::RecordingWrite { message }
            | Problem::UnservedRoute { message, .. }
            | Problem::BodyTooLarge { message, .. }
            | Problem::RecordingLimit { message }
            | Problem::CallBetweenRuns { message }
            | Problem::FaultNotFired { message }
            | Problem::Overflow { message, .. } => *message = cut_middle(message, max),
        }
        self
    }

    /// A miss.
    pub(crate) fn miss(miss: Miss) -> Problem {
        Problem::Miss {
            message: miss.to_string(),
            miss: Box::new(miss),
        }
    }

    /// A call at another boundary no recorded exchange answered.
    pub(crate) fn exchange_miss(miss: ExchangeMiss) -> Problem {
        Problem::ExchangeMiss {
            message: miss.to_string(),
            miss: Box::new(miss),
        }
    }

    /// An ambiguous answer.
    pub(crate) fn ambiguous_answer(ambiguity: Ambiguity) -> Problem {
        Problem::AmbiguousAnswer {
            message: ambiguity.to_string(),
            ambiguity: Box::new(ambiguity),
        }
    }

    /// Which problem this is: its name is the `kind` tag of the problem's JSON.
    pub fn kind(&self) -> ModelProblemKind {
        match self {
            Problem::Miss { .. } => ModelProblemKind::Miss,
            Problem::AmbiguousCaller { .. } => ModelProblemKind::AmbiguousCaller,
            Problem::AmbiguousAnswer { .. } => ModelProblemKind::AmbiguousAnswer,
            Problem::Mismatch { .. } => ModelProblemKind::Mismatch,
            Problem::Recording { .. } => ModelProblemKind::Recording,
            Problem::BadRequest { .. } => ModelProblemKind::BadRequest,
            Problem::RecordingWrite { .. } => ModelProblemKind::RecordingWrite,
            Problem::UnservedRoute { .. } => ModelProblemKind::UnservedRoute,
            Problem::BodyTooLarge { .. } => ModelProblemKind::BodyTooLarge,
            Problem::RecordingLimit { .. } => ModelProblemKind::RecordingLimit,
            Problem::CallBetweenRuns { .. } => ModelProblemKind::CallBetweenRuns,
            Problem::FaultNotFired { .. } => ModelProblemKind::FaultNotFired,
            Problem::ExchangeMiss { .. } => ModelProblemKind::ExchangeMiss,
            Problem::Overflow { .. } => ModelProblemKind::Overflow,
        }
    }

    /// The full diagnostic.
    pub fn message(&self) -> &str {
        match self {
            Problem::Miss { message, .. }
            | Problem::AmbiguousCaller { message, .. }
            | Problem::AmbiguousAnswer { message, .. }
            | Problem::Mismatch { message, .. }
            | Problem::Recording { message }
            | Problem::BadRequest { message }
            | Problem::RecordingWrite { message }
            | Problem::UnservedRoute { message, .. }
            | Problem::BodyTooLarge { message, .. }
            | Problem::RecordingLimit { message }
            | Problem::CallBetweenRuns { message }
            | Problem::FaultNotFired { message }
            | Problem::ExchangeMiss { message, .. }
            | Problem::Overflow { message, .. } => message,
        }
    }
}

/// What a reset cleared that no driver had read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Discarded {
    /// How many problems.
    pub(crate) count: usize,
    /// Those of them the ledger kept in full, oldest first.
    pub(crate) problems: Vec<Problem>,
}

/// The bounded problem ledger, and whether a driver has read it.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// The first [`KEPT_PROBLEMS`] problems, in full.
    kept: Vec<Problem>,
    /// The later ones, by kind.
    not_kept: BTreeMap<String, usize>,
    /// The kept problems' size, as JSON.
    bytes: usize,
    /// Problems recorded since a driver last read the ledger.
    unread: usize,
}

impl Ledger {
    /// Records a problem: cut to its bound, in full while there is room (by count and by
    /// bytes), else as a count.
    pub(crate) fn push(&mut self, problem: Problem) {
        self.unread += 1;
        let kind = problem.kind();
        if self.kept.len() < KEPT_PROBLEMS {
            let problem = problem.bounded();
            let size = serde_json::to_string(&problem).map_or(0, |json| json.len());
            if self.bytes + size <= MAX_LEDGER_BYTES {
                self.bytes += size;
                self.kept.push(problem);
                return;
            }
        }
        *self.not_kept.entry(kind.as_str().to_owned()).or_default() += 1;
    }

    /// Every problem kept, oldest first, then an [`Problem::Overflow`] entry when some were not
    /// kept; marks them read.
    pub(crate) fn read(&mut self) -> Vec<Problem> {
        self.unread = 0;
        self.list()
    }

    /// [`Ledger::read`] without marking anything read.
    pub(crate) fn list(&self) -> Vec<Problem> {
        let mut list = self.kept.clone();
        let not_kept: usize = self.not_kept.values().sum();
        if not_kept > 0 {
            let kinds: Vec<String> = self
                .not_kept
                .iter()
                .map(|(kind, count)| format!("{kind} {count}"))
                .collect();
            list.push(Problem::Overflow {
                message: format!(
                    "{not_kept} more problem(s) happened after the first {} and are not kept \
                     in full ({}; the ledger keeps {KEPT_PROBLEMS} problems and \
                     {MAX_LEDGER_BYTES} bytes at most)",
                    self.kept.len(),
                    kinds.join(", ")
                ),
                not_kept,
                by_kind: self.not_kept.clone(),
            });
        }
        list
    }

    /// Clears the ledger; returns the problems no driver had read.
    pub(crate) fn clear(&mut self) -> Discarded {
        let count = self.unread;
        let not_kept: usize = self.not_kept.values().sum();
        // The unread ones are the latest: those past the bound first, then the kept tail.
        let kept_unread = count.saturating_sub(not_kept).min(self.kept.len());
        let problems = self.kept.split_off(self.kept.len() - kept_unread);
        *self = Ledger::default();
        Discarded { count, problems }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_round_trip_through_json_with_their_kind() {
        let miss = Miss {
            caller: "lead_agent".into(),
            input_hash: "ab".into(),
            conversation_hash: "cd".into(),
            canonical: "[]".into(),
            fixture_path: "fixtures/x.json".into(),
            known_hashes: vec!["ef".into()],
            nearest: None,
        };
        let problems = [
            Problem::miss(miss),
            Problem::AmbiguousCaller {
                message: "m".into(),
                callers: vec!["a".into(), "b".into()],
            },
            Problem::ambiguous_answer(Ambiguity {
                caller: "lead_agent".into(),
                input_hash: "k".into(),
                fixture_path: "fixtures/x.json".into(),
                turns: vec![0, 1],
                answers: vec!["text \"a\"".into(), "text \"b\"".into()],
            }),
            Problem::Mismatch {
                message: "replay mismatch at call 1, field context.messages".into(),
                call_index: 1,
                field_path: "context.messages".into(),
            },
            Problem::Recording {
                message: "r".into(),
            },
            Problem::BadRequest {
                message: "b".into(),
            },
            Problem::RecordingWrite {
                message: "w".into(),
            },
            Problem::UnservedRoute {
                message: "u".into(),
                method: "POST".into(),
                path: "/v1/responses".into(),
            },
            Problem::BodyTooLarge {
                message: "t".into(),
                path: "/v1/messages".into(),
                limit: 1024,
            },
            Problem::RecordingLimit {
                message: "l".into(),
            },
            Problem::Overflow {
                message: "o".into(),
                not_kept: 2,
                by_kind: BTreeMap::from([("miss".to_owned(), 2)]),
            },
        ];
        for problem in problems {
            let value = serde_json::to_value(&problem).expect("serialises");
            // One name per kind: the problem's tag, the kind's serde form and its string.
            assert_eq!(value["kind"], json!(problem.kind()));
            assert_eq!(value["kind"], problem.kind().as_str());
            assert_eq!(value["message"], json!(problem.message()));
            let back: Problem = serde_json::from_value(value).expect("deserialises");
            assert_eq!(back, problem);
        }
    }

    fn bad_request(index: usize) -> Problem {
        Problem::BadRequest {
            message: format!("request {index}"),
        }
    }

    #[test]
    fn the_ledger_keeps_the_first_problems_in_full_and_counts_the_rest() {
        // (problems recorded, list length, the overflow's count)
        let cases = [
            (0, 0, None),
            (KEPT_PROBLEMS, KEPT_PROBLEMS, None),
            (KEPT_PROBLEMS + 1, KEPT_PROBLEMS + 1, Some(1)),
            (3_000, KEPT_PROBLEMS + 1, Some(3_000 - KEPT_PROBLEMS)),
        ];
        for (recorded, length, overflow) in cases {
            let mut ledger = Ledger::default();
            for index in 0..recorded {
                ledger.push(bad_request(index));
            }
            let list = ledger.read();
            assert_eq!(list.len(), length, "{recorded}");
            let counted = match list.last() {
                Some(Problem::Overflow {
                    not_kept, by_kind, ..
                }) => {
                    assert_eq!(by_kind["bad_request"], *not_kept, "{recorded}");
                    Some(*not_kept)
                }
                _ => None,
            };
            assert_eq!(counted, overflow, "{recorded}");
            if recorded > 0 {
                assert_eq!(list[0], bad_request(0), "the first problem is kept in full");
            }
        }
    }

    #[test]
    fn finding_9_the_ledger_is_bounded_by_bytes_and_a_miss_keeps_what_locates_it() {
        let huge = "x".repeat(1024 * 1024);
        let miss = {
            let recorded: replay_core::Miss = serde_json::from_value(json!({
                "caller": "lead_agent",
                "input_hash": "the-key",
                "conversation_hash": "cd",
                "canonical": huge,
                "fixture_path": "fixtures/x.json",
                "known_hashes": vec!["k".repeat(64); 20_000],
                "nearest": {"turn_index": 3, "input_hash": "ef", "served": false,
                            "common_prefix": 1,
                            "difference": {"path": "[1].content", "recorded": huge, "incoming": "y"}},
            }))
            .expect("a miss");
            Problem::Miss {
                message: format!(
                    "replay miss for the-key. Caller: 'lead_agent'. {huge}\nfirst differing field: [1].content"
                ),
                miss: Box::new(recorded),
            }
        };
        let mut ledger = Ledger::default();
        for _ in 0..80 {
            ledger.push(miss.clone());
        }
        let list = ledger.read();
        let size = serde_json::to_string(&list).expect("json").len();
        assert!(size <= MAX_LEDGER_BYTES + 64 * 1024, "{size} bytes");
        assert!(
            matches!(list.last(), Some(Problem::Overflow { .. })),
            "the rest are counted"
        );
        let Some(Problem::Miss { message, miss }) = list.first() else {
            panic!(
                "the first miss is kept: {:?}",
                list.first().map(Problem::kind)
            );
        };
        assert!(message.starts_with("replay miss for the-key. Caller: 'lead_agent'."));
        assert!(
            message.ends_with("first differing field: [1].content"),
            "the end stays"
        );
        assert!(message.contains("bytes cut"), "the cut is said");
        assert_eq!(
            (miss.input_hash.as_str(), miss.caller.as_str()),
            ("the-key", "lead_agent")
        );
        let nearest = miss.nearest.as_ref().expect("the nearest turn");
        assert_eq!(nearest.turn_index, 3);
        assert_eq!(
            nearest.difference.as_ref().map(|d| d.path.as_str()),
            Some("[1].content")
        );
        assert!(
            miss.canonical.len() <= MAX_PROBLEM_BYTES + 64 && miss.canonical.contains("bytes cut")
        );
    }

    #[test]
    fn clearing_says_how_many_problems_nobody_read() {
        let mut ledger = Ledger::default();
        ledger.push(bad_request(0));
        ledger.push(bad_request(1));
        ledger.read();
        ledger.push(bad_request(2));
        let discarded = ledger.clear();
        assert_eq!(discarded.count, 1, "one problem came after the last read");
        assert_eq!(discarded.problems, vec![bad_request(2)]);
        assert!(ledger.list().is_empty());
        assert_eq!(ledger.clear(), Discarded::default());
    }
}
