//! Answers in OpenAI's Chat Completions format, from what a fixture or a recording holds.
//!
//! The common currency is the recording format's event list (`start`, `text_delta`,
//! `toolcall_start`/`toolcall_delta`/`toolcall_end`, `thinking_delta`, `done` with the assembled
//! AI message, `error`): a recorded call already is one, and a fixture's recorded AI message
//! becomes one with [`events_from_message`] (its text as one delta, each tool call's arguments as
//! one delta). [`ChunkRenderer`] turns events into `chat.completion.chunk` objects one by one, so
//! a recording is streamed with the chunk boundaries it was recorded with; [`completion`] turns
//! them into one `chat.completion`. [`error_body`] is OpenAI's error object.

mod pyliteral;

use serde_json::{Map, Value, json};

/// The fields of a recorded AI message, from either of its forms: the dump
/// `{"content", "tool_calls", ...}` or the fixture's `{"type": "ai", "data": {...}}`.
pub(crate) fn message_fields(message: &Value) -> Map<String, Value> {
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

/// One tool call as the wire carries it: id, function name and the arguments as JSON text.
#[derive(Debug, Clone, PartialEq)]
struct WireCall {
    id: String,
    name: String,
    arguments: String,
}

/// A recorded AI message reduced to what the wire carries.
#[derive(Debug, Clone, PartialEq)]
struct WireAnswer {
    text: String,
    reasoning: Option<String>,
    calls: Vec<WireCall>,
    finish_reason: String,
    usage: Option<Value>,
    model: Option<String>,
}

impl WireAnswer {
    /// Valid tool calls (arguments serialised compactly), then invalid ones with their raw
    /// arguments, as a LangChain client sends them back.
    fn from_message(fields: &Map<String, Value>) -> WireAnswer {
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
        let mut calls: Vec<WireCall> = list("tool_calls")
            .iter()
            .map(|call| WireCall {
                id: text_of(call, "id"),
                name: text_of(call, "name"),
                arguments: match call.get("args") {
                    Some(Value::String(raw)) => raw.clone(),
                    Some(args) => args.to_string(),
                    None => "{}".to_owned(),
                },
            })
            .collect();
        calls.extend(list("invalid_tool_calls").iter().map(|call| WireCall {
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
        let finish_reason = metadata_text("finish_reason").unwrap_or_else(|| {
            if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .to_owned()
        });
        WireAnswer {
            text: content_text(fields.get("content")),
            reasoning: fields
                .get("additional_kwargs")
                .and_then(|kwargs| kwargs.get("reasoning_content"))
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned),
            calls,
            finish_reason,
            usage: fields.get("usage_metadata").and_then(openai_usage),
            model: metadata_text("model_name"),
        }
    }
}

/// OpenAI's `usage` object from LangChain's `usage_metadata`; `None` when there is none.
fn openai_usage(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
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

/// The recording events of a recorded AI message, as a streaming provider would have sent it in
/// one piece per block: `start`, the reasoning, the text, each tool call (`toolcall_start`, its
/// arguments as one `toolcall_delta`, `toolcall_end`), then `done` with the message itself.
pub(crate) fn events_from_message(message: &Value) -> Vec<Value> {
    let fields = message_fields(message);
    let answer = WireAnswer::from_message(&fields);
    let mut events = vec![json!({"type": "start"})];
    if let Some(reasoning) = &answer.reasoning {
        events.push(json!({"type": "thinking_start"}));
        events.push(json!({"type": "thinking_delta", "delta": reasoning}));
        events.push(json!({"type": "thinking_end"}));
    }
    if !answer.text.is_empty() {
        events.push(json!({"type": "text_start"}));
        events.push(json!({"type": "text_delta", "delta": answer.text}));
        events.push(json!({"type": "text_end"}));
    }
    for (index, call) in answer.calls.iter().enumerate() {
        events.push(
            json!({"type": "toolcall_start", "index": index, "id": call.id, "name": call.name}),
        );
        events.push(json!({"type": "toolcall_delta", "index": index, "delta": call.arguments}));
        events.push(json!({"type": "toolcall_end", "index": index}));
    }
    events.push(json!({"type": "done", "message": Value::Object(fields)}));
    events
}

/// A recorded provider failure, from an `error` event (`message`, and the `error_type` and
/// `status` this harness records) or a fixture's `error` turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireError {
    /// The HTTP status to answer with.
    pub(crate) status: u16,
    /// The provider's error class name, e.g. `BadRequestError`.
    pub(crate) error_type: String,
    /// The message as the provider sent it.
    pub(crate) message: String,
}

impl WireError {
    /// The failure an `error` event records. A recorded message in an OpenAI client's form
    /// (`Error code: 400 - <detail>`) answers `<detail>` under its status, so that the client
    /// builds the same message again; without a status the call failed in transport and answers
    /// 502.
    pub(crate) fn from_event(event: &Value) -> WireError {
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
        let status = event
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|status| u16::try_from(status).ok())
            .filter(|status| (400..600).contains(status));
        WireError::new(status, text("error_type"), text("message"))
    }

    /// A failure with an optional status (502 without one); see [`WireError::from_event`].
    pub(crate) fn new(status: Option<u16>, error_type: &str, message: &str) -> WireError {
        let status_value = status.unwrap_or(502);
        let prefix = format!("Error code: {status_value} - ");
        WireError {
            status: status_value,
            error_type: if error_type.is_empty() {
                "APIError".to_owned()
            } else {
                error_type.to_owned()
            },
            message: message.strip_prefix(&prefix).unwrap_or(message).to_owned(),
        }
    }

    /// OpenAI's error body for this failure. A message that is the Python repr of a body (the
    /// OpenAI Python client's `Error code: 400 - {'error': {...}}`) answers that very body, so the
    /// client prints the recorded message again.
    pub(crate) fn body(&self) -> Value {
        pyliteral::parse(&self.message)
            .filter(Value::is_object)
            .unwrap_or_else(|| error_body(&self.message, openai_error_type(self.status), None))
    }
}

/// OpenAI's `error.type` for a status.
fn openai_error_type(status: u16) -> &'static str {
    match status {
        400 | 404 | 409 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        _ => "api_error",
    }
}

/// OpenAI's error body: `{"error": {"message", "type", "param": null, "code"}}`.
pub(crate) fn error_body(message: &str, error_type: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": error_type, "param": null, "code": code}})
}

/// The message of an error body: `error.message`, `error` as a string, or a top-level `message`
/// or `detail`.
pub(crate) fn error_message_of(body: &Value) -> Option<String> {
    let error = body.get("error");
    error
        .and_then(|error| error.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.and_then(Value::as_str))
        .or_else(|| body.get("message").and_then(Value::as_str))
        .or_else(|| body.get("detail").and_then(Value::as_str))
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
}

/// The identity every chunk or completion of one answer carries.
#[derive(Debug, Clone)]
pub(crate) struct AnswerId {
    /// `chatcmpl-…`.
    pub(crate) id: String,
    /// The model the request named (a recorded model name wins in completions).
    pub(crate) model: String,
    /// Unix seconds.
    pub(crate) created: u64,
}

/// Turns events into `chat.completion.chunk` objects, one event at a time.
#[derive(Debug)]
pub(crate) struct ChunkRenderer {
    identity: AnswerId,
    /// Tool calls seen, so a `done` that follows deltas does not repeat them.
    streamed_calls: usize,
    finished: bool,
}

/// What one event became on the stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rendered {
    /// `data:` payloads to send, in order.
    Chunks(Vec<Value>),
    /// The answer failed: send this error payload and end the stream.
    Failed(Value),
}

