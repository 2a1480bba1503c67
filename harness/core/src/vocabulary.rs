//! What a provider's stream was made of (issue 43, `keyless drift`): every event name and JSON
//! field path the upstream's answers used, with the call that first used it. The recording proxy
//! notes each piece it reads from the upstream, before anything is parsed into a recorded event
//! (which keeps only what keyless knows), and the fixture keeps the result in its provenance. A
//! fresh recording that uses a term the committed one never had is a provider change the
//! gateway's replays never met.
//!
//! A term is a field's path (`choices[].delta.content`), behind its SSE event name when the
//! stream names its events (`content_block_delta: delta.text`). Arrays are one step (`[]`); a
//! `type` or `object` field's string value is part of its term (`delta.type=thinking_delta`), as
//! a new block or delta type is a new event. Objects whose keys are the caller's data (a tool
//! call's arguments, a schema's properties, metadata) are one term, not their keys.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Fields whose string value is a kind, part of the term.
const KIND_FIELDS: [&str; 2] = ["type", "object"];

/// Fields whose keys are the caller's data, not the provider's vocabulary.
const DATA_FIELDS: [&str; 8] = [
    "args",
    "arguments",
    "input",
    "parameters",
    "properties",
    "metadata",
    "schema",
    "input_schema",
];

/// The terms a recording's upstream answers used, each with the 0-based call that first used
/// it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamVocabulary(BTreeMap<String, usize>);

impl StreamVocabulary {
    /// Notes one piece the upstream sent at `call`: its event name (empty, or `message`, for an
    /// unnamed SSE event or a whole JSON answer) and its data (JSON, else only the name counts).
    pub fn note(&mut self, call: usize, event: &str, data: &str) {
        let prefix = match event {
            "" | "message" => String::new(),
            name => format!("{name}: "),
        };
        match serde_json::from_str::<Value>(data) {
            Ok(value) => self.walk(call, &prefix, "", &value),
            Err(_) if !prefix.is_empty() => self.add(call, prefix.trim_end_matches(": ")),
            Err(_) => {}
        }
    }

    /// Notes one whole JSON answer (a non-streamed call).
    pub fn note_value(&mut self, call: usize, value: &Value) {
        self.walk(call, "", "", value);
    }

    fn add(&mut self, call: usize, term: &str) {
        self.0.entry(term.to_owned()).or_insert(call);
    }

    fn walk(&mut self, call: usize, prefix: &str, path: &str, value: &Value) {
        match value {
            Value::Object(object) => self.walk_object(call, prefix, path, object),
            Value::Array(items) => {
                let path = format!("{path}[]");
                if items.is_empty() {
                    self.add(call, &format!("{prefix}{path}"));
                }
                for item in items {
                    self.walk(call, prefix, &path, item);
                }
            }
            _ if !path.is_empty() => self.add(call, &format!("{prefix}{path}")),
            _ => {}
        }
    }

    fn walk_object(&mut self, call: usize, prefix: &str, path: &str, object: &Map<String, Value>) {
        if object.is_empty() && !path.is_empty() {
            self.add(call, &format!("{prefix}{path}"));
        }
        for (key, value) in object {
            let here = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            match value {
                Value::String(kind) if KIND_FIELDS.contains(&key.as_str()) => {
                    self.add(call, &format!("{prefix}{here}={kind}"));
                }
                _ if DATA_FIELDS.contains(&key.as_str()) => {
                    self.add(call, &format!("{prefix}{here}"));
                }
                _ => self.walk(call, prefix, &here, value),
            }
        }
    }

    /// Whether no term was noted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each term with the call that first used it, in term order.
    pub fn terms(&self) -> impl Iterator<Item = (&str, usize)> {
        self.0.iter().map(|(term, call)| (term.as_str(), *call))
    }

    /// Whether `term` was used.
    pub fn contains(&self, term: &str) -> bool {
        self.0.contains_key(term)
    }

    /// The JSON object a provenance writes: `{term: first call}`.
    pub fn to_value(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(term, call)| (term.clone(), Value::from(*call)))
                .collect(),
        )
    }

    /// Reads [`StreamVocabulary::to_value`]'s form; `None` names what is wrong.
    pub fn from_value(value: &Value) -> Option<StreamVocabulary> {
        let object = value.as_object()?;
        let mut terms = BTreeMap::new();
        for (term, call) in object {
            terms.insert(term.clone(), usize::try_from(call.as_u64()?).ok()?);
        }
        Some(StreamVocabulary(terms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_paths_behind_event_names_with_kinds_and_no_caller_data() {
        let mut vocabulary = StreamVocabulary::default();
        vocabulary.note(
            0,
            "message",
            r#"{"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi", "tool_calls": [{"function": {"name": "f", "arguments": "{\"path\": 1}"}}]}}]}"#,
        );
        vocabulary.note(
            1,
            "content_block_start",
            r#"{"type": "content_block_start", "content_block": {"type": "tool_use", "input": {"path": "/a"}}}"#,
        );
        vocabulary.note(1, "message", "[DONE]");
        vocabulary.note(2, "ping", "not json");
        let terms: Vec<(&str, usize)> = vocabulary.terms().collect();
        assert_eq!(
            terms,
            [
                ("choices[].delta.content", 0),
                ("choices[].delta.tool_calls[].function.arguments", 0),
                ("choices[].delta.tool_calls[].function.name", 0),
                ("choices[].index", 0),
                ("content_block_start: content_block.input", 1),
                ("content_block_start: content_block.type=tool_use", 1),
                ("content_block_start: type=content_block_start", 1),
                ("object=chat.completion.chunk", 0),
                ("ping", 2),
            ]
        );
        let again = StreamVocabulary::from_value(&vocabulary.to_value());
        assert_eq!(again.as_ref(), Some(&vocabulary));
    }
}
