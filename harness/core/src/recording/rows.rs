//! The rows of a recording file and what they carry (`docs/recording-format.md` §2 to §4): format
//! versions, call outcomes, the request payloads, the event classes a recorded event must
//! validate as, the parsed [`Recording`], and the [`RecordingFileError`] every reader and writer
//! failure is reported with.
//!
//! Payloads stay `serde_json::Value`s: the format does not depend on any gateway's types. The
//! event classes ([`StreamEvent`]) are this crate's own schema, mirroring a gateway's stream
//! events; they only check that the fields a consumer needs are present with the right types, and
//! allow extra fields so that newer writers stay readable.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::redact::redact;

/// The format version this build writes.
pub(crate) const FORMAT_VERSION: u64 = 2;

/// The format versions this build reads (§2.4).
pub(crate) const READABLE_VERSIONS: [u64; 2] = [1, 2];

/// The version of the redaction rules (§6), stored in managed headers.
pub(crate) const REDACTION_VERSION: u64 = 1;

/// Every allowed value of an event's `type` field, in the order of §2.2.
pub(crate) const EVENT_TYPES: [&str; 12] = [
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
];

/// The row types of §2.2; any other `type` is rejected.
pub(crate) const ROW_TYPES: [&str; 4] = ["header", "request", "event", "call_end"];

/// The run-time-only option keys that are never written (§2.2) and are removed from version 1
/// requests and from incoming requests before comparison.
pub(crate) const RUNTIME_ONLY_OPTIONS: [&str; 2] = ["signal", "on_payload"];

/// How a recorded call finished (§4), stored in its `call_end` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A terminal event arrived, or the source ended without one.
    Complete,
    /// The provider raised an error (including a failure to start the stream).
    Error,
    /// The calling task was cancelled.
    Cancelled,
    /// The consumer closed the stream early.
    Abandoned,
}

impl Outcome {
    /// Every outcome, in the order of §2.2.
    pub(crate) const ALL: [Outcome; 4] = [
        Outcome::Complete,
        Outcome::Error,
        Outcome::Cancelled,
        Outcome::Abandoned,
    ];

    /// The value written in `call_end.outcome`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
            Outcome::Abandoned => "abandoned",
        }
    }

    /// Parses a `call_end.outcome` value; `None` for anything not allowed.
    pub(crate) fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The request of one call: three JSON payloads, stored after redaction. `options` may be null.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The model description (provider, model id, headers, ...).
    pub model: Value,
    /// The conversation context (system prompt, messages, tools, ...).
    pub context: Value,
    /// The call options, or `null`.
    pub options: Value,
}

impl RecordedRequest {
    /// A request from its three payloads.
    pub fn new(model: Value, context: Value, options: Value) -> RecordedRequest {
        RecordedRequest {
            model,
            context,
            options,
        }
    }

    /// The request as it is stored and compared: `options` without the run-time-only keys
    /// (`signal` and `on_payload`), and every payload redacted (§6).
    pub(crate) fn stored(&self) -> RecordedRequest {
        RecordedRequest {
            model: redact(&self.model),
            context: redact(&self.context),
            options: redact(&without_runtime_only(&self.options)),
        }
    }
}

/// `options` without the run-time-only keys `signal` and `on_payload`; anything that is not an
/// object is returned unchanged.
pub(crate) fn without_runtime_only(options: &Value) -> Value {
    match options {
        Value::Object(map) if RUNTIME_ONLY_OPTIONS.iter().any(|k| map.contains_key(*k)) => {
            let mut map = map.clone();
            for key in RUNTIME_ONLY_OPTIONS {
                map.shift_remove(key);
            }
            Value::Object(map)
        }
        other => other.clone(),
    }
}

/// One validated call of a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// Its index: calls are numbered from 0 without gaps.
    pub(crate) call_index: usize,
    /// The recorded (redacted) request; for version 1 files, without the run-time-only options.
    pub request: RecordedRequest,
    /// The event payloads, in `event_index` order, each a valid [`StreamEvent`].
    pub events: Vec<Value>,
    /// How the call finished.
    pub outcome: Outcome,
    /// The 1-based line of its request row.
    pub(crate) line: usize,
}

