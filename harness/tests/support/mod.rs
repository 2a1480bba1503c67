//! What the recording tests share: an OpenAI-compatible upstream scripted on wiremock that
//! streams Chat Completions chunks, with tool-call arguments split mid-JSON as real providers
//! split them.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// Answers each request with the next streamed body, in order.
pub struct Scripted(pub Mutex<VecDeque<String>>);

impl Respond for Scripted {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        match self.0.lock().unwrap().pop_front() {
            Some(body) => ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
            None => ResponseTemplate::new(500)
                .set_body_string("{\"error\": {\"message\": \"script exhausted\"}}"),
        }
    }
}

pub fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "model": "wiremock-model",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

pub fn sse(chunks: Vec<Value>) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: {\"id\": \"chatcmpl-w\", \"choices\": [], \"usage\": {\"prompt_tokens\": 50, \"completion_tokens\": 5, \"total_tokens\": 55}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

/// A tool call streamed as a start chunk and three argument fragments split mid-JSON.
pub fn tool_call_stream(id: &str, name: &str, args: &Value) -> String {
    let arguments = args.to_string();
    let (a, rest) = arguments.split_at(arguments.len() / 3);
    let (b, c) = rest.split_at(rest.len() / 2);
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": null,
               "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
        Value::Null,
    )];
    for piece in [a, b, c] {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), json!("tool_calls")));
    sse(chunks)
}

pub fn text_stream(pieces: &[&str]) -> String {
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    chunks.extend(
        pieces
            .iter()
            .map(|piece| chunk(json!({"content": piece}), Value::Null)),
    );
    chunks.push(chunk(json!({}), json!("stop")));
    sse(chunks)
}
