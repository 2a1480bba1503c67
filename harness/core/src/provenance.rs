//! A fixture's provenance (`docs/replay-and-fixtures.md` §2.7): when it was recorded, against
//! which upstream, which models, through which wires, by which keyless. Versioned; a fixture
//! without it (every shipped one, and any recorded before it existed) loads unchanged, its age
//! unknown. Nothing secret goes in: the upstream is written without user, password, query or
//! fragment ([`Provenance::upstream_without_secrets`]).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::scenario::{FieldError, json_type};
use super::vocabulary::StreamVocabulary;

/// The provenance format this keyless writes and reads.
pub const PROVENANCE_VERSION: u64 = 1;

/// The timestamp form written: UTC to the second, e.g. `2026-08-11T13:45:02Z`.
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

/// Where and when a fixture was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// When the recording ended.
    pub recorded_at: DateTime<Utc>,
    /// The upstream base URL, without credentials, query or fragment.
    pub upstream: String,
    /// The models the calls named, in first-use order, each once.
    pub models: Vec<String>,
    /// The wires the calls went through (`openai.chat.completions`, ...), first-use order.
    pub wires: Vec<String>,
    /// The keyless version that recorded it.
    pub keyless_version: String,
    /// Every event name and field the upstream's answers used (`keyless drift` compares them);
    /// `None` in a fixture recorded before keyless kept them.
    pub stream: Option<StreamVocabulary>,
}

impl Provenance {
    /// The base URL as it may be written: no user, password, query or fragment (a key passed as
    /// `?key=` never reaches a fixture). Text that is not a URL is kept up to its first `?`/`#`
    /// and after its last `@`.
    pub fn upstream_without_secrets(base: &str) -> String {
        let cut = base.find(['?', '#']).unwrap_or(base.len());
        let base = &base[..cut];
        match base.split_once("://") {
            Some((scheme, rest)) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                let host = authority
                    .rsplit_once('@')
                    .map_or(authority, |(_, host)| host);
                format!("{scheme}://{host}{path}")
            }
            None => base
                .rsplit_once('@')
                .map_or(base, |(_, host)| host)
                .to_owned(),
        }
    }

    /// How long ago it was recorded, at `now` (zero if the clock says it is in the future).
    pub fn age(&self, now: DateTime<Utc>) -> chrono::Duration {
        (now - self.recorded_at).max(chrono::Duration::zero())
    }

    /// Its age at `now` as a table shows it: whole days (`40d`), or hours under a day (`5h`).
    pub fn age_label(&self, now: DateTime<Utc>) -> String {
        let age = self.age(now);
        match age.num_days() {
            0 => format!("{}h", age.num_hours()),
            days => format!("{days}d"),
        }
    }

    /// The JSON object written under the fixture's `provenance` key.
    pub fn to_value(&self) -> Value {
        let mut value = json!({
            "version": PROVENANCE_VERSION,
            "recorded_at": self.recorded_at.format(TIME_FORMAT).to_string(),
            "upstream": self.upstream,
            "models": self.models,
            "wires": self.wires,
            "keyless_version": self.keyless_version,
        });
        if let Some(stream) = &self.stream {
            value["stream"] = stream.to_value();
        }
        value
    }

    /// Reads the `provenance` value of a fixture; every error names the field.
    pub(crate) fn from_value(value: Value) -> Result<Provenance, FieldError> {
        let Value::Object(mut object) = value else {
            return Err(FieldError::wrong_type("provenance", "an object", &value));
        };
        match object.remove("version") {
            Some(Value::Number(n)) if n.as_u64() == Some(PROVENANCE_VERSION) => {}
            Some(Value::Number(n)) => {
                return Err(FieldError::Invalid {
                    field: "provenance.version".to_owned(),
                    message: format!(
                        "is {n}; this keyless reads version {PROVENANCE_VERSION} (a newer keyless wrote it?)"
                    ),
                });
            }
            None => return Err(FieldError::Missing("provenance.version".to_owned())),
            Some(other) => {
                return Err(FieldError::wrong_type(
                    "provenance.version",
                    "an integer",
                    &other,
                ));
            }
        }
        let recorded_at = text(&mut object, "recorded_at")?;
        let recorded_at = DateTime::parse_from_rfc3339(&recorded_at)
            .map_err(|err| FieldError::Invalid {
                field: "provenance.recorded_at".to_owned(),
                message: format!("is not an RFC 3339 time ({err})"),
            })?
            .with_timezone(&Utc);
        Ok(Provenance {
            recorded_at,
            upstream: text(&mut object, "upstream")?,
            models: texts(&mut object, "models")?,
            wires: texts(&mut object, "wires")?,
            keyless_version: text(&mut object, "keyless_version")?,
            stream: match object.remove("stream") {
                None => None,
                Some(value) => Some(StreamVocabulary::from_value(&value).ok_or_else(|| {
                    FieldError::wrong_type(
                        "provenance.stream",
                        "an object of terms and call numbers",
                        &value,
                    )
                })?),
            },
        })
    }
}

