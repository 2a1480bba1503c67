//! Drift between a committed fixture and a fresh recording of the same scenario (issue 43,
//! `keyless drift`): what the model side of the two runs says, call by call, classified
//! identical, benign (only text or argument values changed) or breaking (the call sequence, a
//! caller, a tool call's name or its argument keys, or a failure changed). Ids, usage and
//! response metadata differ on every run and are not compared. The provider's stream is compared
//! by the terms its provenance keeps ([`StreamVocabulary`]): a term the committed recording never
//! had is breaking (the gateway's replays never met it), one it no longer uses is benign. The
//! golden's shapes are compared by the caller, which replays the fresh fixture through the
//! gateway ([`DriftChange::golden`]).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::fixture::{Answer, Fixture, Turn};
use super::vocabulary::StreamVocabulary;

/// How a fresh recording compares with the committed fixture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DriftClass {
    /// The same calls, the same tool calls with the same arguments, the same text.
    Identical,
    /// Only text (or a tool call's argument values) changed.
    Benign,
    /// Something a gateway acts on changed.
    Breaking,
}

impl DriftClass {
    /// `identical`, `benign` or `breaking`.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftClass::Identical => "identical",
            DriftClass::Benign => "benign",
            DriftClass::Breaking => "breaking",
        }
    }
}

/// One difference, at one call (0-based, in recording order), or of the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftChange {
    /// The call's index; `None` for the whole run (the golden, a re-recording that failed).
    pub call: Option<usize>,
    /// What differs: `caller`, `call`, `answer`, `error.type`, `content`, `tool_calls`,
    /// `tool_calls[0].args` (its keys), `tool_calls[0].args.path` (a value), `stream` (a term of
    /// the provider's stream), `golden` (the gateway's shapes), `record` (no fresh recording).
    pub field: String,
    /// What the committed fixture says.
    pub recorded: Value,
    /// What the fresh recording says.
    pub now: Value,
    /// Whether this change alone makes the drift breaking.
    pub breaking: bool,
}

impl DriftChange {
    /// The gateway's shapes changed: replayed from the fresh fixture they no longer match the
    /// committed golden (`what`: the golden's status, `diff`: how, on the lines below). Breaking.
    pub fn golden(what: &str, diff: &str) -> DriftChange {
        DriftChange {
            call: None,
            field: "golden".to_owned(),
            recorded: json!("the committed golden"),
            // The diff on the lines below what happened, as a table or a report shows it.
            now: json!(format!("{what}\n{diff}").trim_end()),
            breaking: true,
        }
    }

    /// The scenario could not be recorded again (`why`), so nothing was compared: breaking, as
    /// drift cannot say the fixture still holds.
    pub fn not_recorded(why: &str) -> DriftChange {
        DriftChange {
            call: None,
            field: "record".to_owned(),
            recorded: Value::Null,
            now: json!(why),
            breaking: true,
        }
    }

    /// `{"call", "field", "recorded", "now"}` (`call` null for the whole run).
    pub fn to_value(&self) -> Value {
        json!({"call": self.call, "field": self.field, "recorded": self.recorded, "now": self.now})
    }
}

/// The drift of one fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// The classification: the worst of the changes.
    pub verdict: DriftClass,
    /// Every difference found, by call.
    pub changes: Vec<DriftChange>,
    /// What could not be compared, and why (a committed fixture recorded before keyless kept
    /// its stream's terms): printed as a warning, never silently skipped.
    pub notes: Vec<String>,
}

impl Drift {
    /// Adds changes found elsewhere (the stream's event types, the golden's shapes).
    pub fn extend(&mut self, changes: impl IntoIterator<Item = DriftChange>) {
        self.changes.extend(changes);
        self.verdict = verdict_of(&self.changes);
    }

