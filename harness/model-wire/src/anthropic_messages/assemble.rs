//! Reading an Anthropic Messages answer: the stream's events one `data:` payload at a time
//! ([`StreamAssembler`]) or a whole message ([`parse_message`]).
//!
//! Content blocks are addressed by Anthropic's `index`; a `tool_use` block is the next call of
//! the answer. Its `input` on `content_block_start` is `{}` when the arguments stream as
//! `input_json_delta`s; a non-empty `input` there is taken as the whole arguments. The usage of
//! `message_start` (input tokens) and `message_delta` (output tokens) together are the answer's.
//! An `error` event is [`WireError::Provider`]; a stream that ends before `message_stop` is
//! [`WireError::Truncated`].

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::chat_completions::{Assembled, AssembledCall, Event, WireError, fill_call_id};

use super::finish_reason;

/// What an open content block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    /// A tool call: its position among the answer's calls.
    Call(u32),
    /// A block kind this codec does not read (`redacted_thinking`, server tools).
    Other,
}

/// Folds a Messages stream into events and one answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    blocks: HashMap<u64, Block>,
    assembled: Assembled,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stopped: bool,
}

impl StreamAssembler {
    /// An assembler for one answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// True once `message_stop` has arrived: the answer is over, and the caller reads no more.
    pub fn ended(&self) -> bool {
        self.stopped
    }

    /// One `data:` payload (the event's name is also its `type` field, so the name is not
    /// needed).
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Event>, WireError> {
        let payload: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: crate::chat_completions::cut(data, 200),
        })?;
        self.push_event(&payload)
    }

    /// One parsed event.
    pub fn push_event(&mut self, event: &Value) -> Result<Vec<Event>, WireError> {
        let Some(fields) = event.as_object() else {
            return Err(WireError::ChunkNotObject);
        };
        let text =
            |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
        let index = fields.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut events = Vec::new();
        match fields.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                let message = fields.get("message");
                self.assembled.model = message
                    .and_then(|m| m.get("model"))
                    .and_then(Value::as_str)
                    .filter(|model| !model.is_empty())
                    .map(str::to_owned);
                self.read_usage(message.and_then(|m| m.get("usage")));
            }
            "content_block_start" => {
                let block = fields.get("content_block").cloned().unwrap_or(Value::Null);
                let kind = match block.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        events.push(Event::TextStart);
                        let initial = text(block.get("text"));
                        if !initial.is_empty() {
                            self.assembled.text.push_str(&initial);
                            events.push(Event::TextDelta { delta: initial });
                        }
                        Block::Text
                    }
                    "thinking" => {
                        events.push(Event::ThinkingStart);
                        // A whole message's block carries its signature; a stream's arrives as
                        // a `signature_delta`.
                        self.assembled
                            .reasoning_signature
                            .push_str(&text(block.get("signature")));
                        Block::Thinking
                    }
                    "tool_use" => {
                        let position = self.assembled.calls.len() as u32;
                        let name = text(block.get("name"));
                        let input = match block.get("input") {
                            Some(Value::Object(input)) if !input.is_empty() => {
                                Value::Object(input.clone()).to_string()
                            }
                            _ => String::new(),
                        };
                        let id = match text(block.get("id")) {
                            id if id.is_empty() => fill_call_id(position as usize, &name, &input),
                            id => id,
                        };
                        events.push(Event::ToolcallStart {
                            index: position,
                            id: id.clone(),
                            name: name.clone(),
                        });
                        if !input.is_empty() {
                            events.push(Event::ToolcallDelta {
                                index: position,
                                delta: input.clone(),
                            });
                        }
                        self.assembled.calls.push(AssembledCall {
                            id,
                            name,
                            arguments: input,
                        });
                        Block::Call(position)
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, kind);
            }
            "content_block_delta" => {
                let delta = fields.get("delta").cloned().unwrap_or(Value::Null);
                let block = self.blocks.get(&index).copied();
                match (delta.get("type").and_then(Value::as_str), block) {
                    (Some("text_delta"), Some(Block::Text)) => {
                        let fragment = text(delta.get("text"));
                        self.assembled.text.push_str(&fragment);
                        events.push(Event::TextDelta { delta: fragment });
                    }
                    (Some("thinking_delta"), Some(Block::Thinking)) => {
                        let fragment = text(delta.get("thinking"));
                        self.assembled.reasoning.push_str(&fragment);
                        events.push(Event::ThinkingDelta { delta: fragment });
                    }
                    (Some("input_json_delta"), Some(Block::Call(position))) => {
                        let fragment = text(delta.get("partial_json"));
                        if !fragment.is_empty() {
                            self.assembled.calls[position as usize]
                                .arguments
                                .push_str(&fragment);
                            events.push(Event::ToolcallDelta {
                                index: position,
                                delta: fragment,
                            });
                        }
                    }
                    (Some("signature_delta"), Some(Block::Thinking)) => {
                        self.assembled
                            .reasoning_signature
                            .push_str(&text(delta.get("signature")));
                    }
                    // Deltas of blocks this codec does not read.
                    _ => {}
                }
            }
            "content_block_stop" => match self.blocks.get(&index) {
                Some(Block::Text) => events.push(Event::TextEnd),
                Some(Block::Thinking) => events.push(Event::ThinkingEnd),
                Some(Block::Call(position)) => events.push(Event::ToolcallEnd { index: *position }),
                Some(Block::Other) | None => {}
            },
            "message_delta" => {
                if let Some(reason) = fields
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.assembled.finish_reason = Some(finish_reason(reason).to_owned());
                }
                self.read_usage(fields.get("usage"));
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(WireError::from_error_event(&event.to_string())),
            // `ping`, and event types added later (the API reference says to ignore them).
            _ => {}
        }
        Ok(events)
    }

    fn read_usage(&mut self, usage: Option<&Value>) {
        let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
        if let Some(input) = count("input_tokens") {
            self.input_tokens = Some(input);
        }
        if let Some(output) = count("output_tokens") {
            self.output_tokens = Some(output);
        }
    }

    /// What the stream has said of its answer so far: the model and the usage `message_start`
    /// carried (a live relay's opening says them before the answer is over).
    pub fn so_far(&self) -> (Option<String>, Option<Value>) {
        (
            self.assembled.model.clone(),
            openai_usage(self.input_tokens, self.output_tokens),
        )
    }

    /// The answer, once the stream has ended.
    pub fn finish(mut self) -> Result<Assembled, WireError> {
        if !self.stopped {
            return Err(WireError::Truncated);
        }
        self.assembled.usage = openai_usage(self.input_tokens, self.output_tokens);
        Ok(self.assembled)
    }
}

