//! The AI message both sides of the wire exchange, in LangChain's dump form
//! (`{"content", "additional_kwargs", "response_metadata", "type": "ai", "name", "id",
//! "tool_calls", "invalid_tool_calls", "usage_metadata"}`): the gateway's messages have this
//! form, and so does every recorded answer. [`Assembled::to_ai_message`] builds it from an
//! answer read off the wire; [`Answer::from_ai_message`] reads it back for the renderer.

use serde_json::{Map, Value, json};

use super::assemble::{Assembled, AssembledCall, Event, block_events};

/// The `model_provider` every message read from this wire carries in `response_metadata`.
pub const MODEL_PROVIDER: &str = "openai";

/// The `additional_kwargs` key of a reasoning's signature ([`Assembled::reasoning_signature`]),
/// which a client sends back with the reasoning.
pub const REASONING_SIGNATURE: &str = "reasoning_signature";

impl Assembled {
    /// The AI message dump with message id `id`: content, `additional_kwargs` (`{}`, plus
    /// `reasoning_content` and `refusal` when present), `response_metadata` (`finish_reason`,
    /// `model_name` — the provider's, else `requested_model` — `model_provider`, then a whole
    /// completion's extras), the valid tool calls (arguments that parse to a JSON object; blank
    /// arguments are `{}`) and the invalid ones (`{name, args: <raw text>, id, error, type}`), as
    /// LangChain splits them, and `usage_metadata`.
    pub fn to_ai_message(&self, id: &str, requested_model: &str) -> Value {
        let mut valid = Vec::new();
        let mut invalid = Vec::new();
        for call in &self.calls {
            match parse_arguments(&call.arguments) {
                Ok(args) => valid.push(json!({"name": call.name, "args": args, "id": call.id,
                                              "type": "tool_call"})),
                Err(error) => invalid.push(json!({"name": call.name, "args": call.arguments,
                                                  "id": call.id, "error": error.to_string(),
                                                  "type": "invalid_tool_call"})),
            }
        }
        let mut kwargs = Map::new();
        if !self.reasoning.is_empty() {
            kwargs.insert("reasoning_content".into(), json!(self.reasoning));
        }
        if !self.reasoning_signature.is_empty() {
            kwargs.insert(REASONING_SIGNATURE.into(), json!(self.reasoning_signature));
        }
        if let Some(refusal) = &self.refusal {
            kwargs.insert("refusal".into(), json!(refusal));
        }
        let mut metadata = Map::new();
        metadata.insert("finish_reason".into(), json!(self.finish_reason));
        metadata.insert(
            "model_name".into(),
            json!(self.model.as_deref().unwrap_or(requested_model)),
        );
        metadata.insert("model_provider".into(), json!(MODEL_PROVIDER));
        metadata.extend(self.extra_metadata.clone());
        json!({
            "content": self.text,
            "additional_kwargs": kwargs,
            "response_metadata": metadata,
            "type": "ai",
            "name": null,
            "id": id,
            "tool_calls": valid,
            "invalid_tool_calls": invalid,
            "usage_metadata": self.usage.as_ref().and_then(usage_metadata),
        })
    }
}

/// A fresh AI message id in LangChain's run form, `lc_run--<uuid4>`: the one place such ids are
/// minted, by the gateway's providers and runtime and by the model server's recorder alike.
pub fn new_run_id() -> String {
    format!("lc_run--{}", uuid::Uuid::new_v4())
}

/// Why a call's arguments make it an invalid call; its text is the invalid call's `error`.
#[derive(Debug, thiserror::Error)]
enum ArgumentsError {
    /// JSON, but not an object.
    #[error("the arguments are not a JSON object")]
    NotAnObject,
    /// Not JSON at all.
    #[error("the arguments are not valid JSON: {0}")]
    NotJson(#[from] serde_json::Error),
}

/// A call's arguments parsed as LangChain does: blank means `{}`; anything but a JSON object is
/// an error, which makes the call an invalid one.
fn parse_arguments(arguments: &str) -> Result<Value, ArgumentsError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments)? {
        object @ Value::Object(_) => Ok(object),
        _ => Err(ArgumentsError::NotAnObject),
    }
}

/// LangChain's `usage_metadata` from OpenAI's `usage`, `None` when it is not an object.
/// `total_tokens` falls back to input plus output; the detail counts default to 0.
pub fn usage_metadata(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| count(usage.get(group).and_then(|g| g.get(key)));
    let input = count(usage.get("prompt_tokens"));
    let output = count(usage.get("completion_tokens"));
    Some(json!({
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
    }))
}

/// OpenAI's `usage` from LangChain's `usage_metadata`, `None` when it is not an object.
pub fn openai_usage(usage_metadata: &Value) -> Option<Value> {
    let usage = usage_metadata.as_object()?;
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| count(usage.get(group).and_then(|g| g.get(key)));
    let input = count(usage.get("input_tokens"));
    let output = count(usage.get("output_tokens"));
    Some(json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": usage.get("total_tokens").and_then(Value::as_u64).unwrap_or(input + output),
        "prompt_tokens_details": {
            "cached_tokens": detail("input_token_details", "cache_read"),
            "audio_tokens": detail("input_token_details", "audio"),
        },
        "completion_tokens_details": {
            "reasoning_tokens": detail("output_token_details", "reasoning"),
            "audio_tokens": detail("output_token_details", "audio"),
        },
    }))
}

