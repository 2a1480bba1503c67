//! The fixture builder (DeerFlow's `build_fixture_from_jsonl.py`): turns a versioned recording
//! plus its [`Scenario`] into a hash-keyed fixture. Each completed call becomes one turn
//! `{caller, conversation_hash, input_hash, output, canonical}` with the keys the recorder
//! computed (the same hashing function replay uses); a call whose provider failed becomes an
//! `error` turn; cancelled or abandoned calls are skipped and reported. [`BuildWarning::of`] says
//! what replay will report about the built fixture: turns that share a key but answer
//! differently, which only a caller header tells apart (`docs/replay-and-fixtures.md` §9.3).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::exchange::Exchange;
use crate::fixture::{Answer, Fixture, RecordedError, SharedKey, Turn};
use crate::protocol::CALLER_HEADER;
use crate::pyjson::python_repr;
use crate::recording::{Outcome, RecordedCall, RecordedEvent, Recording};
use crate::scenario::Scenario;
use crate::text::first_chars;

/// Why a fixture could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A recorded call lacks what a turn needs.
    #[error("recording {}: call {call_index}: {problem}", .path.display())]
    Call {
        /// The recording.
        path: PathBuf,
        /// The call.
        call_index: usize,
        /// What is missing.
        problem: String,
    },
}

/// One line of the builder's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    /// The call it came from.
    pub call_index: usize,
    /// The caller.
    pub caller: String,
    /// The input hash.
    pub input_hash: String,
    /// What became of the call.
    pub what: CallSummary,
}

/// What a recorded call became in the fixture.
#[derive(Debug, Clone, PartialEq)]
pub enum CallSummary {
    /// A turn answering with tool calls (their names).
    ToolCalls(Vec<String>),
    /// A turn answering with text.
    Text,
    /// A turn that fails with the recorded error type.
    Error(String),
    /// No turn: the call was cancelled or abandoned.
    Skipped(Outcome),
}

impl fmt::Display for CallSummary {
    /// `tool_calls ["name", …]`, `text`, `error <type>` or `skipped (<outcome>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallSummary::ToolCalls(names) => write!(f, "tool_calls {names:?}"),
            CallSummary::Text => f.write_str("text"),
            CallSummary::Error(error_type) => write!(f, "error {error_type}"),
            CallSummary::Skipped(outcome) => write!(f, "skipped ({})", outcome.as_str()),
        }
    }
}

/// What the builder noticed about a built fixture that its replay will report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildWarning {
    /// Turns share one key but answer differently: a replayed call that names no caller gets
    /// none of them (an ambiguity, `docs/replay-and-fixtures.md` §5.6).
    SharedKey(SharedKey),
}

impl BuildWarning {
    /// The warnings about `fixture`, in order of first appearance.
    pub fn of(fixture: &Fixture) -> Vec<BuildWarning> {
        fixture
            .shared_keys()
            .into_iter()
            .map(BuildWarning::SharedKey)
            .collect()
    }
}

impl fmt::Display for BuildWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildWarning::SharedKey(shared) => {
                let turns: Vec<String> = shared.turns.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "turns {} share the input hash {}… (caller {}) but answer differently: a \
                     replayed call that does not name its caller cannot be told which answer \
                     is its own, so replay reports it as ambiguous. If these are graph nodes \
                     calling the model with the same conversation, send the {CALLER_HEADER} \
                     header with each node's name on its model calls and record again",
                    turns.join(", "),
                    first_chars(&shared.input_hash, 12),
                    python_repr(shared.caller.as_deref().unwrap_or("<none>")),
                )
            }
        }
    }
}

/// The user's prompts a recording's calls carried, in the order they first appear: the `human`
/// entries of each call's canonical conversation (`context.canonical`, which leaves out system
/// prompts and hidden messages), each once. `keyless record --serve` takes a fixture's prompt and
/// follow-ups from them when a browser, not the driver, made the run. The text is the canonical
/// one (normalised: a date or an id in a prompt reads as its placeholder).
pub fn prompts_in(recording: &Recording) -> Vec<String> {
    let mut prompts: Vec<String> = Vec::new();
    for call in &recording.calls {
        let Some(canonical) = context_text(call, "canonical") else {
            continue;
        };
        let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(&canonical) else {
            continue;
        };
        for entry in entries {
            if entry.get("type").and_then(Value::as_str) == Some("human")
                && let Some(content) = entry.get("content").and_then(Value::as_str)
                && !prompts.iter().any(|seen| seen == content)
            {
                prompts.push(content.to_owned());
            }
        }
    }
    prompts
}