impl ChunkRenderer {
    /// A renderer for one answer.
    pub(crate) fn new(identity: AnswerId) -> ChunkRenderer {
        ChunkRenderer {
            identity,
            streamed_calls: 0,
            finished: false,
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({
            "id": self.identity.id,
            "object": "chat.completion.chunk",
            "created": self.identity.created,
            "model": self.identity.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
    }

    /// The chunks of one event. `done` closes the answer with the finish reason and, when the
    /// message has usage, a usage chunk; the caller then sends `[DONE]`.
    pub(crate) fn render(&mut self, event: &Value) -> Rendered {
        let field = |key: &str| event.get(key).cloned().unwrap_or(Value::Null);
        let none = Value::Null;
        let chunks = match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "start" => vec![self.chunk(json!({"role": "assistant", "content": ""}), none)],
            "text_delta" => vec![self.chunk(json!({"content": field("delta")}), none)],
            "thinking_delta" => {
                vec![self.chunk(json!({"reasoning_content": field("delta")}), none)]
            }
            "toolcall_start" => {
                self.streamed_calls += 1;
                let call = json!({"index": field("index"), "id": field("id"), "type": "function",
                                  "function": {"name": field("name"), "arguments": ""}});
                vec![self.chunk(json!({"tool_calls": [call]}), none)]
            }
            "toolcall_delta" => {
                let call =
                    json!({"index": field("index"), "function": {"arguments": field("delta")}});
                vec![self.chunk(json!({"tool_calls": [call]}), none)]
            }
            "done" => self.finish(&field("message")),
            "error" => {
                let error = WireError::from_event(event);
                return Rendered::Failed(error.body());
            }
            _ => Vec::new(),
        };
        Rendered::Chunks(chunks)
    }

    /// The closing chunks for the final message: any tool call the deltas did not carry, the
    /// finish reason, then usage.
    fn finish(&mut self, message: &Value) -> Vec<Value> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let answer = WireAnswer::from_message(&message_fields(message));
        let mut chunks = Vec::new();
        for (index, call) in answer.calls.iter().enumerate().skip(self.streamed_calls) {
            let call = json!({"index": index, "id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": call.arguments}});
            chunks.push(self.chunk(json!({"tool_calls": [call]}), Value::Null));
        }
        chunks.push(self.chunk(json!({}), json!(answer.finish_reason)));
        if let Some(usage) = answer.usage {
            chunks.push(json!({
                "id": self.identity.id,
                "object": "chat.completion.chunk",
                "created": self.identity.created,
                "model": self.identity.model,
                "choices": [],
                "usage": usage,
            }));
        }
        chunks
    }
}