/// An AI message reduced to what the wire carries, for the renderer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The text.
    pub text: String,
    /// Reasoning text, when there is any.
    pub reasoning: Option<String>,
    /// A refusal, when there is one.
    pub refusal: Option<String>,
    /// The valid tool calls, then the invalid ones (with their raw arguments), as a LangChain
    /// client sends them back.
    pub calls: Vec<AssembledCall>,
    /// The recorded finish reason, else `tool_calls` or `stop`.
    pub finish_reason: String,
    /// OpenAI's `usage`, from the message's `usage_metadata`.
    pub usage: Option<Value>,
    /// The recorded `model_name`.
    pub model: Option<String>,
}

impl Answer {
    /// The answer an AI message holds, in either of its forms: the dump or the fixture's
    /// `{"type": "ai", "data": {...}}`. A valid call's parsed `args` become compact JSON text;
    /// [`Answer::with_streamed_arguments`] puts back the text a recording streamed.
    pub fn from_ai_message(message: &Value) -> Answer {
        let fields = message_fields(message);
        let text_of = |call: &Value, key: &str| {
            call.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let list = |key: &str| {
            fields
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let mut calls: Vec<AssembledCall> = list("tool_calls")
            .iter()
            .map(|call| AssembledCall {
                id: text_of(call, "id"),
                name: text_of(call, "name"),
                arguments: match call.get("args") {
                    Some(Value::String(raw)) => raw.clone(),
                    Some(args) => args.to_string(),
                    None => "{}".to_owned(),
                },
            })
            .collect();
        calls.extend(list("invalid_tool_calls").iter().map(|call| AssembledCall {
            id: text_of(call, "id"),
            name: text_of(call, "name"),
            arguments: match call.get("args") {
                Some(Value::String(raw)) => raw.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            },
        }));
        let metadata = fields.get("response_metadata");
        let metadata_text = |key: &str| {
            metadata
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let kwargs_text = |key: &str| {
            fields
                .get("additional_kwargs")
                .and_then(|kwargs| kwargs.get(key))
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let finish_reason = metadata_text("finish_reason").unwrap_or_else(|| {
            if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .to_owned()
        });
        Answer {
            text: content_text(fields.get("content")),
            reasoning: kwargs_text("reasoning_content"),
            refusal: kwargs_text("refusal"),
            calls,
            finish_reason,
            usage: fields.get("usage_metadata").and_then(openai_usage),
            model: metadata_text("model_name"),
        }
    }

    /// The answer of an empty message (no text, no call, `stop`, no usage): what a stream's
    /// opening says when the answer is not known yet.
    pub fn empty() -> Answer {
        Answer::from_ai_message(&serde_json::json!({"content": ""}))
    }

    /// The events of this answer streamed in one piece per block: reasoning, text, then each
    /// call with its arguments as one delta.
    pub fn events(&self) -> Vec<Event> {
        block_events(
            self.reasoning.as_deref().unwrap_or_default(),
            &self.text,
            &self.calls,
        )
    }

    /// The same answer with each call's arguments as the stream `events` carried them (the
    /// concatenated `toolcall_delta`s of the call with the same id, or at the same position when
    /// the stream gave it no id), so that a call recorded streamed is rendered with the text the
    /// provider sent, not a re-serialisation of its parsed arguments, whether the replay streams
    /// or not. A call the events do not carry keeps its arguments.
    pub fn with_streamed_arguments(mut self, events: &[Event]) -> Answer {
        let mut streamed: Vec<(String, String)> = Vec::new();
        for event in events {
            match event {
                Event::ToolcallStart { index, id, .. } => {
                    let slot = *index as usize;
                    if streamed.len() <= slot {
                        streamed.resize(slot + 1, (String::new(), String::new()));
                    }
                    streamed[slot].0 = id.clone();
                }
                Event::ToolcallDelta { index, delta } => {
                    if let Some(call) = streamed.get_mut(*index as usize) {
                        call.1.push_str(delta);
                    }
                }
                _ => {}
            }
        }
        for (position, call) in self.calls.iter_mut().enumerate() {
            let by_id = streamed
                .iter()
                .find(|(id, _)| !id.is_empty() && *id == call.id);
            let by_position = streamed.get(position).filter(|(id, _)| id.is_empty());
            if let Some((_, arguments)) = by_id.or(by_position) {
                call.arguments = arguments.clone();
            }
        }
        self
    }
}

/// The fields of an AI message, from either of its forms: the dump `{"content", ...}` or the
/// fixture's `{"type": "ai", "data": {...}}`.
pub fn message_fields(message: &Value) -> Map<String, Value> {
    let object = message.as_object().cloned().unwrap_or_default();
    match object.get("data") {
        Some(Value::Object(data)) if !object.contains_key("content") => data.clone(),
        _ => object,
    }
}

/// The text of a message's `content`: a string, or the `text` of its parts, concatenated.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect(),
        _ => String::new(),
    }
}
