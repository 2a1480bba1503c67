//! The provider's tests that hold at every SSE wire, data-driven over [`SSE_WIRES`]: Chat
//! Completions, Responses (`api = "responses"`) and Anthropic Messages (`use = "anthropic"`).
//! Gemini and Bedrock Converse, whose paths name the model and the mode (and Converse's stream is
//! binary), have theirs in `path_wire_tests.rs`. Each wire's
//! answers are written by that wire's `model_wire` renderer (the one the harness's model server
//! answers with), served by wiremock or fed to the SSE reader in pieces; the request each wire
//! sends is compared with the body its reference shows. Chat Completions' own details (provider
//! quirks, message names) stay in `tests.rs`.

use std::time::Duration;

use futures::StreamExt;
use model_wire::chat_completions::{self, Answer, ChunkRenderer, Identity};
use model_wire::{Event, anthropic_messages, responses};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::stream::{MAX_SSE_LINE_BYTES, sse_events};
use super::*;
use crate::messages::ToolCall;
use crate::models::ProviderContext;
use crate::models::{
    CallOptions, ErrorClass, ProviderRegistry, StreamEvent, ToolSpec, collect_stream,
};

pub(super) const KEY: &str = "sk-test-SECRET123456789";

/// The wires whose route is fixed and whose stream is SSE text.
const SSE_WIRES: [Api; 3] = [Api::ChatCompletions, Api::Responses, Api::AnthropicMessages];

/// The helpers below serve [`SSE_WIRES`]; the other wires' tests build their own (Ollama's,
/// which no gateway provider speaks, none).
fn not_here(api: Api) -> ! {
    panic!("{api:?} is tested in path_wire_tests.rs")
}

/// The entry of a model at `api` whose provider is at `server`.
pub(super) fn config(api: Api, server: &str) -> ModelConfig {
    let mut config = ModelConfig::new("wire-model", "openai");
    config.model = Some("m-1".into());
    config.api_key = Some(KEY.into());
    config.base_url = Some(match api {
        Api::ChatCompletions | Api::Responses => format!("{server}/v1/"),
        Api::AnthropicMessages | Api::BedrockConverse => format!("{server}/"),
        Api::Gemini => format!("{server}/v1beta"),
        Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    });
    match api {
        Api::ChatCompletions => {}
        Api::Responses => {
            config
                .settings
                .insert(API_SETTING.into(), json!("responses"));
        }
        Api::AnthropicMessages => config.use_ = "anthropic".into(),
        Api::Gemini => config.use_ = "gemini".into(),
        Api::BedrockConverse => config.use_ = "bedrock".into(),
        Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
    config
}

/// The model the registry builds for the entry, as the gateway builds it.
pub(super) fn built(config: &ModelConfig) -> Result<Arc<dyn ChatModel>, ModelError> {
    let provider = ProviderRegistry::with_builtins()
        .get(&config.use_)
        .expect("a built-in provider");
    provider.build(
        config,
        &ProviderContext {
            home: std::path::PathBuf::from("."),
            aws_credentials: None,
        },
    )
}

fn model(api: Api, server: &MockServer) -> Arc<dyn ChatModel> {
    built(&config(api, &server.uri())).expect("model builds")
}

fn endpoint(api: Api) -> &'static str {
    match api {
        Api::ChatCompletions => "/v1/chat/completions",
        Api::Responses => "/v1/responses",
        Api::AnthropicMessages => "/v1/messages",
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        messages: messages.into_iter().map(Into::into).collect(),
        tools: Vec::new(),
        metadata: Default::default(),
        options: CallOptions::default(),
    }
}

pub(super) fn hi() -> ModelRequest {
    request(vec![Message::human("hi")])
}

pub(super) fn identity() -> Identity {
    Identity {
        id: "answer-1".into(),
        model: "m-1-2026".into(),
        created: 1,
    }
}

/// An answer with everything a wire carries: reasoning, text, two tool calls and usage.
pub(super) fn full_answer() -> Answer {
    Answer::from_ai_message(&json!({
        "content": "Reading both.",
        "additional_kwargs": {"reasoning_content": "Two files."},
        "response_metadata": {"finish_reason": "tool_calls", "model_name": "m-1-2026"},
        "tool_calls": [
            {"name": "read_file", "args": {"path": "/mnt/a"}, "id": "call_a"},
            {"name": "ls", "args": {"path": "/mnt"}, "id": "call_b"}
        ],
        "usage_metadata": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}
    }))
}