/// A whole SSE body for a complete event list: every chunk as a `data:` line, then
/// `data: [DONE]` (or the error payload, which ends the stream without it).
pub(crate) fn sse_body(identity: AnswerId, events: &[Value]) -> String {
    let mut renderer = ChunkRenderer::new(identity);
    let mut body = String::new();
    for event in events {
        match renderer.render(event) {
            Rendered::Chunks(chunks) => {
                for chunk in chunks {
                    push_data(&mut body, &chunk);
                }
            }
            Rendered::Failed(error) => {
                push_data(&mut body, &error);
                return body;
            }
        }
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// Appends one `data: <json>` frame.
pub(crate) fn push_data(body: &mut String, payload: &Value) {
    body.push_str("data: ");
    body.push_str(&payload.to_string());
    body.push_str("\n\n");
}

/// What a non-streaming call answers for an event list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Completion {
    /// A `chat.completion` body.
    Message(Value),
    /// The recorded failure.
    Failed(WireError),
}

/// One `chat.completion` from an event list: the `done` message when there is one, else the
/// message the deltas spell; the first `error` event fails it.
pub(crate) fn completion(identity: &AnswerId, events: &[Value]) -> Completion {
    if let Some(error) = events
        .iter()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("error"))
    {
        return Completion::Failed(WireError::from_event(error));
    }
    let done = events
        .iter()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("done"))
        .and_then(|e| e.get("message"))
        .cloned();
    let message = done.unwrap_or_else(|| message_from_deltas(events));
    Completion::Message(completion_of_message(identity, &message))
}

