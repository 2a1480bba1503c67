//! The Chat Completions JSON: building the request body from our [`Message`]s and tools, and
//! turning a provider's answer (whole or streamed) into the AI [`Message`] both call paths return.
//!
//! Responses are read by navigating [`Value`]s rather than through typed structs, so any field a
//! provider adds (or leaves out) is tolerated.

use serde_json::{Map, Value, json};

use crate::messages::{Message, MessageType, ToolCall};
use crate::models::{ModelError, ModelRequest};

/// The `model_provider` every message from this provider carries in `response_metadata`.
pub(super) const MODEL_PROVIDER: &str = "openai";

/// Model settings (`[[models]]` keys outside the typed ones) copied into the request body as they
/// are. Anything else in `settings` (DeerFlow keys such as `supports_vision`) is not for the wire.
const PASSTHROUGH_SETTINGS: &[&str] = &[
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
];

/// The JSON body of `POST {base}/chat/completions`.
///
/// Key order: `model`, `messages`, `tools` (only when tools are bound), `reasoning_effort` (only
/// when the run asks for one), the pass-through settings, then `stream` and `stream_options` for
/// streaming calls. Message names are sent only when the `send_message_names` setting is true
/// (see [`message_to_wire`]). `extra_body` from the settings is merged in last (LangChain's meaning of the
/// key), and when the run enables thinking, the `when_thinking_enabled` table of the settings
/// (DeerFlow's key) overlays the settings first.
pub(super) fn request_body(
    model: &str,
    request: &ModelRequest,
    settings: &Map<String, Value>,
    stream: bool,
) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let send_names = effective
        .get(SEND_MESSAGE_NAMES)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_string()));
    body.insert(
        "messages".into(),
        Value::Array(
            request
                .messages
                .iter()
                .map(|message| message_to_wire(message, send_names))
                .collect(),
        ),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(effort) = request
        .options
        .reasoning_effort
        .as_deref()
        .filter(|effort| !effort.is_empty())
    {
        body.insert("reasoning_effort".into(), Value::String(effort.to_string()));
    }

    for key in PASSTHROUGH_SETTINGS {
        if let Some(value) = effective.get(*key).filter(|value| !value.is_null()) {
            body.insert((*key).to_string(), value.clone());
        }
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(Value::Object(extra)) = effective.get("extra_body") {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    Value::Object(body)
}

/// The settings with `when_thinking_enabled` laid over them when thinking is on. `extra_body`
/// tables are merged key by key rather than replaced, so that a thinking switch does not drop
/// other extra keys.
fn effective_settings(settings: &Map<String, Value>, thinking: bool) -> Map<String, Value> {
    let mut effective = settings.clone();
    let overlay = match settings.get("when_thinking_enabled") {
        Some(Value::Object(overlay)) if thinking => overlay.clone(),
        _ => return effective,
    };
    for (key, value) in overlay {
        if let (Some(Value::Object(base)), Value::Object(extra)) = (effective.get_mut(&key), &value)
            && key == "extra_body"
        {
            base.extend(extra.clone());
            continue;
        }
        effective.insert(key, value);
    }
    effective
}

/// The model setting that makes user and assistant messages carry their `name` on the wire, as
/// LangChain's `ChatOpenAI` sends it.
pub(super) const SEND_MESSAGE_NAMES: &str = "send_message_names";

/// One of our messages as an OpenAI chat message.
///
/// - `human` → `user`. Content lists become OpenAI content parts (see [`user_content`]). The
///   message `name` is sent only with `send_names` (the `send_message_names` model setting):
///   ours is UI bookkeeping (`user-input`), several OpenAI-compatible servers reject or
///   mis-handle the field, and the model gains nothing from it; but a server that identifies
///   messages by it (a recording or replaying proxy, whose keys include the name as LangChain
///   sends it) needs it. A name outside OpenAI's `^[a-zA-Z0-9_-]{1,64}$` is never sent.
/// - `system` → `system`, with its text.
/// - `ai` → `assistant`, with its text, its `name` (as for `human`), and `tool_calls` (valid ones,
///   then invalid ones with their raw arguments, as LangChain does, so that the tool messages
///   answering them still have a call to refer to). `content` is `null` when the text is empty
///   and there are tool calls.
///   `reasoning_content` is not sent back: DeepSeek-style servers reject it in input.
/// - `tool` → `tool` with `tool_call_id` and the result text.
///
/// Only `user` messages keep content lists; other roles get the concatenated text, because
/// OpenAI accepts only text parts there and blocks from other providers (thinking, tool use)
/// would be rejected.
pub(super) fn message_to_wire(message: &Message, send_names: bool) -> Value {
    let name = message
        .name
        .as_deref()
        .filter(|name| send_names && is_openai_name(name));
    let mut wire = match message.kind {
        MessageType::Human => json!({"role": "user", "content": user_content(&message.content)}),
        MessageType::System => json!({"role": "system", "content": message.text()}),
        MessageType::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.text(),
        }),
        MessageType::Ai => {
            let mut calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| wire_tool_call(&call.id, &call.name, call.args.to_string()))
                .collect();
            calls.extend(message.invalid_tool_calls.iter().map(|call| {
                let field = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default();
                let args = match call.get("args") {
                    Some(Value::String(raw)) => raw.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                wire_tool_call(field("id"), field("name"), args)
            }));
            let text = message.text();
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            let mut wire = Map::new();
            wire.insert("role".into(), Value::String("assistant".into()));
            wire.insert("content".into(), content);
            if !calls.is_empty() {
                wire.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(wire)
        }
    };
    if let (Some(name), MessageType::Human | MessageType::Ai, Some(fields)) =
        (name, message.kind, wire.as_object_mut())
    {
        fields.insert("name".into(), Value::String(name.to_string()));
    }
    wire
}

/// OpenAI's rule for a message `name`: 1 to 64 ASCII letters, digits, `_` or `-`.
fn is_openai_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

fn wire_tool_call(id: &str, name: &str, arguments: String) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// User content: a string stays a string; a list becomes content parts. Strings and `text`
/// blocks become `{"type": "text", "text"}` (dropping block extras such as `id` or `index`);
/// other blocks (`image_url`, `input_audio`, `file`) are passed through unchanged for the
/// provider to judge; non-object, non-string items become text.
fn user_content(content: &Value) -> Value {
    match content {
        Value::Array(blocks) => Value::Array(
            blocks
                .iter()
                .map(|block| match block {
                    Value::String(text) => json!({"type": "text", "text": text}),
                    Value::Object(object)
                        if object.get("type").and_then(Value::as_str) == Some("text") =>
                    {
                        let text = object.get("text").and_then(Value::as_str).unwrap_or("");
                        json!({"type": "text", "text": text})
                    }
                    Value::Object(_) => block.clone(),
                    other => json!({"type": "text", "text": other.to_string()}),
                })
                .collect(),
        ),
        Value::Null => Value::String(String::new()),
        Value::String(_) => content.clone(),
        other => Value::String(other.to_string()),
    }
}

/// `usage_metadata` from an OpenAI `usage` object, or `None` when there is no usage object.
/// `total_tokens` falls back to input plus output when the provider leaves it out; the detail
/// counts default to 0.
pub(super) fn usage_metadata(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
    let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| count(usage.get(group).and_then(|g| g.get(key)));
    let input = count(usage.get("prompt_tokens"));
    let output = count(usage.get("completion_tokens"));
    let total = usage
        .get("total_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(input + output);
    Some(json!({
        "input_tokens": input,
        "output_tokens": output,
        "total_tokens": total,
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

/// A message id in LangChain's run form, `lc_run--<uuid4>`.
pub(super) fn new_message_id() -> String {
    format!("lc_run--{}", uuid::Uuid::new_v4())
}

/// A tool call id for providers that send none, so that the tool message answering the call
/// still has something to refer to.
pub(super) fn new_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

/// A tool call as the provider sent it, before its arguments are parsed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RawToolCall {
    /// Provider call id; empty when the provider sent none.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The arguments: normally a JSON string, but some compatible servers send an object.
    pub arguments: Value,
}

/// Splits raw calls into valid tool calls (arguments parse to a JSON object; empty arguments
/// mean `{}`) and `invalid_tool_calls` entries `{name, args: <raw string>, id, error, type}`.
pub(super) fn split_tool_calls(raw: Vec<RawToolCall>) -> (Vec<ToolCall>, Vec<Value>) {
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for call in raw {
        let id = if call.id.is_empty() {
            new_call_id()
        } else {
            call.id
        };
        let (parsed, raw_text) = match call.arguments {
            Value::Object(_) => (Ok(call.arguments.clone()), call.arguments.to_string()),
            Value::Null => (Ok(Value::Object(Map::new())), String::new()),
            Value::String(text) if text.trim().is_empty() => (Ok(Value::Object(Map::new())), text),
            Value::String(text) => {
                let parsed = match serde_json::from_str::<Value>(&text) {
                    Ok(value @ Value::Object(_)) => Ok(value),
                    Ok(_) => Err("the arguments are not a JSON object".to_string()),
                    Err(err) => Err(format!("the arguments are not valid JSON: {err}")),
                };
                (parsed, text)
            }
            other => (
                Err("the arguments are not a JSON object".to_string()),
                other.to_string(),
            ),
        };
        match parsed {
            Ok(args) => valid.push(ToolCall {
                name: call.name,
                args,
                id,
            }),
            Err(error) => invalid.push(json!({
                "name": call.name,
                "args": raw_text,
                "id": id,
                "error": error,
                "type": "invalid_tool_call",
            })),
        }
    }
    (valid, invalid)
}

/// What both call paths know at the end of an answer.
#[derive(Debug, Default)]
pub(super) struct Assembled {
    /// The answer text.
    pub text: String,
    /// Reasoning text (`reasoning_content`), empty when none.
    pub reasoning: String,
    /// A refusal, when the provider sent one.
    pub refusal: Option<String>,
    /// The tool calls, in index order.
    pub calls: Vec<RawToolCall>,
    /// `finish_reason`, when known.
    pub finish_reason: Option<String>,
    /// The model name the provider reported (falls back to the configured id).
    pub model_name: String,
    /// The raw `usage` object, when the provider sent one.
    pub usage: Option<Value>,
    /// Non-streaming extras for `response_metadata`, in order (`id`, `system_fingerprint`, …).
    pub extra_metadata: Map<String, Value>,
}

impl Assembled {
    /// The AI message: content, tool calls, `additional_kwargs` (`{}` plus `reasoning_content`
    /// and `refusal` when present), `response_metadata` (`finish_reason`, `model_name`,
    /// `model_provider`, then any extras), `usage_metadata` and a fresh `lc_run--` id.
    pub fn into_message(self) -> Message {
        let (tool_calls, invalid) = split_tool_calls(self.calls);
        let mut message = Message::ai(self.text, tool_calls);
        message.invalid_tool_calls = invalid;
        if !self.reasoning.is_empty() {
            message
                .additional_kwargs
                .insert("reasoning_content".into(), Value::String(self.reasoning));
        }
        if let Some(refusal) = self.refusal {
            message
                .additional_kwargs
                .insert("refusal".into(), Value::String(refusal));
        }
        let metadata = &mut message.response_metadata;
        metadata.insert(
            "finish_reason".into(),
            self.finish_reason.map(Value::String).unwrap_or(Value::Null),
        );
        metadata.insert("model_name".into(), Value::String(self.model_name));
        metadata.insert(
            "model_provider".into(),
            Value::String(MODEL_PROVIDER.into()),
        );
        metadata.extend(self.extra_metadata);
        message.usage_metadata = self.usage.as_ref().and_then(usage_metadata);
        message.id = Some(new_message_id());
        message
    }
}

/// The text of a `content` field in a response: a string, or (from some compatible servers) a
/// list of parts whose `text` is concatenated.
pub(super) fn response_text(content: Option<&Value>) -> String {
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

/// The provider's error message in a JSON body: `error.message`, `error` as a string, or a
/// top-level `message` or `detail`.
pub(super) fn error_body_message(body: &Value) -> Option<String> {
    let error = body.get("error");
    error
        .and_then(|error| error.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.and_then(Value::as_str))
        .or_else(|| body.get("message").and_then(Value::as_str))
        .or_else(|| body.get("detail").and_then(Value::as_str))
        .filter(|text| !text.trim().is_empty())
        .map(str::to_string)
}

/// Turns a non-streaming completion body into the AI message.
pub(super) fn parse_completion(body: &Value, model_id: &str) -> Result<Message, ModelError> {
    if !body.is_object() {
        return Err(ModelError::new(
            "APIResponseValidationError",
            "the provider's answer is not a JSON object",
        ));
    }
    let choice = match body.get("choices").and_then(Value::as_array) {
        Some(choices) if !choices.is_empty() => &choices[0],
        _ => {
            // Some servers answer 200 with an error body instead of an error status.
            if let Some(message) = error_body_message(body).filter(|_| body.get("error").is_some())
            {
                return Err(ModelError::new("APIError", message));
            }
            return Err(ModelError::new(
                "EmptyResponseError",
                "the provider returned no choices",
            ));
        }
    };
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|call| {
                    let function = call.get("function");
                    RawToolCall {
                        id: call
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        name: function
                            .and_then(|f| f.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        arguments: function
                            .and_then(|f| f.get("arguments"))
                            .cloned()
                            .unwrap_or(Value::Null),
                    }
                })
                .collect()
        })
        .unwrap_or_default();

    let mut extra_metadata = Map::new();
    for key in ["id", "system_fingerprint", "service_tier"] {
        if let Some(value) = body.get(key).filter(|value| !value.is_null()) {
            extra_metadata.insert(key.to_string(), value.clone());
        }
    }
    let usage = body.get("usage").filter(|usage| usage.is_object()).cloned();
    if let Some(usage) = &usage {
        extra_metadata.insert("token_usage".into(), usage.clone());
    }
    if let Some(logprobs) = choice.get("logprobs").filter(|value| !value.is_null()) {
        extra_metadata.insert("logprobs".into(), logprobs.clone());
    }

    Ok(Assembled {
        text: response_text(message.get("content")),
        reasoning: text("reasoning_content").unwrap_or_default(),
        refusal: text("refusal"),
        calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        model_name: body
            .get("model")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .unwrap_or(model_id)
            .to_string(),
        usage,
        extra_metadata,
    }
    .into_message())
}
