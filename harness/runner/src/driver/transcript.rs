//! What one streamed run produced, read once: each SSE frame's data is parsed when the frame
//! arrives ([`SseEvent::new`]), and its shape, the run's shapes, the web reduction, the final
//! values, the run id, failure reports and `cargo xtask replay`'s table all read that parse
//! instead of parsing the text again. The raw body is not kept beside the frames (a second copy
//! of every byte): a report that wants the whole transcript renders it from the frames
//! ([`RunTranscript::raw`]).

use std::fmt::Write as _;

use serde_json::Value;

use replay_core::{FrameData, Shape, frame_shape, web_frame_shapes};

use crate::ignored::IgnoredEvents;

use super::api::{Api, StreamModes};

/// One SSE event as the client parsed it, its data parsed once.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event name.
    pub event: String,
    /// The data, as sent.
    data: String,
    /// The data as DeerFlow reads it, parsed when the frame was read.
    parsed: FrameData,
    /// The id, when the frame carried one.
    pub id: Option<String>,
}

impl SseEvent {
    /// The frame `event`/`data`/`id` as an SSE client reads it; parses `data` (the one parse).
    pub fn new(event: String, data: String, id: Option<String>) -> SseEvent {
        let parsed = FrameData::parse(&data);
        SseEvent {
            event,
            data,
            parsed,
            id,
        }
    }

    /// The data, as sent.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The data parsed as JSON, when it is JSON.
    pub fn json(&self) -> Option<&Value> {
        self.parsed.json()
    }

    /// The frame's protocol shape (`docs/replay-and-fixtures.md` §8.2).
    pub fn shape(&self) -> Shape {
        frame_shape(Some(&self.event), &self.parsed)
    }
}

/// Everything one streamed run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTranscript {
    /// The request body that started the run.
    pub request: Value,
    /// Parsed events, in order.
    pub events: Vec<SseEvent>,
    /// The stream modes the run asked for: which reduction its golden holds.
    pub modes: StreamModes,
    /// The API that streamed it, whose protocol says how it is framed and how its frames
    /// reduce to the golden's shapes.
    pub api: Api,
    /// The response headers the dialect's framing rule reads (`(lowercase name, value)`), e.g.
    /// the AI SDK's `x-vercel-ai-ui-message-stream`; never a cookie or other credential.
    pub headers: Vec<(String, String)>,
    /// The conversation as the dialect's client holds it after this run (the UI messages the
    /// next request carries, `Dialect::history`); `None` for a dialect whose
    /// server keeps it.
    pub history: Option<Value>,
}

impl RunTranscript {
    /// The shapes its golden holds, as its dialect reduces them ([`Api::golden_shapes`]):
    /// for DeerFlow and LangGraph [`RunTranscript::shapes`] for a values run,
    /// [`RunTranscript::web_shapes`] for a run in the web client's modes.
    pub fn golden_shapes(&self) -> Vec<Shape> {
        self.api.golden_shapes(self)
    }

    /// Each frame's shape, named as its dialect names frames, unreduced (for reports).
    pub fn frame_shapes(&self) -> Vec<Shape> {
        self.api.frame_shapes(self)
    }

