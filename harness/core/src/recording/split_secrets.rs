//! A known secret split over a stream's chunks (issue 45, finding 1): an upstream that streams a
//! key as two `text_delta`s put both halves in the recording, adjacent, each too short to be a
//! form [`KnownSecrets`] removes. [`DeltaHold`] keeps back, per stream of deltas (a text block,
//! a thinking block, one tool call's arguments), the last characters that could still start a
//! form (the longest end of the text that begins a form), so every form is whole in the text it
//! removes it from, and a piece that ends in no form's beginning goes on as it came; [`KnownSecrets::first_in_calls`] checks the finished calls for a form in any string or
//! across any run of deltas, before the recording is kept.

use model_wire::Event;

use super::event::RecordedEvent;
use super::redact::KnownSecrets;
use super::rows::RecordedCall;

/// Which stream of deltas a delta continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaStream {
    Text,
    Thinking,
    /// A tool call's arguments, by the call's index.
    ToolArguments(u32),
}

impl DeltaStream {
    /// The stream `event` continues and its piece, when it is a delta.
    fn of(event: &RecordedEvent) -> Option<(DeltaStream, &str)> {
        match event {
            RecordedEvent::Delta(Event::TextDelta { delta }) => Some((DeltaStream::Text, delta)),
            RecordedEvent::Delta(Event::ThinkingDelta { delta }) => {
                Some((DeltaStream::Thinking, delta))
            }
            RecordedEvent::Delta(Event::ToolcallDelta { index, delta }) => {
                Some((DeltaStream::ToolArguments(*index), delta))
            }
            _ => None,
        }
    }

    /// A delta of this stream.
    fn delta(self, delta: String) -> RecordedEvent {
        RecordedEvent::Delta(match self {
            DeltaStream::Text => Event::TextDelta { delta },
            DeltaStream::Thinking => Event::ThinkingDelta { delta },
            DeltaStream::ToolArguments(index) => Event::ToolcallDelta { index, delta },
        })
    }
}

/// Deltas rid of every form of a known secret, even one split over several of them: each delta
/// is joined to what was held back, every whole form is removed, and all but the longest end
/// of the text that begins a form go on (a form that starts before it cannot go on past the
/// text, so it was whole and is gone). What is held goes on before any event that is not a delta of the same
/// stream, and at [`DeltaHold::flush`]. With no secret it passes every event on as it came.
#[derive(Clone)]
pub struct DeltaHold {
    secrets: KnownSecrets,
    /// The stream held back and its text.
    held: Option<(DeltaStream, String)>,
}

/// Shows what is held by its length only: it may be the start of a secret.
impl std::fmt::Debug for DeltaHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaHold")
            .field("secrets", &self.secrets)
            .field(
                "held",
                &self
                    .held
                    .as_ref()
                    .map(|(stream, text)| (stream, text.len())),
            )
            .finish()
    }
}

impl DeltaHold {
    /// A hold for the forms of `secrets`.
    pub fn new(secrets: KnownSecrets) -> DeltaHold {
        DeltaHold {
            secrets,
            held: None,
        }
    }

    /// The events to write for `event`, in order: what was held, when `event` is not a delta of
    /// its stream, then `event`, or the part of its stream that can no longer start a form.
    pub fn push(&mut self, event: RecordedEvent) -> Vec<RecordedEvent> {
        let keep = self.secrets.longest_form().saturating_sub(1);
        let Some((stream, piece)) = DeltaStream::of(&event).filter(|_| keep > 0) else {
            let mut out: Vec<RecordedEvent> = self.flush().into_iter().collect();
            out.push(event);
            return out;
        };
        let mut out = Vec::new();
        let mut text = match self.held.take() {
            Some((held, text)) if held == stream => text,
            Some((held, text)) => {
                out.push(held.delta(text));
                String::new()
            }
            None => String::new(),
        };
        text.push_str(piece);
        let mut text = self.secrets.remove_forms(&text);
        // Only what could still start a form is held: a piece that ends in no form's beginning
        // goes on whole, so the recording keeps the upstream's chunk boundaries.
        let mut cut = text.len() - self.secrets.open_form_tail(&text);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let rest = text.split_off(cut);
        if !text.is_empty() {
            out.push(stream.delta(text));
        }
        self.held = Some((stream, rest));
        out
    }