/// OpenAI's `usage` from Anthropic's token counts, `None` when the answer carried none.
fn openai_usage(input: Option<u64>, output: Option<u64>) -> Option<Value> {
    if input.is_none() && output.is_none() {
        return None;
    }
    let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
    Some(json!({"prompt_tokens": input, "completion_tokens": output,
                "total_tokens": input + output}))
}

/// A whole (non-streamed) message: `{"type": "message", "content": [blocks], "stop_reason",
/// "usage"}`; an `{"type": "error"}` body is [`WireError::Provider`].
pub fn parse_message(body: &Value) -> Result<Assembled, WireError> {
    let Some(fields) = body.as_object() else {
        return Err(WireError::CompletionNotObject);
    };
    if fields.get("type").and_then(Value::as_str) == Some("error") || fields.contains_key("error") {
        return Err(WireError::from_error_event(&body.to_string()));
    }
    let mut assembler = StreamAssembler::new();
    assembler.push_event(&json!({"type": "message_start", "message": body}))?;
    let blocks = fields
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let mut start = block.clone();
        if block.get("type").and_then(Value::as_str) == Some("thinking") {
            start["thinking"] = json!("");
        }
        assembler.push_event(
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        )?;
        if let Some(thinking) = block.get("thinking").and_then(Value::as_str) {
            assembler.push_event(&json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": thinking}}))?;
        }
        assembler.push_event(&json!({"type": "content_block_stop", "index": index}))?;
    }
    assembler.push_event(&json!({"type": "message_delta",
        "delta": {"stop_reason": fields.get("stop_reason")}, "usage": fields.get("usage")}))?;
    assembler.push_event(&json!({"type": "message_stop"}))?;
    assembler.finish()
}
