//! SSE protocol shapes and golden documents (`replay-and-fixtures.md` §3 and §8.2).
//!
//! Layer 1 does not compare event payloads, only their *shape*: the event name and the sorted
//! top-level keys of its JSON data. That is stable across runs (ids and timestamps change, keys do
//! not) and still turns red on contract drift. The extraction follows DeerFlow's line-based rules
//! exactly rather than an SSE library's, because libraries drop data-less events or default the
//! event name to `message`.

use serde::Serialize;
use serde_json::Value;

use super::normalize::python_strip;
use super::pyjson::to_python_pretty_json;

/// The shape of one SSE frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// The event name in force when the `data:` line was read; `None` before any `event:` line.
    pub event: Option<String>,
    /// The sorted top-level keys of the data, or `None` when the data is not a JSON object.
    pub keys: Option<Vec<String>>,
}

/// How many characters of unparseable data DeerFlow keeps under `_raw`.
const RAW_PREFIX_CHARS: usize = 200;

/// Reduces a raw SSE transcript to its shapes, following §8.2 line by line.
///
/// - `event:` sets the current event name (text after the first colon, stripped). It is not reset
///   between frames, as in DeerFlow.
/// - Every `data:` line appends one shape: its stripped text parsed as JSON, empty text counting
///   as `{}` and unparseable text as `{"_raw": <first 200 characters>}`.
/// - Everything else (`id:`, `retry:`, `:` comments, blank lines) is ignored, so an event without
///   a data line yields no shape.
///
/// Lines end at `\n`, `\r\n` or `\r`. One known gap: Python's `json.loads` accepts `NaN` and
/// `Infinity`, `serde_json` does not, so such data would read as `_raw` here; gateways never emit
/// them.
pub fn shapes_from_sse(raw: &str) -> Vec<Shape> {
    let mut current: Option<String> = None;
    let mut shapes = Vec::new();
    for line in raw.split(['\n', '\r']) {
        if let Some(rest) = line.strip_prefix("event:") {
            current = Some(python_strip(rest).to_owned());
        } else if let Some(rest) = line.strip_prefix("data:") {
            shapes.push(Shape {
                event: current.clone(),
                keys: data_keys(python_strip(rest)),
            });
        }
    }
    shapes
}

/// The shape of one already-parsed SSE event (an SSE client's event name and data), by the same
/// rules as [`shapes_from_sse`]. For the frames a DeerFlow gateway emits (one `event:` and one
/// `data:` line each) the two agree.
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

/// The first 200 characters of unparseable data, as DeerFlow stores it under `_raw`. Exposed for
/// diagnostics that want to show the offending payload.
pub fn raw_prefix(text: &str) -> &str {
    match text.char_indices().nth(RAW_PREFIX_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
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
    fn transcript_to_shapes() {
        let raw = concat!(
            "data: {\"orphan\": 1}\n\n",
            ": heartbeat\n\n",
            "event: metadata\n",
            "id: 1-0\n",
            "data: {\"thread_id\": \"t\", \"run_id\": \"r\"}\n\n",
            "event:  values  \r\n",
            "data: {\"title\": null, \"messages\": [], \"artifacts\": []}\r\n\r\n",
            "event: values\n",
            "data: {not json\n\n",
            "event: error\n",
            "data:\n\n",
            "event: custom\n",
            "data: [1, 2]\n",
            "data: \"text\"\n\n",
            "event: no_data_here\n",
            "id: 7\n\n",
            ": heartbeat\n",
            "data: {\"z\": 1, \"_a\": 2, \"É\": 3, \"B\": 4}\n\n",
            "event: end\n",
            "data: null\n\n",
        );
        let expected = vec![
            shape(None, Some(&["orphan"])),
            shape(Some("metadata"), Some(&["run_id", "thread_id"])),
            shape(Some("values"), Some(&["artifacts", "messages", "title"])),
            shape(Some("values"), Some(&["_raw"])),
            shape(Some("error"), Some(&[])),
            shape(Some("custom"), None),
            shape(Some("custom"), None),
            // The data-less event only renamed the current event.
            shape(Some("no_data_here"), Some(&["B", "_a", "z", "É"])),
            shape(Some("end"), None),
        ];
        assert_eq!(shapes_from_sse(raw), expected);
    }

    #[test]
    fn lines_must_start_with_the_field_name() {
        let raw = " event: x\ndata : {}\nevent:y\ndata:{\"k\":1}\n";
        assert_eq!(shapes_from_sse(raw), vec![shape(Some("y"), Some(&["k"]))]);
    }

    #[test]
    fn raw_prefix_counts_characters() {
        let long: String = "é".repeat(250);
        assert_eq!(raw_prefix(&long).chars().count(), 200);
        assert_eq!(raw_prefix("short"), "short");
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
