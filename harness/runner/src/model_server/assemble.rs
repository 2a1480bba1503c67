//! An upstream's answer as recording events: streamed `chat.completion.chunk`s one by one, or a
//! whole `chat.completion`, become the recording format's events, ending with `done` and the
//! assembled AI message in LangChain's dump form (the form a fixture's `output` holds), so the
//! fixture built from a proxy's recording replays in-process as well as over the wire.
//!
//! Event order: `start` on the first chunk; a text or thinking block opens on its first non-empty
//! fragment and closes when the other kind opens, a tool call starts, or the choice finishes;
//! `toolcall_start` on a call's first chunk, `toolcall_delta` per non-empty argument fragment
//! (split wherever the upstream split it, mid-JSON included), `toolcall_end` for every call when
//! the choice finishes; `done` at the end of the stream.

use serde_json::{Map, Value, json};

/// The `model_provider` of every assembled message.
const MODEL_PROVIDER: &str = "openai";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Text,
    Thinking,
}

#[derive(Debug)]
struct PartialCall {
    provider_index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Folds an upstream's chunks into recording events and, at the end, the AI message.
#[derive(Debug)]
pub(crate) struct ChunkAssembler {
    requested_model: String,
    model: Option<String>,
    started: bool,
    open: Block,
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    closed: bool,
}

impl ChunkAssembler {
    /// An assembler for a request that named `requested_model` (the fallback `model_name`).
    pub(crate) fn new(requested_model: &str) -> ChunkAssembler {
        ChunkAssembler {
            requested_model: requested_model.to_owned(),
            model: None,
            started: false,
            open: Block::None,
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
            closed: false,
        }
    }