/// The answer's stream at `api`, as the wire's renderer writes it.
fn stream_body(api: Api, answer: &Answer) -> String {
    match api {
        Api::ChatCompletions => {
            let mut renderer = ChunkRenderer::new(identity());
            let mut chunks = vec![renderer.start()];
            chunks.extend(
                answer
                    .events()
                    .iter()
                    .filter_map(|event| renderer.event(event)),
            );
            chunks.extend(renderer.finish(answer));
            let mut body: String = chunks
                .iter()
                .map(|chunk| format!("data: {}\n\n", chunk.to_value()))
                .collect();
            body.push_str("data: [DONE]\n\n");
            body
        }
        Api::Responses => responses::stream_events(&identity(), answer, &[])
            .iter()
            .map(responses::SseEvent::frame)
            .collect(),
        Api::AnthropicMessages => anthropic_messages::stream_events(&identity(), answer, &[])
            .iter()
            .map(anthropic_messages::SseEvent::frame)
            .collect(),
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
}

/// The answer as one body at `api`.
fn whole_body(api: Api, answer: &Answer) -> Value {
    match api {
        Api::ChatCompletions => {
            serde_json::to_value(chat_completions::completion(&identity(), answer))
                .expect("a completion")
        }
        Api::Responses => responses::response(&identity(), answer),
        Api::AnthropicMessages => anthropic_messages::message(&identity(), answer),
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
}

/// A failure the provider reports inside its stream, at `api`, after the stream's first event.
fn in_stream_error(api: Api, message: &str) -> String {
    let first = stream_body(api, &full_answer())
        .split_inclusive("\n\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    let error = match api {
        Api::ChatCompletions => format!("data: {}\n\n", json!({"error": {"message": message}})),
        Api::Responses => format!(
            "event: error\ndata: {}\n\n",
            responses::error_event(message, Some("server_error"))
        ),
        Api::AnthropicMessages => format!(
            "event: error\ndata: {}\n\n",
            anthropic_messages::error_body("overloaded_error", message)
        ),
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    };
    first + &error
}

async fn mount(server: &MockServer, api: Api, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path(endpoint(api)))
        .respond_with(template)
        .mount(server)
        .await;
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Feeds `body` to the reader at `api` in pieces of `size` bytes.
async fn read_in_pieces(
    api: Api,
    body: &[u8],
    size: usize,
) -> Vec<Result<StreamEvent, ModelError>> {
    let pieces: Vec<Result<Vec<u8>, ModelError>> =
        body.chunks(size).map(|piece| Ok(piece.to_vec())).collect();
    sse_events(futures::stream::iter(pieces), "m-1", api)
        .collect()
        .await
}

pub(super) fn done_message(events: &[Result<StreamEvent, ModelError>]) -> Message {
    match events.last() {
        Some(Ok(StreamEvent::Done { message })) => (**message).clone(),
        other => panic!("the last event is not done: {other:?}"),
    }
}

/// What every wire must give for [`full_answer`]: the message's fields, by name.
pub(super) fn assert_full_answer(api: Api, how: &str, message: &Message) {
    let what = format!("{api:?} {how}");
    assert_eq!(message.text(), "Reading both.", "{what}");
    assert_eq!(
        message.tool_calls,
        [
            ToolCall {
                name: "read_file".into(),
                args: json!({"path": "/mnt/a"}),
                id: "call_a".into()
            },
            ToolCall {
                name: "ls".into(),
                args: json!({"path": "/mnt"}),
                id: "call_b".into()
            }
        ],
        "{what}"
    );
    assert_eq!(
        message.additional_kwargs.get("reasoning_content"),
        Some(&json!("Two files.")),
        "{what}"
    );
    let metadata = &message.response_metadata;
    assert_eq!(metadata["finish_reason"], "tool_calls", "{what}");
    assert_eq!(metadata["model_name"], "m-1-2026", "{what}");
    assert_eq!(
        metadata["model_provider"],
        json!(api.model_provider()),
        "{what}"
    );
    let usage = message.usage_metadata.clone().unwrap_or_default();
    let tokens = ["input_tokens", "output_tokens", "total_tokens"].map(|key| usage[key].clone());
    assert_eq!(tokens, [json!(20), json!(5), json!(25)], "{what}: {usage}");
    assert!(
        message
            .id
            .as_deref()
            .is_some_and(|id| id.starts_with("lc_run--")),
        "{what}"
    );
}

#[tokio::test]
async fn each_wire_reads_its_streamed_and_its_whole_answer_into_the_same_message() {
    for api in SSE_WIRES {
        let answer = full_answer();
        let server = MockServer::start().await;
        mount(&server, api, sse(stream_body(api, &answer))).await;
        let events: Vec<_> = model(api, &server)
            .stream(&hi())
            .await
            .expect("stream opens")
            .collect()
            .await;
        let streamed = done_message(&events);
        assert_full_answer(api, "streamed", &streamed);
        let kinds: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                Ok(StreamEvent::Delta(Event::ThinkingStart)) => Some("thinking"),
                Ok(StreamEvent::Delta(Event::TextStart)) => Some("text"),
                Ok(StreamEvent::Delta(Event::ToolcallStart { .. })) => Some("call"),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["thinking", "text", "call", "call"], "{api:?}");
        // The events fold back into the same message.
        let folded = collect_stream(Box::pin(futures::stream::iter(events))).await;
        assert_eq!(folded.expect("folds"), streamed, "{api:?}");

        // The whole answer, and the same body sent to a streaming call (a server that ignores
        // `stream`): the same message.
        let server = MockServer::start().await;
        let body = whole_body(api, &answer);
        mount(&server, api, ResponseTemplate::new(200).set_body_json(body)).await;
        let model = model(api, &server);
        assert_full_answer(api, "whole", &model.invoke(&hi()).await.expect("invoke"));
        let events: Vec<_> = model.stream(&hi()).await.expect("opens").collect().await;
        assert_full_answer(api, "whole to a stream", &done_message(&events));
    }
}

#[tokio::test]
async fn each_wire_s_stream_reads_alike_however_its_bytes_are_split() {
    let mut answer = full_answer();
    answer.text = "Grüße, 世界 🦀!".into();
    for api in SSE_WIRES {
        let body = stream_body(api, &answer).replacen("\n\n", "\r\n\r\n", 1);
        let body = format!(": keep-alive\n\n{body}");
        for size in [1, 3, 7, 64, body.len()] {
            let events = read_in_pieces(api, body.as_bytes(), size).await;
            let message = done_message(&events);
            assert_eq!(message.text(), answer.text, "{api:?}, pieces of {size}");
            assert_eq!(message.tool_calls.len(), 2, "{api:?}, pieces of {size}");
        }
    }
}

/// One conversation with every kind of message, a bound tool, an effort, and settings.
pub(super) fn conversation() -> ModelRequest {
    let mut human = Message::human("read it");
    human.name = Some("user-input".into());
    let ai = Message::ai(
        "Reading.",
        vec![ToolCall {
            name: "read_file".into(),
            args: json!({"path": "/mnt/a.txt"}),
            id: "call_1".into(),
        }],
    );
    let tool = Message::tool("hi", "read_file", "call_1", "success");
    let mut request = request(vec![
        Message::system("be brief"),
        human,
        ai,
        tool,
        Message::human(json!([{"type": "text", "text": "and now?"}])),
    ]);
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object"}),
    }];
    request.options.reasoning_effort = Some("low".into());
    request
}

