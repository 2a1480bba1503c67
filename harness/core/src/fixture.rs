//! Replay fixture files (`docs/replay-and-fixtures.md` §2): loading with precise errors,
//! validation, and byte-exact writing.
//!
//! A fixture is the recorded model side of one scenario: the [`Scenario`] header (top-level keys
//! `scenario`, `mode`, `model`, `prompt`, `context`, in that order) and `turns`. Each turn holds
//! the key of one recorded model call and what it answered. DeerFlow writes fixtures with
//! `json.dumps(indent=2, ensure_ascii=False)` plus a newline; [`Fixture::to_pretty_json`] writes
//! the same bytes so a rebuilt fixture produces no diff.
//!
//! Beyond DeerFlow, this crate reads and writes a few optional keys (DeerFlow's loader ignores
//! unknown keys, and DeerFlow's fixtures load unchanged because every one is optional):
//! - per turn, `canonical` (the normalised canonical conversation text of the recorded input),
//!   after `output`: the replay engine uses it to point at the first differing field on a miss;
//! - per turn, `error` (`{"type", "message", "status"}`) instead of `output`: a model call that
//!   failed while recording, replayed as the same failure (the LLM error middleware's path);
//! - top level, after `context`: `followups` (later prompts sent in the same thread) and
//!   `gateway_config` (configuration overrides applied alike when recording and replaying),
//!   then `provenance` (when and where it was recorded, [`Provenance`]; absent in older ones);
//! - top level, after `turns`: `exchanges` (`{"version": 1, "recorded": [...]}`), what the other
//!   boundaries recorded ([`Exchange`]: MCP servers, HTTP tool APIs, embeddings).
//!
//! Defaults for missing top-level keys: DeerFlow's replay loader reads only `turns`, but the
//! golden document names the mode, so `turns` and `mode` are required. `scenario`, `model` and
//! `prompt` default to `""` and `context` to `{}` (the fixture builder's own default). A key that
//! is present with the wrong type, or a mode other than the four, is an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::exchange::{Exchange, exchanges_from_value, exchanges_to_value};
use super::provenance::Provenance;
use super::pyjson::to_python_pretty_json;
use super::recording::RecordedEvent;
use super::scenario::{FieldError, Scenario, json_type};

/// One replay fixture file.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// What was recorded: the header of the file.
    pub scenario: Scenario,
    /// The recorded model calls, in recording order.
    pub turns: Vec<Turn>,
    /// When, where and by what it was recorded; `None` in fixtures recorded before keyless wrote
    /// it (every shipped one), which load unchanged.
    pub provenance: Option<Provenance>,
    /// The exchanges recorded at the other boundaries (MCP servers, HTTP tool APIs,
    /// embeddings), in recording order; the file's `exchanges` section, written only when there
    /// is one, so every fixture without it keeps its bytes.
    pub exchanges: Vec<Exchange>,
}

/// One recorded model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The normalised caller identity; `None` in legacy fixtures.
    pub caller: Option<String>,
    /// SHA-256 hex of the canonical conversation; `None` in legacy fixtures.
    pub conversation_hash: Option<String>,
    /// The lookup key: caller-aware (§4.8), or the bare conversation hash in legacy fixtures.
    pub input_hash: String,
    /// What the call answered.
    pub answer: Answer,
    /// This crate's optional extension: the normalised canonical conversation of the recorded
    /// input, used for nearest-miss diagnostics. Ignored by DeerFlow.
    pub canonical: Option<String>,
}

/// What a recorded model call answered: a message, or a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The recorded AI message, `{"type": "ai", "data": {...}}` (the file's `output`).
    Output(Value),
    /// This crate's extension: the call failed while recording (the file's `error`), and replay
    /// fails it the same way.
    Error(RecordedError),
}

/// A model call's failure as recorded: `{"type", "message", "status"}` in the file, plus
/// `"in_stream": true` for a failure the provider reported inside a successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedError {
    /// The provider's error class name, e.g. `BadRequestError` (the file's `type`).
    pub error_type: String,
    /// The (redacted) error message.
    pub message: String,
    /// The HTTP status, when the provider answered with one.
    pub status: Option<u16>,
    /// The provider reported the failure inside a successful (200) answer, e.g. an `error`
    /// chunk after `finish_reason: length`: replay fails the call inside a 200 answer too
    /// (`docs/replay-and-fixtures.md` §2.3). Absent from the file (older fixtures) means false.
    pub in_stream: bool,
}

