//! Writing an answer at the Responses wire: one response object ([`response`]) and the stream's
//! events ([`stream_events`]: `response.created`, `response.in_progress`, per output item
//! `response.output_item.added`, its part and delta events and `response.output_item.done`,
//! then `response.completed` with the whole response), numbered by `sequence_number`, whole or
//! one recorded step at a time ([`StreamRenderer`]), so that
//! [`StreamAssembler`](super::StreamAssembler) and the `openai` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};
use crate::stream::{RenderStream, StreamPiece};

/// One server-sent event: its `event:` name and its `data:` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event name (the payload's `type`).
    pub name: &'static str,
    /// The payload.
    pub data: Value,
}

impl SseEvent {
    /// The SSE frame: `event: <name>\ndata: <json>\n\n`.
    pub fn frame(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.name, self.data)
    }
}

/// The response's `usage` from the answer's OpenAI usage.
fn usage(answer: &Answer) -> Value {
    let Some(usage) = &answer.usage else {
        return Value::Null;
    };
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| {
        usage
            .get(group)
            .and_then(|g| g.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    json!({
        "input_tokens": count("prompt_tokens"),
        "input_tokens_details": {"cached_tokens": detail("prompt_tokens_details", "cached_tokens")},
        "output_tokens": count("completion_tokens"),
        "output_tokens_details": {
            "reasoning_tokens": detail("completion_tokens_details", "reasoning_tokens"),
        },
        "total_tokens": count("total_tokens"),
    })
}

/// The output items of an answer, finished: reasoning, the message, then each function call.
fn items(identity: &Identity, answer: &Answer) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        items.push(
            json!({"id": format!("rs_{}", identity.id), "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reasoning}]}),
        );
    }
    if !answer.text.is_empty() {
        items.push(message_item(identity, &answer.text, "completed"));
    }
    for (position, call) in answer.calls.iter().enumerate() {
        items.push(call_item(
            identity,
            position,
            &call.id,
            &call.name,
            &call.arguments,
            "completed",
        ));
    }
    items
}

fn message_item(identity: &Identity, text: &str, status: &str) -> Value {
    let content: Vec<Value> = if status == "completed" {
        vec![json!({"type": "output_text", "text": text, "annotations": []})]
    } else {
        Vec::new()
    };
    json!({"id": format!("msg_{}", identity.id), "type": "message", "status": status,
           "role": "assistant", "content": content})
}

fn call_item(
    identity: &Identity,
    position: usize,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &str,
) -> Value {
    json!({"id": format!("fc_{}_{position}", identity.id), "type": "function_call",
           "status": status, "arguments": arguments, "call_id": call_id, "name": name})
}

fn envelope(identity: &Identity, answer: &Answer, status: &str, output: Vec<Value>) -> Value {
    let model = answer
        .model
        .clone()
        .unwrap_or_else(|| identity.model.clone());
    json!({
        "id": format!("resp_{}", identity.id),
        "object": "response",
        "created_at": identity.created,
        "status": status,
        "error": null,
        "incomplete_details": if answer.finish_reason == "length" {
            json!({"reason": "max_output_tokens"})
        } else {
            Value::Null
        },
        "model": model,
        "output": output,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "tools": [],
        "usage": if status == "in_progress" { Value::Null } else { usage(answer) },
    })
}

fn final_status(answer: &Answer) -> &'static str {
    if answer.finish_reason == "length" {
        "incomplete"
    } else {
        "completed"
    }
}

/// One whole response object.
pub fn response(identity: &Identity, answer: &Answer) -> Value {
    envelope(
        identity,
        answer,
        final_status(answer),
        items(identity, answer),
    )
}

/// The stream of an answer streamed with `events` (the shared events in order; when they are
/// empty, the answer's own [`Answer::events`]), whole: [`StreamRenderer`] over every step.
pub fn stream_events(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<SseEvent> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut renderer = StreamRenderer::new(identity, Some(answer));
    let mut out = renderer.opening();
    for event in events {
        out.extend(renderer.events_of(event));
    }
    out.extend(renderer.closing(answer));
    out
}

/// One call being streamed: its output index, id, name and arguments so far.
#[derive(Debug, Clone, Default)]
struct StreamedCall {
    output_index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// The Responses wire's streaming renderer ([`RenderStream`]): `response.created`, then
/// `response.in_progress` before the first item, each item's events as its deltas come, and
/// `response.completed` (or `response.incomplete`) with the whole response; every event
/// numbered by `sequence_number`.
#[derive(Debug)]
pub struct StreamRenderer {
    identity: Identity,
    /// What the opening envelope says: the answer when known, else an empty one.
    opening: Answer,
    sequence: usize,
    in_progress: bool,
    output_index: usize,
    done_items: Vec<Value>,
    text: String,
    reasoning: String,
    /// Each call, by its position.
    calls: Vec<StreamedCall>,
}

impl StreamRenderer {
    /// A renderer for one answer; `known` is the answer when it is known before its stream
    /// (its model and `incomplete_details` go in the opening envelope).
    pub fn new(identity: &Identity, known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            identity: identity.clone(),
            opening: known.cloned().unwrap_or_else(Answer::empty),
            sequence: 0,
            in_progress: false,
            output_index: 0,
            done_items: Vec::new(),
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
        }
    }

    fn push(&mut self, out: &mut Vec<SseEvent>, name: &'static str, mut data: Value) {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(SseEvent { name, data });
    }

    /// `response.created`.
    fn opening(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let created = envelope(&self.identity, &self.opening, "in_progress", Vec::new());
        self.push(&mut out, "response.created", json!({"response": created}));
        out
    }

    /// `response.in_progress`, once, before anything the answer holds.
    fn in_progress(&mut self, out: &mut Vec<SseEvent>) {
        if !self.in_progress {
            self.in_progress = true;
            let created = envelope(&self.identity, &self.opening, "in_progress", Vec::new());
            self.push(out, "response.in_progress", json!({"response": created}));
        }
    }

    /// The events of one delta.
    fn events_of(&mut self, event: &Event) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.in_progress(&mut out);
        let identity = self.identity.clone();
        let message_id = format!("msg_{}", identity.id);
        let reasoning_id = format!("rs_{}", identity.id);
        let output_index = self.output_index;
        match event {
            Event::ThinkingStart => {
                self.reasoning.clear();
                self.push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index,
                    "item": {"id": reasoning_id, "type": "reasoning", "summary": []}}),
                );
                self.push(
                    &mut out,
                    "response.reasoning_summary_part.added",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                );
            }
            Event::ThinkingDelta { delta } => {
                self.reasoning.push_str(delta);
                self.push(
                    &mut out,
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "delta": delta}),
                );
            }
            Event::ThinkingEnd => {
                let reasoning = self.reasoning.clone();
                let part = json!({"type": "summary_text", "text": reasoning});
                self.push(
                    &mut out,
                    "response.reasoning_summary_text.done",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "text": reasoning}),
                );
                self.push(
                    &mut out,
                    "response.reasoning_summary_part.done",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "part": part}),
                );
                let item = json!({"id": reasoning_id, "type": "reasoning", "summary": [part]});
                self.push(
                    &mut out,
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                );
                self.done_items.push(item);
                self.output_index += 1;
            }
            Event::TextStart => {
                self.text.clear();
                self.push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index,
                    "item": message_item(&identity, "", "in_progress")}),
                );
                self.push(
                    &mut out,
                    "response.content_part.added",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
            }
            Event::TextDelta { delta } => {
                self.text.push_str(delta);
                self.push(
                    &mut out,
                    "response.output_text.delta",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0, "delta": delta,
                    "logprobs": []}),
                );
            }
            Event::TextEnd => {
                let text = self.text.clone();
                self.push(
                    &mut out,
                    "response.output_text.done",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0, "text": text,
                    "logprobs": []}),
                );
                self.push(
                    &mut out,
                    "response.content_part.done",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": text, "annotations": []}}),
                );
                let item = message_item(&identity, &text, "completed");
                self.push(
                    &mut out,
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                );
                self.done_items.push(item);
                self.output_index += 1;
            }
            Event::ToolcallStart { index, id, name } => {
                let position = *index as usize;
                if self.calls.len() <= position {
                    self.calls.resize(position + 1, StreamedCall::default());
                }
                self.calls[position] = StreamedCall {
                    output_index,
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                };
                self.output_index += 1;
                self.push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index,
                    "item": call_item(&identity, position, id, name, "", "in_progress")}),
                );
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = self.calls.get_mut(*index as usize) {
                    call.arguments.push_str(delta);
                    let item_id = format!("fc_{}_{index}", identity.id);
                    let at = call.output_index;
                    self.push(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": at, "delta": delta}),
                    );
                }
            }
            Event::ToolcallEnd { index } => {
                if let Some(call) = self.calls.get(*index as usize).cloned() {
                    let position = *index as usize;
                    let item_id = format!("fc_{}_{position}", identity.id);
                    let at = call.output_index;
                    self.push(
                        &mut out,
                        "response.function_call_arguments.done",
                        json!({"item_id": item_id, "output_index": at, "arguments": call.arguments}),
                    );
                    let item = call_item(
                        &identity,
                        position,
                        &call.id,
                        &call.name,
                        &call.arguments,
                        "completed",
                    );
                    self.push(
                        &mut out,
                        "response.output_item.done",
                        json!({"output_index": at, "item": item}),
                    );
                    self.done_items.push(item);
                }
            }
        }
        out
    }

    /// `response.completed` (or `response.incomplete`) with the whole response.
    fn closing(&mut self, answer: &Answer) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.in_progress(&mut out);
        let status = final_status(answer);
        let name = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let done_items = std::mem::take(&mut self.done_items);
        let response = envelope(&self.identity, answer, status, done_items);
        self.push(&mut out, name, json!({"response": response}));
        out
    }
}

fn sse(events: Vec<SseEvent>) -> Vec<StreamPiece> {
    events
        .iter()
        .map(|event| StreamPiece::Sse(event.frame()))
        .collect()
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        sse(self.opening())
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        sse(self.events_of(event))
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        sse(self.closing(answer))
    }

    /// The stream's `error` event, numbered after what came before it.
    fn fail(&mut self, _status: u16, message: &str, _body: &Value) -> Vec<StreamPiece> {
        let mut error = error_event(message, Some("server_error"));
        error["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        vec![StreamPiece::Sse(format!("event: error\ndata: {error}\n\n"))]
    }
}

/// A stream's `error` event payload (without its `sequence_number`, which the caller knows).
pub fn error_event(message: &str, code: Option<&str>) -> Value {
    json!({"type": "error", "code": code, "message": message, "param": null})
}
