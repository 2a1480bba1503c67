//! Reading a Converse answer: a stream's events one at a time ([`StreamAssembler`], each the
//! event's name, its `:event-type` header, and its JSON payload), or a whole answer
//! ([`parse_response`]).
//!
//! Blocks are addressed by `contentBlockIndex`. A `toolUse` block opens with
//! `contentBlockStart` (its id and name) and its input streams as JSON text in
//! `contentBlockDelta`s; text and reasoning blocks open with their first delta. A reasoning
//! block's `signature` delta is the reasoning's signature. `messageStop` carries the stop
//! reason and ends the answer (the `metadata` event with the usage follows it); a stream that
//! ends before it is [`WireError::Truncated`]. An exception message in the stream
//! (`:message-type: exception`) is [`WireError::Provider`] ([`StreamAssembler::push_exception`]).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::chat_completions::{Assembled, AssembledCall, Event, WireError, cut};

use super::finish_reason;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Reasoning,
    /// A tool call: its position among the answer's calls.
    Call(u32),
}

/// Folds a Converse stream into events and one answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    blocks: HashMap<u64, Block>,
    assembled: Assembled,
    stopped: bool,
}

impl StreamAssembler {
    /// An assembler for one answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// True once `messageStop` has arrived.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// One event's payload as text, under its `:event-type`.
    pub fn push_data(&mut self, event_type: &str, data: &str) -> Result<Vec<Event>, WireError> {
        let payload: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: cut(data, 200),
        })?;
        self.push_event(event_type, &payload)
    }

    /// An exception message of the stream (`:exception-type`, e.g. `throttlingException`, and
    /// its `{"message"}` payload): the answer failed.
    pub fn push_exception(&mut self, exception_type: &str, payload: &Value) -> WireError {
        let message = payload
            .get("message")
            .or_else(|| payload.get("Message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("the stream failed with {exception_type}"));
        WireError::Provider {
            message,
            body: json!({"error": {"type": exception_type, "message": payload.get("message")}}),
        }
    }

    fn open(&mut self, index: u64, kind: Block, events: &mut Vec<Event>) {
        if self.blocks.contains_key(&index) {
            return;
        }
        events.push(match kind {
            Block::Text => Event::TextStart,
            _ => Event::ThinkingStart,
        });
        self.blocks.insert(index, kind);
    }

    fn start_call(&mut self, index: u64, id: String, name: String, events: &mut Vec<Event>) -> u32 {
        let position = self.assembled.calls.len() as u32;
        events.push(Event::ToolcallStart {
            index: position,
            id: id.clone(),
            name: name.clone(),
        });
        self.assembled.calls.push(AssembledCall {
            id,
            name,
            arguments: String::new(),
        });
        self.blocks.insert(index, Block::Call(position));
        position
    }

    /// One parsed event payload under its `:event-type`.
    pub fn push_event(
        &mut self,
        event_type: &str,
        payload: &Value,
    ) -> Result<Vec<Event>, WireError> {
        if !payload.is_object() {
            return Err(WireError::ChunkNotObject);
        }
        let text =
            |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
        let index = payload
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut events = Vec::new();
        match event_type {
            "contentBlockStart" => {
                if let Some(tool) = payload.get("start").and_then(|s| s.get("toolUse")) {
                    let id = text(tool.get("toolUseId"));
                    let name = text(tool.get("name"));
                    self.start_call(index, id, name, &mut events);
                }
            }
            "contentBlockDelta" => {
                let delta = payload.get("delta").cloned().unwrap_or(Value::Null);
                if let Some(fragment) = delta.get("text").and_then(Value::as_str) {
                    self.open(index, Block::Text, &mut events);
                    self.assembled.text.push_str(fragment);
                    events.push(Event::TextDelta {
                        delta: fragment.to_owned(),
                    });
                } else if let Some(tool) = delta.get("toolUse") {
                    let position = match self.blocks.get(&index) {
                        Some(Block::Call(position)) => *position,
                        // Input for a block that never started: a call without id or name.
                        _ => self.start_call(index, String::new(), String::new(), &mut events),
                    };
                    let fragment = text(tool.get("input"));
                    if !fragment.is_empty() {
                        self.assembled.calls[position as usize]
                            .arguments
                            .push_str(&fragment);
                        events.push(Event::ToolcallDelta {
                            index: position,
                            delta: fragment,
                        });
                    }
                } else if let Some(reasoning) = delta.get("reasoningContent") {
                    self.open(index, Block::Reasoning, &mut events);
                    if let Some(fragment) = reasoning.get("text").and_then(Value::as_str) {
                        self.assembled.reasoning.push_str(fragment);
                        events.push(Event::ThinkingDelta {
                            delta: fragment.to_owned(),
                        });
                    }
                    if let Some(signature) = reasoning.get("signature").and_then(Value::as_str) {
                        self.assembled.reasoning_signature.push_str(signature);
                    }
                }
            }
            "contentBlockStop" => match self.blocks.get(&index) {
                Some(Block::Text) => events.push(Event::TextEnd),
                Some(Block::Reasoning) => events.push(Event::ThinkingEnd),
                Some(Block::Call(position)) => events.push(Event::ToolcallEnd { index: *position }),
                None => {}
            },
            "messageStop" => {
                self.stopped = true;
                if let Some(reason) = payload.get("stopReason").and_then(Value::as_str) {
                    self.assembled.finish_reason = Some(finish_reason(reason).to_owned());
                }
            }
            "metadata" => {
                if let Some(usage) = payload.get("usage") {
                    self.assembled.usage = openai_usage(usage);
                }
            }
            // `messageStart` (the role), and event types added later.
            _ => {}
        }
        Ok(events)
    }

    /// The answer, once the stream has ended; calls without an id get
    /// [`fill_call_id`](crate::chat_completions::fill_call_id)'s.
    pub fn finish(mut self) -> Result<Assembled, WireError> {
        if !self.stopped {
            return Err(WireError::Truncated);
        }
        for (position, call) in self.assembled.calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id =
                    crate::chat_completions::fill_call_id(position, &call.name, &call.arguments);
            }
        }
        Ok(self.assembled)
    }
}