/// A whole recording file, read strictly (§5).
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The file it was read from.
    pub(crate) path: PathBuf,
    /// The header's `format_version` (one of [`READABLE_VERSIONS`]).
    pub(crate) format_version: u64,
    /// The header row, with any optional metadata (`recording_id`, `created_at`, ...).
    pub header: Value,
    /// The calls, in `call_index` order.
    pub calls: Vec<RecordedCall>,
    /// Every parsed row in file order, header first, as written (for `show --content`).
    pub rows: Vec<Value>,
}

impl Recording {
    /// The header's `recording_id`, present in managed recordings.
    #[cfg(test)]
    pub(crate) fn recording_id(&self) -> Option<&str> {
        self.header.get("recording_id").and_then(Value::as_str)
    }

    /// The header's `created_at`, present in managed recordings.
    #[cfg(test)]
    pub(crate) fn created_at(&self) -> Option<&str> {
        self.header.get("created_at").and_then(Value::as_str)
    }
}

/// `recording file <path>[ at line <n>][ for call <i>]: <reason>` (§5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "recording file {}{}{}: {reason}",
    .path.display(),
    at_line(*.line),
    for_call(*.call_index)
)]
pub struct RecordingFileError {
    /// The recording file.
    pub(crate) path: PathBuf,
    /// The 1-based line the failure concerns, when one does.
    pub(crate) line: Option<usize>,
    /// The call the failure concerns, when one does.
    pub call_index: Option<usize>,
    /// What is wrong, e.g. `missing call_end`.
    pub(crate) reason: String,
}

fn at_line(line: Option<usize>) -> String {
    line.map(|n| format!(" at line {n}")).unwrap_or_default()
}

fn for_call(call_index: Option<usize>) -> String {
    call_index
        .map(|i| format!(" for call {i}"))
        .unwrap_or_default()
}

impl RecordingFileError {
    /// An error about `path` with no line or call.
    pub(crate) fn new(path: &Path, reason: impl Into<String>) -> RecordingFileError {
        RecordingFileError {
            path: path.to_path_buf(),
            line: None,
            call_index: None,
            reason: reason.into(),
        }
    }

    /// The same error, naming a 1-based line.
    pub(crate) fn at_line(mut self, line: usize) -> RecordingFileError {
        self.line = Some(line);
        self
    }

    /// The same error, naming a call.
    pub(crate) fn for_call(mut self, call_index: usize) -> RecordingFileError {
        self.call_index = Some(call_index);
        self
    }
}

/// One assistant-message stream event, the payload of an `event` row, tagged by `type`.
///
/// This crate's own schema (§2.2 leaves the layout to each port). Unknown extra fields are
/// accepted and ignored, so the check is forward compatible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The assistant message starts.
    Start {},
    /// A text block starts.
    TextStart {},
    /// A piece of text.
    TextDelta {
        /// The text piece.
        delta: String,
    },
    /// A text block ends.
    TextEnd {},
    /// A thinking block starts.
    ThinkingStart {},
    /// A piece of thinking text.
    ThinkingDelta {
        /// The thinking piece.
        delta: String,
    },
    /// A thinking block ends.
    ThinkingEnd {},
    /// A tool call starts.
    ToolcallStart {
        /// The tool call's position among the message's tool calls.
        index: u32,
        /// The tool call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A piece of a tool call's JSON arguments.
    ToolcallDelta {
        /// The tool call's position.
        index: u32,
        /// The arguments piece.
        delta: String,
    },
    /// A tool call ends.
    ToolcallEnd {
        /// The tool call's position.
        index: u32,
    },
    /// Terminal: the message is complete.
    Done {
        /// The final assistant message.
        message: Map<String, Value>,
    },
    /// Terminal: the call failed.
    Error {
        /// The error text.
        message: String,
    },
}

