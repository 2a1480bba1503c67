//! Strict replay (`docs/recording-format.md` §7 and §8): serves a recording call by call, in
//! `call_index` order, after comparing each incoming request with the recorded one field by
//! field. There is no fallback to live and no request correlation key.
//!
//! The mismatch error names the call and the path of the first difference, never the values:
//! they stay available as fields of [`ReplayMismatch`] only.

use std::fmt;
use std::path::Path;

use parking_lot::Mutex;
use serde_json::{Map, Value};

use super::event::RecordedEvent;
use super::reader::{Access, read_recording};
use super::redact::redact_text;
use super::rows::{Outcome, RecordedRequest, Recording, RecordingFileError};
use crate::diff::first_difference;

/// The non-deterministic keys skipped at every depth (§7.5); fixed, not configurable.
pub(crate) const SKIPPED_KEYS: [&str; 1] = ["timestamp"];

/// The `context` keys a model server derives from the conversation (the replay key,
/// `docs/recording-format.md` §17): compared after the conversation as sent, so a drifted
/// request's mismatch names the field of the request itself (`context.messages[0].content`),
/// not the key computed from it.
const DERIVED_KEYS: [&str; 4] = ["timestamp", "canonical", "conversation_hash", "input_hash"];

/// The longest `public_path` in a mismatch message, `...` included (§7.2).
pub(crate) const PUBLIC_PATH_CAP: usize = 384;

/// The mismatch of §7.1; Display = `replay mismatch at call <i>[, recorded event <n>], field
/// <public_path>[; unconsumed calls remain]` where public_path = redaction value patterns
/// applied, then each char JSON-escaped (newline → `\n`), then capped at 384 chars with `...`;
/// values NEVER in the message (whole message ≤ 512 chars). Also implement std::error::Error.
///
/// Escaping goes further than newlines: every control character, `"`, `\`, DEL and every
/// non-ASCII character is escaped as JSON does with `ensure_ascii` (`\u00e9`, surrogate pairs
/// above U+FFFF), so the message is plain printable ASCII. The cap counts the `...` and never
/// cuts an escape in half.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayMismatch {
    /// The call being compared.
    pub call_index: usize,
    /// The path of the first difference (`context.messages[0].content`), or `call_index` (past
    /// the end, §8.3) or `remaining_calls` (§8.4).
    pub(crate) field_path: String,
    /// The recorded value at the path, or a description; `None` when the recorded side lacks it.
    pub(crate) recorded: Option<Value>,
    /// The incoming value at the path, or a description; `None` when the incoming side lacks it.
    pub(crate) incoming: Option<Value>,
    /// Set when the difference concerns a recorded event's position rather than the request.
    pub(crate) event_index: Option<usize>,
}

impl ReplayMismatch {
    /// The path as shown in the message: redacted, escaped, capped (§7.2).
    pub fn public_path(&self) -> String {
        public_path(&self.field_path)
    }
}

impl fmt::Display for ReplayMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "replay mismatch at call {}", self.call_index)?;
        if let Some(event_index) = self.event_index {
            write!(f, ", recorded event {event_index}")?;
        }
        write!(f, ", field {}", self.public_path())?;
        if self.field_path == "remaining_calls" {
            f.write_str("; unconsumed calls remain")?;
        }
        Ok(())
    }
}

impl std::error::Error for ReplayMismatch {}

fn public_path(field_path: &str) -> String {
    let redacted = redact_text(field_path);
    let mut pieces: Vec<String> = redacted.chars().map(escape_char).collect();
    let total: usize = pieces.iter().map(String::len).sum();
    if total <= PUBLIC_PATH_CAP {
        return pieces.concat();
    }
    let budget = PUBLIC_PATH_CAP - 3;
    let mut used = 0;
    let keep = pieces
        .iter()
        .take_while(|piece| {
            used += piece.len();
            used <= budget
        })
        .count();
    pieces.truncate(keep);
    let mut out = pieces.concat();
    out.push_str("...");
    out
}

/// One character as printable ASCII, JSON-escaped.
fn escape_char(ch: char) -> String {
    match ch {
        '"' => "\\\"".to_owned(),
        '\\' => "\\\\".to_owned(),
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        '\u{8}' => "\\b".to_owned(),
        '\u{c}' => "\\f".to_owned(),
        ' '..='~' => ch.to_string(),
        _ => {
            let mut units = [0u16; 2];
            ch.encode_utf16(&mut units)
                .iter()
                .map(|unit| format!("\\u{unit:04x}"))
                .collect()
        }
    }
}

/// Replaces every tool call's `function.arguments` JSON text with the value it holds (§7.5), so
/// arguments compare as JSON values: a call recorded streamed keeps the model's key order and
/// spacing, and the same call replayed non-streamed comes back re-serialised with sorted keys.
/// Text that is not JSON stays text, and a real difference is still found, inside the value
/// (`...function.arguments.path`).
fn arguments_as_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(function)) = map.get_mut("function")
                && let Some(arguments) = function.get_mut("arguments")
                && let Value::String(text) = arguments
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                *arguments = parsed;
            }
            map.values_mut().for_each(arguments_as_values);
        }
        Value::Array(items) => items.iter_mut().for_each(arguments_as_values),
        _ => {}
    }
}

