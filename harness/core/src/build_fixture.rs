//! The fixture builder (DeerFlow's `build_fixture_from_jsonl.py`): turns a versioned recording
//! plus its scenario metadata into a hash-keyed fixture. Each completed call becomes one turn
//! `{caller, conversation_hash, input_hash, output, canonical}` with the keys the recorder
//! computed (the same hashing function replay uses); a call whose provider failed becomes an
//! `error` turn; cancelled or abandoned calls are skipped and reported.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::fixture::{Fixture, Turn};
use crate::recording::{Outcome, RecordedCall, Recording};

/// The scenario metadata written beside a recording (`<recording>.meta.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioMetadata {
    /// Scenario id.
    pub scenario: String,
    /// UI mode.
    pub mode: String,
    /// The model that was recorded (informational).
    pub model: String,
    /// The first prompt.
    pub prompt: String,
    /// The run context sent with each prompt.
    pub context: Value,
    /// Later prompts in the same thread.
    pub followups: Vec<String>,
    /// Configuration overrides used when recording.
    pub gateway_config: Option<Value>,
}

impl ScenarioMetadata {
    /// The JSON document written beside the recording.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("scenario".into(), json!(self.scenario));
        out.insert("mode".into(), json!(self.mode));
        out.insert("model".into(), json!(self.model));
        out.insert("prompt".into(), json!(self.prompt));
        out.insert("context".into(), self.context.clone());
        if !self.followups.is_empty() {
            out.insert("followups".into(), json!(self.followups));
        }
        if let Some(config) = &self.gateway_config {
            out.insert("gateway_config".into(), config.clone());
        }
        Value::Object(out)
    }

    /// Reads a metadata file; `context` defaults to `{}` (as DeerFlow's builder does) and the
    /// model to `model_default`.
    pub fn load(path: &Path, model_default: &str) -> Result<ScenarioMetadata, BuildError> {
        let text = std::fs::read_to_string(path).map_err(|source| BuildError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|err| BuildError::Meta {
            path: path.to_path_buf(),
            problem: format!(
                "invalid JSON at line {}, column {}: {err}",
                err.line(),
                err.column()
            ),
        })?;
        let text_field = |key: &str| -> Result<String, BuildError> {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(String::from)
                .ok_or_else(|| BuildError::Meta {
                    path: path.to_path_buf(),
                    problem: format!("missing string \"{key}\""),
                })
        };
        Ok(ScenarioMetadata {
            scenario: text_field("scenario")?,
            mode: text_field("mode")?,
            prompt: text_field("prompt")?,
            model: value
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(model_default)
                .to_string(),
            context: value.get("context").cloned().unwrap_or_else(|| json!({})),
            followups: value
                .get("followups")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            gateway_config: value
                .get("gateway_config")
                .filter(|v| !v.is_null())
                .cloned(),
        })
    }
}

/// Why a fixture could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A file could not be read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The metadata file is malformed.
    #[error("scenario metadata {}: {problem}", .path.display())]
    Meta {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
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
    /// The caller, or why the call was skipped.
    pub caller: String,
    /// The input hash.
    pub input_hash: String,
    /// `tool_calls [..]`, `text`, `error <type>` or `skipped (<outcome>)`.
    pub what: String,
}

fn context_text(call: &RecordedCall, key: &str) -> Option<String> {
    call.request
        .context
        .get(key)
        .and_then(Value::as_str)
        .map(String::from)
}

/// The key order of LangChain's message dump (`replay-and-fixtures.md` §2.4). Recording rows have
/// sorted keys; fixtures keep DeerFlow's order, with unknown keys after the known ones.
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

/// Builds the fixture and a per-turn summary.
pub fn build_fixture(
    recording: &Recording,
    meta: &ScenarioMetadata,
) -> Result<(Fixture, Vec<TurnSummary>), BuildError> {
    let mut turns = Vec::new();
    let mut summary = Vec::new();
    for call in &recording.calls {
        let problem = |problem: &str| BuildError::Call {
            path: recording.path.clone(),
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
                what: format!("skipped ({})", call.outcome.as_str()),
            });
            continue;
        }
        let done = call
            .events
            .iter()
            .find(|e| e.get("type").and_then(Value::as_str) == Some("done"));
        let failure = call
            .events
            .iter()
            .find(|e| e.get("type").and_then(Value::as_str) == Some("error"));
        let (output, error, what) = match (done, failure, call.outcome) {
            (Some(done), _, _) => {
                let message = done
                    .get("message")
                    .cloned()
                    .ok_or_else(|| problem("done event has no message"))?;
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
                    "text".to_string()
                } else {
                    format!("tool_calls {calls:?}")
                };
                (
                    json!({"type": kind, "data": langchain_order(message)}),
                    None,
                    what,
                )
            }
            (None, failure, _) => {
                let failure = failure.cloned().unwrap_or_else(|| json!({}));
                let kind = failure
                    .get("error_type")
                    .and_then(Value::as_str)
                    .unwrap_or("APIError")
                    .to_string();
                let message = failure
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("recorded call ended with error")
                    .to_string();
                let error = json!({"type": kind, "message": message, "status": failure.get("status").cloned().unwrap_or(Value::Null)});
                (Value::Null, Some(error), format!("error {kind}"))
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
            output,
            error,
            canonical: context_text(call, "canonical"),
        });
    }
    let fixture = Fixture {
        scenario: meta.scenario.clone(),
        mode: meta.mode.clone(),
        model: meta.model.clone(),
        prompt: meta.prompt.clone(),
        context: meta.context.clone(),
        followups: meta.followups.clone(),
        gateway_config: meta.gateway_config.clone(),
        turns,
    };
    Ok((fixture, summary))
}
