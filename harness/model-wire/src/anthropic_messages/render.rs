//! Writing an answer at the Messages wire: one `message` ([`message`]), the stream's named
//! events ([`stream_events`]: `message_start`, per block `content_block_start`, its deltas and
//! `content_block_stop`, `message_delta` with the stop reason and output tokens, `message_stop`)
//! and Anthropic's error body ([`error_body`]), as the API reference shows them, whole or one
//! recorded step at a time ([`StreamRenderer`]), so that
//! [`StreamAssembler`](super::StreamAssembler) and the `anthropic` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};
use crate::stream::{RenderStream, StreamPiece};

use super::stop_reason;

/// One server-sent event: its `event:` name and its `data:` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event name (the payload's `type`).
    pub name: &'static str,
    /// The payload.
    pub data: Value,
}

impl SseEvent {
    fn new(name: &'static str, mut data: Value) -> SseEvent {
        data["type"] = json!(name);
        SseEvent { name, data }
    }

    /// The SSE frame: `event: <name>\ndata: <json>\n\n`.
    pub fn frame(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.name, self.data)
    }
}

/// Anthropic's `usage` from the answer's OpenAI usage (zero counts when it has none).
fn usage(answer: &Answer) -> Value {
    let count = |key: &str| {
        answer
            .usage
            .as_ref()
            .and_then(|usage| usage.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    json!({"input_tokens": count("prompt_tokens"), "output_tokens": count("completion_tokens")})
}

fn model(identity: &Identity, answer: &Answer) -> String {
    answer
        .model
        .clone()
        .unwrap_or_else(|| identity.model.clone())
}

/// The answer's arguments as an `input` object (`{}` for blank or unparsable text, which the
/// Messages wire cannot carry).
fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

/// One whole `message`: thinking, text, then each `tool_use` block.
pub fn message(identity: &Identity, answer: &Answer) -> Value {
    let mut content = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        content.push(json!({"type": "thinking", "thinking": reasoning, "signature": ""}));
    }
    if !answer.text.is_empty() {
        content.push(json!({"type": "text", "text": answer.text}));
    }
    for call in &answer.calls {
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
                            "input": input(&call.arguments)}));
    }
    json!({
        "id": identity.id,
        "type": "message",
        "role": "assistant",
        "model": model(identity, answer),
        "content": content,
        "stop_reason": stop_reason(&answer.finish_reason),
        "stop_sequence": null,
        "usage": usage(answer),
    })
}

/// The stream of an answer streamed with `events` (the shared events, in order; when they are
/// empty the answer's own [`Answer::events`]), whole: [`StreamRenderer`] over every step.
pub fn stream_events(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<SseEvent> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut renderer = StreamRenderer::new(identity, Some(answer));
    let mut out = vec![renderer.opening()];
    for event in events {
        out.extend(renderer.events_of(event));
    }
    out.extend(closing(answer));
    out
}

/// The Messages wire's streaming renderer ([`RenderStream`]): `message_start`, every block its
/// start, deltas and stop as the deltas come (blocks numbered in the order they open), then
/// `message_delta` with the stop reason and output tokens and `message_stop`.
#[derive(Debug)]
pub struct StreamRenderer {
    identity: Identity,
    /// What `message_start` says: the answer when known, else an empty one.
    opening: Answer,
    next_block: u64,
    /// The Anthropic index of each call's block, by the call's position.
    call_blocks: Vec<(u32, u64)>,
    /// The text or thinking block open.
    open: Option<u64>,
}