    /// The JSON line `keyless drift --json` prints for the fixture `stem`.
    pub fn to_json_line(&self, stem: &str) -> Value {
        json!({
            "fixture": stem,
            "verdict": self.verdict.as_str(),
            "changes": self.changes.iter().map(DriftChange::to_value).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}

/// The worst verdict `changes` make.
fn verdict_of(changes: &[DriftChange]) -> DriftClass {
    match changes.iter().map(|change| change.breaking).max() {
        None => DriftClass::Identical,
        Some(false) => DriftClass::Benign,
        Some(true) => DriftClass::Breaking,
    }
}

/// Compares the committed fixture `recorded` with `now`, a fresh recording of its scenario.
pub fn compare_fixtures(recorded: &Fixture, now: &Fixture) -> Drift {
    let mut changes = Vec::new();
    for call in 0..recorded.turns.len().max(now.turns.len()) {
        match (recorded.turns.get(call), now.turns.get(call)) {
            (Some(was), Some(is)) => compare_turns(call, was, is, &mut changes),
            (was, is) => changes.push(DriftChange {
                call: Some(call),
                field: "call".to_owned(),
                recorded: json!(was.map(caller_of)),
                now: json!(is.map(caller_of)),
                breaking: true,
            }),
        }
    }
    let mut notes = Vec::new();
    let stream = |fixture: &Fixture| (fixture.provenance.as_ref()).and_then(|p| p.stream.clone());
    match (stream(recorded), stream(now)) {
        (Some(was), Some(is)) => compare_streams(&was, &is, &mut changes),
        (None, _) => notes.push(
            "the committed fixture keeps no terms of its provider's stream (recorded before \
             keyless kept them): new stream events or fields cannot be told until it is \
             recorded again (`keyless record --force`, or `keyless drift --update` of a benign \
             drift)"
                .to_owned(),
        ),
        (Some(_), None) => notes.push(
            "the fresh recording kept no terms of its provider's stream: they were not compared"
                .to_owned(),
        ),
    }
    let verdict = verdict_of(&changes);
    Drift {
        verdict,
        changes,
        notes,
    }
}

/// A term of the provider's stream the committed recording never had is breaking (at the call
/// that first used it); one no longer used is benign (at the call that used it).
fn compare_streams(was: &StreamVocabulary, is: &StreamVocabulary, changes: &mut Vec<DriftChange>) {
    for (term, call) in is.terms().filter(|(term, _)| !was.contains(term)) {
        changes.push(DriftChange {
            call: Some(call),
            field: "stream".to_owned(),
            recorded: Value::Null,
            now: json!(term),
            breaking: true,
        });
    }
    for (term, call) in was.terms().filter(|(term, _)| !is.contains(term)) {
        changes.push(DriftChange {
            call: Some(call),
            field: "stream".to_owned(),
            recorded: json!(term),
            now: Value::Null,
            breaking: false,
        });
    }
}

fn caller_of(turn: &Turn) -> String {
    turn.caller.clone().unwrap_or_default()
}

fn compare_turns(call: usize, was: &Turn, is: &Turn, changes: &mut Vec<DriftChange>) {
    let mut change = |field: String, recorded: Value, now: Value, breaking: bool| {
        if recorded != now {
            changes.push(DriftChange {
                call: Some(call),
                field,
                recorded,
                now,
                breaking,
            });
        }
    };
    change(
        "caller".to_owned(),
        json!(was.caller),
        json!(is.caller),
        true,
    );
    match (&was.answer, &is.answer) {
        (Answer::Error(was), Answer::Error(is)) => {
            change(
                "error.type".to_owned(),
                json!(was.error_type),
                json!(is.error_type),
                true,
            );
        }
        (Answer::Output(was), Answer::Output(is)) => {
            let (was, is) = (&was["data"], &is["data"]);
            change(
                "content".to_owned(),
                was["content"].clone(),
                is["content"].clone(),
                false,
            );
            let (was_calls, is_calls) = (tool_calls(was), tool_calls(is));
            let names = |calls: &[Value]| -> Value {
                json!(calls.iter().map(|c| c["name"].clone()).collect::<Vec<_>>())
            };
            if names(&was_calls) != names(&is_calls) {
                change(
                    "tool_calls".to_owned(),
                    names(&was_calls),
                    names(&is_calls),
                    true,
                );
                return;
            }
            for (index, (was, is)) in was_calls.iter().zip(&is_calls).enumerate() {
                let keys = |call: &Value| -> BTreeSet<String> {
                    call["args"]
                        .as_object()
                        .map(|args| args.keys().cloned().collect())
                        .unwrap_or_default()
                };
                let (was_keys, is_keys) = (keys(was), keys(is));
                if was_keys != is_keys {
                    change(
                        format!("tool_calls[{index}].args"),
                        json!(was_keys),
                        json!(is_keys),
                        true,
                    );
                    continue;
                }
                for key in was_keys {
                    change(
                        format!("tool_calls[{index}].args.{key}"),
                        was["args"][&key].clone(),
                        is["args"][&key].clone(),
                        false,
                    );
                }
            }
        }
        (was, is) => change(
            "answer".to_owned(),
            json!(was.describe()),
            json!(is.describe()),
            true,
        ),
    }
}

/// The tool calls of a recorded message's `data`.
fn tool_calls(data: &Value) -> Vec<Value> {
    data["tool_calls"].as_array().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fixture::Fixture;

    /// A fixture of one `lead_agent` call per answer: `("text", [])` or tool calls
    /// `[(name, args)]`.
    fn fixture(answers: &[(&str, Value)]) -> Fixture {
        let turns: Vec<Value> = answers
            .iter()
            .enumerate()
            .map(|(index, (text, calls))| {
                json!({"caller": "lead_agent", "input_hash": format!("h{index}"), "output": {"type": "ai", "data": {
                    "content": text, "type": "ai", "id": format!("run-{index}"), "tool_calls": calls}}})
            })
            .collect();
        let text = json!({"mode": "flash", "turns": turns}).to_string();
        Fixture::from_json_str(&text, Path::new("f.json")).expect("a fixture")
    }

    fn write(path: &str) -> Value {
        json!([{"name": "write_file", "args": {"path": path, "content": "hi"}, "id": "c1", "type": "tool_call"}])
    }

    #[test]
    fn each_change_is_classified_and_the_breaking_ones_name_call_and_field() {
        let committed = fixture(&[("", write("/a")), ("done", json!([]))]);
        let renamed = json!([{"name": "write_file", "args": {"file_path": "/a", "content": "hi"}, "id": "c9", "type": "tool_call"}]);
        let mut extra = write("/a");
        extra.as_array_mut().unwrap().push(
            json!({"name": "read_file", "args": {"path": "/a"}, "id": "c2", "type": "tool_call"}),
        );
        for (case, now, verdict, field) in [
            (
                "nothing changed",
                fixture(&[("", write("/a")), ("done", json!([]))]),
                DriftClass::Identical,
                None,
            ),
            (
                "a text change",
                fixture(&[("", write("/a")), ("all done", json!([]))]),
                DriftClass::Benign,
                Some((1, "content")),
            ),
            (
                "an argument value",
                fixture(&[("", write("/b")), ("done", json!([]))]),
                DriftClass::Benign,
                Some((0, "tool_calls[0].args.path")),
            ),
            (
                "an extra tool call",
                fixture(&[("", extra), ("done", json!([]))]),
                DriftClass::Breaking,
                Some((0, "tool_calls")),
            ),
            (
                "a renamed argument",
                fixture(&[("", renamed), ("done", json!([]))]),
                DriftClass::Breaking,
                Some((0, "tool_calls[0].args")),
            ),
            (
                "an extra call",
                fixture(&[("", write("/a")), ("done", json!([])), ("more", json!([]))]),
                DriftClass::Breaking,
                Some((2, "call")),
            ),
        ] {
            let drift = compare_fixtures(&committed, &now);
            assert_eq!(drift.verdict, verdict, "{case}: {drift:?}");
            let first = (drift.changes.first()).map(|c| (c.call.unwrap_or(99), c.field.as_str()));
            assert_eq!(first, field, "{case}: {drift:?}");
            let line = drift.to_json_line("s.flash");
            assert_eq!(line["verdict"], verdict.as_str(), "{case}");
        }
    }

    /// A fixture of two text answers whose provenance keeps the stream's `terms`.
    fn streamed(terms: &[(&str, usize)]) -> Fixture {
        let mut fixture = fixture(&[("hi", json!([])), ("done", json!([]))]);
        let mut stream = StreamVocabulary::default();
        for (term, call) in terms {
            stream.note(*call, "", &json!({*term: 1}).to_string());
        }
        fixture.provenance = Some(crate::Provenance {
            recorded_at: chrono::Utc::now(),
            upstream: "u".to_owned(),
            models: vec![],
            wires: vec![],
            keyless_version: "0".to_owned(),
            stream: Some(stream),
        });
        fixture
    }

    #[test]
    fn a_stream_term_the_recording_never_had_is_breaking_and_an_unknown_stream_is_a_note() {
        let committed = streamed(&[("content", 0), ("usage", 1)]);
        for (case, now, verdict, first) in [
            (
                "the same terms",
                streamed(&[("content", 0), ("usage", 1)]),
                DriftClass::Identical,
                None,
            ),
            (
                "a new field at the second call",
                streamed(&[("content", 0), ("usage", 1), ("reasoning_content", 1)]),
                DriftClass::Breaking,
                Some((Some(1), json!(null), json!("reasoning_content"))),
            ),
            (
                "a field no longer sent",
                streamed(&[("content", 0)]),
                DriftClass::Benign,
                Some((Some(1), json!("usage"), json!(null))),
            ),
        ] {
            let drift = compare_fixtures(&committed, &now);
            assert_eq!(drift.verdict, verdict, "{case}: {drift:?}");
            let change = drift.changes.first();
            let got = change.map(|c| (c.call, c.recorded.clone(), c.now.clone()));
            assert_eq!(got, first, "{case}: {drift:?}");
            assert!(drift.notes.is_empty(), "{case}: {drift:?}");
        }
        let older = fixture(&[("hi", json!([])), ("done", json!([]))]);
        let drift = compare_fixtures(&older, &committed);
        assert_eq!(drift.verdict, DriftClass::Identical, "{drift:?}");
        assert!(drift.notes[0].contains("recorded again"), "{drift:?}");
    }
}