fn context_text(call: &RecordedCall, key: &str) -> Option<String> {
    call.request
        .context
        .get(key)
        .and_then(Value::as_str)
        .map(String::from)
}

/// The key order of LangChain's message dump (`docs/replay-and-fixtures.md` §2.4). Recording rows
/// have sorted keys; fixtures keep DeerFlow's order, with unknown keys after the known ones.
const DUMP_ORDER: [&str; 12] = [
    "content",
    "additional_kwargs",
    "response_metadata",
    "type",
    "name",
    "id",
    "tool_calls",
    "invalid_tool_calls",
    "usage_metadata",
    "tool_call_id",
    "artifact",
    "status",
];

fn langchain_order(message: Value) -> Value {
    let Value::Object(mut map) = message else {
        return message;
    };
    let mut ordered = Map::new();
    for key in DUMP_ORDER {
        if let Some(value) = map.remove(key) {
            ordered.insert(key.to_string(), value);
        }
    }
    ordered.extend(map);
    Value::Object(ordered)
}

/// Builds the fixture of `scenario` from its recording, and a per-call summary.
pub fn build_fixture(
    recording: &Recording,
    scenario: &Scenario,
) -> Result<(Fixture, Vec<TurnSummary>), BuildError> {
    build_fixture_from_calls(
        &recording.path,
        &recording.calls,
        &recording.exchanges,
        scenario,
    )
}

