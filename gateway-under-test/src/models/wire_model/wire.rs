//! The Chat Completions JSON: building the request body from our [`Message`]s and tools, and
//! turning a provider's answer at any of the three wires (whole or streamed), as the shared codec
//! (`model_wire`) reads it, into the AI [`Message`] both call paths return.

use model_wire::chat_completions::{Assembled, WireError, WireToolCall};
use serde_json::{Map, Value, json};

use super::Api;
use crate::messages::{Message, MessageType};
use crate::models::{ModelError, ModelRequest};

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

    copy_settings(&mut body, &effective, PASSTHROUGH_SETTINGS);
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    merge_extra_body(&mut body, &effective);
    Value::Object(body)
}

/// Copies into `body` each of `keys` the (effective) settings hold, nulls left out: the
/// settings a wire passes through unchanged.
pub(crate) fn copy_settings(
    body: &mut Map<String, Value>,
    effective: &Map<String, Value>,
    keys: &[&str],
) {
    for key in keys {
        if let Some(value) = effective.get(*key).filter(|value| !value.is_null()) {
            body.insert((*key).to_string(), value.clone());
        }
    }
}

/// Merges the settings' `extra_body` table into `body`, last, so that it overrides what the
/// wire built (LangChain's meaning of the key).
pub(crate) fn merge_extra_body(body: &mut Map<String, Value>, effective: &Map<String, Value>) {
    if let Some(Value::Object(extra)) = effective.get("extra_body") {
        body.extend(extra.clone());
    }
}

/// The settings with `when_thinking_enabled` laid over them when thinking is on. `extra_body`
/// tables are merged key by key rather than replaced, so that a thinking switch does not drop
/// other extra keys.
pub(crate) fn effective_settings(
    settings: &Map<String, Value>,
    thinking: bool,
) -> Map<String, Value> {
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
    serde_json::to_value(WireToolCall::function(id, name, &arguments)).unwrap_or(Value::Null)
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

/// A message id in LangChain's run form, `lc_run--<uuid4>` (`model_wire`'s, the one minter).
pub(super) use model_wire::chat_completions::new_run_id as new_message_id;

/// The AI message of an answer the codec read (`model_wire`'s `Assembled`), with a fresh
/// `lc_run--` id: the same message the harness's model server records for the same answer, but
/// for the id (`docs/recording-format.md` §15), whichever wire it crossed, but for
/// `response_metadata.model_provider` (`anthropic` for the Messages wire, as `ChatAnthropic` sets
/// it).
pub(super) fn message_from_assembled(api: Api, assembled: &Assembled, model_id: &str) -> Message {
    let mut dump = assembled.to_ai_message(&new_message_id(), model_id);
    if let Some(metadata) = dump
        .get_mut("response_metadata")
        .and_then(Value::as_object_mut)
    {
        metadata.insert("model_provider".into(), json!(api.model_provider()));
    }
    // The codec writes exactly the dump form `Message::from_json` reads; a failure would be a
    // codec bug, and the text alone is still the answer.
    Message::from_json(&dump).unwrap_or_else(|_| Message::ai(assembled.text.clone(), Vec::new()))
}

/// The gateway's error for an answer the codec could not read, named as the Python client
/// names it.
pub(super) fn wire_error(error: &WireError) -> ModelError {
    let mapped = ModelError::new(error.exception_name(), error.to_string());
    match error {
        WireError::Provider { .. } => mapped.reported_in_stream(),
        _ => mapped,
    }
}

/// Turns a whole (non-streamed) answer at `api` (a completion, a response object or a message)
/// into the AI message.
pub(super) fn parse_answer(api: Api, body: &Value, model_id: &str) -> Result<Message, ModelError> {
    let assembled = api.parse_answer(body).map_err(|err| wire_error(&err))?;
    Ok(message_from_assembled(api, &assembled, model_id))
}