/// The body each wire sends for [`conversation`], as its reference shows it (names are never
/// sent: neither new wire has them).
fn expected_body(api: Api) -> Value {
    match api {
        Api::ChatCompletions => json!({
            "model": "m-1",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": "Reading.", "tool_calls": [{"id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"/mnt/a.txt\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "hi"},
                {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "read_file",
                "description": "Read a file", "parameters": {"type": "object"}}}],
            "reasoning_effort": "low",
            "temperature": 0.5,
            "max_tokens": 300,
            "stream": true,
            "stream_options": {"include_usage": true}
        }),
        Api::Responses => json!({
            "model": "m-1",
            "input": [
                {"type": "message", "role": "system", "content": "be brief"},
                {"type": "message", "role": "user", "content": "read it"},
                {"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read_file",
                    "arguments": "{\"path\":\"/mnt/a.txt\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "hi"},
                {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "and now?"}]}
            ],
            "tools": [{"type": "function", "name": "read_file", "description": "Read a file",
                "parameters": {"type": "object"}}],
            "stream": true,
            "reasoning": {"effort": "low"},
            "max_output_tokens": 300,
            "temperature": 0.5
        }),
        Api::AnthropicMessages => json!({
            "model": "m-1",
            "max_tokens": 300,
            "system": "be brief",
            "messages": [
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "call_1", "name": "read_file",
                        "input": {"path": "/mnt/a.txt"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "hi"},
                    {"type": "text", "text": "and now?"}]}
            ],
            "tools": [{"name": "read_file", "description": "Read a file",
                "input_schema": {"type": "object"}}],
            "stream": true,
            "temperature": 0.5
        }),
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
}