/// The JSON type a required event field must have.
#[derive(Clone, Copy)]
enum FieldKind {
    String,
    U32,
    Object,
}

/// The required fields of each event class, by `type`.
fn required_fields(event_type: &str) -> &'static [(&'static str, FieldKind)] {
    match event_type {
        "text_delta" | "thinking_delta" => &[("delta", FieldKind::String)],
        "toolcall_start" => &[
            ("index", FieldKind::U32),
            ("id", FieldKind::String),
            ("name", FieldKind::String),
        ],
        "toolcall_delta" => &[("index", FieldKind::U32), ("delta", FieldKind::String)],
        "toolcall_end" => &[("index", FieldKind::U32)],
        "done" => &[("message", FieldKind::Object)],
        "error" => &[("message", FieldKind::String)],
        _ => &[],
    }
}

/// Renders a field's value for a reason: strings as they are, anything else as compact JSON,
/// `null` when absent.
pub(crate) fn describe(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "null".to_owned(),
    }
}

/// Validates an event payload as its event class (§5, the `event` checks after the index).
///
/// The error is the whole reason: `event payload must be an object`, `unknown event type 'x'`,
/// or `invalid 'x' event: <detail>` where the detail names the field.
pub fn validate_event(payload: &Value) -> Result<StreamEvent, String> {
    let Value::Object(map) = payload else {
        return Err("event payload must be an object".to_owned());
    };
    let event_type = match map.get("type") {
        Some(Value::String(t)) if EVENT_TYPES.contains(&t.as_str()) => t.as_str(),
        other => return Err(format!("unknown event type '{}'", describe(other))),
    };
    for &(field, kind) in required_fields(event_type) {
        let detail = match (map.get(field), kind) {
            (None, _) => Some(format!("missing field '{field}'")),
            (Some(Value::String(_)), FieldKind::String) => None,
            (Some(Value::Object(_)), FieldKind::Object) => None,
            (Some(Value::Number(n)), FieldKind::U32)
                if n.as_u64().is_some_and(|v| u32::try_from(v).is_ok()) =>
            {
                None
            }
            (Some(_), FieldKind::String) => Some(format!("field '{field}' must be a string")),
            (Some(_), FieldKind::Object) => Some(format!("field '{field}' must be an object")),
            (Some(_), FieldKind::U32) => Some(format!(
                "field '{field}' must be an integer from 0 to {}",
                u32::MAX
            )),
        };
        if let Some(detail) = detail {
            return Err(format!("invalid '{event_type}' event: {detail}"));
        }
    }
    StreamEvent::deserialize(payload).map_err(|e| format!("invalid '{event_type}' event: {e}"))
}

