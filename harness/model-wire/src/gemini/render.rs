//! Writing an answer at the Gemini wire: one `GenerateContentResponse` ([`response`]), the
//! stream's chunks ([`stream_chunks`]: a chunk per reasoning or text fragment and per call, the
//! last carrying `finishReason` and every one the `usageMetadata`, as Gemini sends them) and
//! Gemini's error body ([`error_body`]), so that [`StreamAssembler`](super::StreamAssembler) and
//! the `google-genai` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};

use super::gemini_finish_reason;

/// Gemini's `usageMetadata` from the answer's OpenAI usage (`None` when it has none).
fn usage_metadata(answer: &Answer) -> Option<Value> {
    let usage = answer.usage.as_ref()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| {
        usage
            .get(group)
            .and_then(|g| g.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let thoughts = detail("completion_tokens_details", "reasoning_tokens");
    let mut metadata = json!({
        "promptTokenCount": count("prompt_tokens"),
        "candidatesTokenCount": count("completion_tokens").saturating_sub(thoughts),
        "totalTokenCount": count("total_tokens"),
    });
    if thoughts > 0 {
        metadata["thoughtsTokenCount"] = json!(thoughts);
    }
    let cached = detail("prompt_tokens_details", "cached_tokens");
    if cached > 0 {
        metadata["cachedContentTokenCount"] = json!(cached);
    }
    Some(metadata)
}

fn model(identity: &Identity, answer: &Answer) -> String {
    answer
        .model
        .clone()
        .unwrap_or_else(|| identity.model.clone())
}

fn args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

fn call_part(id: &str, name: &str, arguments: &str) -> Value {
    json!({"functionCall": {"id": id, "name": name, "args": args(arguments)}})
}

/// One response holding `parts`, finished with the answer's reason when `last`.
fn chunk(identity: &Identity, answer: &Answer, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if last {
        candidate["finishReason"] = json!(gemini_finish_reason(&answer.finish_reason));
    }
    let mut body = json!({"candidates": [candidate]});
    if let Some(usage) = usage_metadata(answer) {
        body["usageMetadata"] = usage;
    }
    body["modelVersion"] = json!(model(identity, answer));
    body["responseId"] = json!(identity.id);
    body
}

/// One whole response: the reasoning as a thought part, the text, then each call.
pub fn response(identity: &Identity, answer: &Answer) -> Value {
    let mut parts = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        parts.push(json!({"text": reasoning, "thought": true}));
    }
    if !answer.text.is_empty() {
        parts.push(json!({"text": answer.text}));
    }
    for call in &answer.calls {
        parts.push(call_part(&call.id, &call.name, &call.arguments));
    }
    chunk(identity, answer, parts, true)
}

/// The chunks of an answer streamed with `events` (the shared events, in order; when they are
/// empty the answer's own [`Answer::events`]): a chunk per reasoning or text fragment, a chunk
/// per call once its arguments are complete, the finish reason on the last chunk.
pub fn stream_chunks(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<Value> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut parts: Vec<Value> = Vec::new();
    let mut calls: Vec<(u32, String, String, String)> = Vec::new();
    for event in events {
        match event {
            Event::TextDelta { delta } if !delta.is_empty() => {
                parts.push(json!({"text": delta}));
            }
            Event::ThinkingDelta { delta } if !delta.is_empty() => {
                parts.push(json!({"text": delta, "thought": true}));
            }
            Event::ToolcallStart { index, id, name } => {
                calls.push((*index, id.clone(), name.clone(), String::new()));
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = calls.iter_mut().find(|call| call.0 == *index) {
                    call.3.push_str(delta);
                }
            }
            Event::ToolcallEnd { index } => {
                if let Some(call) = calls.iter().find(|call| call.0 == *index) {
                    parts.push(call_part(&call.1, &call.2, &call.3));
                }
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    let count = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(position, part)| chunk(identity, answer, vec![part], position + 1 == count))
        .collect()
}

/// Gemini's `status` for an HTTP status code (google.rpc.Code's names).
pub fn status_for_code(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        402..=498 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// Gemini's error body, `{"error": {"code", "message", "status"}}`: an HTTP error's body, and a
/// chunk of a stream that failed.
pub fn error_body(code: u16, message: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status_for_code(code)}})
}