/// OpenAI's `usage` from Converse's `usage` (`inputTokens`, `outputTokens`, `totalTokens`,
/// `cacheReadInputTokens`).
pub(crate) fn openai_usage(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (count("inputTokens"), count("outputTokens"));
    Some(json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": usage.get("totalTokens").and_then(Value::as_u64).unwrap_or(input + output),
        "prompt_tokens_details": {"cached_tokens": count("cacheReadInputTokens")},
    }))
}

/// A whole `converse` answer (`{"output": {"message": {"role", "content"}}, "stopReason",
/// "usage", "metrics"}`); a body with a `message` and no `output` (Bedrock's error body) is
/// [`WireError::Provider`].
pub fn parse_response(body: &Value) -> Result<Assembled, WireError> {
    let Some(fields) = body.as_object() else {
        return Err(WireError::CompletionNotObject);
    };
    let Some(message) = fields
        .get("output")
        .and_then(|output| output.get("message"))
    else {
        if fields.contains_key("message") || fields.contains_key("Message") {
            let mut assembler = StreamAssembler::new();
            return Err(assembler.push_exception("error", body));
        }
        return Err(WireError::NoCompletionChoices);
    };
    let mut assembler = StreamAssembler::new();
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let at = |payload: Value| {
            let mut payload = payload;
            payload["contentBlockIndex"] = json!(index);
            payload
        };
        if let Some(tool) = block.get("toolUse") {
            assembler.push_event(
                "contentBlockStart",
                &at(
                    json!({"start": {"toolUse": {"toolUseId": tool.get("toolUseId"),
                    "name": tool.get("name")}}}),
                ),
            )?;
            let input = match tool.get("input") {
                Some(input @ Value::Object(_)) => input.to_string(),
                _ => "{}".to_owned(),
            };
            assembler.push_event(
                "contentBlockDelta",
                &at(json!({"delta": {"toolUse": {"input": input}}})),
            )?;
        } else if let Some(text) = block.get("text") {
            assembler.push_event("contentBlockDelta", &at(json!({"delta": {"text": text}})))?;
        } else if let Some(reasoning) = block
            .get("reasoningContent")
            .and_then(|r| r.get("reasoningText"))
        {
            assembler.push_event(
                "contentBlockDelta",
                &at(json!({"delta": {"reasoningContent": reasoning}})),
            )?;
        }
        assembler.push_event("contentBlockStop", &at(json!({})))?;
    }
    assembler.push_event(
        "messageStop",
        &json!({"stopReason": fields.get("stopReason")}),
    )?;
    if let Some(usage) = fields.get("usage") {
        assembler.push_event("metadata", &json!({"usage": usage}))?;
    }
    assembler.finish()
}
