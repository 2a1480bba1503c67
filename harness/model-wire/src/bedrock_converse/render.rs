//! Writing an answer at the Converse wire: one answer ([`response`]), the stream's events
//! ([`stream_events`]: `messageStart`; per block its deltas, a `toolUse` block opened by
//! `contentBlockStart`, each closed by `contentBlockStop`; `messageStop` with the stop reason;
//! `metadata` with the usage), and Bedrock's error ([`error_body`], [`exception_for_status`]),
//! whole or one recorded step at a time ([`StreamRenderer`]), so that
//! [`StreamAssembler`](super::StreamAssembler) and `boto3` read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};
use crate::stream::{RenderStream, StreamEvent, StreamException, StreamPiece};

use super::stop_reason;

fn usage(answer: &Answer) -> Value {
    let count = |key: &str| {
        answer
            .usage
            .as_ref()
            .and_then(|usage| usage.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    json!({"inputTokens": count("prompt_tokens"), "outputTokens": count("completion_tokens"),
           "totalTokens": count("total_tokens")})
}

fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

/// One whole answer: reasoning, text, then each `toolUse` block.
pub fn response(_identity: &Identity, answer: &Answer) -> Value {
    let mut content = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        content.push(json!({"reasoningContent": {"reasoningText": {"text": reasoning}}}));
    }
    if !answer.text.is_empty() {
        content.push(json!({"text": answer.text}));
    }
    for call in &answer.calls {
        content.push(json!({"toolUse": {"toolUseId": call.id, "name": call.name,
                                        "input": input(&call.arguments)}}));
    }
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(&answer.finish_reason),
        "usage": usage(answer),
        "metrics": {"latencyMs": 0},
    })
}

/// The events of an answer streamed with `events` (the shared events, in order; when they are
/// empty the answer's own [`Answer::events`]), whole: [`StreamRenderer`] over every step.
pub fn stream_events(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<StreamEvent> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut renderer = StreamRenderer::new(identity, Some(answer));
    let mut out = vec![opening()];
    for event in events {
        out.extend(renderer.events_of(event));
    }
    out.extend(closing(answer));
    out
}

fn event(name: &'static str, payload: Value) -> StreamEvent {
    StreamEvent { name, payload }
}

/// `messageStart`.
fn opening() -> StreamEvent {
    event("messageStart", json!({"role": "assistant"}))
}

/// `messageStop` with the stop reason, and `metadata` with the usage.
fn closing(answer: &Answer) -> Vec<StreamEvent> {
    vec![
        event(
            "messageStop",
            json!({"stopReason": stop_reason(&answer.finish_reason)}),
        ),
        event(
            "metadata",
            json!({"usage": usage(answer), "metrics": {"latencyMs": 0}}),
        ),
    ]
}

/// The Converse wire's streaming renderer ([`RenderStream`]): `messageStart`; per block its
/// deltas as they come, a `toolUse` block opened by `contentBlockStart`, each closed by
/// `contentBlockStop` (blocks numbered in the order they open); `messageStop` and `metadata`
/// from the whole answer; a failure as the `modelStreamErrorException` message.
#[derive(Debug, Default)]
pub struct StreamRenderer {
    next_block: u64,
    open: Option<u64>,
    call_blocks: Vec<(u32, u64)>,
}

impl StreamRenderer {
    /// A renderer for one answer; nothing in Converse's stream says the answer before its end,
    /// so `known` changes nothing.
    pub fn new(_identity: &Identity, _known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer::default()
    }

    /// The events of one delta.
    fn events_of(&mut self, shared: &Event) -> Vec<StreamEvent> {
        let delta = |index: u64, delta: Value| {
            event(
                "contentBlockDelta",
                json!({"delta": delta, "contentBlockIndex": index}),
            )
        };
        let stop = |index: u64| event("contentBlockStop", json!({"contentBlockIndex": index}));
        let mut out = Vec::new();
        match shared {
            Event::TextStart | Event::ThinkingStart => {
                self.open = Some(self.next_block);
                self.next_block += 1;
            }
            Event::TextDelta { delta: text } => {
                if let Some(index) = self.open {
                    out.push(delta(index, json!({"text": text})));
                }
            }
            Event::ThinkingDelta { delta: text } => {
                if let Some(index) = self.open {
                    out.push(delta(index, json!({"reasoningContent": {"text": text}})));
                }
            }
            Event::TextEnd | Event::ThinkingEnd => {
                if let Some(index) = self.open.take() {
                    out.push(stop(index));
                }
            }
            Event::ToolcallStart { index, id, name } => {
                let block = self.next_block;
                self.next_block += 1;
                self.call_blocks.push((*index, block));
                out.push(event(
                    "contentBlockStart",
                    json!({"start": {"toolUse": {"toolUseId": id, "name": name}},
                           "contentBlockIndex": block}),
                ));
            }
            Event::ToolcallDelta { index, delta: text } => {
                if let Some((_, block)) = self.call_blocks.iter().find(|(call, _)| call == index) {
                    out.push(delta(*block, json!({"toolUse": {"input": text}})));
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

fn pieces(events: Vec<StreamEvent>) -> Vec<StreamPiece> {
    events.into_iter().map(StreamPiece::Event).collect()
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        pieces(vec![opening()])
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        pieces(self.events_of(event))
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        pieces(closing(answer))
    }

    /// The `modelStreamErrorException` message that ends the stream.
    fn fail(&mut self, _status: u16, message: &str, _body: &Value) -> Vec<StreamPiece> {
        vec![StreamPiece::Exception(StreamException {
            exception_type: "modelStreamErrorException",
            message: message.to_owned(),
        })]
    }
}

/// Bedrock Runtime's exception for an HTTP status: the name its error carries in the
/// `x-amzn-errortype` header (and a stream's exception frame, first letter lowered, in
/// `:exception-type`), which `boto3` raises as `client.exceptions.<name>`.
pub fn exception_for_status(status: u16) -> &'static str {
    match status {
        400 | 422 => "ValidationException",
        401 | 403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

/// Bedrock's error body, `{"message"}` (the exception's name goes in the `x-amzn-errortype`
/// header, or a stream frame's `:exception-type`).
pub fn error_body(message: &str) -> Value {
    json!({"message": message})
}