/// [`build_fixture`] from the calls of the recording at `path` as a writer holds them in memory
/// ([`RecordingSink::remembered`](crate::recording::RecordingSink::remembered)), without
/// reading the file back; `path` names the recording in errors. The recorded `exchanges` (the
/// other boundaries': [`RecordingSink::remembered_exchanges`](crate::recording::RecordingSink::remembered_exchanges))
/// become the fixture's `exchanges` as they are.
pub fn build_fixture_from_calls(
    path: &Path,
    calls: &[RecordedCall],
    exchanges: &[Exchange],
    scenario: &Scenario,
) -> Result<(Fixture, Vec<TurnSummary>), BuildError> {
    let mut turns = Vec::new();
    let mut summary = Vec::new();
    for call in calls {
        let problem = |problem: &str| BuildError::Call {
            path: path.to_path_buf(),
            call_index: call.call_index,
            problem: problem.to_string(),
        };
        let input_hash =
            context_text(call, "input_hash").ok_or_else(|| problem("no context.input_hash"))?;
        let caller = context_text(call, "caller").ok_or_else(|| problem("no context.caller"))?;
        if matches!(call.outcome, Outcome::Cancelled | Outcome::Abandoned) {
            summary.push(TurnSummary {
                call_index: call.call_index,
                caller,
                input_hash,
                what: CallSummary::Skipped(call.outcome),
            });
            continue;
        }
        let done = call.events.iter().find_map(|event| match event {
            RecordedEvent::Done { message } => Some(message),
            _ => None,
        });
        let failure = call.events.iter().find_map(RecordedError::from_event);
        let (answer, what) = match done {
            Some(message) => {
                let message = Value::Object(message.clone());
                let kind = message
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("ai")
                    .to_string();
                let calls: Vec<String> = message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(|calls| {
                        calls
                            .iter()
                            .filter_map(|c| c.get("name").and_then(Value::as_str))
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                let what = if calls.is_empty() {
                    CallSummary::Text
                } else {
                    CallSummary::ToolCalls(calls)
                };
                let output = json!({"type": kind, "data": langchain_order(message)});
                (Answer::Output(output), what)
            }
            None => {
                let error = failure.unwrap_or_else(|| RecordedError {
                    error_type: "APIError".to_owned(),
                    message: "recorded call ended with error".to_owned(),
                    status: None,
                    in_stream: false,
                });
                let what = CallSummary::Error(error.error_type.clone());
                (Answer::Error(error), what)
            }
        };
        summary.push(TurnSummary {
            call_index: call.call_index,
            caller: caller.clone(),
            input_hash: input_hash.clone(),
            what,
        });
        turns.push(Turn {
            caller: Some(caller),
            conversation_hash: context_text(call, "conversation_hash"),
            input_hash,
            answer,
            canonical: context_text(call, "canonical"),
        });
    }
    let fixture = Fixture {
        scenario: scenario.clone(),
        turns,
        provenance: None,
        exchanges: exchanges.to_vec(),
    };
    Ok((fixture, summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::RecordedRequest;
    use crate::scenario::UiMode;

    /// A completed call by `caller` under `input_hash` answering `content` (or failing).
    fn call(index: usize, caller: &str, input_hash: &str, content: Option<&str>) -> RecordedCall {
        let context = json!({"caller": caller, "input_hash": input_hash, "conversation_hash": "c"});
        let (events, outcome) = match content {
            Some(text) => (
                vec![
                    json!({"type": "done", "message": {"type": "ai", "content": text, "id": format!("run-{index}")}}),
                ],
                Outcome::Complete,
            ),
            None => (
                vec![
                    json!({"type": "error", "error_type": "RateLimitError", "message": "slow", "status": 429}),
                ],
                Outcome::Error,
            ),
        };
        RecordedCall {
            call_index: index,
            request: RecordedRequest::new(json!({}), context, Value::Null),
            events: events
                .iter()
                .map(|e| RecordedEvent::parse(e).unwrap())
                .collect(),
            outcome,
            line: index + 2,
        }
    }

    #[test]
    fn prompts_are_the_human_entries_of_the_canonical_conversations_once_each_in_order() {
        let with = |index: usize, messages: Value| {
            let mut call = call(index, "lead_agent", "k", Some("ok"));
            call.request.context["canonical"] = json!(crate::to_python_json(&messages));
            call
        };
        let human = |text: &str| json!({"type": "human", "content": text});
        let ai = |text: &str| json!({"type": "ai", "content": text});
        let recording = Recording {
            exchanges: Vec::new(),
            path: "r.jsonl".into(),
            format_version: 1,
            header: Value::Null,
            calls: vec![
                with(0, json!([human("first")])),
                with(1, json!([human("first"), ai("a"), human("second")])),
                call(2, "title_agent", "t", Some("no canonical: skipped")),
                with(
                    3,
                    json!([human("first"), ai("a"), human("second"), ai("b")]),
                ),
            ],
            rows: Vec::new(),
        };
        assert_eq!(prompts_in(&recording), ["first", "second"]);
    }

    #[test]
    fn the_builder_names_turns_that_share_a_key_but_answer_differently() {
        /// (name, calls as (caller, input hash, answer), the turns of the warnings)
        type Case = (
            &'static str,
            Vec<(&'static str, &'static str, Option<&'static str>)>,
            Vec<Vec<usize>>,
        );
        let cases: Vec<Case> = vec![
            (
                "parallel nodes recorded without a caller header",
                vec![
                    ("lead_agent", "k", Some("a")),
                    ("lead_agent", "k", Some("b")),
                ],
                vec![vec![0, 1]],
            ),
            (
                "the same answer twice",
                vec![
                    ("lead_agent", "k", Some("a")),
                    ("lead_agent", "k", Some("a")),
                ],
                vec![],
            ),
            (
                "a failure and its retry",
                vec![("lead_agent", "k", None), ("lead_agent", "k", Some("a"))],
                vec![],
            ),
            (
                "nodes named by the header have keys of their own",
                vec![("node_a", "ka", Some("a")), ("node_b", "kb", Some("b"))],
                vec![],
            ),
        ];
        for (name, calls, expected) in cases {
            let recording = Recording {
                exchanges: Vec::new(),
                path: PathBuf::from("r.jsonl"),
                format_version: 2,
                header: Value::Null,
                calls: calls
                    .iter()
                    .enumerate()
                    .map(|(i, (caller, key, answer))| call(i, caller, key, *answer))
                    .collect(),
                rows: Vec::new(),
            };
            let scenario = Scenario::new("s", UiMode::Flash, "p");
            let (fixture, _) = build_fixture(&recording, &scenario).expect(name);
            let warnings = BuildWarning::of(&fixture);
            let turns: Vec<Vec<usize>> = warnings
                .iter()
                .map(|BuildWarning::SharedKey(shared)| shared.turns.clone())
                .collect();
            assert_eq!(turns, expected, "{name}");
            for warning in warnings {
                let text = warning.to_string();
                assert!(
                    text.starts_with("turns 0, 1 share the input hash k… (caller 'lead_agent')")
                        && text.contains(CALLER_HEADER),
                    "{name}: {text}"
                );
            }
        }
    }
}
