//! SSE protocol shapes and golden documents (`docs/replay-and-fixtures.md` §3 and §8.2).
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
    /// Only in the web-mode reduction ([`web_shape_of`]), for a `messages` frame: the message
    /// chunk's `type` (`keys` are then the chunk's keys). Absent from every other shape, so
    /// values-only goldens do not mention it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message_type: Option<String>,
    /// Only in the web-mode sequence reduction ([`web_shapes`]), for a run of streamed chunks:
    /// the closing chunk's `chunk_position` (`"last"` for a properly closed run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) chunk_position: Option<String>,
}

/// One SSE frame's data as DeerFlow reads it (`docs/replay-and-fixtures.md` §8.2), parsed once:
/// a client keeps this beside the data it received, and every shape, report and table reads it
/// instead of parsing the text again.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameData {
    /// The data was empty (after stripping), which counts as `{}`.
    Empty,
    /// The data parsed as JSON.
    Json(Value),
    /// The data is not JSON; DeerFlow wraps its first 200 characters as `{"_raw": ...}`, and only
    /// that key matters to a shape.
    NotJson,
}

impl FrameData {
    /// Strips `data` as Python's `str.strip()` does and parses it as JSON.
    pub fn parse(data: &str) -> FrameData {
        let text = python_strip(data);
        if text.is_empty() {
            return FrameData::Empty;
        }
        serde_json::from_str(text).map_or(FrameData::NotJson, FrameData::Json)
    }

    /// The parsed JSON, when the data was JSON.
    pub fn json(&self) -> Option<&Value> {
        match self {
            FrameData::Json(value) => Some(value),
            FrameData::Empty | FrameData::NotJson => None,
        }
    }

    /// The sorted top-level keys, or `None` when the data is JSON but not an object.
    fn keys(&self) -> Option<Vec<String>> {
        match self {
            FrameData::Empty => Some(Vec::new()),
            FrameData::Json(Value::Object(map)) => {
                let mut keys: Vec<String> = map.keys().cloned().collect();
                // Byte order of UTF-8 is code point order, which is Python's `sorted()` of `str`.
                keys.sort_unstable();
                Some(keys)
            }
            FrameData::Json(_) => None,
            FrameData::NotJson => Some(vec!["_raw".to_owned()]),
        }
    }
}

/// The shape of one SSE event (an SSE client's event name and data), by DeerFlow's rules
/// (`docs/replay-and-fixtures.md` §8.2): the event name stripped; the data stripped and parsed as
/// JSON, empty data counting as `{}` and unparseable data as `{"_raw": <first 200 characters>}`.
///
/// DeerFlow reads the raw transcript line by line and appends one shape per `data:` line; for the
/// frames a DeerFlow gateway emits (one `event:` and one `data:` line each) that is the same as
/// one shape per parsed event. One known gap: Python's `json.loads` accepts `NaN` and `Infinity`,
/// `serde_json` does not, so such data would read as `_raw` here; gateways never emit them.
pub fn shape_of(event: Option<&str>, data: &str) -> Shape {
    frame_shape(event, &FrameData::parse(data))
}

/// [`shape_of`] for data already parsed ([`FrameData::parse`]).
pub fn frame_shape(event: Option<&str>, data: &FrameData) -> Shape {
    Shape {
        event: event.map(|name| python_strip(name).to_owned()),
        keys: data.keys(),
        message_type: None,
        chunk_position: None,
    }
}

/// The reduction of the web golden, for the web client's stream modes (`messages-tuple`,
/// `values`, `updates`, `custom`): as [`shape_of`], except that a `messages` frame, whose data
/// is a `[message chunk, metadata]` list, reduces to the chunk's sorted keys and its `type`.
/// An `updates` frame needs nothing special: its keys are the names of the nodes that wrote.
pub fn web_shape_of(event: Option<&str>, data: &str) -> Shape {
    web_frame_shape(event, &FrameData::parse(data))
}

/// [`web_shape_of`] for data already parsed ([`FrameData::parse`]).
pub fn web_frame_shape(event: Option<&str>, data: &FrameData) -> Shape {
    let shape = frame_shape(event, data);
    if shape.event.as_deref() != Some("messages") {
        return shape;
    }
    let Some(Value::Array(items)) = data.json() else {
        return shape;
    };
    match items.first() {
        Some(Value::Object(chunk)) => {
            let mut keys: Vec<String> = chunk.keys().cloned().collect();
            keys.sort_unstable();
            Shape {
                event: shape.event,
                keys: Some(keys),
                message_type: Some(
                    chunk
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                ),
                chunk_position: None,
            }
        }
        _ => shape,
    }
}