impl RecordedError {
    /// The failure a recorded `error` event holds (a class name `APIError` when the recorder
    /// knew none); `None` for any other event.
    pub fn from_event(event: &RecordedEvent) -> Option<RecordedError> {
        let RecordedEvent::Error {
            message,
            error_type,
            in_stream,
            ..
        } = event
        else {
            return None;
        };
        Some(RecordedError {
            error_type: error_type.as_deref().unwrap_or("APIError").to_owned(),
            message: message.clone(),
            status: event.status(),
            in_stream: *in_stream,
        })
    }

    /// The file form, `{"type", "message", "status"}` (`status` may be `null`), with
    /// `"in_stream": true` only when it is (so fixtures without it are written as they were).
    pub(crate) fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".to_owned(), Value::String(self.error_type.clone()));
        map.insert("message".to_owned(), Value::String(self.message.clone()));
        map.insert(
            "status".to_owned(),
            self.status.map_or(Value::Null, Value::from),
        );
        if self.in_stream {
            map.insert("in_stream".to_owned(), Value::Bool(true));
        }
        Value::Object(map)
    }
}

/// A fixture's recorded failure as the recording's `error` event, which a replay serves.
impl From<&RecordedError> for RecordedEvent {
    fn from(error: &RecordedError) -> RecordedEvent {
        RecordedEvent::Error {
            message: error.message.clone(),
            error_type: Some(error.error_type.clone()),
            status: Some(error.status),
            in_stream: error.in_stream,
        }
    }
}

