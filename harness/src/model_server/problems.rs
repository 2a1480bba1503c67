//! What went wrong on the model side of a replay, as the model server reports it: printed the
//! moment it happens, kept in a ledger, and served as JSON on `GET /_harness/misses` so a driver
//! in any language can assert there was none.
//!
//! Every problem serialises as an object with a `kind` and a `message` (the full, human-readable
//! diagnostic); a miss also carries the whole [`Miss`], so a Rust driver gets back the value the
//! in-process replay model would have given it.

use replay_core::{Ambiguity, Miss};
use serde::{Deserialize, Serialize};

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
}

impl Problem {
    /// A miss.
    pub(crate) fn miss(miss: Miss) -> Problem {
        Problem::Miss {
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

    /// The `kind` tag: `miss`, `ambiguous_caller`, `ambiguous_answer`, `mismatch`, `recording`, `bad_request` or
    /// `recording_write`.
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::Miss { .. } => "miss",
            Problem::AmbiguousCaller { .. } => "ambiguous_caller",
            Problem::AmbiguousAnswer { .. } => "ambiguous_answer",
            Problem::Mismatch { .. } => "mismatch",
            Problem::Recording { .. } => "recording",
            Problem::BadRequest { .. } => "bad_request",
            Problem::RecordingWrite { .. } => "recording_write",
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
            | Problem::RecordingWrite { message } => message,
        }
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
        ];
        for problem in problems {
            let value = serde_json::to_value(&problem).expect("serialises");
            assert_eq!(value["kind"], problem.kind());
            assert_eq!(value["message"], json!(problem.message()));
            let back: Problem = serde_json::from_value(value).expect("deserialises");
            assert_eq!(back, problem);
        }
    }
}
