//! SSE protocol shapes and golden documents (`replay-and-fixtures.md` §3 and §8.2).
//!
//! Layer 1 does not compare event payloads, only their *shape*: the event name and the sorted
//! top-level keys of its JSON data. That is stable across runs (ids and timestamps change, keys do
//! not) and still turns red on contract drift. The caller parses the stream (an SSE client gives
//! the event name and data of each frame); [`shape_of`] applies DeerFlow's rules to each.

use serde::Serialize;
use serde_json::Value;

use super::normalize::python_strip;
use super::pyjson::to_python_pretty_json;

/// The shape of one SSE frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// The event name; `None` for a frame without one.
    pub event: Option<String>,
    /// The sorted top-level keys of the data, or `None` when the data is not a JSON object.
    pub keys: Option<Vec<String>>,
}

/// The shape of one SSE event (an SSE client's event name and data), by DeerFlow's rules
/// (`replay-and-fixtures.md` §8.2): the event name stripped; the data stripped and parsed as JSON,
/// empty data counting as `{}` and unparseable data as `{"_raw": <first 200 characters>}`.
///
/// DeerFlow reads the raw transcript line by line and appends one shape per `data:` line; for the
/// frames a DeerFlow gateway emits (one `event:` and one `data:` line each) that is the same as
/// one shape per parsed event. One known gap: Python's `json.loads` accepts `NaN` and `Infinity`,
/// `serde_json` does not, so such data would read as `_raw` here; gateways never emit them.
pub fn shape_of(event: Option<&str>, data: &str) -> Shape {
    Shape {
        event: event.map(|name| python_strip(name).to_owned()),
        keys: data_keys(python_strip(data)),
    }
}

/// The sorted top-level keys of one `data:` payload, or `None` when it is not an object.
fn data_keys(text: &str) -> Option<Vec<String>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            let mut keys: Vec<String> = map.keys().cloned().collect();
            // Byte order of UTF-8 is code point order, which is Python's `sorted()` of `str`.
            keys.sort_unstable();
            Some(keys)
        }
        Ok(_) => None,
        // DeerFlow wraps the first 200 characters as `{"_raw": ...}`; only its key matters here.
        Err(_) => Some(vec!["_raw".to_owned()]),
    }
}

#[derive(Serialize)]
struct GoldenDocument<'a> {
    scenario: &'a str,
    mode: &'a str,
    events: &'a [Shape],
}

/// DeerFlow's golden events document: `{"scenario", "mode", "events": [{"event", "keys"}, ...]}`
/// pretty-printed with a 2-space indent, non-ASCII raw, and no trailing newline.
pub fn golden_document(scenario: &str, mode: &str, shapes: &[Shape]) -> String {
    to_python_pretty_json(&GoldenDocument {
        scenario,
        mode,
        events: shapes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(event: Option<&str>, keys: Option<&[&str]>) -> Shape {
        Shape {
            event: event.map(str::to_owned),
            keys: keys.map(|k| k.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    #[test]
    fn event_shapes() {
        // (event name, data, expected shape)
        let cases: Vec<(Option<&str>, &str, Shape)> = vec![
            (None, "{\"orphan\": 1}", shape(None, Some(&["orphan"]))),
            (
                Some("metadata"),
                "{\"thread_id\": \"t\", \"run_id\": \"r\"}",
                shape(Some("metadata"), Some(&["run_id", "thread_id"])),
            ),
            (
                Some("  values  "),
                " {\"title\": null, \"messages\": [], \"artifacts\": []}\r",
                shape(Some("values"), Some(&["artifacts", "messages", "title"])),
            ),
            (
                Some("values"),
                "{not json",
                shape(Some("values"), Some(&["_raw"])),
            ),
            (Some("error"), "", shape(Some("error"), Some(&[]))),
            (Some("custom"), "[1, 2]", shape(Some("custom"), None)),
            (Some("custom"), "\"text\"", shape(Some("custom"), None)),
            // Python's `sorted()` of `str`: code point order.
            (
                Some("values"),
                "{\"z\": 1, \"_a\": 2, \"É\": 3, \"B\": 4}",
                shape(Some("values"), Some(&["B", "_a", "z", "É"])),
            ),
            (Some("end"), "null", shape(Some("end"), None)),
        ];
        for (event, data, expected) in cases {
            assert_eq!(shape_of(event, data), expected, "{event:?} {data:?}");
        }
    }

    #[test]
    fn golden_document_is_deerflows_format() {
        let shapes = vec![
            shape(Some("metadata"), Some(&["run_id", "thread_id"])),
            shape(Some("values"), Some(&[])),
            shape(None, Some(&["_raw"])),
            shape(Some("end"), None),
        ];
        let expected = r#"{
  "scenario": "write_read_file",
  "mode": "ultra",
  "events": [
    {
      "event": "metadata",
      "keys": [
        "run_id",
        "thread_id"
      ]
    },
    {
      "event": "values",
      "keys": []
    },
    {
      "event": null,
      "keys": [
        "_raw"
      ]
    },
    {
      "event": "end",
      "keys": null
    }
  ]
}"#;
        assert_eq!(
            golden_document("write_read_file", "ultra", &shapes),
            expected
        );
        assert_eq!(
            golden_document("s", "flash", &[]),
            "{\n  \"scenario\": \"s\",\n  \"mode\": \"flash\",\n  \"events\": []\n}"
        );
    }
}
