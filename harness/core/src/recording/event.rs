//! The recorded model stream's event (`docs/recording-format.md` §2.2): [`RecordedEvent`], the one
//! typed form of an `event` row's payload. Its serde form IS the recording format: the writer
//! takes it, the reader returns it, strict replay serves it, and every producer (the in-process
//! recorder, the model server's recorder, a fixture's answer) builds it, so no other type's serde
//! output reaches a recording.
//!
//! A payload is parsed once, at the boundary ([`RecordedEvent::parse`]): the field checks come
//! first, so a bad payload is reported by its field (`invalid 'x' event: missing field 'delta'`),
//! and only then does serde build the event. Unknown extra fields are accepted (a newer writer
//! stays readable) and not kept.

use model_wire::Event;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// One event of a recorded model stream, the payload of an `event` row, tagged by `type`: the
/// start, one of the answer's deltas ([`Event`], model-wire's one delta vocabulary, whose serde
/// form is the same `type`-tagged object), or the terminal `done` or `error`.
///
/// The deltas carry the tool call's `index` (its position among the message's tool calls).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RecordedEvent {
    /// The assistant message starts.
    Start,
    /// Terminal: the message is complete.
    Done {
        /// The final assistant message: the flat message dump (`content`, `tool_calls`, ...).
        message: Map<String, Value>,
    },
    /// Terminal: the call failed. When a provider call fails, the recorder adds what it knows of
    /// the failure (§2.2), so a replay fails the same way and the fixture builder can make an
    /// `error` turn of it; an error the stream itself reported carries only its message.
    Error {
        /// The (redacted) error text.
        message: String,
        /// The provider client's exception name (`BadRequestError`, `RemoteProtocolError`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_type: Option<String>,
        /// The HTTP status the provider answered with. Absent and `null` both mean it answered
        /// none; the two are told apart (`None` absent, `Some(None)` null) only so that a
        /// recording reads and writes back byte for byte. [`RecordedEvent::status`] reads it.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        status: Option<Option<u16>>,
        /// The provider reported the failure inside a successful (200) answer. Written only when
        /// true, so older recordings read and write as they were.
        #[serde(default, skip_serializing_if = "is_false")]
        in_stream: bool,
    },
    /// A text, thinking or tool call delta: written as the delta's own `type`-tagged object, so
    /// the row reads as if the delta's tags were this enum's.
    #[serde(untagged)]
    Delta(Event),
}

/// A key that is present, `null` or not: `Some` of its value.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<u16>>, D::Error> {
    Option::<u16>::deserialize(deserializer).map(Some)
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl RecordedEvent {
    /// The `done` event of a flat message dump.
    pub fn done(message: Map<String, Value>) -> RecordedEvent {
        RecordedEvent::Done { message }
    }

    /// A recorded failure's HTTP status: `None` for any other event, and for a failure the
    /// provider answered no status to.
    pub fn status(&self) -> Option<u16> {
        match self {
            RecordedEvent::Error { status, .. } => status.flatten(),
            _ => None,
        }
    }

    /// Whether the event ends the call (`done` or `error`).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            RecordedEvent::Done { .. } | RecordedEvent::Error { .. }
        )
    }

    /// The event's `type` tag, e.g. `text_delta`.
    pub fn type_name(&self) -> &'static str {
        match self {
            RecordedEvent::Start => "start",
            RecordedEvent::Delta(delta) => delta.type_name(),
            RecordedEvent::Done { .. } => "done",
            RecordedEvent::Error { .. } => "error",
        }
    }

    /// The payload as it is written in an `event` row.
    pub fn to_value(&self) -> Value {
        // Serialising a tagged enum of strings, integers and JSON maps into a `Value` cannot fail.
        serde_json::to_value(self).expect("a recorded event serialises to JSON")
    }

    /// Parses an `event` row's payload (§5, the `event` checks after the index): an object of a
    /// known type whose fields have the types §2.2 gives them.
    pub fn parse(payload: &Value) -> Result<RecordedEvent, EventError> {
        let Value::Object(map) = payload else {
            return Err(EventError::NotAnObject);
        };
        let event_type = match map.get("type") {
            Some(Value::String(t)) => EVENT_TYPES.iter().find(|known| **known == t.as_str()),
            _ => None,
        };
        let Some(&event_type) = event_type else {
            return Err(EventError::UnknownType(describe(map.get("type"))));
        };
        let invalid = |problem: FieldProblem| EventError::Invalid {
            event_type,
            problem,
        };
        for &(field, kind, presence) in fields_of(event_type) {
            match (map.get(field), presence) {
                (None, Presence::Required) => return Err(invalid(FieldProblem::Missing(field))),
                (None, Presence::Optional) => {}
                (Some(value), _) if kind.admits(value) => {}
                (Some(_), _) => return Err(invalid(FieldProblem::WrongType(field, kind))),
            }
        }
        RecordedEvent::deserialize(payload)
            .map_err(|err| invalid(FieldProblem::Unreadable(err.to_string())))
    }
}