#[tokio::test]
async fn each_wire_sends_the_conversation_in_its_own_terms_with_its_own_credentials() {
    for api in SSE_WIRES {
        let server = MockServer::start().await;
        mount(&server, api, sse(stream_body(api, &full_answer()))).await;
        let mut config = config(api, &server.uri());
        config.settings.insert("temperature".into(), json!(0.5));
        config.settings.insert("max_tokens".into(), json!(300));
        let model = built(&config).expect("builds");
        let events: Vec<_> = model
            .stream(&conversation())
            .await
            .expect("opens")
            .collect()
            .await;
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Done { .. }))),
            "{api:?}"
        );
        let received = server.received_requests().await.expect("recording on");
        let sent = &received[0];
        let body: Value = sent.body_json().expect("a JSON body");
        assert_eq!(body, expected_body(api), "{api:?}");
        let header = |name: &str| sent.headers.get(name).and_then(|v| v.to_str().ok());
        let bearer = format!("Bearer {KEY}");
        let credentials = match api {
            Api::ChatCompletions | Api::Responses => [Some(bearer.as_str()), None, None],
            Api::AnthropicMessages => [
                None,
                Some(KEY),
                Some(super::anthropic_messages::API_VERSION),
            ],
            Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => {
                not_here(api)
            }
        };
        assert_eq!(
            [
                header("authorization"),
                header("x-api-key"),
                header("anthropic-version")
            ],
            credentials,
            "{api:?}"
        );
    }
}

/// The error body a provider at `api` sends with `status`.
fn error_body(api: Api, status: u16, message: &str) -> Value {
    match api {
        Api::ChatCompletions | Api::Responses => {
            json!({"error": {"message": message, "type": "invalid_request_error"}})
        }
        Api::AnthropicMessages => anthropic_messages::error_body(
            anthropic_messages::error_kind_for_status(status),
            message,
        ),
        Api::Gemini | Api::BedrockConverse | Api::OllamaChat | Api::OllamaGenerate => not_here(api),
    }
}

#[tokio::test]
async fn each_wire_s_http_failures_are_named_and_worded_as_its_python_client_does() {
    // (wire, status, error type, class); the retry-after header is read on every wire.
    let table = [
        (
            Api::ChatCompletions,
            401,
            "AuthenticationError",
            ErrorClass::Auth,
        ),
        (Api::Responses, 401, "AuthenticationError", ErrorClass::Auth),
        (
            Api::AnthropicMessages,
            401,
            "AuthenticationError",
            ErrorClass::Auth,
        ),
        (Api::Responses, 429, "RateLimitError", ErrorClass::Transient),
        (
            Api::AnthropicMessages,
            429,
            "RateLimitError",
            ErrorClass::Transient,
        ),
        (
            Api::Responses,
            500,
            "InternalServerError",
            ErrorClass::Transient,
        ),
        (
            Api::AnthropicMessages,
            500,
            "InternalServerError",
            ErrorClass::Transient,
        ),
        (
            Api::AnthropicMessages,
            503,
            "ServiceUnavailableError",
            ErrorClass::Transient,
        ),
        (
            Api::AnthropicMessages,
            529,
            "OverloadedError",
            ErrorClass::Busy,
        ),
        (
            Api::AnthropicMessages,
            413,
            "RequestTooLargeError",
            ErrorClass::Generic,
        ),
    ];
    for (api, status, error_type, class) in table {
        let message = if status == 529 { "Overloaded" } else { "no" };
        let body = error_body(api, status, message);
        let server = MockServer::start().await;
        let template = ResponseTemplate::new(status)
            .set_body_json(body.clone())
            .insert_header("retry-after", "2");
        mount(&server, api, template).await;
        let model = model(api, &server);
        let streamed = model.stream(&hi()).await.err().expect("the stream fails");
        let whole = model.invoke(&hi()).await.expect_err("the call fails");
        for error in [streamed, whole] {
            let what = format!("{api:?} {status}");
            assert_eq!(error.error_type, error_type, "{what}");
            assert_eq!(error.status, Some(status), "{what}");
            assert_eq!(error.class(), class, "{what}: {}", error.message);
            assert_eq!(error.retry_after, Some(Duration::from_secs(2)), "{what}");
            assert!(!error.in_stream, "{what}");
            let prefix = format!("Error code: {status} - {{");
            assert!(
                error.message.starts_with(&prefix),
                "{what}: {}",
                error.message
            );
            assert!(
                error.message.contains(&format!("'{message}'")),
                "{what}: {}",
                error.message
            );
        }
    }
}

