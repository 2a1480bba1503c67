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

/// What a recorded answer must hold: its text, reasoning, refusal and tool calls (name and
/// parsed arguments, with the provider's id when it sent one), or the failure it reported.
#[derive(Debug, Clone)]
pub struct Expected {
    pub text: &'static str,
    pub reasoning: Option<&'static str>,
    pub refusal: Option<&'static str>,
    /// `(id, name, args)`; an empty id means the provider sent none (the codec fills one).
    pub calls: Vec<(&'static str, &'static str, Value)>,
    /// The message of a failure the provider reported inside its 200 answer.
    pub in_stream_error: Option<&'static str>,
}

impl Expected {
    pub fn text(text: &'static str) -> Expected {
        Expected {
            text,
            reasoning: None,
            refusal: None,
            calls: Vec::new(),
            in_stream_error: None,
        }
    }

    pub fn calls(calls: Vec<(&'static str, &'static str, Value)>) -> Expected {
        Expected {
            calls,
            ..Expected::text("")
        }
    }
}

/// One provider behaviour: the first answer as that provider sends it (an SSE body, or a whole
/// JSON completion when `json`), and what the recording must make of it.
#[derive(Debug, Clone)]
pub struct ProviderCase {
    pub name: &'static str,
    pub body: String,
    pub json: bool,
    pub expected: Expected,
}

/// One scripted answer: the body, whether it is a whole JSON body (else SSE), its HTTP status.
#[derive(Debug, Clone)]
pub struct Reply {
    pub body: String,
    pub json: bool,
    pub status: u16,
}

impl Reply {
    fn sse(body: String) -> Reply {
        Reply {
            body,
            json: false,
            status: 200,
        }
    }
}

impl ProviderCase {
    /// The upstream's answers for one recording run: this case's, a closing text answer after
    /// tool calls (the gateway runs them and asks again), then `extra` (the suggestions call
    /// the web client makes, on `cargo xtask record`'s path).
    pub fn bodies(&self, extra: &[String]) -> Vec<Reply> {
        let mut bodies = vec![Reply {
            body: self.body.clone(),
            json: self.json,
            status: 200,
        }];
        if !self.expected.calls.is_empty() {
            bodies.push(Reply::sse(text_stream(&["Done."])));
        }
        bodies.extend(extra.iter().cloned().map(Reply::sse));
        bodies
    }
}

/// Answers each request with the next body, SSE or JSON, in order.
pub struct ScriptedBodies(pub Mutex<VecDeque<Reply>>);

impl Respond for ScriptedBodies {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        match self.0.lock().unwrap().pop_front() {
            Some(reply) => ResponseTemplate::new(reply.status).set_body_raw(
                reply.body,
                if reply.json {
                    "application/json"
                } else {
                    "text/event-stream"
                },
            ),
            None => ResponseTemplate::new(500)
                .set_body_string("{\"error\": {\"message\": \"script exhausted\"}}"),
        }
    }
}

/// An upstream at `<uri>/v1` answering with `bodies`, in order.
pub async fn scripted_bodies(bodies: Vec<Reply>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ScriptedBodies(Mutex::new(bodies.into())))
        .mount(&server)
        .await;
    server
}

