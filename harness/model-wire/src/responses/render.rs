//! Writing an answer at the Responses wire: one response object ([`response`]) and the stream's
//! events ([`stream_events`]: `response.created`, `response.in_progress`, per output item
//! `response.output_item.added`, its part and delta events and `response.output_item.done`,
//! then `response.completed` with the whole response), numbered by `sequence_number`, so that
//! [`StreamAssembler`](super::StreamAssembler) and the `openai` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};

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
/// empty, the answer's own [`Answer::events`]).
pub fn stream_events(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<SseEvent> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut out: Vec<SseEvent> = Vec::new();
    let push = |out: &mut Vec<SseEvent>, name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(out.len());
        out.push(SseEvent { name, data });
    };
    let created = envelope(identity, answer, "in_progress", Vec::new());
    push(&mut out, "response.created", json!({"response": created}));
    push(
        &mut out,
        "response.in_progress",
        json!({"response": created}),
    );
    let mut output_index = 0usize;
    let mut done_items: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut reasoning = String::new();
    // Each call's output index and arguments so far, by its position.
    let mut calls: Vec<(usize, String, String, String)> = Vec::new();
    let message_id = format!("msg_{}", identity.id);
    let reasoning_id = format!("rs_{}", identity.id);
    for event in events {
        match event {
            Event::ThinkingStart => {
                reasoning.clear();
                push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index,
                    "item": {"id": reasoning_id, "type": "reasoning", "summary": []}}),
                );
                push(
                    &mut out,
                    "response.reasoning_summary_part.added",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                );
            }
            Event::ThinkingDelta { delta } => {
                reasoning.push_str(delta);
                push(
                    &mut out,
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "delta": delta}),
                );
            }
            Event::ThinkingEnd => {
                let part = json!({"type": "summary_text", "text": reasoning});
                push(
                    &mut out,
                    "response.reasoning_summary_text.done",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "text": reasoning}),
                );
                push(
                    &mut out,
                    "response.reasoning_summary_part.done",
                    json!({"item_id": reasoning_id,
                    "output_index": output_index, "summary_index": 0, "part": part}),
                );
                let item = json!({"id": reasoning_id, "type": "reasoning", "summary": [part]});
                push(
                    &mut out,
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                );
                done_items.push(item);
                output_index += 1;
            }
            Event::TextStart => {
                text.clear();
                push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": output_index,
                    "item": message_item(identity, "", "in_progress")}),
                );
                push(
                    &mut out,
                    "response.content_part.added",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
            }
            Event::TextDelta { delta } => {
                text.push_str(delta);
                push(
                    &mut out,
                    "response.output_text.delta",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0, "delta": delta,
                    "logprobs": []}),
                );
            }
            Event::TextEnd => {
                push(
                    &mut out,
                    "response.output_text.done",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0, "text": text,
                    "logprobs": []}),
                );
                push(
                    &mut out,
                    "response.content_part.done",
                    json!({"item_id": message_id,
                    "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": text, "annotations": []}}),
                );
                let item = message_item(identity, &text, "completed");
                push(
                    &mut out,
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                );
                done_items.push(item);
                output_index += 1;
            }
            Event::ToolcallStart { index, id, name } => {
                let position = *index as usize;
                if calls.len() <= position {
                    calls.resize(
                        position + 1,
                        (0, String::new(), String::new(), String::new()),
                    );
                }
                calls[position] = (output_index, id.clone(), name.clone(), String::new());
                output_index += 1;
                push(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": calls[position].0,
                    "item": call_item(identity, position, id, name, "", "in_progress")}),
                );
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = calls.get_mut(*index as usize) {
                    call.3.push_str(delta);
                    let item_id = format!("fc_{}_{index}", identity.id);
                    let at = call.0;
                    push(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({"item_id": item_id, "output_index": at, "delta": delta}),
                    );
                }
            }
            Event::ToolcallEnd { index } => {
                if let Some((at, id, name, arguments)) = calls.get(*index as usize).cloned() {
                    let position = *index as usize;
                    let item_id = format!("fc_{}_{position}", identity.id);
                    push(
                        &mut out,
                        "response.function_call_arguments.done",
                        json!({"item_id": item_id, "output_index": at, "arguments": arguments}),
                    );
                    let item = call_item(identity, position, &id, &name, &arguments, "completed");
                    push(
                        &mut out,
                        "response.output_item.done",
                        json!({"output_index": at, "item": item}),
                    );
                    done_items.push(item);
                }
            }
        }
    }
    let status = final_status(answer);
    let name = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    push(
        &mut out,
        name,
        json!({"response": envelope(identity, answer, status, done_items)}),
    );
    out
}

/// A stream's `error` event payload (without its `sequence_number`, which the caller knows).
pub fn error_event(message: &str, code: Option<&str>) -> Value {
    json!({"type": "error", "code": code, "message": message, "param": null})
}