impl StreamRenderer {
    /// A renderer for one answer; `known` is the answer when it is known before its stream (its
    /// model and input tokens go in `message_start`).
    pub fn new(identity: &Identity, known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            identity: identity.clone(),
            opening: known.cloned().unwrap_or_else(Answer::empty),
            next_block: 0,
            call_blocks: Vec::new(),
            open: None,
        }
    }

    /// `message_start`.
    fn opening(&self) -> SseEvent {
        let answer = &self.opening;
        let input_tokens = usage(answer)["input_tokens"].clone();
        SseEvent::new(
            "message_start",
            json!({"message": {"id": self.identity.id, "type": "message", "role": "assistant",
                "model": model(&self.identity, answer), "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 0}}}),
        )
    }

    fn start_block(&mut self, block: Value) -> (u64, SseEvent) {
        let index = self.next_block;
        self.next_block += 1;
        let event = SseEvent::new(
            "content_block_start",
            json!({"index": index, "content_block": block}),
        );
        (index, event)
    }

    /// The events of one delta.
    fn events_of(&mut self, event: &Event) -> Vec<SseEvent> {
        let delta = |index: u64, delta: Value| {
            SseEvent::new(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )
        };
        let stop = |index: u64| SseEvent::new("content_block_stop", json!({"index": index}));
        let mut out = Vec::new();
        match event {
            Event::TextStart => {
                let (index, start) = self.start_block(json!({"type": "text", "text": ""}));
                self.open = Some(index);
                out.push(start);
            }
            Event::ThinkingStart => {
                let (index, start) =
                    self.start_block(json!({"type": "thinking", "thinking": "", "signature": ""}));
                self.open = Some(index);
                out.push(start);
            }
            Event::TextDelta { delta: text } => {
                if let Some(index) = self.open {
                    out.push(delta(index, json!({"type": "text_delta", "text": text})));
                }
            }
            Event::ThinkingDelta { delta: text } => {
                if let Some(index) = self.open {
                    out.push(delta(
                        index,
                        json!({"type": "thinking_delta", "thinking": text}),
                    ));
                }
            }
            Event::TextEnd | Event::ThinkingEnd => {
                if let Some(index) = self.open.take() {
                    out.push(stop(index));
                }
            }
            Event::ToolcallStart { index, id, name } => {
                let (block, start) = self
                    .start_block(json!({"type": "tool_use", "id": id, "name": name, "input": {}}));
                self.call_blocks.push((*index, block));
                out.push(start);
            }
            Event::ToolcallDelta { index, delta: text } => {
                if let Some((_, block)) = self.call_blocks.iter().find(|(call, _)| call == index) {
                    out.push(delta(
                        *block,
                        json!({"type": "input_json_delta", "partial_json": text}),
                    ));
                }
            }
            Event::ToolcallEnd { index } => {
                if let Some((_, block)) = self.call_blocks.iter().find(|(call, _)| call == index) {
                    out.push(stop(*block));
                }
            }
        }
        out
    }
}

/// `message_delta` with the stop reason and output tokens, and `message_stop`.
fn closing(answer: &Answer) -> Vec<SseEvent> {
    vec![
        SseEvent::new(
            "message_delta",
            json!({"delta": {"stop_reason": stop_reason(&answer.finish_reason), "stop_sequence": null},
                   "usage": {"output_tokens": usage(answer)["output_tokens"]}}),
        ),
        SseEvent::new("message_stop", json!({})),
    ]
}

fn sse(events: Vec<SseEvent>) -> Vec<StreamPiece> {
    events
        .iter()
        .map(|event| StreamPiece::Sse(event.frame()))
        .collect()
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        sse(vec![self.opening()])
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        sse(self.events_of(event))
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        sse(closing(answer))
    }

    /// The stream's `error` event (an `api_error`).
    fn fail(&mut self, _status: u16, message: &str, _body: &Value) -> Vec<StreamPiece> {
        let error = error_body("api_error", message);
        vec![StreamPiece::Sse(format!("event: error\ndata: {error}\n\n"))]
    }
}

/// Anthropic's error `type` for an HTTP status.
pub fn error_kind_for_status(status: u16) -> &'static str {
    match status {
        400 | 404 | 409 | 413 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Anthropic's error body, `{"type": "error", "error": {"type", "message"}}`: an HTTP error's
/// body, and the payload of a stream's `error` event.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