    /// The value of the response header `name` (lowercase), when the dialect kept it.
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(kept, _)| kept == name)
            .map(|(_, value)| value.as_str())
    }

    /// The frames as `(SSE event name, data as sent, data parsed)`, for a dialect's reduction.
    pub fn frames(&self) -> impl Iterator<Item = (&str, &str, &FrameData)> {
        (self.events.iter()).map(|event| (event.event.as_str(), event.data(), &event.parsed))
    }

    /// The protocol shape: `(event name, sorted top-level keys or null)` per event.
    pub fn shapes(&self) -> Vec<Shape> {
        self.events.iter().map(SseEvent::shape).collect()
    }

    /// The web golden's reduction of the run (`web_shapes`: each event by its web shape, a run
    /// of chunks of one message as one entry).
    pub fn web_shapes(&self) -> Vec<Shape> {
        self.web_shapes_without(&IgnoredEvents::default())
    }

    /// [`RunTranscript::web_shapes`] without the events of the `ignored` types.
    pub fn web_shapes_without(&self, ignored: &IgnoredEvents) -> Vec<Shape> {
        web_frame_shapes(
            (self.events.iter())
                .filter(|event| !ignored.contains(Some(event.event.as_str())))
                .map(|event| (Some(event.event.as_str()), &event.parsed)),
        )
    }

    /// The data of the last `values` event.
    pub fn final_values(&self) -> Option<Value> {
        self.events
            .iter()
            .rev()
            .find(|event| event.event == "values")
            .and_then(SseEvent::json)
            .cloned()
    }

    /// The run id from the `metadata` event.
    pub fn run_id(&self) -> Option<String> {
        let metadata = self.events.iter().find(|event| event.event == "metadata")?;
        metadata.json()?.get("run_id")?.as_str().map(String::from)
    }

    /// The stream as SSE text, rendered from the frames: an `event:` line, a `data:` line per
    /// line of data, an `id:` line when there was one, and a blank line. Comments and `retry:`
    /// lines, which no check reads, are not kept.
    pub fn raw(&self) -> String {
        let mut out = String::new();
        for event in &self.events {
            let _ = writeln!(out, "event: {}", event.event);
            for line in event.data.split('\n') {
                let _ = writeln!(out, "data: {line}");
            }
            if let Some(id) = &event.id {
                let _ = writeln!(out, "id: {id}");
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use replay_core::{shape_of, web_shapes};

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent::new(name.into(), data.into(), None)
    }

    /// The frames read once give what the text-reading functions give, frame by frame and for
    /// the web reduction's chunk runs.
    #[test]
    fn shapes_from_the_one_parse_equal_the_shapes_of_the_text() {
        let frames = [
            ("metadata", r#"{"run_id": "r", "thread_id": "t"}"#),
            ("values", "  {\"b\": 1, \"a\": 2}\n"),
            (
                "messages",
                r#"[{"type": "AIMessageChunk", "id": "m", "content": "a"}, {}]"#,
            ),
            (
                "messages",
                r#"[{"type": "AIMessageChunk", "id": "m", "chunk_position": "last"}, {}]"#,
            ),
            ("messages", r#"[{"type": "tool", "id": "t"}, {}]"#),
            ("custom", "not json"),
            ("updates", "[1, 2]"),
            ("end", ""),
        ];
        let transcript = RunTranscript {
            request: Value::Null,
            events: frames
                .iter()
                .map(|(name, data)| event(name, data))
                .collect(),
            modes: StreamModes::Values,
            api: Api::Deerflow,
            headers: Vec::new(),
            history: None,
        };
        let from_text: Vec<Shape> = frames
            .iter()
            .map(|(name, data)| shape_of(Some(name), data))
            .collect();
        assert_eq!(transcript.shapes(), from_text);
        assert_eq!(
            transcript.web_shapes(),
            web_shapes(frames.iter().map(|(name, data)| (Some(*name), *data)))
        );
        assert_eq!(transcript.run_id().as_deref(), Some("r"));
        assert_eq!(
            transcript.final_values(),
            Some(serde_json::json!({"b": 1, "a": 2}))
        );
    }

    /// The rendered transcript reads back, through the SSE parser the driver uses, as the same
    /// frames (a multi-line data field and an id included).
    #[test]
    fn the_rendered_transcript_reads_back_as_the_same_frames() {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;

        let transcript = RunTranscript {
            request: Value::Null,
            events: vec![
                event("metadata", r#"{"run_id": "r"}"#),
                event("values", "{\"a\":\n1}"),
                SseEvent::new("end".into(), String::new(), Some("7".into())),
            ],
            modes: StreamModes::Values,
            api: Api::Deerflow,
            headers: Vec::new(),
            history: None,
        };
        let raw = transcript.raw();
        let body = futures::stream::iter([Ok::<_, std::io::Error>(raw.clone().into_bytes())]);
        let read: Vec<SseEvent> = futures::executor::block_on(
            body.eventsource()
                .map(|frame| {
                    let frame = frame.expect("the rendered text is valid SSE");
                    SseEvent::new(
                        frame.event,
                        frame.data,
                        (!frame.id.is_empty()).then_some(frame.id),
                    )
                })
                .collect(),
        );
        assert_eq!(read, transcript.events, "{raw}");
    }
}