impl TryFrom<&Value> for RecordedEvent {
    type Error = EventError;

    fn try_from(payload: &Value) -> Result<RecordedEvent, EventError> {
        RecordedEvent::parse(payload)
    }
}

impl From<&RecordedEvent> for Value {
    fn from(event: &RecordedEvent) -> Value {
        event.to_value()
    }
}

/// Why an `event` payload is not a [`RecordedEvent`]; the Display is the whole reason of a
/// [`RecordingFileError`](super::RecordingFileError).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The payload is not a JSON object.
    #[error("event payload must be an object")]
    NotAnObject,
    /// The `type` is missing or not one of §2.2's (rendered as found, `null` when absent).
    #[error("unknown event type '{0}'")]
    UnknownType(String),
    /// A field of a known event type is missing or has the wrong type.
    #[error("invalid '{event_type}' event: {problem}")]
    Invalid {
        /// The event's type.
        event_type: &'static str,
        /// What is wrong with which field.
        problem: FieldProblem,
    },
}

/// What is wrong with one field of an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    /// A required field is absent.
    #[error("missing field '{0}'")]
    Missing(&'static str),
    /// A field has the wrong JSON type.
    #[error("field '{0}' must be {1}")]
    WrongType(&'static str, FieldKind),
    /// serde could not build the event (the checks above make this rare).
    #[error("{0}")]
    Unreadable(String),
}

/// The JSON type an event field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FieldKind {
    /// A string.
    #[error("a string")]
    String,
    /// An integer from 0 to `u32::MAX`.
    #[error("an integer from 0 to 4294967295")]
    U32,
    /// An HTTP status (an integer from 0 to 65535) or `null`.
    #[error("an HTTP status or null")]
    Status,
    /// A boolean.
    #[error("a boolean")]
    Bool,
    /// A JSON object.
    #[error("an object")]
    Object,
}

impl FieldKind {
    fn admits(self, value: &Value) -> bool {
        let integer_below = |max: u64| value.as_u64().is_some_and(|n| n <= max);
        match self {
            FieldKind::String => value.is_string(),
            FieldKind::U32 => integer_below(u64::from(u32::MAX)),
            FieldKind::Status => value.is_null() || integer_below(u64::from(u16::MAX)),
            FieldKind::Bool => value.is_boolean(),
            FieldKind::Object => value.is_object(),
        }
    }
}

/// Whether an event field must be present.
#[derive(Clone, Copy)]
enum Presence {
    Required,
    Optional,
}