/// The message the deltas of an unfinished event list spell (a call that ended without `done`).
fn message_from_deltas(events: &[Value]) -> Value {
    let mut text = String::new();
    let mut calls: Vec<(Value, Value, String)> = Vec::new();
    for event in events {
        let field = |key: &str| event.get(key).cloned().unwrap_or(Value::Null);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "text_delta" => text.push_str(field("delta").as_str().unwrap_or_default()),
            "toolcall_start" => calls.push((field("id"), field("name"), String::new())),
            "toolcall_delta" => {
                if let Some(call) = calls.last_mut() {
                    call.2.push_str(field("delta").as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
    }
    let calls: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, args)| json!({"id": id, "name": name, "args": args}))
        .collect();
    json!({"content": text, "tool_calls": calls, "type": "ai"})
}

/// A `chat.completion` carrying a recorded AI message.
pub(crate) fn completion_of_message(identity: &AnswerId, message: &Value) -> Value {
    let answer = WireAnswer::from_message(&message_fields(message));
    let mut wire = Map::new();
    wire.insert("role".into(), json!("assistant"));
    let content = if answer.text.is_empty() && !answer.calls.is_empty() {
        Value::Null
    } else {
        Value::String(answer.text)
    };
    wire.insert("content".into(), content);
    if let Some(reasoning) = answer.reasoning {
        wire.insert("reasoning_content".into(), Value::String(reasoning));
    }
    if !answer.calls.is_empty() {
        let calls: Vec<Value> = answer
            .calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect();
        wire.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut body = json!({
        "id": identity.id,
        "object": "chat.completion",
        "created": identity.created,
        "model": answer.model.unwrap_or_else(|| identity.model.clone()),
        "choices": [{"index": 0, "message": Value::Object(wire), "logprobs": null,
                     "finish_reason": answer.finish_reason}],
    });
    if let Some(usage) = answer.usage {
        body["usage"] = usage;
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> AnswerId {
        AnswerId {
            id: "chatcmpl-replay-1".into(),
            model: "requested".into(),
            created: 7,
        }
    }

    fn recorded() -> Value {
        json!({"type": "ai", "data": {
            "content": "", "type": "ai", "id": "lc_run--1",
            "additional_kwargs": {"reasoning_content": "think"},
            "response_metadata": {"finish_reason": "tool_calls", "model_name": "recorded-model"},
            "tool_calls": [{"name": "write_file", "args": {"path": "/a", "n": 1.0}, "id": "call_1", "type": "tool_call"}],
            "invalid_tool_calls": [{"name": "bad", "args": "{\"x", "id": "call_2", "error": "e", "type": "invalid_tool_call"}],
            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                               "input_token_details": {"cache_read": 1}, "output_token_details": {"reasoning": 1}},
        }})
    }

    #[test]
    fn a_recorded_message_becomes_one_completion() {
        let body = completion_of_message(&identity(), &recorded());
        assert_eq!(
            body,
            json!({
                "id": "chatcmpl-replay-1", "object": "chat.completion", "created": 7,
                "model": "recorded-model",
                "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "reasoning_content": "think",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\":\"/a\",\"n\":1.0}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "bad", "arguments": "{\"x"}},
                    ]}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                          "prompt_tokens_details": {"cached_tokens": 1, "audio_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": 1, "audio_tokens": 0}},
            })
        );
    }

    #[test]
    fn a_recorded_message_streams_as_content_and_tool_call_deltas() {
        let body = sse_body(identity(), &events_from_message(&recorded()));
        let deltas: Vec<Value> = body
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| {
                if data == "[DONE]" {
                    return json!("[DONE]");
                }
                let chunk: Value = serde_json::from_str(data).expect("json chunk");
                assert_eq!(chunk["id"], "chatcmpl-replay-1");
                match chunk["choices"].get(0) {
                    Some(choice) => json!([choice["delta"], choice["finish_reason"]]),
                    None => json!({"usage": chunk["usage"]["total_tokens"]}),
                }
            })
            .collect();
        assert_eq!(
            deltas,
            [
                json!([{"role": "assistant", "content": ""}, null]),
                json!([{"reasoning_content": "think"}, null]),
                json!([{"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":\"/a\",\"n\":1.0}"}}]}, null]),
                json!([{"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "bad", "arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 1, "function": {"arguments": "{\"x"}}]}, null]),
                json!([{}, "tool_calls"]),
                json!({"usage": 5}),
                json!("[DONE]"),
            ]
        );
    }

    #[test]
    fn recorded_failures_answer_with_their_status_and_the_detail_the_client_wraps_again() {
        let cases = [
            (
                json!({"type": "error", "message": "Error code: 400 - too long", "error_type": "BadRequestError", "status": 400}),
                (400, "too long", "invalid_request_error"),
            ),
            (
                json!({"type": "error", "message": "Error code: 500 - other status", "status": 429}),
                (429, "Error code: 500 - other status", "rate_limit_error"),
            ),
            (
                json!({"type": "error", "message": "connection reset"}),
                (502, "connection reset", "api_error"),
            ),
        ];
        for (event, (status, message, kind)) in cases {
            let Completion::Failed(error) =
                completion(&identity(), &[json!({"type": "start"}), event.clone()])
            else {
                panic!("{event}")
            };
            assert_eq!(error.status, status, "{event}");
            assert_eq!(error.body()["error"]["message"], message, "{event}");
            assert_eq!(error.body()["error"]["type"], kind, "{event}");
        }
    }

    #[test]
    fn deltas_without_done_still_make_a_completion() {
        let events = [
            json!({"type": "start"}),
            json!({"type": "text_delta", "delta": "par"}),
            json!({"type": "text_delta", "delta": "tial"}),
        ];
        let Completion::Message(body) = completion(&identity(), &events) else {
            panic!("message")
        };
        assert_eq!(body["choices"][0]["message"]["content"], "partial");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(body["model"], "requested");
    }
}