/// The type of a streamed chunk tuple.
const CHUNK_TYPE: &str = "AIMessageChunk";

/// The web golden's reduction of a whole run (`docs/golden-format.md` §8): each event by
/// [`web_shape_of`], then every run of consecutive `AIMessageChunk` tuples of one message id
/// becomes one entry, whose `keys` are the union of the run's chunk keys and whose
/// `chunk_position` is the closing chunk's (`"last"`). How many chunks a model call streams
/// depends on how its answer was chunked (a replay model and a model server chunk differently),
/// so the golden holds one entry per streamed message wherever the gateway runs.
pub fn web_shapes<'a>(events: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> Vec<Shape> {
    let parsed: Vec<(Option<&str>, FrameData)> = events
        .into_iter()
        .map(|(event, data)| (event, FrameData::parse(data)))
        .collect();
    web_frame_shapes(parsed.iter().map(|(event, data)| (*event, data)))
}

/// [`web_shapes`] for frames already parsed ([`FrameData::parse`]).
pub fn web_frame_shapes<'a>(
    events: impl IntoIterator<Item = (Option<&'a str>, &'a FrameData)>,
) -> Vec<Shape> {
    let mut shapes: Vec<Shape> = Vec::new();
    // The message id of the chunk run the last shape stands for, if it stands for one.
    let mut open_run: Option<String> = None;
    for (event, data) in events {
        let shape = web_frame_shape(event, data);
        let chunk = (shape.message_type.as_deref() == Some(CHUNK_TYPE))
            .then(|| chunk_fields(data))
            .flatten();
        let Some((id, position)) = chunk else {
            open_run = None;
            shapes.push(shape);
            continue;
        };
        match shapes.last_mut() {
            Some(last) if open_run.as_deref() == Some(id.as_str()) => {
                let mut keys = last.keys.take().unwrap_or_default();
                keys.extend(shape.keys.unwrap_or_default());
                keys.sort_unstable();
                keys.dedup();
                last.keys = Some(keys);
                last.chunk_position = position;
            }
            _ => {
                open_run = Some(id);
                shapes.push(Shape {
                    chunk_position: position,
                    ..shape
                });
            }
        }
    }
    shapes
}

/// The `id` and `chunk_position` of a `messages` tuple's chunk (`None` without an id).
fn chunk_fields(data: &FrameData) -> Option<(String, Option<String>)> {
    let chunk = data.json()?.get(0)?;
    let id = chunk.get("id")?.as_str()?.to_owned();
    let position = chunk
        .get("chunk_position")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((id, position))
}

/// Where a dialect's frame carries its name (`docs/golden-format.md` §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameName {
    /// The SSE `event:` field (DeerFlow, LangGraph, an OpenAI Responses stream).
    SseEvent,
    /// The JSON data's `type` (the AI SDK's UI message stream, AG-UI), the SSE `event:` being
    /// absent or ignored; the end marker `[DONE]` is named `[DONE]`.
    JsonType,
}

/// A frame name whose consecutive frames of one id are one streamed part (`text-delta`,
/// `TEXT_MESSAGE_CONTENT`, …): the key that holds the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeltaRule {
    /// The frame name.
    pub name: &'static str,
    /// The key of the JSON data holding the part's id.
    pub id_key: &'static str,
}

/// The end marker of a stream whose frames are JSON (`data: [DONE]`).
pub const DONE_MARKER: &str = "[DONE]";

impl Shape {
    /// A shape named `event` with `keys` (a dialect that names its frames itself, as the OpenAI
    /// Chat Completions dialect names a chunk by what the wire codec reads in it).
    pub fn named(event: impl Into<String>, keys: Option<Vec<String>>) -> Shape {
        Shape {
            event: Some(event.into()),
            keys,
            message_type: None,
            chunk_position: None,
        }
    }

    /// The sorted top-level keys of a frame's data ([`Shape::keys`] as [`shape_of`] computes
    /// them).
    pub fn keys_of(data: &FrameData) -> Option<Vec<String>> {
        data.keys()
    }
}