/// Why a fixture could not be loaded. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error("fixture {}: cannot read: {source}", .path.display())]
    Io {
        /// The fixture file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("fixture {}: invalid JSON at line {line}, column {column}: {message}", .path.display())]
    Json {
        /// The fixture file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// A top-level problem: not an object, `turns` or `mode` missing, a key of the wrong type.
    #[error("fixture {}: {message}", .path.display())]
    Invalid {
        /// The fixture file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A key of the header is missing or wrong, e.g. `missing "mode"`.
    #[error("fixture {}: {problem}", .path.display())]
    Field {
        /// The fixture file.
        path: PathBuf,
        /// What is wrong, naming the key (boxed: it is rare, and the error stays small).
        #[source]
        problem: Box<FieldError>,
    },
    /// A key of one turn is missing or wrong, e.g. `turn 3: missing "error.message"`.
    #[error("fixture {}: turn {index}: {problem}", .path.display())]
    TurnField {
        /// The fixture file.
        path: PathBuf,
        /// 0-based index of the turn in `turns`.
        index: usize,
        /// What is wrong, naming the key (boxed: it is rare, and the error stays small).
        #[source]
        problem: Box<FieldError>,
    },
    /// A problem with one turn, e.g. `turn 3: missing "output"`.
    #[error("fixture {}: turn {index}: {message}", .path.display())]
    Turn {
        /// The fixture file.
        path: PathBuf,
        /// 0-based index of the turn in `turns`.
        index: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A turn's output is not an AI message; DeerFlow's exact message.
    #[error("replay fixture '{}' turn {index} output is {type_name}, expected AIMessage", .path.display())]
    NotAiOutput {
        /// The fixture file.
        path: PathBuf,
        /// 0-based index of the turn.
        index: usize,
        /// LangChain's class name for the output's type (`HumanMessage`, `ToolMessage`,
        /// `SystemMessage`), or the raw type string.
        type_name: String,
    },
}

impl Fixture {
    /// Reads and validates the fixture at `path`.
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Fixture::from_json_str(&text, path)
    }

    /// Parses and validates fixture text; `origin` names the file in errors.
    pub(crate) fn from_json_str(text: &str, origin: &Path) -> Result<Fixture, FixtureError> {
        // Duplicate keys are refused (serde_json would keep the last one silently).
        let value: Value =
            crate::unique_json::from_str(text).map_err(|err| FixtureError::Json {
                path: origin.to_path_buf(),
                line: err.line(),
                column: err.column(),
                message: err.to_string(),
            })?;
        Fixture::from_value(value, origin)
    }

    /// Builds and validates a fixture from an already parsed JSON document.
    pub(crate) fn from_value(value: Value, origin: &Path) -> Result<Fixture, FixtureError> {
        let invalid = |message: String| FixtureError::Invalid {
            path: origin.to_path_buf(),
            message,
        };
        let Value::Object(mut top) = value else {
            return Err(invalid(format!(
                "the document must be an object, got {}",
                json_type(&value)
            )));
        };
        let turns = match top.remove("turns") {
            None => return Err(invalid("missing \"turns\"".to_owned())),
            Some(Value::Array(turns)) => turns,
            Some(other) => {
                return Err(invalid(format!(
                    "\"turns\" must be an array, got {}",
                    json_type(&other)
                )));
            }
        };
        let scenario = Scenario::take_from(&mut top, &["mode"], "").map_err(|problem| {
            FixtureError::Field {
                path: origin.to_path_buf(),
                problem: Box::new(problem),
            }
        })?;
        let provenance = match top.remove("provenance") {
            None | Some(Value::Null) => None,
            Some(value) => {
                Some(
                    Provenance::from_value(value).map_err(|problem| FixtureError::Field {
                        path: origin.to_path_buf(),
                        problem: Box::new(problem),
                    })?,
                )
            }
        };
        let exchanges = match top.remove("exchanges") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => exchanges_from_value(value).map_err(invalid)?,
        };
        let turns = turns
            .into_iter()
            .enumerate()
            .map(|(index, turn)| parse_turn(turn, index, origin))
            .collect::<Result<Vec<_>, _>>()?;
        let fixture = Fixture {
            scenario,
            turns,
            provenance,
            exchanges,
        };
        fixture.validate(origin)?;
        Ok(fixture)
    }

    /// Checks what DeerFlow checks when the replay model is built: every turn's output is an AI
    /// message. `origin` names the file in the error.
    pub(crate) fn validate(&self, origin: &Path) -> Result<(), FixtureError> {
        for (index, turn) in self.turns.iter().enumerate() {
            if let Answer::Output(output) = &turn.answer {
                check_output(output, index, origin)?;
            }
        }
        Ok(())
    }

    /// The fixture as DeerFlow writes it: 2-space indent, the scenario's keys in order, then
    /// `turns` (turn keys `caller`, `conversation_hash`, `input_hash`, `output` or `error`, then
    /// `canonical`; `None` fields omitted), non-ASCII raw, floats in Python's repr, and a trailing
    /// newline.
    pub fn to_pretty_json(&self) -> String {
        let mut top = Map::new();
        self.scenario.write_into(&mut top);
        if let Some(provenance) = &self.provenance {
            top.insert("provenance".to_owned(), provenance.to_value());
        }
        let turns = self.turns.iter().map(Turn::to_value).collect();
        top.insert("turns".to_owned(), Value::Array(turns));
        if !self.exchanges.is_empty() {
            top.insert("exchanges".to_owned(), exchanges_to_value(&self.exchanges));
        }
        // `preserve_order` is on in this workspace, so the map keeps insertion order.
        let mut text = to_python_pretty_json(&Value::Object(top));
        text.push('\n');
        text
    }
}

/// A fixture file read, parsed and validated once, shared (`Arc`) by everyone who replays it: a
/// model server serving it and the runner judging the run hold the same one, and a
/// [`ReplayEngine`](crate::ReplayEngine) built over it ([`ReplayEngine::over`](crate::ReplayEngine::over))
/// does not validate it again. Its fields are private: only [`LoadedFixture::load`] makes one.
#[derive(Debug, Clone)]
pub struct LoadedFixture {
    path: PathBuf,
    fixture: Arc<Fixture>,
}

impl LoadedFixture {
    /// Reads and validates the fixture at `path` ([`Fixture::load`]).
    pub fn load(path: &Path) -> Result<LoadedFixture, FixtureError> {
        Ok(LoadedFixture {
            fixture: Arc::new(Fixture::load(path)?),
            path: path.to_path_buf(),
        })
    }

    /// The same fixture, shared, named by another file: a fault scenario
    /// (`<scenario>.<mode>@<fault>.faults.toml`) replays its base fixture under its own name.
    pub fn renamed(&self, path: &Path) -> LoadedFixture {
        LoadedFixture {
            fixture: Arc::clone(&self.fixture),
            path: path.to_path_buf(),
        }
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The fixture, shared.
    pub fn fixture(&self) -> &Arc<Fixture> {
        &self.fixture
    }
}

/// Turns that share one replay key but answer differently (`docs/replay-and-fixtures.md` §5.6).
///
/// A sequence (a retry after a recorded failure, the same node asked twice) is served in recorded
/// order only when the call names its caller; a call that names none could be any of the nodes
/// that recorded these turns, so the replay reports it instead of picking one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedKey {
    /// The key.
    pub input_hash: String,
    /// The caller the turns were recorded under (`None` for legacy turns).
    pub caller: Option<String>,
    /// Every turn with this key, in file order.
    pub turns: Vec<usize>,
}

impl Fixture {
    /// The keys whose turns hold two or more different answers, in order of first appearance.
    ///
    /// Answers are compared by what the gateway acts on: the message type, its text and its tool
    /// calls' names and arguments (ids, metadata and usage differ between any two recorded
    /// answers and are left out). A recorded failure is not counted: the gateway retries a
    /// failed call with the same conversation only after it failed, so an error followed by an
    /// answer is a sequence, never two nodes at once.
    pub fn shared_keys(&self) -> Vec<SharedKey> {
        let mut order: Vec<&str> = Vec::new();
        let mut groups: std::collections::HashMap<&str, Vec<usize>> =
            std::collections::HashMap::new();
        for (index, turn) in self.turns.iter().enumerate() {
            let group = groups.entry(turn.input_hash.as_str()).or_insert_with(|| {
                order.push(turn.input_hash.as_str());
                Vec::new()
            });
            group.push(index);
        }
        let mut shared = Vec::new();
        for key in order {
            let turns = &groups[key];
            let mut distinct: Vec<Value> = Vec::new();
            for &index in turns {
                if let Some(said) = self.turns[index].answer.what_it_says()
                    && !distinct.contains(&said)
                {
                    distinct.push(said);
                }
            }
            if distinct.len() > 1 {
                shared.push(SharedKey {
                    input_hash: key.to_owned(),
                    caller: self.turns[turns[0]].caller.clone(),
                    turns: turns.clone(),
                });
            }
        }
        shared
    }
}

impl Answer {
    /// What the gateway acts on in a recorded message: its type, text and tool calls (name and
    /// arguments); `None` for a recorded failure.
    pub(crate) fn what_it_says(&self) -> Option<Value> {
        let Answer::Output(output) = self else {
            return None;
        };
        let data = output.get("data").unwrap_or(&Value::Null);
        let calls: Vec<Value> = data
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .map(|call| {
                        serde_json::json!([
                            call.get("name").unwrap_or(&Value::Null),
                            call.get("args").unwrap_or(&Value::Null)
                        ])
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(serde_json::json!([
            output.get("type").unwrap_or(&Value::Null),
            data.get("content").unwrap_or(&Value::Null),
            calls
        ]))
    }

    /// A one-line description for diagnostics: `tool_calls ["ls"]`, `text "…"` (cut), or
    /// `error <type>`.
    pub fn describe(&self) -> String {
        match self {
            Answer::Error(error) => format!("error {}", error.error_type),
            Answer::Output(output) => {
                let data = output.get("data").unwrap_or(&Value::Null);
                let names: Vec<&str> = data
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(|calls| {
                        calls
                            .iter()
                            .filter_map(|c| c.get("name").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                if !names.is_empty() {
                    return format!("tool_calls {names:?}");
                }
                let text = match data.get("content") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                format!("text {:?}", crate::text::shorten(&text, 60))
            }
        }
    }
}

impl Turn {
    /// The turn as a JSON object in file key order, omitting `None` fields.
    pub(crate) fn to_value(&self) -> Value {
        let mut map = Map::new();
        if let Some(caller) = &self.caller {
            map.insert("caller".to_owned(), Value::String(caller.clone()));
        }
        if let Some(hash) = &self.conversation_hash {
            map.insert("conversation_hash".to_owned(), Value::String(hash.clone()));
        }
        map.insert(
            "input_hash".to_owned(),
            Value::String(self.input_hash.clone()),
        );
        match &self.answer {
            Answer::Output(output) => map.insert("output".to_owned(), output.clone()),
            Answer::Error(error) => map.insert("error".to_owned(), error.to_value()),
        };
        if let Some(canonical) = &self.canonical {
            map.insert("canonical".to_owned(), Value::String(canonical.clone()));
        }
        Value::Object(map)
    }
}

fn parse_turn(turn: Value, index: usize, origin: &Path) -> Result<Turn, FixtureError> {
    let error = |message: String| FixtureError::Turn {
        path: origin.to_path_buf(),
        index,
        message,
    };
    let Value::Object(mut map) = turn else {
        return Err(error(format!(
            "must be an object, got {}",
            json_type(&turn)
        )));
    };
    // `null` reads as absent for the optional keys, which is how a Python writer would emit None.
    let mut optional_text = |key: &str| -> Result<Option<String>, FixtureError> {
        match map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(error(format!(
                "\"{key}\" must be a string, got {}",
                json_type(&other)
            ))),
        }
    };
    let caller = optional_text("caller")?;
    let conversation_hash = optional_text("conversation_hash")?;
    let canonical = optional_text("canonical")?;
    let input_hash = match map.remove("input_hash") {
        None => return Err(error("missing \"input_hash\"".to_owned())),
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(error(format!(
                "\"input_hash\" must be a string, got {}",
                json_type(&other)
            )));
        }
    };
    let answer = match (map.remove("output"), map.remove("error")) {
        (Some(_), Some(failure)) if !failure.is_null() => {
            return Err(error(
                "has both \"output\" and \"error\"; a call answers one or the other".to_owned(),
            ));
        }
        (Some(output), _) => Answer::Output(output),
        (None, None | Some(Value::Null)) => {
            return Err(error("missing \"output\"".to_owned()));
        }
        (None, Some(failure)) => {
            Answer::Error(parse_recorded_error(failure).map_err(|problem| {
                FixtureError::TurnField {
                    path: origin.to_path_buf(),
                    index,
                    problem: Box::new(problem),
                }
            })?)
        }
    };
    Ok(Turn {
        caller,
        conversation_hash,
        input_hash,
        answer,
        canonical,
    })
}

/// `{"type": str, "message": str, "status": int | null, "in_stream": bool}`; `status` and
/// `in_stream` may be absent.
fn parse_recorded_error(failure: Value) -> Result<RecordedError, FieldError> {
    let Value::Object(mut map) = failure else {
        return Err(FieldError::wrong_type("error", "an object", &failure));
    };
    let mut text = |key: &str| match map.remove(key) {
        Some(Value::String(text)) => Ok(text),
        None => Err(FieldError::Missing(format!("error.{key}"))),
        Some(other) => Err(FieldError::wrong_type(
            format!("error.{key}"),
            "a string",
            &other,
        )),
    };
    let error_type = text("type")?;
    let message = text("message")?;
    let status = match map.remove("status") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => match number.as_u64().and_then(|n| u16::try_from(n).ok()) {
            Some(status) => Some(status),
            None => {
                return Err(FieldError::NotAStatus {
                    field: "error.status".to_owned(),
                    found: number.to_string(),
                });
            }
        },
        Some(other) => return Err(FieldError::wrong_type("error.status", "a number", &other)),
    };
    let in_stream = match map.remove("in_stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => flag,
        Some(other) => {
            return Err(FieldError::wrong_type(
                "error.in_stream",
                "a boolean",
                &other,
            ));
        }
    };
    Ok(RecordedError {
        error_type,
        message,
        status,
        in_stream,
    })
}

/// DeerFlow rebuilds each output with LangChain's `messages_from_dict` and requires an
/// `AIMessage` (an `AIMessageChunk` is one too).
fn check_output(output: &Value, index: usize, origin: &Path) -> Result<(), FixtureError> {
    let error = |message: String| FixtureError::Turn {
        path: origin.to_path_buf(),
        index,
        message,
    };
    let Value::Object(map) = output else {
        return Err(error(format!(
            "\"output\" must be an object, got {}",
            json_type(output)
        )));
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => {
            return Err(error(format!(
                "\"output.type\" must be a string, got {}",
                json_type(other)
            )));
        }
        None => return Err(error("missing \"output.type\"".to_owned())),
    };
    if !matches!(map.get("data"), Some(Value::Object(_))) {
        return Err(error("\"output.data\" must be an object".to_owned()));
    }
    let type_name = match kind {
        "ai" | "AIMessageChunk" => return Ok(()),
        "human" => "HumanMessage",
        "tool" => "ToolMessage",
        "system" => "SystemMessage",
        "chat" => "ChatMessage",
        "function" => "FunctionMessage",
        other => other,
    };
    Err(FixtureError::NotAiOutput {
        path: origin.to_path_buf(),
        index,
        type_name: type_name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::UiMode;
    use serde_json::json;

    const ORIGIN: &str = "fixtures/x.json";

    /// A DeerFlow-style fixture, byte for byte as Python's `json.dumps(indent=2,
    /// ensure_ascii=False)` plus a newline would write it (floats included).
    const DEERFLOW_TEXT: &str = r#"{
  "scenario": "write_read_file",
  "mode": "ultra",
  "model": "gpt-5.5",
  "prompt": "Do it — now, café",
  "context": {
    "is_bootstrap": false,
    "mode": "ultra",
    "thinking_enabled": true,
    "is_plan_mode": true,
    "subagent_enabled": true
  },
  "turns": [
    {
      "caller": "lead_agent",
      "conversation_hash": "9c50eda6ab7e8593dabccbdeadc70a4a7bf778b2c0c3f275f1f96cf2c8ab58db",
      "input_hash": "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f",
      "output": {
        "type": "ai",
        "data": {
          "content": "",
          "additional_kwargs": {},
          "response_metadata": {
            "finish_reason": "tool_calls",
            "logprobs": null,
            "temperature": 1e-05,
            "top_p": 1.0,
            "score": 0.5
          },
          "type": "ai",
          "name": null,
          "id": "lc_run--5f0c1e2a-8d7b-4c3e-9f10-123456789abc",
          "tool_calls": [
            {
              "name": "write_file",
              "args": {
                "path": "/mnt/user-data/outputs/note.txt",
                "content": "hi — there"
              },
              "id": "call_1",
              "type": "tool_call"
            }
          ],
          "invalid_tool_calls": [],
          "usage_metadata": {
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12
          }
        }
      },
      "canonical": "[{\"content\": \"x\", \"type\": \"human\"}]"
    },
    {
      "caller": "middleware:title",
      "conversation_hash": "aa",
      "input_hash": "bb",
      "output": {
        "type": "ai",
        "data": {
          "content": "Title",
          "additional_kwargs": {
            "refusal": null
          }
        }
      }
    }
  ]
}
"#;

    fn origin() -> &'static Path {
        Path::new(ORIGIN)
    }

    #[test]
    fn round_trip_is_byte_exact() {
        let fixture = Fixture::from_json_str(DEERFLOW_TEXT, origin()).expect("loads");
        assert_eq!(fixture.turns.len(), 2);
        assert_eq!(fixture.scenario.prompt, "Do it — now, café");
        assert_eq!(fixture.scenario.mode, UiMode::Ultra);
        assert_eq!(fixture.turns[0].caller.as_deref(), Some("lead_agent"));
        assert!(fixture.turns[0].canonical.is_some());
        assert_eq!(fixture.turns[1].canonical, None);
        assert_eq!(fixture.to_pretty_json(), DEERFLOW_TEXT);
        let again = Fixture::from_json_str(&fixture.to_pretty_json(), origin()).expect("reloads");
        assert_eq!(again, fixture);
    }

    #[test]
    fn load_reads_files_and_names_them_in_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.flash.json");
        std::fs::write(&path, DEERFLOW_TEXT).expect("write");
        let fixture = Fixture::load(&path).expect("loads");
        assert_eq!(fixture.scenario.id, "write_read_file");
        let missing = dir.path().join("missing.json");
        let err = Fixture::load(&missing).expect_err("missing file");
        assert!(matches!(err, FixtureError::Io { .. }));
        assert!(
            err.to_string()
                .starts_with(&format!("fixture {}: cannot read", missing.display())),
            "{err}"
        );
    }

    /// A loaded fixture is read once and shared: an engine over it holds the same fixture, and
    /// a broken file is refused at load, naming it.
    #[test]
    fn a_loaded_fixture_is_shared_by_the_engines_over_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.flash.json");
        std::fs::write(&path, DEERFLOW_TEXT).expect("write");
        let loaded = LoadedFixture::load(&path).expect("loads");
        assert_eq!(loaded.path(), path);
        let engine = crate::ReplayEngine::over(&loaded);
        assert!(std::ptr::eq(engine.fixture(), loaded.fixture().as_ref()));
        std::fs::write(&path, DEERFLOW_TEXT.replace("\"ai\"", "\"human\"")).expect("write");
        let err = LoadedFixture::load(&path).expect_err("not an AI message");
        assert!(matches!(err, FixtureError::NotAiOutput { .. }), "{err}");
    }

    #[test]
    fn an_error_turn_is_typed_and_written_back_as_it_was_read() {
        let text = r#"{
  "scenario": "model_error",
  "mode": "thinking",
  "model": "m",
  "prompt": "p",
  "context": {},
  "turns": [
    {
      "input_hash": "a",
      "error": {
        "type": "BadRequestError",
        "message": "too long",
        "status": 400
      }
    },
    {
      "input_hash": "b",
      "error": {
        "type": "APIConnectionError",
        "message": "reset",
        "status": null
      }
    },
    {
      "input_hash": "c",
      "error": {
        "type": "APIError",
        "message": "Token limit reached",
        "status": null,
        "in_stream": true
      }
    }
  ]
}
"#;
        let fixture = Fixture::from_json_str(text, origin()).expect("loads");
        let answers: Vec<&Answer> = fixture.turns.iter().map(|turn| &turn.answer).collect();
        assert_eq!(
            answers,
            [
                &Answer::Error(RecordedError {
                    error_type: "BadRequestError".into(),
                    message: "too long".into(),
                    status: Some(400),
                    in_stream: false,
                }),
                &Answer::Error(RecordedError {
                    error_type: "APIConnectionError".into(),
                    message: "reset".into(),
                    status: None,
                    in_stream: false,
                }),
                &Answer::Error(RecordedError {
                    error_type: "APIError".into(),
                    message: "Token limit reached".into(),
                    status: None,
                    in_stream: true,
                }),
            ]
        );
        assert_eq!(fixture.to_pretty_json(), text);
    }

    #[test]
    fn legacy_fixture_loads() {
        let text = r#"{"scenario": "s", "mode": "flash", "model": "m", "prompt": "p", "context": {},
            "turns": [{"input_hash": "abc", "output": {"type": "ai", "data": {"content": "hi"}}}]}"#;
        let fixture = Fixture::from_json_str(text, origin()).expect("legacy loads");
        let turn = &fixture.turns[0];
        assert_eq!(turn.caller, None);
        assert_eq!(turn.conversation_hash, None);
        assert_eq!(turn.input_hash, "abc");
        // Written back without the absent keys.
        assert!(!fixture.to_pretty_json().contains("caller"));
    }

    #[test]
    fn missing_top_level_keys_default_except_turns_and_mode() {
        let fixture =
            Fixture::from_json_str(r#"{"mode": "flash", "turns": []}"#, origin()).expect("loads");
        assert_eq!(fixture.scenario.id, "");
        assert_eq!(fixture.scenario.model, "");
        assert_eq!(fixture.scenario.context, json!({}));
        assert!(fixture.turns.is_empty());
    }

    #[test]
    fn malformed_fixtures_name_file_turn_and_field() {
        let ai = r#"{"type": "ai", "data": {"content": ""}}"#;
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "not json",
                "{\n  \"turns\": [\n}".to_owned(),
                "fixture fixtures/x.json: invalid JSON at line 3, column 1: ",
            ),
            (
                "not an object",
                "[]".to_owned(),
                "fixture fixtures/x.json: the document must be an object, got an array",
            ),
            (
                "mode missing",
                r#"{"turns": []}"#.to_owned(),
                "fixture fixtures/x.json: missing \"mode\"",
            ),
            (
                "mode neither a UI mode nor a label",
                r#"{"mode": "Turbo", "turns": []}"#.to_owned(),
                "fixture fixtures/x.json: \"mode\": \"Turbo\" is not a mode: expected flash, thinking, pro, ultra, or a label",
            ),
            (
                "output and error",
                format!(r#"{{"mode": "flash", "turns": [{{"input_hash": "a", "output": {ai}, "error": {{"type": "E", "message": "m"}}}}]}}"#),
                "fixture fixtures/x.json: turn 0: has both \"output\" and \"error\"",
            ),
            (
                "error without message",
                r#"{"mode": "flash", "turns": [{"input_hash": "a", "error": {"type": "E"}}]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: missing \"error.message\"",
            ),
            (
                "error status not a status",
                r#"{"mode": "flash", "turns": [{"input_hash": "a", "error": {"type": "E", "message": "m", "status": -1}}]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: \"error.status\" must be an HTTP status, got -1",
            ),
            (
                "turns missing",
                "{}".to_owned(),
                "fixture fixtures/x.json: missing \"turns\"",
            ),
            (
                "turns wrong type",
                r#"{"mode": "flash", "turns": {}}"#.to_owned(),
                "fixture fixtures/x.json: \"turns\" must be an array, got an object",
            ),
            (
                "prompt wrong type",
                r#"{"mode": "flash", "prompt": 1, "turns": []}"#.to_owned(),
                "fixture fixtures/x.json: \"prompt\" must be a string, got a number",
            ),
            (
                "context wrong type",
                r#"{"mode": "flash", "context": [], "turns": []}"#.to_owned(),
                "fixture fixtures/x.json: \"context\" must be an object, got an array",
            ),
            (
                "turn not an object",
                r#"{"mode": "flash", "turns": ["x"]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: must be an object, got a string",
            ),
            (
                "output missing",
                format!(
                    r#"{{"mode": "flash", "turns": [{{"input_hash": "a", "output": {ai}}}, {{"input_hash": "a", "output": {ai}}}, {{"input_hash": "a", "output": {ai}}}, {{"input_hash": "b"}}]}}"#
                ),
                "fixture fixtures/x.json: turn 3: missing \"output\"",
            ),
            (
                "input_hash missing",
                format!(r#"{{"mode": "flash", "turns": [{{"output": {ai}}}]}}"#),
                "fixture fixtures/x.json: turn 0: missing \"input_hash\"",
            ),
            (
                "input_hash wrong type",
                format!(r#"{{"mode": "flash", "turns": [{{"input_hash": 5, "output": {ai}}}]}}"#),
                "fixture fixtures/x.json: turn 0: \"input_hash\" must be a string, got a number",
            ),
            (
                "caller wrong type",
                format!(r#"{{"mode": "flash", "turns": [{{"caller": [], "input_hash": "a", "output": {ai}}}]}}"#),
                "fixture fixtures/x.json: turn 0: \"caller\" must be a string, got an array",
            ),
            (
                "output not an object",
                r#"{"mode": "flash", "turns": [{"input_hash": "a", "output": "hi"}]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: \"output\" must be an object, got a string",
            ),
            (
                "output without type",
                r#"{"mode": "flash", "turns": [{"input_hash": "a", "output": {"data": {}}}]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: missing \"output.type\"",
            ),
            (
                "output without data",
                r#"{"mode": "flash", "turns": [{"input_hash": "a", "output": {"type": "ai"}}]}"#.to_owned(),
                "fixture fixtures/x.json: turn 0: \"output.data\" must be an object",
            ),
        ];
        for (name, text, expected) in cases {
            let err = Fixture::from_json_str(&text, origin()).expect_err(name);
            let message = err.to_string();
            assert!(message.starts_with(expected), "{name}: {message}");
        }
    }

    #[test]
    fn non_ai_outputs_give_deerflows_message() {
        let cases = [
            ("human", "HumanMessage"),
            ("tool", "ToolMessage"),
            ("system", "SystemMessage"),
            ("weird", "weird"),
        ];
        for (kind, type_name) in cases {
            let text = format!(
                r#"{{"mode": "flash", "turns": [{{"input_hash": "a", "output": {{"type": "ai", "data": {{}}}}}}, {{"input_hash": "b", "output": {{"type": "{kind}", "data": {{"content": "x"}}}}}}]}}"#
            );
            let err = Fixture::from_json_str(&text, origin()).expect_err(kind);
            assert_eq!(
                err.to_string(),
                format!(
                    "replay fixture 'fixtures/x.json' turn 1 output is {type_name}, expected AIMessage"
                )
            );
        }
    }
}