/// The string at `provenance.<key>`.
fn text(object: &mut Map<String, Value>, key: &str) -> Result<String, FieldError> {
    let field = format!("provenance.{key}");
    match object.remove(key) {
        Some(Value::String(text)) => Ok(text),
        None => Err(FieldError::Missing(field)),
        Some(other) => Err(FieldError::wrong_type(&field, "a string", &other)),
    }
}

/// The list of strings at `provenance.<key>`.
fn texts(object: &mut Map<String, Value>, key: &str) -> Result<Vec<String>, FieldError> {
    let field = format!("provenance.{key}");
    match object.remove(key) {
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(text) => Ok(text),
                other => Err(FieldError::WrongType {
                    field: field.clone(),
                    item: Some(index),
                    expected: "a string",
                    found: json_type(&other),
                }),
            })
            .collect(),
        None => Err(FieldError::Missing(field)),
        Some(other) => Err(FieldError::wrong_type(&field, "a list of strings", &other)),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Fixture;

    /// A minimal fixture with `provenance` as given.
    fn fixture_text(provenance: &str) -> String {
        format!(r#"{{"mode": "flash", "provenance": {provenance}, "turns": []}}"#)
    }

    #[test]
    fn upstream_loses_credentials_query_and_fragment() {
        for (base, written) in [
            ("https://api.openai.com/v1", "https://api.openai.com/v1"),
            (
                "https://user:sk-x@host:8443/v1?key=AIza#f",
                "https://host:8443/v1",
            ),
            (
                "http://127.0.0.1:9/v1beta?key=k",
                "http://127.0.0.1:9/v1beta",
            ),
            ("u@host/v1", "host/v1"),
        ] {
            assert_eq!(
                Provenance::upstream_without_secrets(base),
                written,
                "{base}"
            );
        }
    }

    #[test]
    fn provenance_round_trips_and_a_fixture_without_it_writes_none() {
        let provenance = Provenance {
            recorded_at: DateTime::parse_from_rfc3339("2026-08-11T13:45:02Z")
                .expect("time")
                .with_timezone(&Utc),
            upstream: "https://api.openai.com/v1".to_owned(),
            models: vec!["gpt-4o".to_owned()],
            wires: vec!["openai.chat.completions".to_owned()],
            keyless_version: "0.1.0".to_owned(),
            stream: Some({
                let mut stream = StreamVocabulary::default();
                stream.note(0, "", r#"{"choices": [{"delta": {"content": "x"}}]}"#);
                stream
            }),
        };
        let text = fixture_text(&provenance.to_value().to_string());
        let fixture = Fixture::from_json_str(&text, Path::new("f.json")).expect("loads");
        assert_eq!(fixture.provenance.as_ref(), Some(&provenance));
        let written = fixture.to_pretty_json();
        assert!(
            written.contains("\"recorded_at\": \"2026-08-11T13:45:02Z\""),
            "{written}"
        );
        let again = Fixture::from_json_str(&written, Path::new("f.json")).expect("reloads");
        assert_eq!(again, fixture);
        let without = Fixture::from_json_str(r#"{"mode": "flash", "turns": []}"#, Path::new("f"))
            .expect("an older fixture loads");
        assert_eq!(without.provenance, None);
        assert!(!without.to_pretty_json().contains("provenance"));
    }

    #[test]
    fn bad_provenance_is_refused_naming_the_field() {
        let good = r#""recorded_at": "2026-08-11T13:45:02Z", "upstream": "u", "models": [], "wires": [], "keyless_version": "0.1.0""#;
        for (provenance, says) in [
            ("[]".to_owned(), "\"provenance\" must be an object"),
            (format!("{{{good}}}"), "missing \"provenance.version\""),
            (
                format!("{{\"version\": 2, {good}}}"),
                "\"provenance.version\" is 2",
            ),
            (
                format!(
                    "{{\"version\": 1, {}}}",
                    good.replace("2026-08-11T13:45:02Z", "yesterday")
                ),
                "\"provenance.recorded_at\" is not an RFC 3339 time",
            ),
            (
                format!("{{\"version\": 1, {}}}", good.replace("[]", "[1]")),
                "\"provenance.models\"[0] must be a string",
            ),
        ] {
            let err = Fixture::from_json_str(&fixture_text(&provenance), Path::new("f.json"))
                .expect_err(&provenance)
                .to_string();
            assert!(err.contains(says), "{provenance}: {err}");
        }
    }
}
