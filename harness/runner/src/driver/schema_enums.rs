//! The literal unions and enums of a protocol's event schema (AG-UI's roles, outcomes and
//! subtypes, the AI SDK's finish reasons and input encodings), as its official package's zod
//! schema declares them: `scripts/schema-enums.mjs` reads `@ag-ui/core`'s `EventSchema` and
//! `ai`'s `uiMessageChunkSchema` into `ag_ui/schema_enums.json` and `ai_sdk/schema_enums.json`,
//! and the examples' `check.sh` fail when the committed files differ from what the installed
//! packages say. A golden holds keys only, so a value outside its enum (`"role": "pirate"`, which
//! both official clients refuse) would otherwise pass green.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One protocol's enums, as the generator wrote them.
#[derive(Debug, Clone, Deserialize)]
pub struct SchemaEnums {
    /// The package and version they were read from (`@ag-ui/core@1.0.0`).
    pub package: String,
    /// Every event type the schema names (its `type` literals).
    pub types: Vec<String>,
    /// Every enum or literal field below an event.
    pub fields: Vec<EnumField>,
}

/// One enum field of one event type.
#[derive(Debug, Clone, Deserialize)]
pub struct EnumField {
    /// The event's `type`.
    #[serde(rename = "type")]
    pub event: String,
    /// Its keys from the event, `[]` after an array (`messages[].role`).
    pub path: String,
    /// The values the schema allows.
    pub values: Vec<String>,
    /// Whether the field must be present where its parent object is.
    pub required: bool,
}

/// A field whose value the schema does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its {at} is {got}, not one of {} ({package}'s schema)", .allowed.join(", "))]
pub struct EnumViolation {
    /// The field, with the index of each array element on the way (`messages[2].role`).
    pub at: String,
    /// The value sent, as JSON, or `missing`.
    pub got: String,
    /// The values allowed.
    pub allowed: Vec<String>,
    /// The package that says so.
    pub package: String,
}

impl SchemaEnums {
    /// The table in `json` (a file compiled in; its tests parse it).
    pub(crate) fn parse(json: &str) -> SchemaEnums {
        serde_json::from_str(json).expect("a schema_enums.json compiled in is the generator's")
    }

    /// The first enum field of `event`'s type that `data` breaks, if any. A field absent (or
    /// `null`) where it is optional, or below a parent of another JSON type (which the event's
    /// own parse judges), is not checked.
    pub fn check(&self, event: &str, data: &Map<String, Value>) -> Result<(), EnumViolation> {
        for field in self.fields.iter().filter(|field| field.event == event) {
            let steps: Vec<Step> = Step::parse(&field.path);
            if let Some((Step::Key(key), rest)) = steps.split_first() {
                walk_key(data, key, rest, String::new(), field, &self.package)?;
            }
        }
        Ok(())
    }
}

/// One step of a field's path.
enum Step<'a> {
    Key(&'a str),
    Each,
}

impl Step<'_> {
    fn parse(path: &str) -> Vec<Step<'_>> {
        let mut steps = Vec::new();
        for key in path.split('.') {
            let name = key.trim_end_matches("[]");
            steps.push(Step::Key(name));
            for _ in 0..(key.len() - name.len()) / 2 {
                steps.push(Step::Each);
            }
        }
        steps
    }
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Key(key) => f.write_str(key),
            Step::Each => f.write_str("[]"),
        }
    }
}

fn walk(
    value: &Value,
    steps: &[Step],
    at: String,
    field: &EnumField,
    package: &str,
) -> Result<(), EnumViolation> {
    let violation = |at: String, got: String| EnumViolation {
        at,
        got,
        allowed: field.values.clone(),
        package: package.to_owned(),
    };
    let Some((step, rest)) = steps.split_first() else {
        return match value.as_str() {
            Some(text) if field.values.iter().any(|allowed| allowed == text) => Ok(()),
            _ => Err(violation(at, value.to_string())),
        };
    };
    match (step, value) {
        (Step::Key(key), Value::Object(object)) => walk_key(object, key, rest, at, field, package),
        (Step::Each, Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, rest, format!("{at}[{index}]"), field, package)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The step into `object`'s `key`, then `rest`.
fn walk_key(
    object: &Map<String, Value>,
    key: &str,
    rest: &[Step],
    at: String,
    field: &EnumField,
    package: &str,
) -> Result<(), EnumViolation> {
    let at = if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    };
    match object.get(key).filter(|value| !value.is_null()) {
        Some(inner) => walk(inner, rest, at, field, package),
        None if rest.is_empty() && field.required => Err(EnumViolation {
            at,
            got: "missing".to_owned(),
            allowed: field.values.clone(),
            package: package.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Sets the field at `path` (a [`EnumField`]'s) in `event` to `value`, making each object and
/// the first element of each array on the way: the dialects' tests build an event per field.
#[cfg(test)]
pub(crate) fn set_at(event: &mut Value, path: &str, value: Value) {
    let steps = Step::parse(path);
    let mut here = event;
    for step in steps {
        here = match step {
            Step::Key(key) => {
                if !here.is_object() {
                    *here = Value::Object(Map::new());
                }
                here.as_object_mut()
                    .unwrap()
                    .entry(key)
                    .or_insert(Value::Null)
            }
            Step::Each => {
                if here.as_array().is_none_or(|items| items.is_empty()) {
                    *here = Value::Array(vec![Value::Null]);
                }
                &mut here.as_array_mut().unwrap()[0]
            }
        };
    }
    *here = value;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_are_walked_into_objects_and_every_array_element() {
        let enums = SchemaEnums::parse(
            r#"{"package": "p@1", "types": ["E"], "fields": [
                {"type": "E", "path": "messages[].role", "values": ["user", "tool"], "required": true},
                {"type": "E", "path": "outcome.type", "values": ["ok"], "required": true},
                {"type": "E", "path": "role", "values": ["a"], "required": false}]}"#,
        );
        /// (case, the event, where it breaks and the value got)
        type Case<'a> = (&'a str, Value, Option<(&'a str, &'a str)>);
        let cases: [Case; 7] = [
            (
                "all allowed",
                json!({"messages": [{"role": "user"}, {"role": "tool"}], "outcome": {"type": "ok"}, "role": "a"}),
                None,
            ),
            (
                "optional fields absent or null",
                json!({"role": null}),
                None,
            ),
            (
                "a second element's",
                json!({"messages": [{"role": "user"}, {"role": "pirate"}]}),
                Some(("messages[1].role", "\"pirate\"")),
            ),
            (
                "a required one missing",
                json!({"messages": [{}]}),
                Some(("messages[0].role", "missing")),
            ),
            (
                "a nested one",
                json!({"outcome": {"type": "ko"}}),
                Some(("outcome.type", "\"ko\"")),
            ),
            ("not a string", json!({"role": 7}), Some(("role", "7"))),
            (
                "a parent of another type is left to the parse",
                json!({"messages": "x", "outcome": 1}),
                None,
            ),
        ];
        for (case, event, expected) in cases {
            let got = enums.check("E", event.as_object().unwrap()).err();
            assert_eq!(
                got.as_ref().map(|v| (v.at.as_str(), v.got.as_str())),
                expected,
                "{case}"
            );
        }
        let bad = json!({"role": "b"});
        let message = enums
            .check("E", bad.as_object().unwrap())
            .unwrap_err()
            .to_string();
        assert_eq!(message, "its role is \"b\", not one of a (p@1's schema)");
        assert!(enums.check("other", bad.as_object().unwrap()).is_ok());
    }
}