#[tokio::test]
async fn each_wire_s_stream_cut_short_or_failing_inside_fails_the_call_without_the_key() {
    for api in SSE_WIRES {
        // The stream stops before its wire's last event.
        let body = stream_body(api, &full_answer());
        let cut = &body[..body.len() / 2];
        let cut = &cut[..cut.rfind("\n\n").map_or(0, |end| end + 2)];
        let events = read_in_pieces(api, cut.as_bytes(), 16).await;
        assert!(
            matches!(events.last(), Some(Err(e)) if e.error_type == "RemoteProtocolError"
                && e.class() == ErrorClass::Transient),
            "{api:?}: {:?}",
            events.last()
        );

        // The provider reports a failure inside a 200 stream, echoing the key.
        let server = MockServer::start().await;
        mount(
            &server,
            api,
            sse(in_stream_error(api, &format!("bad key {KEY}"))),
        )
        .await;
        let events: Vec<_> = model(api, &server)
            .stream(&hi())
            .await
            .expect("opens")
            .collect()
            .await;
        let error = events
            .last()
            .and_then(|event| event.as_ref().err())
            .unwrap_or_else(|| panic!("{api:?} ends with an error: {events:?}"));
        assert_eq!(error.error_type, "APIError", "{api:?}");
        assert!(error.in_stream, "{api:?}");
        assert!(!format!("{error} {error:?}").contains(KEY), "{api:?}");
        assert!(
            error.message.contains(SECRET_REMOVED),
            "{api:?}: {}",
            error.message
        );
    }
}

/// Issue 21, finding 4, at every wire: a line longer than the limit and a whole answer larger
/// than its limit fail the call; dropping a stream stops reading the provider.
#[tokio::test]
async fn each_wire_s_reads_are_bounded_and_stop_when_the_stream_is_dropped() {
    for api in SSE_WIRES {
        let first = stream_body(api, &full_answer());
        let first = first.split_inclusive("\n\n").next().unwrap_or_default();
        let mut long = first.as_bytes().to_vec();
        long.extend(b"data: ");
        long.extend(std::iter::repeat_n(b'x', MAX_SSE_LINE_BYTES + 1));
        let events = read_in_pieces(api, &long, 64 * 1024).await;
        assert!(
            matches!(events.last(), Some(Err(e)) if e.error_type == "RemoteProtocolError"
                && e.message.contains("longer than")),
            "{api:?}: {:?}",
            events.last()
        );

        let server = MockServer::start().await;
        let huge = format!("{{\"pad\": \"{}\"}}", "y".repeat(33 * 1024 * 1024));
        mount(
            &server,
            api,
            ResponseTemplate::new(200).set_body_raw(huge, "application/json"),
        )
        .await;
        let error = model(api, &server)
            .invoke(&hi())
            .await
            .expect_err("too large");
        assert_eq!(error.error_type, "APIResponseValidationError", "{api:?}");

        let (sender, receiver) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, ModelError>>();
        sender
            .unbounded_send(Ok(first.as_bytes().to_vec()))
            .expect("send");
        let mut events = sse_events(receiver, "m", api);
        assert!(
            matches!(events.next().await, Some(Ok(StreamEvent::Start))),
            "{api:?}"
        );
        assert!(
            !sender.is_closed(),
            "{api:?}: the provider is still being read"
        );
        drop(events);
        assert!(
            sender.is_closed(),
            "{api:?}: the read stopped with the stream"
        );
    }
}

