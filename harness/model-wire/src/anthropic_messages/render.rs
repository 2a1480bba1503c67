//! Writing an answer at the Messages wire: one `message` ([`message`]), the stream's named
//! events ([`stream_events`]: `message_start`, per block `content_block_start`, its deltas and
//! `content_block_stop`, `message_delta` with the stop reason and output tokens, `message_stop`)
//! and Anthropic's error body ([`error_body`]), as the API reference shows them, so that
//! [`StreamAssembler`](super::StreamAssembler) and the `anthropic` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};

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
/// empty the answer's own [`Answer::events`]): every block its start, deltas and stop, with the
/// blocks numbered in the order they open, then `message_delta` and `message_stop`.
pub fn stream_events(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<SseEvent> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let input_tokens = usage(answer)["input_tokens"].clone();
    let mut out = vec![SseEvent::new(
        "message_start",
        json!({"message": {"id": identity.id, "type": "message", "role": "assistant",
            "model": model(identity, answer), "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 0}}}),
    )];
    let mut next_block = 0u64;
    // The Anthropic index of each call's block, by the call's position.
    let mut call_blocks: Vec<(u32, u64)> = Vec::new();
    let mut open: Option<u64> = None;
    let mut start = |out: &mut Vec<SseEvent>, block: Value| {
        let index = next_block;
        next_block += 1;
        out.push(SseEvent::new(
            "content_block_start",
            json!({"index": index, "content_block": block}),
        ));
        index
    };
    let delta = |index: u64, delta: Value| {
        SseEvent::new(
            "content_block_delta",
            json!({"index": index, "delta": delta}),
        )
    };
    let stop = |index: u64| SseEvent::new("content_block_stop", json!({"index": index}));
    for event in events {
        match event {
            Event::TextStart => open = Some(start(&mut out, json!({"type": "text", "text": ""}))),
            Event::ThinkingStart => {
                open = Some(start(
                    &mut out,
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ))
            }
            Event::TextDelta { delta: text } => {
                if let Some(index) = open {
                    out.push(delta(index, json!({"type": "text_delta", "text": text})));
                }
            }
            Event::ThinkingDelta { delta: text } => {
                if let Some(index) = open {
                    out.push(delta(
                        index,
                        json!({"type": "thinking_delta", "thinking": text}),
                    ));
                }
            }
            Event::TextEnd | Event::ThinkingEnd => {
                if let Some(index) = open.take() {
                    out.push(stop(index));
                }
            }
            Event::ToolcallStart { index, id, name } => {
                let block = start(
                    &mut out,
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                );
                call_blocks.push((*index, block));
            }
            Event::ToolcallDelta { index, delta: text } => {
                if let Some((_, block)) = call_blocks.iter().find(|(call, _)| call == index) {
                    out.push(delta(
                        *block,
                        json!({"type": "input_json_delta", "partial_json": text}),
                    ));
                }
            }
            Event::ToolcallEnd { index } => {
                if let Some((_, block)) = call_blocks.iter().find(|(call, _)| call == index) {
                    out.push(stop(*block));
                }
            }
        }
    }
    out.push(SseEvent::new(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason(&answer.finish_reason), "stop_sequence": null},
               "usage": {"output_tokens": usage(answer)["output_tokens"]}}),
    ));
    out.push(SseEvent::new("message_stop", json!({})));
    out
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