    /// What is held back, as a delta of its stream (none when nothing is).
    pub fn flush(&mut self) -> Option<RecordedEvent> {
        let (stream, text) = self.held.take()?;
        (!text.is_empty()).then(|| stream.delta(text))
    }
}

/// Where a form of a known secret was found in finished calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretFound {
    /// The call's index in its recording.
    pub call: usize,
}

impl KnownSecrets {
    /// The index of the first recorded exchange (MCP, HTTP, embeddings) that holds a form of a
    /// known secret anywhere in its label, request or answer: the same last check as
    /// [`KnownSecrets::first_in_calls`] before a recording is kept.
    pub fn first_in_exchanges(&self, exchanges: &[crate::exchange::Exchange]) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        exchanges.iter().position(|exchange| {
            self.found(&exchange.label)
                || self.found(&exchange.caller)
                || self.found_in(&exchange.request)
                || self.found_in(&exchange.answer)
        })
    }

    /// The first call among `calls` that holds a form of a secret: in any string of its request
    /// or events (a key included), or across the joined pieces of a run of deltas of one stream.
    pub fn first_in_calls(&self, calls: &[RecordedCall]) -> Option<SecretFound> {
        if self.is_empty() {
            return None;
        }
        let found = |call: &RecordedCall| {
            let request = &call.request;
            if [&request.model, &request.context, &request.options]
                .iter()
                .any(|value| self.found_in(value))
            {
                return true;
            }
            let mut joined: Option<(DeltaStream, String)> = None;
            for event in &call.events {
                if self.found_in(&event.to_value()) {
                    return true;
                }
                match (DeltaStream::of(event), &mut joined) {
                    (Some((stream, piece)), Some((held, text))) if *held == stream => {
                        text.push_str(piece)
                    }
                    (Some((stream, piece)), _) => {
                        if joined.take().is_some_and(|(_, text)| self.found(&text)) {
                            return true;
                        }
                        joined = Some((stream, piece.to_owned()));
                    }
                    (None, _) => {
                        if joined.take().is_some_and(|(_, text)| self.found(&text)) {
                            return true;
                        }
                    }
                }
            }
            joined.is_some_and(|(_, text)| self.found(&text))
        };
        calls
            .iter()
            .find(|call| found(call))
            .map(|call| SecretFound {
                call: call.call_index,
            })
    }

    /// Whether any string or key of `value` holds a form.
    fn found_in(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::String(text) => self.found(text),
            Value::Array(items) => items.iter().any(|item| self.found_in(item)),
            Value::Object(map) => map
                .iter()
                .any(|(key, item)| self.found(key) || self.found_in(item)),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{Outcome, RecordedRequest};
    use serde_json::json;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn text(delta: &str) -> RecordedEvent {
        RecordedEvent::Delta(Event::TextDelta {
            delta: delta.to_owned(),
        })
    }

    /// The deltas' pieces joined per stream, in order, as a reader assembles them.
    fn joined(events: &[RecordedEvent]) -> String {
        let mut out = String::new();
        for event in events {
            if let Some((_, piece)) = DeltaStream::of(event) {
                out.push_str(piece);
            }
            if matches!(event, RecordedEvent::Delta(Event::TextEnd)) {
                out.push('|');
            }
        }
        out
    }

    /// Issue 45, finding 1: a key streamed in two halves (or one character a delta, or
    /// base64-encoded across three deltas) reaches no written delta, whole or split; the text
    /// around it is kept, in order.
    #[test]
    fn a_known_secret_split_over_deltas_is_removed_from_the_written_deltas() {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(KEY);
        let cases: [(&str, Vec<String>); 4] = [
            (
                "two halves",
                vec![
                    "Your key: ".into(),
                    KEY[..16].into(),
                    KEY[16..].into(),
                    " end".into(),
                ],
            ),
            (
                "a character a delta",
                std::iter::once("k=".to_owned())
                    .chain(KEY.chars().map(String::from))
                    .collect(),
            ),
            (
                "base64 in three",
                vec![
                    format!("b64 {}", &encoded[..10]),
                    encoded[10..30].to_owned(),
                    format!("{} done", &encoded[30..]),
                ],
            ),
            ("whole", vec![format!("Your key: {KEY} end")]),
        ];
        for (case, pieces) in cases {
            let mut hold = DeltaHold::new(KnownSecrets::new([KEY]));
            let mut written = Vec::new();
            for piece in pieces.iter().map(|piece| text(piece)) {
                written.extend(hold.push(piece));
            }
            written.extend(hold.push(RecordedEvent::Delta(Event::TextEnd)));
            let all = joined(&written);
            assert!(
                !all.contains(&KEY[..16]) && !all.contains(&KEY[16..]),
                "{case}: {all}"
            );
            assert!(!all.contains(&encoded[4..30]), "{case}: {all}");
            assert!(
                all.contains("[secret removed]") && all.ends_with('|'),
                "{case}: {all}"
            );
            let calls = [RecordedCall {
                call_index: 0,
                request: RecordedRequest::new(json!("m"), json!({}), json!(null)),
                events: written,
                outcome: Outcome::Complete,
                line: 2,
            }];
            let secrets = KnownSecrets::new([KEY]);
            assert_eq!(secrets.first_in_calls(&calls), None, "{case}");
        }
    }

    /// Only what could start a form is held back: pieces that end in no form's beginning go on
    /// as they came (the recording keeps the upstream's chunk boundaries), and one that ends in
    /// a key's first characters holds just those.
    #[test]
    fn a_piece_that_ends_in_no_forms_beginning_goes_on_as_it_came() {
        let mut hold = DeltaHold::new(KnownSecrets::new([KEY]));
        let cases: [(&str, &[&str]); 4] = [
            ("Hel", &["Hel"]),
            ("lo", &["lo"]),
            (" key 0123", &[" key "]),
            ("4x", &["01234x"]),
        ];
        for (piece, expected) in cases {
            let written: Vec<RecordedEvent> = hold.push(text(piece));
            let expected: Vec<RecordedEvent> = expected.iter().map(|piece| text(piece)).collect();
            assert_eq!(written, expected, "after {piece:?}");
        }
        assert_eq!(hold.flush(), None);
    }

    /// The finished calls' check finds a key split over deltas, inside one string, or in the
    /// request; and nothing in calls without it.
    #[test]
    fn the_check_of_finished_calls_finds_a_split_or_whole_key() {
        let secrets = KnownSecrets::new([KEY]);
        let call = |events: Vec<RecordedEvent>, context: serde_json::Value| RecordedCall {
            call_index: 0,
            request: RecordedRequest::new(json!("m"), context, json!(null)),
            events,
            outcome: Outcome::Complete,
            line: 2,
        };
        let clean = call(vec![text("hello"), text(" world")], json!({}));
        let second = |events, context| RecordedCall {
            call_index: 1,
            ..call(events, context)
        };
        let cases = [
            (vec![text(&KEY[..16]), text(&KEY[16..])], json!({}), true),
            (vec![text(KEY)], json!({}), true),
            (vec![text("hi")], json!({"messages": [KEY]}), true),
            (
                vec![
                    text(&KEY[..16]),
                    RecordedEvent::Delta(Event::TextEnd),
                    text(&KEY[16..]),
                ],
                json!({}),
                false,
            ),
        ];
        for (events, context, expected) in cases {
            let calls = [clean.clone(), second(events.clone(), context)];
            let found = secrets.first_in_calls(&calls);
            assert_eq!(found.is_some(), expected, "{events:?}");
            if expected {
                assert_eq!(found, Some(SecretFound { call: 1 }));
            }
        }
    }
}