    /// The events one chunk causes. A chunk with an `error` object is an `error` event.
    pub(crate) fn on_chunk(&mut self, chunk: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(json!({"type": "start"}));
        }
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .unwrap_or("the upstream reported an error mid-stream");
            out.push(json!({"type": "error", "message": message, "error_type": "APIError"}));
            return out;
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model = Some(model.to_owned()).filter(|m| !m.is_empty());
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(usage.clone());
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta") {
                self.on_delta(delta, &mut out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
                self.close(&mut out);
            }
        }
        out
    }

    fn on_delta(&mut self, delta: &Value, out: &mut Vec<Value>) {
        let fragment = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        if let Some(reasoning) = fragment("reasoning_content") {
            self.open_block(Block::Thinking, out);
            self.reasoning.push_str(reasoning);
            out.push(json!({"type": "thinking_delta", "delta": reasoning}));
        }
        if let Some(text) = fragment("content") {
            self.open_block(Block::Text, out);
            self.text.push_str(text);
            out.push(json!({"type": "text_delta", "delta": text}));
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let provider_index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let function = call.get("function");
            let text = |value: Option<&Value>| {
                value.and_then(Value::as_str).unwrap_or_default().to_owned()
            };
            let slot = match self
                .calls
                .iter()
                .position(|c| c.provider_index == provider_index)
            {
                Some(slot) => slot,
                None => {
                    self.open_block(Block::None, out);
                    self.calls.push(PartialCall {
                        provider_index,
                        id: text(call.get("id")),
                        name: text(function.and_then(|f| f.get("name"))),
                        arguments: String::new(),
                    });
                    let slot = self.calls.len() - 1;
                    let started = &self.calls[slot];
                    out.push(json!({"type": "toolcall_start", "index": slot,
                                    "id": started.id, "name": started.name}));
                    slot
                }
            };
            let arguments = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !arguments.is_empty() {
                self.calls[slot].arguments.push_str(arguments);
                out.push(json!({"type": "toolcall_delta", "index": slot, "delta": arguments}));
            }
        }
    }

    /// Closes the open text or thinking block and opens `block`.
    fn open_block(&mut self, block: Block, out: &mut Vec<Value>) {
        if self.open == block {
            return;
        }
        match self.open {
            Block::Text => out.push(json!({"type": "text_end"})),
            Block::Thinking => out.push(json!({"type": "thinking_end"})),
            Block::None => {}
        }
        match block {
            Block::Text => out.push(json!({"type": "text_start"})),
            Block::Thinking => out.push(json!({"type": "thinking_start"})),
            Block::None => {}
        }
        self.open = block;
    }

    /// Closes the open block and ends every tool call, once.
    fn close(&mut self, out: &mut Vec<Value>) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.open_block(Block::None, out);
        for index in 0..self.calls.len() {
            out.push(json!({"type": "toolcall_end", "index": index}));
        }
    }

    /// The last events: closing ones when the upstream never finished the choice, then `done`
    /// with the assembled message.
    pub(crate) fn finish(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            out.push(json!({"type": "start"}));
        }
        self.close(&mut out);
        out.push(json!({"type": "done", "message": self.into_message()}));
        out
    }

    /// LangChain's dump of the AI message: content, additional_kwargs (`reasoning_content` when
    /// there was any), response_metadata (`finish_reason`, `model_name`, `model_provider`), type,
    /// name, a fresh `lc_run--` id, tool calls with parsed arguments (arguments that do not parse
    /// to an object are `invalid_tool_calls` with the raw text), usage_metadata.
    fn into_message(self) -> Value {
        let mut valid = Vec::new();
        let mut invalid = Vec::new();
        for call in self.calls {
            match parse_arguments(&call.arguments) {
                Ok(args) => valid.push(json!({"name": call.name, "args": args, "id": call.id,
                                              "type": "tool_call"})),
                Err(error) => invalid.push(json!({"name": call.name, "args": call.arguments,
                                                  "id": call.id, "error": error,
                                                  "type": "invalid_tool_call"})),
            }
        }
        let mut kwargs = Map::new();
        if !self.reasoning.is_empty() {
            kwargs.insert("reasoning_content".into(), Value::String(self.reasoning));
        }
        json!({
            "content": self.text,
            "additional_kwargs": kwargs,
            "response_metadata": {
                "finish_reason": self.finish_reason,
                "model_name": self.model.unwrap_or(self.requested_model),
                "model_provider": MODEL_PROVIDER,
            },
            "type": "ai",
            "name": null,
            "id": format!("lc_run--{}", uuid::Uuid::new_v4()),
            "tool_calls": valid,
            "invalid_tool_calls": invalid,
            "usage_metadata": self.usage.as_ref().map(usage_metadata),
        })
    }
}

/// A call's arguments parsed as LangChain does: blank means `{}`; anything but a JSON object is
/// an error.
fn parse_arguments(arguments: &str) -> Result<Value, String> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(_) => Err("the arguments are not a JSON object".to_owned()),
        Err(err) => Err(format!("the arguments are not valid JSON: {err}")),
    }
}

/// LangChain's `usage_metadata` from OpenAI's `usage`.
fn usage_metadata(usage: &Value) -> Value {
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| count(usage.get(group).and_then(|g| g.get(key)));
    let input = count(usage.get("prompt_tokens"));
    let output = count(usage.get("completion_tokens"));
    json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input + output),
        "input_token_details": {
            "audio": detail("prompt_tokens_details", "audio_tokens"),
            "cache_read": detail("prompt_tokens_details", "cached_tokens"),
        },
        "output_token_details": {
            "audio": detail("completion_tokens_details", "audio_tokens"),
            "reasoning": detail("completion_tokens_details", "reasoning_tokens"),
        },
    })
}