/// The shape of a frame whose name is where `name` says: the SSE `event` as [`frame_shape`], or
/// the data's JSON `type` (`None` when the data has no string `type`; `[DONE]` for the end
/// marker, whose keys are `null`); `raw` is the data as sent.
pub fn named_frame_shape(
    name: FrameName,
    event: Option<&str>,
    raw: &str,
    data: &FrameData,
) -> Shape {
    match name {
        FrameName::SseEvent => frame_shape(event, data),
        FrameName::JsonType if python_strip(raw) == DONE_MARKER => Shape::named(DONE_MARKER, None),
        FrameName::JsonType => Shape {
            event: data
                .json()
                .and_then(|json| json.get("type"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            keys: data.keys(),
            message_type: None,
            chunk_position: None,
        },
    }
}

/// The id of the part a frame streams into, when `shape` is a delta frame under `rules` and its
/// data names the id.
pub fn delta_id(shape: &Shape, data: &FrameData, rules: &[DeltaRule]) -> Option<String> {
    let name = shape.event.as_deref()?;
    let rule = rules.iter().find(|rule| rule.name == name)?;
    match data.json()?.get(rule.id_key)? {
        Value::String(id) => Some(id.clone()),
        other => Some(other.to_string()),
    }
}

/// The golden's reduction of a run in a dialect with delta frames (`docs/golden-format.md` §10):
/// each frame's shape in order, except that a run of consecutive frames of one name and one
/// delta id (the second element, [`delta_id`]) is one entry whose keys are the union of the
/// run's keys. How many deltas a part streams depends on how the model's answer was chunked,
/// so a re-recording with other chunk boundaries keeps the golden; two parts, or a delta of
/// another part in between, stay visible.
pub fn delta_run_shapes(frames: impl IntoIterator<Item = (Shape, Option<String>)>) -> Vec<Shape> {
    let mut shapes: Vec<Shape> = Vec::new();
    // The (name, id) of the delta run the last shape stands for, if it stands for one.
    let mut open_run: Option<(Option<String>, String)> = None;
    for (shape, id) in frames {
        let Some(id) = id else {
            open_run = None;
            shapes.push(shape);
            continue;
        };
        let run = (shape.event.clone(), id);
        match shapes.last_mut() {
            Some(last) if open_run.as_ref() == Some(&run) => {
                if let (Some(keys), Some(more)) = (last.keys.as_mut(), shape.keys) {
                    keys.extend(more);
                    keys.sort_unstable();
                    keys.dedup();
                }
            }
            _ => {
                open_run = Some(run);
                shapes.push(shape);
            }
        }
    }
    shapes
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
            message_type: None,
            chunk_position: None,
        }
    }

    #[test]
    fn the_web_reduction_looks_inside_message_tuples_only() {
        let chunk = Shape {
            event: Some("messages".into()),
            keys: Some(vec!["content".into(), "id".into(), "type".into()]),
            message_type: Some("AIMessageChunk".into()),
            chunk_position: None,
        };
        let cases = [
            (
                "messages",
                r#"[{"type": "AIMessageChunk", "id": "x", "content": ""}, {"langgraph_node": "model"}]"#,
                chunk,
            ),
            ("messages", "[]", shape(Some("messages"), None)),
            (
                "updates",
                r#"{"model": {}}"#,
                shape(Some("updates"), Some(&["model"])),
            ),
            (
                "values",
                r#"{"b": 1, "a": 2}"#,
                shape(Some("values"), Some(&["a", "b"])),
            ),
        ];
        for (event, data, expected) in cases {
            assert_eq!(web_shape_of(Some(event), data), expected, "{event} {data}");
        }
        let document = golden_document(
            "s",
            "flash",
            &[web_shape_of(Some("messages"), r#"[{"type": "tool"}, {}]"#)],
        );
        assert!(
            document.contains("\"message_type\": \"tool\""),
            "{document}"
        );
        assert!(
            !golden_document("s", "flash", &[shape(Some("end"), None)]).contains("message_type")
        );
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

    /// A JSON-typed frame's shape: the `type` names it, `[DONE]` is the end marker.
    fn typed(raw: &str) -> (Shape, Option<String>) {
        const RULES: [DeltaRule; 2] = [
            DeltaRule {
                name: "text-delta",
                id_key: "id",
            },
            DeltaRule {
                name: "tool-input-delta",
                id_key: "toolCallId",
            },
        ];
        let data = FrameData::parse(raw);
        let shape = named_frame_shape(FrameName::JsonType, Some("message"), raw, &data);
        let id = delta_id(&shape, &data, &RULES);
        (shape, id)
    }

    #[test]
    fn a_run_of_deltas_of_one_part_is_one_entry_however_it_was_chunked() {
        let delta = |id: &str| format!(r#"{{"type":"text-delta","id":"{id}","delta":"x"}}"#);
        let reduce = |frames: &[String]| delta_run_shapes(frames.iter().map(|raw| typed(raw)));
        let start = r#"{"type":"start","messageId":"m"}"#.to_owned();
        let end = r#"{"type":"text-end","id":"a"}"#.to_owned();
        let args = r#"{"type":"tool-input-delta","toolCallId":"a","inputTextDelta":"{"}"#;
        let done = "[DONE]".to_owned();
        let two = reduce(&[
            start.clone(),
            delta("a"),
            delta("a"),
            end.clone(),
            done.clone(),
        ]);
        let five = reduce(&[
            start.clone(),
            delta("a"),
            delta("a"),
            delta("a"),
            delta("a"),
            delta("a"),
            end.clone(),
            done.clone(),
        ]);
        assert_eq!(two, five);
        let names: Vec<_> = two.iter().map(|s| s.event.clone().unwrap()).collect();
        assert_eq!(names, ["start", "text-delta", "text-end", "[DONE]"]);
        assert_eq!(
            two[1].keys,
            Some(vec!["delta".into(), "id".into(), "type".into()])
        );
        assert_eq!(two[3].keys, None, "the end marker has no keys");
        // Two parts, a delta of another kind of the same id, or a frame in between stay visible.
        let cases = [
            (vec![delta("a"), delta("b")], 2),
            (vec![delta("a"), args.to_owned()], 2),
            (vec![delta("a"), end.clone(), delta("a")], 3),
        ];
        for (frames, entries) in cases {
            assert_eq!(reduce(&frames).len(), entries, "{frames:?}");
        }
        // A frame without a type has no name; its keys still count.
        assert_eq!(typed(r#"{"a": 1}"#).0, shape(None, Some(&["a"])));
        // The SSE event names a frame in the other dialects, as `shape_of` does.
        let data = FrameData::parse(r#"{"type": "x"}"#);
        assert_eq!(
            named_frame_shape(FrameName::SseEvent, Some("values"), "", &data),
            shape_of(Some("values"), r#"{"type": "x"}"#)
        );
    }

    #[test]
    fn a_run_of_chunks_of_one_message_is_one_entry_however_it_was_chunked() {
        let chunk = |id: &str, position: &str| {
            format!(
                r#"[{{"type": "AIMessageChunk", "id": "{id}", "content": "", "chunk_position": {position}}}, {{}}]"#
            )
        };
        let (a1, a2, a_last) = (
            chunk("a", "null"),
            chunk("a", "null"),
            chunk("a", r#""last""#),
        );
        let b_last = chunk("b", r#""last""#);
        let tool = r#"[{"type": "tool", "id": "t"}, {}]"#.to_owned();
        let reduce = |events: &[(&str, &String)]| {
            web_shapes(
                events
                    .iter()
                    .map(|(event, data)| (Some(*event), data.as_str())),
            )
        };
        let two_chunks = reduce(&[
            ("messages", &a1),
            ("messages", &a_last),
            ("messages", &tool),
        ]);
        let five_chunks = reduce(&[
            ("messages", &a1),
            ("messages", &a2),
            ("messages", &a2),
            ("messages", &a2),
            ("messages", &a_last),
            ("messages", &tool),
        ]);
        assert_eq!(two_chunks, five_chunks);
        assert_eq!(two_chunks.len(), 2);
        assert_eq!(two_chunks[0].chunk_position.as_deref(), Some("last"));
        // Two messages, or a run left open, stay visible.
        assert_eq!(
            reduce(&[("messages", &a_last), ("messages", &b_last)]).len(),
            2
        );
        let open = reduce(&[("messages", &a1), ("messages", &a2)]);
        assert_eq!((open.len(), open[0].chunk_position.as_deref()), (1, None));
        let document = golden_document("s", "flash", &two_chunks);
        assert!(
            document.contains("\"chunk_position\": \"last\""),
            "{document}"
        );
    }
}
