//! What the recording tests share: an OpenAI-compatible upstream scripted on wiremock that
//! streams Chat Completions chunks, with tool-call arguments split mid-JSON as real providers
//! split them, and the write/read-file scenario's answers as such an upstream streams them.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

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

/// An OpenAI-compatible upstream at `<uri>/v1` whose Chat Completions calls get `bodies`, one
/// each, in order.
pub async fn scripted_upstream(bodies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Scripted(Mutex::new(bodies.into())))
        .mount(&server)
        .await;
    server
}

/// The write/read-file scenario's three lead-agent answers: write the note, read it back, say
/// what it holds (the committed `write_read_file.ultra` golden's run).
pub fn write_read_file_streams() -> Vec<String> {
    vec![
        tool_call_stream(
            "call_w1",
            "write_file",
            &json!({"description": "Create the requested output file with exact content", "path": "/mnt/user-data/outputs/note.txt", "content": "hi from replay."}),
        ),
        tool_call_stream(
            "call_r1",
            "read_file",
            &json!({"description": "Read it back", "path": "/mnt/user-data/outputs/note.txt"}),
        ),
        text_stream(&["hi ", "from ", "replay."]),
    ]
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