#[tokio::test]
async fn each_wire_refuses_to_call_without_a_key_and_never_shows_it() {
    for api in SSE_WIRES {
        let server = MockServer::start().await;
        let mut config = config(api, &server.uri());
        let shown = format!("{:?}", built(&config).expect("builds"));
        assert!(
            !shown.contains(KEY) && shown.contains("[redacted]"),
            "{api:?}: {shown}"
        );
        config.api_key = None;
        let model = built(&config).expect("a missing key is not a build error");
        let error = model.invoke(&hi()).await.expect_err("no key");
        assert_eq!(error.error_type, "AuthenticationError", "{api:?}");
        assert_eq!(error.class(), ErrorClass::Auth, "{api:?}");
        let received = server.received_requests().await.expect("recording on");
        assert!(received.is_empty(), "{api:?}");
    }
}

/// Anthropic refuses a tool loop with extended thinking unless the earlier thinking comes back
/// signed: a signed thinking block (streamed as a `signature_delta`, or whole with its
/// `signature`) is kept with the answer and sent first in that message on the next call.
#[tokio::test]
async fn signed_thinking_at_the_messages_wire_goes_back_with_its_signature() {
    let api = Api::AnthropicMessages;
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or("")
        )
    };
    let stream: String = [
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-x",
            "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "List it."}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"/mnt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
    .into_iter()
    .map(event)
    .collect();
    let whole = json!({"type": "message", "model": "claude-x", "stop_reason": "tool_use",
        "content": [{"type": "thinking", "thinking": "List it.", "signature": "EqQB"},
            {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/mnt"}}],
        "usage": {"input_tokens": 3, "output_tokens": 9}});
    for streamed in [true, false] {
        let server = MockServer::start().await;
        let template = if streamed {
            sse(stream.clone())
        } else {
            ResponseTemplate::new(200).set_body_json(whole.clone())
        };
        mount(&server, api, template).await;
        let model = model(api, &server);
        let answer = if streamed {
            done_message(
                &model
                    .stream(&hi())
                    .await
                    .expect("opens")
                    .collect::<Vec<_>>()
                    .await,
            )
        } else {
            model.invoke(&hi()).await.expect("invoke")
        };
        assert_eq!(
            answer.additional_kwargs.get("reasoning_signature"),
            Some(&json!("EqQB")),
            "streamed: {streamed}"
        );
        let tool = Message::tool("a.txt", "ls", "toolu_1", "success");
        let next = request(vec![Message::human("hi"), answer, tool]);
        let body = super::anthropic_messages::request_body("m", &next, &Map::new(), false);
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "thinking", "thinking": "List it.", "signature": "EqQB"},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "/mnt"}}]),
            "streamed: {streamed}"
        );
    }
}

#[tokio::test]
async fn each_wire_sends_no_credential_to_another_origin_a_redirect_names() {
    // Gemini and Converse: `path_wire_tests.rs`, with their own credential headers.
    for api in SSE_WIRES {
        let elsewhere = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(sse(stream_body(api, &full_answer())))
            .mount(&elsewhere)
            .await;
        let origin = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(307)
                    .insert_header("location", format!("{}/stolen", elsewhere.uri())),
            )
            .mount(&origin)
            .await;
        let opened = model(api, &origin).stream(&conversation()).await;
        let failed = match opened {
            Err(_) => true,
            Ok(stream) => stream.collect::<Vec<_>>().await.iter().any(Result::is_err),
        };
        assert!(failed, "{api:?}: a redirect elsewhere is no answer");
        for request in elsewhere.received_requests().await.unwrap_or_default() {
            for header in ["authorization", "x-api-key"] {
                assert!(
                    !request.headers.contains_key(header),
                    "{api:?}: {header} reached another origin"
                );
            }
        }
    }
}