/// The events of a whole `chat.completion`: what a stream of it in one piece would give.
pub(crate) fn events_from_completion(body: &Value, requested_model: &str) -> Vec<Value> {
    let mut assembler = ChunkAssembler::new(requested_model);
    let mut events = Vec::new();
    let Some(choice) = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        events.extend(assembler.on_chunk(&json!({})));
        let message = crate::model_server::answer::error_message_of(body)
            .unwrap_or_else(|| "the upstream returned no choices".to_owned());
        events.push(json!({"type": "error", "message": message, "error_type": "APIError"}));
        return events;
    };
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let calls: Vec<Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, call)| {
            let mut call = call.clone();
            if let Some(fields) = call.as_object_mut() {
                fields.insert("index".into(), json!(index));
            }
            call
        })
        .collect();
    let content = match message.get("content") {
        Some(Value::Array(parts)) => Value::String(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect(),
        ),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    let chunk = json!({
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "usage": body.get("usage").cloned().unwrap_or(Value::Null),
        "choices": [{
            "index": 0,
            "delta": {
                "content": content,
                "reasoning_content": message.get("reasoning_content").cloned().unwrap_or(Value::Null),
                "tool_calls": calls,
            },
            "finish_reason": choice.get("finish_reason").cloned().unwrap_or(Value::Null),
        }],
    });
    events.extend(assembler.on_chunk(&chunk));
    events.extend(assembler.finish());
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(events: &[Value]) -> Vec<&str> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

    fn chunk(delta: Value, finish: Value) -> Value {
        json!({"model": "up-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    #[test]
    fn streamed_tool_call_arguments_split_mid_json_assemble_into_one_call() {
        let mut assembler = ChunkAssembler::new("asked");
        let mut events = Vec::new();
        for chunk in [
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"/a\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
        ] {
            events.extend(assembler.on_chunk(&chunk));
        }
        events.extend(assembler.finish());
        assert_eq!(
            types(&events),
            [
                "start",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_end",
                "done"
            ]
        );
        let message = &events.last().unwrap()["message"];
        assert_eq!(message["tool_calls"][0]["args"], json!({"path": "/a"}));
        assert_eq!(message["tool_calls"][0]["id"], "c1");
        assert_eq!(message["response_metadata"]["finish_reason"], "tool_calls");
        assert_eq!(message["response_metadata"]["model_name"], "up-model");
        assert_eq!(message["usage_metadata"]["total_tokens"], 7);
        assert!(message["id"].as_str().unwrap().starts_with("lc_run--"));
        for event in &events {
            replay_core::recording::validate_event(event).expect("a valid recording event");
        }
    }

    #[test]
    fn text_and_thinking_blocks_open_and_close() {
        let mut assembler = ChunkAssembler::new("asked");
        let mut events = Vec::new();
        for chunk in [
            chunk(json!({"reasoning_content": "hm"}), Value::Null),
            chunk(json!({"content": "Hel"}), Value::Null),
            chunk(json!({"content": "lo"}), json!("stop")),
        ] {
            events.extend(assembler.on_chunk(&chunk));
        }
        events.extend(assembler.finish());
        assert_eq!(
            types(&events),
            [
                "start",
                "thinking_start",
                "thinking_delta",
                "thinking_end",
                "text_start",
                "text_delta",
                "text_delta",
                "text_end",
                "done"
            ]
        );
        let message = &events.last().unwrap()["message"];
        assert_eq!(message["content"], "Hello");
        assert_eq!(message["additional_kwargs"]["reasoning_content"], "hm");
        assert_eq!(message["usage_metadata"], Value::Null);
    }

    #[test]
    fn a_whole_completion_gives_the_same_message_and_invalid_arguments_stay_raw() {
        let body = json!({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "bad", "arguments": "{\"x"}},
        ]}}]});
        let events = events_from_completion(&body, "asked");
        let message = &events.last().unwrap()["message"];
        assert_eq!(message["tool_calls"][0]["name"], "ls");
        assert_eq!(message["invalid_tool_calls"][0]["args"], "{\"x");
        let no_choices = events_from_completion(&json!({"error": {"message": "nope"}}), "m");
        assert_eq!(types(&no_choices), ["start", "error"]);
        assert_eq!(no_choices[1]["message"], "nope");
    }
}
