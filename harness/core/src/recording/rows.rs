//! The rows of a recording file and what they carry (`docs/recording-format.md` §2 to §4): format
//! versions, call outcomes, the request payloads, the parsed [`Recording`], and the
//! [`RecordingFileError`] every reader and writer failure is reported with.
//!
//! Request payloads stay `serde_json::Value`s: the format does not depend on any gateway's types.
//! Events are this crate's own typed [`RecordedEvent`] (`event.rs`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::event::RecordedEvent;
use super::redact::redact;
use crate::exchange::Exchange;

/// The format version this build writes (3 added the `exchange` row).
pub(crate) const FORMAT_VERSION: u64 = 3;

/// The format versions this build reads (§2.4).
pub(crate) const READABLE_VERSIONS: [u64; 3] = [1, 2, 3];

/// The first format version with `exchange` rows.
pub(crate) const EXCHANGE_ROWS_SINCE: u64 = 3;

/// The version of the redaction rules (§6), stored in managed headers.
pub(crate) const REDACTION_VERSION: u64 = 1;

/// The row types of §2.2; any other `type` is rejected.
pub(crate) const ROW_TYPES: [&str; 5] = ["header", "request", "event", "call_end", "exchange"];

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
    /// The events, in `event_index` order.
    pub events: Vec<RecordedEvent>,
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
    /// The exchanges recorded at the other boundaries (MCP, HTTP, embeddings), in
    /// `exchange_index` order (§2.2's `exchange` rows).
    pub exchanges: Vec<Exchange>,
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