/// The fields of each event type that are checked, by `type`.
fn fields_of(event_type: &str) -> &'static [(&'static str, FieldKind, Presence)] {
    use FieldKind as K;
    use Presence::{Optional, Required};
    match event_type {
        "text_delta" | "thinking_delta" => &[("delta", K::String, Required)],
        "toolcall_start" => &[
            ("index", K::U32, Required),
            ("id", K::String, Required),
            ("name", K::String, Required),
        ],
        "toolcall_delta" => &[("index", K::U32, Required), ("delta", K::String, Required)],
        "toolcall_end" => &[("index", K::U32, Required)],
        "done" => &[("message", K::Object, Required)],
        "error" => &[
            ("message", K::String, Required),
            ("error_type", K::String, Optional),
            ("status", K::Status, Optional),
            ("in_stream", K::Bool, Optional),
        ],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson::to_python_json;
    use serde_json::json;

    /// One payload of every event type, in the forms the recorders write.
    fn every_type() -> Vec<Value> {
        vec![
            json!({"type": "start"}),
            json!({"type": "text_start"}),
            json!({"type": "text_delta", "delta": "hi"}),
            json!({"type": "text_end"}),
            json!({"type": "thinking_start"}),
            json!({"type": "thinking_delta", "delta": ""}),
            json!({"type": "thinking_end"}),
            json!({"type": "toolcall_start", "index": 0, "id": "c1", "name": "ls"}),
            json!({"type": "toolcall_delta", "index": 4294967295u64, "delta": "{"}),
            json!({"type": "toolcall_end", "index": 1}),
            json!({"type": "done", "message": {"role": "assistant", "usage": {"x": 1.5}}}),
            json!({"type": "error", "message": "boom"}),
        ]
    }

    #[test]
    fn every_event_type_parses_and_writes_back_the_same_bytes() {
        let mut payloads = every_type();
        assert_eq!(payloads.len(), EVENT_TYPES.len());
        for (payload, event_type) in payloads.iter().zip(EVENT_TYPES) {
            assert_eq!(payload["type"], event_type);
        }
        // The failure forms the recorders write: status null or a number, in_stream only when
        // true.
        payloads.extend([
            json!({"type": "error", "message": "m", "error_type": "APIError", "status": null}),
            json!({"type": "error", "message": "m", "error_type": "BadRequestError",
                   "status": 400}),
            json!({"type": "error", "message": "m", "error_type": "APIError", "status": null,
                   "in_stream": true}),
            json!({"type": "error", "message": "m", "error_type": "APITimeoutError"}),
            json!({"type": "error", "message": "m", "status": 429}),
            json!({"type": "error", "message": "m", "in_stream": true}),
        ]);
        for payload in payloads {
            let event = RecordedEvent::parse(&payload).unwrap_or_else(|e| panic!("{payload}: {e}"));
            assert_eq!(event.type_name(), payload["type"]);
            assert_eq!(
                to_python_json(&event.to_value()),
                to_python_json(&payload),
                "{event:?}"
            );
        }
    }

    #[test]
    fn extra_fields_are_read_and_not_kept() {
        let event = RecordedEvent::parse(&json!({"type": "text_start", "extra": [1]})).unwrap();
        assert_eq!(event, RecordedEvent::Delta(Event::TextStart));
    }

    #[test]
    fn a_bad_payload_is_named_by_its_field() {
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
            (
                json!({"type": "error", "message": "m", "error_type": 5}),
                "invalid 'error' event: field 'error_type' must be a string",
            ),
            (
                json!({"type": "error", "message": "m", "error_type": "E", "status": "500"}),
                "invalid 'error' event: field 'status' must be an HTTP status or null",
            ),
            (
                json!({"type": "error", "message": "m", "error_type": "E", "status": 70000}),
                "invalid 'error' event: field 'status' must be an HTTP status or null",
            ),
            (
                json!({"type": "error", "message": "m", "error_type": "E", "in_stream": 1}),
                "invalid 'error' event: field 'in_stream' must be a boolean",
            ),
        ];
        for (payload, expected) in cases {
            let error = RecordedEvent::parse(&payload).unwrap_err();
            assert_eq!(error.to_string(), expected, "{payload}");
        }
    }

    #[test]
    fn a_provider_failure_reads_typed() {
        let event = RecordedEvent::parse(&json!({"type": "error", "message": "m",
            "error_type": "APIError", "status": 529, "in_stream": true}))
        .unwrap();
        let expected = RecordedEvent::Error {
            message: "m".into(),
            error_type: Some("APIError".into()),
            status: Some(Some(529)),
            in_stream: true,
        };
        assert_eq!(event, expected);
        assert_eq!(event.status(), Some(529));
        assert!(event.is_terminal());
        let null = RecordedEvent::parse(&json!({"type": "error", "message": "m", "status": null}));
        assert_eq!(null.unwrap().status(), None);
    }
}