/// Why a replayed call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StrictReplayError {
    /// The incoming request differs from the recorded one, or the recording is exhausted.
    #[error(transparent)]
    Mismatch(#[from] ReplayMismatch),
    /// The recorded call cannot be served (it did not complete), or the file is invalid.
    #[error(transparent)]
    Recording(#[from] RecordingFileError),
}

/// Serves a recording call by call (§8.2): past the end → mismatch with field `call_index`,
/// recorded `"<n> recorded calls"`, incoming `"call <i>"`; otherwise redact the incoming request,
/// compare `model`, then `context`, then `options` (root paths `model`, `context`, `options`)
/// with first_difference skipping exactly {"timestamp"} (within each, the fields other than the
/// derived replay key first, `DERIVED_KEYS`); a mismatch does NOT consume; a match
/// consumes; a recorded outcome other than complete → RecordingFileError reason `recorded call
/// ended with <outcome>` for that call (consumed); else the recorded events, as the reader parsed
/// them.
///
/// The incoming `options` also lose `signal` and `on_payload` before comparison, as they did
/// when the recording was written. Thread-safe: the position is behind a mutex, so concurrent
/// callers are served one at a time, in arrival order.
#[derive(Debug)]
pub struct StrictReplayer {
    recording: Recording,
    call_count: Mutex<usize>,
}

impl StrictReplayer {
    /// A replayer over an already validated recording, starting at call 0.
    pub fn new(recording: Recording) -> StrictReplayer {
        StrictReplayer {
            recording,
            call_count: Mutex::new(0),
        }
    }

    /// Reads and validates the whole file ([`read_recording`]), so a bad file fails here.
    pub fn load(path: &Path, access: Access) -> Result<StrictReplayer, RecordingFileError> {
        read_recording(path, access).map(StrictReplayer::new)
    }

    /// Serves the next recorded call if `incoming` matches it; see the type's documentation.
    #[expect(
        clippy::result_large_err,
        reason = "a mismatch carries both values by value (§7.1); it is rare and ends the run"
    )]
    pub fn next_call(
        &self,
        incoming: &RecordedRequest,
    ) -> Result<Vec<RecordedEvent>, StrictReplayError> {
        let incoming = incoming.stored();
        let mut call_count = self.call_count.lock();
        let index = *call_count;
        let Some(call) = self.recording.calls.get(index) else {
            return Err(ReplayMismatch {
                call_index: index,
                field_path: "call_index".to_owned(),
                recorded: Some(Value::String(format!(
                    "{} recorded calls",
                    self.recording.calls.len()
                ))),
                incoming: Some(Value::String(format!("call {index}"))),
                event_index: None,
            }
            .into());
        };
        let recorded = &call.request;
        let pairs = [
            ("model", &recorded.model, incoming.model),
            ("context", &recorded.context, incoming.context),
            ("options", &recorded.options, incoming.options),
        ];
        for (root, recorded, incoming) in pairs {
            // Walking single-key objects yields the rooted path directly (`model`, `model.x`,
            // `model[0]`), with no special case for a difference at the payload's top.
            let mut recorded = Value::Object(Map::from_iter([(root.to_owned(), recorded.clone())]));
            let mut incoming = Value::Object(Map::from_iter([(root.to_owned(), incoming)]));
            arguments_as_values(&mut recorded);
            arguments_as_values(&mut incoming);
            // The request's own fields first, then everything (the derived keys included, so
            // nothing goes uncompared).
            let difference = first_difference(&recorded, &incoming, &DERIVED_KEYS)
                .or_else(|| first_difference(&recorded, &incoming, &SKIPPED_KEYS));
            if let Some(difference) = difference {
                return Err(ReplayMismatch {
                    call_index: index,
                    field_path: difference.path,
                    recorded: difference.recorded,
                    incoming: difference.incoming,
                    event_index: None,
                }
                .into());
            }
        }
        *call_count += 1;
        drop(call_count);

        if call.outcome != Outcome::Complete {
            let reason = format!("recorded call ended with {}", call.outcome);
            let error = RecordingFileError::new(&self.recording.path, reason);
            return Err(error.for_call(call.call_index).into());
        }
        Ok(call.events.clone())
    }

    /// How many calls have been served (matched); starts at 0.
    pub fn call_count(&self) -> usize {
        *self.call_count.lock()
    }

    /// How many calls the recording holds.
    pub(crate) fn recorded_calls(&self) -> usize {
        self.recording.calls.len()
    }

    /// The recording being served (its `path` is the recording path).
    #[cfg(test)]
    pub(crate) fn recording(&self) -> &Recording {
        &self.recording
    }

    /// §8.4: when k calls remain, a mismatch with call_index = call_count, field
    /// `remaining_calls`, recorded `"all recorded calls consumed"`, incoming
    /// `"<k> unconsumed call(s)"`.
    #[expect(
        clippy::result_large_err,
        reason = "a mismatch carries both values by value (§7.1); it is rare and ends the run"
    )]
    pub fn assert_consumed(&self) -> Result<(), ReplayMismatch> {
        let call_count = self.call_count();
        let remaining = self.recorded_calls().saturating_sub(call_count);
        if remaining == 0 {
            return Ok(());
        }
        Err(ReplayMismatch {
            call_index: call_count,
            field_path: "remaining_calls".to_owned(),
            recorded: Some(Value::String("all recorded calls consumed".to_owned())),
            incoming: Some(Value::String(format!("{remaining} unconsumed call(s)"))),
            event_index: None,
        })
    }
}
