//! Reading a Responses answer: the stream's events ([`StreamAssembler`]) or a whole response
//! object ([`parse_response`]).
//!
//! Items are addressed by their `id` (`item_id` on deltas); a `function_call` item is the next
//! call of the answer, opened on `response.output_item.added`, its arguments from
//! `response.function_call_arguments.delta`s (or, when none came, the `arguments` of
//! `response.output_item.done`). The text block opens on the first text delta and closes with
//! its message item. `response.completed` ends the answer (`stop`, or `tool_calls` when it
//! called tools), `response.incomplete` ends it with `length`; `response.failed` and `error`
//! are [`WireError::Provider`]; a stream that ends before either is [`WireError::Truncated`].

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::chat_completions::{Assembled, AssembledCall, Event, WireError, cut, fill_call_id};

/// What an output item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Message { text_open: bool },
    Reasoning { open: bool },
    Call(u32),
    Other,
}

/// Folds a Responses stream into events and one answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    items: HashMap<String, Item>,
    /// Item ids by `output_index`, for deltas that name only the index.
    by_index: HashMap<u64, String>,
    /// Calls that received argument deltas.
    streamed: Vec<bool>,
    assembled: Assembled,
    ended: bool,
}

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl StreamAssembler {
    /// An assembler for one answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// True once `response.completed` or `response.incomplete` has arrived: the answer is over,
    /// and the caller reads no more.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// One `data:` payload.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Event>, WireError> {
        let payload: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: cut(data, 200),
        })?;
        self.push_event(&payload)
    }

    fn item_id(&self, fields: &serde_json::Map<String, Value>) -> String {
        match fields.get("item_id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => fields
                .get("output_index")
                .and_then(Value::as_u64)
                .and_then(|index| self.by_index.get(&index).cloned())
                .unwrap_or_default(),
        }
    }

    /// One parsed event.
    pub fn push_event(&mut self, event: &Value) -> Result<Vec<Event>, WireError> {
        let Some(fields) = event.as_object() else {
            return Err(WireError::ChunkNotObject);
        };
        let mut events = Vec::new();
        match fields.get("type").and_then(Value::as_str).unwrap_or("") {
            "response.created" | "response.in_progress" => {
                if let Some(model) = fields
                    .get("response")
                    .and_then(|r| r.get("model"))
                    .and_then(Value::as_str)
                    .filter(|model| !model.is_empty())
                {
                    self.assembled.model = Some(model.to_owned());
                }
            }
            "response.output_item.added" => {
                let item = fields.get("item").cloned().unwrap_or(Value::Null);
                let id = text(item.get("id"));
                if let Some(index) = fields.get("output_index").and_then(Value::as_u64) {
                    self.by_index.insert(index, id.clone());
                }
                let kind = match item.get("type").and_then(Value::as_str).unwrap_or("") {
                    "message" => Item::Message { text_open: false },
                    "reasoning" => Item::Reasoning { open: false },
                    "function_call" => {
                        let position = self.assembled.calls.len() as u32;
                        let name = text(item.get("name"));
                        let call_id = match text(item.get("call_id")) {
                            call_id if call_id.is_empty() => {
                                fill_call_id(position as usize, &name, "")
                            }
                            call_id => call_id,
                        };
                        events.push(Event::ToolcallStart {
                            index: position,
                            id: call_id.clone(),
                            name: name.clone(),
                        });
                        self.assembled.calls.push(AssembledCall {
                            id: call_id,
                            name,
                            arguments: String::new(),
                        });
                        self.streamed.push(false);
                        Item::Call(position)
                    }
                    _ => Item::Other,
                };
                self.items.insert(id, kind);
            }
            "response.output_text.delta" => {
                let id = self.item_id(fields);
                let fragment = text(fields.get("delta"));
                if let Some(Item::Message { text_open }) = self.items.get_mut(&id) {
                    if !*text_open {
                        *text_open = true;
                        events.push(Event::TextStart);
                    }
                    self.assembled.text.push_str(&fragment);
                    events.push(Event::TextDelta { delta: fragment });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let id = self.item_id(fields);
                let fragment = text(fields.get("delta"));
                if let Some(Item::Reasoning { open }) = self.items.get_mut(&id) {
                    if !*open {
                        *open = true;
                        events.push(Event::ThinkingStart);
                    }
                    self.assembled.reasoning.push_str(&fragment);
                    events.push(Event::ThinkingDelta { delta: fragment });
                }
            }
            "response.function_call_arguments.delta" => {
                let id = self.item_id(fields);
                let fragment = text(fields.get("delta"));
                if let Some(Item::Call(position)) = self.items.get(&id).copied()
                    && !fragment.is_empty()
                {
                    self.streamed[position as usize] = true;
                    self.assembled.calls[position as usize]
                        .arguments
                        .push_str(&fragment);
                    events.push(Event::ToolcallDelta {
                        index: position,
                        delta: fragment,
                    });
                }
            }
            "response.output_item.done" => {
                let item = fields.get("item").cloned().unwrap_or(Value::Null);
                let id = text(item.get("id"));
                match self.items.get(&id).copied() {
                    Some(Item::Message { text_open: true }) => events.push(Event::TextEnd),
                    Some(Item::Reasoning { open: true }) => events.push(Event::ThinkingEnd),
                    Some(Item::Call(position)) => {
                        let arguments = text(item.get("arguments"));
                        if !self.streamed[position as usize] && !arguments.is_empty() {
                            self.assembled.calls[position as usize].arguments = arguments.clone();
                            events.push(Event::ToolcallDelta {
                                index: position,
                                delta: arguments,
                            });
                        }
                        events.push(Event::ToolcallEnd { index: position });
                    }
                    _ => {}
                }
            }
            kind @ ("response.completed" | "response.incomplete") => {
                let response = fields.get("response");
                self.assembled.usage = response.and_then(|r| r.get("usage")).and_then(openai_usage);
                self.assembled.finish_reason = Some(
                    if kind == "response.incomplete" {
                        "length"
                    } else if self.assembled.calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    }
                    .to_owned(),
                );
                self.ended = true;
            }
            "response.failed" => {
                let error = fields
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .cloned()
                    .unwrap_or(Value::Null);
                return Err(WireError::from_error_event(
                    &json!({"error": error}).to_string(),
                ));
            }
            "error" => return Err(WireError::from_error_event(&event.to_string())),
            _ => {}
        }
        Ok(events)
    }

    /// What the stream has said of its answer so far: the model `response.created` named, and
    /// the usage once a response carried it (a live relay's opening says them before the answer
    /// is over).
    pub fn so_far(&self) -> (Option<String>, Option<Value>) {
        (self.assembled.model.clone(), self.assembled.usage.clone())
    }

    /// The answer, once the stream has ended.
    pub fn finish(self) -> Result<Assembled, WireError> {
        if !self.ended {
            return Err(WireError::Truncated);
        }
        Ok(self.assembled)
    }
}

