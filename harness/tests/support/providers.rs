//! The table of provider behaviours the recording paths are held to
//! (`docs/recording-format.md` §15): each provider's first answer as it sends it (written from the
//! provider's public API reference), what a recording must make of it, and a wiremock upstream
//! that serves scripted answers with any content type and status.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::text_stream;

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