/// `data:` lines for `payloads` (JSON chunks as they are), then `[DONE]` when `done`.
fn raw_sse(payloads: &[Value], done: bool) -> String {
    let mut body: String = payloads.iter().map(|c| format!("data: {c}\n\n")).collect();
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

/// A chunk of `model` with one choice.
fn provider_chunk(model: &str, delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-p", "object": "chat.completion.chunk", "created": 1, "model": model,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The table of provider behaviours every recording path is held to, each written from the
/// provider's public API reference (OpenAI's Chat Completions streaming, DeepSeek's reasoning
/// models, Mistral's content chunks, Ollama's and Gemini's OpenAI-compatible endpoints,
/// OpenRouter's mid-stream errors).
pub fn provider_cases() -> Vec<ProviderCase> {
    let ls = json!({"path": "/mnt/user-data"});
    let read = json!({"path": "/mnt/user-data/outputs/none.txt"});
    let model = "provider-model";
    let c = |delta: Value| provider_chunk(model, delta, Value::Null);
    let finish = |reason: &str| provider_chunk(model, json!({}), json!(reason));
    let usage = json!({"id": "chatcmpl-p", "object": "chat.completion.chunk", "model": model,
                       "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4,
                       "total_tokens": 13, "completion_tokens_details": {"reasoning_tokens": 2}}});
    vec![
        ProviderCase {
            name: "openai_text_with_a_usage_only_chunk",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": ""})),
                    c(json!({"content": "Hello"})),
                    c(json!({"content": " there."})),
                    finish("stop"),
                    usage.clone(),
                ],
                true,
            ),
            json: false,
            expected: Expected::text("Hello there."),
        },
        ProviderCase {
            name: "openai_parallel_calls_interleaved",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": null, "tool_calls": [
                        {"index": 0, "id": "call_ls", "type": "function", "function": {"name": "ls", "arguments": ""}}]})),
                    c(json!({"tool_calls": [
                        {"index": 1, "id": "call_rd", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}}]})),
                    c(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \"/mnt/user-data\"}"}}]})),
                    c(json!({"tool_calls": [{"index": 1, "function": {"arguments": "th\": \"/mnt/user-data/outputs/none.txt\"}"}}]})),
                    finish("tool_calls"),
                    usage.clone(),
                ],
                true,
            ),
            json: false,
            expected: Expected::calls(vec![
                ("call_ls", "ls", ls.clone()),
                ("call_rd", "read_file", read.clone()),
            ]),
        },
        ProviderCase {
            name: "openai_refusal",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": null, "refusal": ""})),
                    c(json!({"refusal": "I can't help "})),
                    c(json!({"refusal": "with that."})),
                    finish("stop"),
                ],
                true,
            ),
            json: false,
            expected: Expected {
                refusal: Some("I can't help with that."),
                ..Expected::text("")
            },
        },
        ProviderCase {
            name: "deepseek_reasoning_content",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": null, "reasoning_content": ""})),
                    c(json!({"content": null, "reasoning_content": "Think "})),
                    c(json!({"content": null, "reasoning_content": "first."})),
                    c(json!({"content": "Then answer.", "reasoning_content": null})),
                    finish("stop"),
                    usage.clone(),
                ],
                true,
            ),
            json: false,
            expected: Expected {
                reasoning: Some("Think first."),
                ..Expected::text("Then answer.")
            },
        },
        ProviderCase {
            name: "mistral_list_content",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": ""})),
                    c(json!({"content": [{"type": "text", "text": "Bonjour"}]})),
                    c(json!({"content": [{"type": "text", "text": " à tous."}]})),
                    finish("stop"),
                ],
                true,
            ),
            json: false,
            expected: Expected::text("Bonjour à tous."),
        },
        ProviderCase {
            name: "ollama_one_chunk_call_without_done",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": "", "tool_calls": [
                        {"id": "call_o1", "index": 0, "type": "function",
                         "function": {"name": "ls", "arguments": "{\"path\":\"/mnt/user-data\"}"}}]})),
                    finish("tool_calls"),
                ],
                false,
            ),
            json: false,
            expected: Expected::calls(vec![("call_o1", "ls", ls.clone())]),
        },
        ProviderCase {
            name: "gemini_call_without_id_or_index",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "tool_calls": [
                        {"id": "", "type": "function",
                         "function": {"name": "ls", "arguments": "{\"path\":\"/mnt/user-data\"}"}}]})),
                    json!({"id": "chatcmpl-p", "object": "chat.completion.chunk", "model": model,
                           "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}),
                ],
                true,
            ),
            json: false,
            expected: Expected::calls(vec![("", "ls", ls.clone())]),
        },
        ProviderCase {
            name: "two_calls_under_one_index",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "tool_calls": [
                        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \"/mnt/user-data\"}"}}]})),
                    c(json!({"tool_calls": [
                        {"index": 0, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"/mnt/user-data/outputs/none.txt\"}"}}]})),
                    finish("tool_calls"),
                ],
                true,
            ),
            json: false,
            expected: Expected::calls(vec![
                ("call_a", "ls", ls.clone()),
                ("call_b", "read_file", read.clone()),
            ]),
        },
        ProviderCase {
            name: "whole_completion_object_arguments_empty_id",
            body: json!({"id": "chatcmpl-p", "object": "chat.completion", "created": 1, "model": model,
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": [
                        {"id": "", "type": "function", "function": {"name": "ls", "arguments": {"path": "/mnt/user-data"}}}]}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}})
            .to_string(),
            json: true,
            expected: Expected::calls(vec![("", "ls", ls.clone())]),
        },
        ProviderCase {
            name: "openrouter_error_chunk_after_length",
            body: raw_sse(
                &[
                    c(json!({"role": "assistant", "content": ""})),
                    c(json!({"content": "A long answer"})),
                    finish("length"),
                    json!({"id": "chatcmpl-p", "object": "chat.completion.chunk", "model": model,
                           "error": {"code": 502, "message": "Provider returned error: the output stopped at the length limit"},
                           "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
                ],
                true,
            ),
            json: false,
            expected: Expected {
                in_stream_error: Some(
                    "Provider returned error: the output stopped at the length limit",
                ),
                ..Expected::text("A long answer")
            },
        },
    ]
}