/// An index field (`call_index`, `event_index`, `event_count`): a JSON integer ≥ 0. Booleans and
/// floats such as `1.0` are not integers.
pub(crate) fn index_value(value: Option<&Value>) -> Option<usize> {
    match value {
        Some(Value::Number(n)) => n.as_u64().and_then(|v| usize::try_from(v).ok()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_round_trip_and_reject_unknown_values() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(outcome.to_string(), outcome.as_str());
        }
        for bad in ["", "Complete", "done", "aborted"] {
            assert_eq!(Outcome::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn recording_file_error_display_follows_the_template() {
        let path = Path::new("/r/x.jsonl");
        let cases = [
            (
                RecordingFileError::new(path, "boom"),
                "recording file /r/x.jsonl: boom",
            ),
            (
                RecordingFileError::new(path, "boom").at_line(3),
                "recording file /r/x.jsonl at line 3: boom",
            ),
            (
                RecordingFileError::new(path, "boom").for_call(2),
                "recording file /r/x.jsonl for call 2: boom",
            ),
            (
                RecordingFileError::new(path, "boom").at_line(3).for_call(2),
                "recording file /r/x.jsonl at line 3 for call 2: boom",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn every_event_class_validates_its_required_fields() {
        let valid = [
            json!({"type": "start"}),
            json!({"type": "text_start", "extra": [1]}),
            json!({"type": "text_delta", "delta": "hi"}),
            json!({"type": "text_end"}),
            json!({"type": "thinking_start"}),
            json!({"type": "thinking_delta", "delta": ""}),
            json!({"type": "thinking_end"}),
            json!({"type": "toolcall_start", "index": 0, "id": "c1", "name": "ls"}),
            json!({"type": "toolcall_delta", "index": 4294967295u64, "delta": "{"}),
            json!({"type": "toolcall_end", "index": 1}),
            json!({"type": "done", "message": {"role": "assistant"}}),
            json!({"type": "error", "message": "boom"}),
        ];
        assert_eq!(valid.len(), EVENT_TYPES.len());
        for (payload, event_type) in valid.iter().zip(EVENT_TYPES) {
            assert_eq!(payload["type"], event_type);
            let event = validate_event(payload).unwrap_or_else(|e| panic!("{payload}: {e}"));
            // The typed event serialises back to the same type tag.
            assert_eq!(serde_json::to_value(&event).unwrap()["type"], event_type);
        }
        let cases = [
            (json!([1]), "event payload must be an object"),
            (json!({"delta": "x"}), "unknown event type 'null'"),
            (json!({"type": "text"}), "unknown event type 'text'"),
            (json!({"type": 3}), "unknown event type '3'"),
            (
                json!({"type": "text_delta"}),
                "invalid 'text_delta' event: missing field 'delta'",
            ),
            (
                json!({"type": "thinking_delta", "delta": 1}),
                "invalid 'thinking_delta' event: field 'delta' must be a string",
            ),
            (
                json!({"type": "toolcall_start", "index": 0, "id": "c"}),
                "invalid 'toolcall_start' event: missing field 'name'",
            ),
            (
                json!({"type": "toolcall_delta", "index": -1, "delta": "x"}),
                "invalid 'toolcall_delta' event: field 'index' must be an integer from 0 to 4294967295",
            ),
            (
                json!({"type": "toolcall_end", "index": 4294967296u64}),
                "invalid 'toolcall_end' event: field 'index' must be an integer from 0 to 4294967295",
            ),
            (
                json!({"type": "toolcall_end", "index": true}),
                "invalid 'toolcall_end' event: field 'index' must be an integer from 0 to 4294967295",
            ),
            (
                json!({"type": "done", "message": "text"}),
                "invalid 'done' event: field 'message' must be an object",
            ),
            (
                json!({"type": "error"}),
                "invalid 'error' event: missing field 'message'",
            ),
        ];
        for (payload, expected) in cases {
            assert_eq!(validate_event(&payload).unwrap_err(), expected, "{payload}");
        }
    }

    #[test]
    fn stored_request_drops_runtime_only_options_and_redacts() {
        let request = RecordedRequest::new(
            json!({"id": "m", "headers": {"Authorization": "Bearer abc"}}),
            json!({"messages": []}),
            json!({"signal": null, "on_payload": "cb", "api_key": "k", "temperature": 0.5}),
        );
        let stored = request.stored();
        assert_eq!(
            stored.options,
            json!({"api_key": "[secret removed]", "temperature": 0.5})
        );
        assert_eq!(stored.model["headers"]["Authorization"], "[secret removed]");
        assert_eq!(
            RecordedRequest::new(json!(1), json!(2), Value::Null).stored(),
            RecordedRequest::new(json!(1), json!(2), Value::Null)
        );
    }

    #[test]
    fn index_values_are_non_negative_integers_only() {
        let cases = [
            (Some(json!(0)), Some(0)),
            (Some(json!(7)), Some(7)),
            (Some(json!(-1)), None),
            (Some(json!(1.0)), None),
            (Some(json!(true)), None),
            (Some(json!("1")), None),
            (None, None),
        ];
        for (value, expected) in cases {
            assert_eq!(index_value(value.as_ref()), expected, "{value:?}");
        }
    }
}