/// OpenAI's Chat Completions `usage` from a response's `usage`.
fn openai_usage(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| {
        usage
            .get(group)
            .and_then(|g| g.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (input, output) = (count("input_tokens"), count("output_tokens"));
    Some(json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input + output),
        "prompt_tokens_details": {"cached_tokens": detail("input_tokens_details", "cached_tokens")},
        "completion_tokens_details": {
            "reasoning_tokens": detail("output_tokens_details", "reasoning_tokens"),
        },
    }))
}

/// A whole response object (`{"object": "response", "status", "output": [items], "usage"}`); an
/// `error` body or a `failed` response is [`WireError::Provider`].
pub fn parse_response(body: &Value) -> Result<Assembled, WireError> {
    let Some(fields) = body.as_object() else {
        return Err(WireError::CompletionNotObject);
    };
    if fields.get("error").is_some_and(|e| !e.is_null()) {
        return Err(WireError::from_error_event(&body.to_string()));
    }
    let mut assembler = StreamAssembler::new();
    assembler.push_event(&json!({"type": "response.created", "response": body}))?;
    let items = fields
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, item) in items.iter().enumerate() {
        let id = item
            .get("id")
            .cloned()
            .unwrap_or(json!(format!("item_{index}")));
        let mut item = item.clone();
        item["id"] = id.clone();
        assembler.push_event(
            &json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        )?;
        let parts = |key: &str| {
            item.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        for part in parts("content") {
            if part.get("type").and_then(Value::as_str) == Some("output_text") {
                assembler.push_event(&json!({"type": "response.output_text.delta",
                    "item_id": id, "delta": part.get("text")}))?;
            }
        }
        for part in parts("summary") {
            assembler.push_event(&json!({"type": "response.reasoning_summary_text.delta",
                "item_id": id, "delta": part.get("text")}))?;
        }
        assembler.push_event(
            &json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        )?;
    }
    let end = if fields.get("status").and_then(Value::as_str) == Some("incomplete") {
        "response.incomplete"
    } else {
        "response.completed"
    };
    assembler.push_event(&json!({"type": end, "response": body}))?;
    assembler.finish()
}
