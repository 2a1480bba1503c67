//! Tests of the OpenAI provider against wiremock (whole-body responses) and of the SSE parser on
//! hand-split byte chunks.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use model_wire::Event;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::stream::sse_events;
use super::wire;
use super::*;
use crate::messages::{MessageType, ToolCall};
use crate::models::ProviderContext;
use crate::models::{CallOptions, ErrorClass, StreamEvent, ToolSpec, collect_stream};

const KEY: &str = "sk-test-SECRET123456789";

fn config(base_url: &str) -> ModelConfig {
    let mut config = ModelConfig::new("gpt-test", "openai");
    config.model = Some("gpt-4o-mini".into());
    config.api_key = Some(KEY.into());
    // The trailing slash must be tolerated.
    config.base_url = Some(format!("{base_url}/v1/"));
    config
}

fn model_for(server: &MockServer) -> WireChatModel {
    WireChatModel::new(&config(&server.uri()), Api::ChatCompletions).expect("model builds")
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        messages: messages.into_iter().map(Arc::new).collect(),
        tools: Vec::new(),
        metadata: Default::default(),
        options: CallOptions::default(),
    }
}

fn sse_body(chunks: &[Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null
    })
}

fn usage_chunk() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-4o-mini-2024-07-18", "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25,
            "prompt_tokens_details": {"cached_tokens": 8, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 2, "audio_tokens": 0}}
    })
}

async fn mount_sse(server: &MockServer, body: String) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(server)
        .await;
}

async fn events_of(stream: EventStream) -> Vec<Result<StreamEvent, ModelError>> {
    stream.collect().await
}

fn ok_events(events: Vec<Result<StreamEvent, ModelError>>) -> Vec<StreamEvent> {
    events
        .into_iter()
        .map(|event| event.expect("no error event"))
        .collect()
}

fn done_message(events: &[StreamEvent]) -> Message {
    match events.last() {
        Some(StreamEvent::Done { message }) => (**message).clone(),
        other => panic!("last event is not done: {other:?}"),
    }
}

#[tokio::test]
async fn invoke_maps_a_text_answer_and_sends_the_mapped_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-abc", "object": "chat.completion", "created": 1,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_x",
            "unknown_top_level": {"whatever": [1, 2]},
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
                "message": {"role": "assistant", "content": "The file says hi.", "refusal": null,
                    "annotations": [], "reasoning_content": "think first"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 12, "total_tokens": 112,
                "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 4, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0}}
        })))
        .expect(1)
        .mount(&server)
        .await;

    let mut human = Message::human("read it");
    human.name = Some("user-input".into());
    let ai = Message::ai(
        "",
        vec![ToolCall {
            name: "read_file".into(),
            args: json!({"path": "/mnt/a.txt"}),
            id: "call_1".into(),
        }],
    );
    let tool = Message::tool("hi", "read_file", "call_1", "success");
    let mut request = request(vec![Message::system("be brief"), human, ai, tool]);
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    request.options.reasoning_effort = Some("low".into());

    let message = model_for(&server).invoke(&request).await.expect("invoke");
    assert_eq!(message.kind, MessageType::Ai);
    assert_eq!(message.content, json!("The file says hi."));
    assert!(message.tool_calls.is_empty());
    assert!(
        message
            .id
            .as_deref()
            .is_some_and(|id| id.starts_with("lc_run--") && id.len() == 8 + 36),
        "{:?}",
        message.id
    );
    assert_eq!(
        Value::Object(message.additional_kwargs.clone()),
        json!({"reasoning_content": "think first"})
    );
    let metadata = &message.response_metadata;
    assert_eq!(metadata["finish_reason"], "stop");
    assert_eq!(metadata["model_name"], "gpt-4o-mini-2024-07-18");
    assert_eq!(metadata["model_provider"], "openai");
    assert_eq!(metadata["id"], "chatcmpl-abc");
    assert_eq!(metadata["system_fingerprint"], "fp_x");
    assert_eq!(metadata["token_usage"]["total_tokens"], 112);
    assert_eq!(
        message.usage_metadata,
        Some(json!({
            "input_tokens": 100, "output_tokens": 12, "total_tokens": 112,
            "input_token_details": {"audio": 0, "cache_read": 64},
            "output_token_details": {"audio": 0, "reasoning": 4}
        }))
    );

    let received = server.received_requests().await.expect("recording on");
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(
        sent.headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body: Value = sent.body_json().expect("json body");
    assert_eq!(
        body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"/mnt/a.txt\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "hi"}
            ],
            "tools": [{"type": "function", "function": {"name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "reasoning_effort": "low"
        })
    );
}

#[test]
fn request_body_maps_content_blocks_settings_and_omits_empty_tools() {
    let human = Message::human(json!([
        "plain",
        {"type": "text", "text": "block", "id": "b1"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    ]));
    let ai = Message::ai(json!([{"type": "text", "text": "an answer"}]), vec![]);
    let mut request = request(vec![human, ai]);
    request.options.thinking_enabled = true;
    let settings = json!({
        "temperature": 0.2, "max_tokens": 100, "supports_vision": true,
        "extra_body": {"top_k": 5},
        "when_thinking_enabled": {"extra_body": {"thinking": {"type": "enabled"}}}
    });
    let settings = settings.as_object().cloned().unwrap_or_default();
    let body = wire::request_body("m", &request, &settings, true);
    assert_eq!(
        body,
        json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "plain"},
                    {"type": "text", "text": "block"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
                ]},
                {"role": "assistant", "content": "an answer"}
            ],
            "temperature": 0.2,
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true},
            "top_k": 5,
            "thinking": {"type": "enabled"}
        })
    );
}

#[test]
fn message_names_are_sent_only_with_the_setting_and_only_when_openai_accepts_them() {
    let named = |kind: Message, name: &str| {
        let mut message = kind;
        message.name = Some(name.into());
        message
    };
    let request = request(vec![
        Message::system("rules"),
        named(Message::human("q"), "user-input"),
        named(Message::human("r"), "has space"),
        named(Message::ai("a", vec![]), "lead_agent"),
        Message::tool("out", "read_file", "call_1", "success"),
    ]);
    let names = |settings: Value| -> Vec<Value> {
        let settings = settings.as_object().cloned().unwrap_or_default();
        let body = wire::request_body("m", &request, &settings, false);
        body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|message| message.get("name").cloned().unwrap_or(Value::Null))
            .collect()
    };
    let none = vec![Value::Null; 5];
    assert_eq!(names(json!({})), none, "off by default");
    assert_eq!(names(json!({"send_message_names": false})), none);
    assert_eq!(
        names(json!({"send_message_names": true})),
        [
            Value::Null,
            json!("user-input"),
            Value::Null,
            json!("lead_agent"),
            Value::Null
        ],
        "user and assistant names that OpenAI accepts"
    );
}

#[tokio::test]
async fn stream_of_a_text_answer_yields_blocks_done_and_usage() {
    let server = MockServer::start().await;
    mount_sse(
        &server,
        sse_body(&[
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Hel"}), Value::Null),
            chunk(json!({"content": "lo"}), Value::Null),
            chunk(json!({}), json!("stop")),
            usage_chunk(),
        ]),
    )
    .await;
    let model = model_for(&server);
    let stream = model
        .stream(&request(vec![Message::human("hi")]))
        .await
        .expect("stream opens");
    let events = ok_events(events_of(stream).await);
    assert_eq!(
        events[..events.len() - 1],
        [
            StreamEvent::Start,
            StreamEvent::Delta(Event::TextStart),
            StreamEvent::Delta(Event::TextDelta {
                delta: "Hel".into()
            }),
            StreamEvent::Delta(Event::TextDelta { delta: "lo".into() }),
            StreamEvent::Delta(Event::TextEnd),
        ]
    );
    let message = done_message(&events);
    assert_eq!(message.content, json!("Hello"));
    assert!(message.additional_kwargs.is_empty());
    assert_eq!(
        Value::Object(message.response_metadata.clone()),
        json!({"finish_reason": "stop", "model_name": "gpt-4o-mini-2024-07-18",
            "model_provider": "openai"})
    );
    assert_eq!(
        message.usage_metadata,
        Some(json!({
            "input_tokens": 20, "output_tokens": 5, "total_tokens": 25,
            "input_token_details": {"audio": 0, "cache_read": 8},
            "output_token_details": {"audio": 0, "reasoning": 2}
        }))
    );
    assert!(
        message
            .id
            .as_deref()
            .is_some_and(|id| id.starts_with("lc_run--"))
    );

    let received = server.received_requests().await.expect("recording on");
    let body: Value = received[0].body_json().expect("json body");
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert!(body.get("tools").is_none(), "no tools key without tools");
}

#[tokio::test]
async fn stream_assembles_interleaved_parallel_tool_calls_and_thinking() {
    let server = MockServer::start().await;
    let call = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut call = json!({"index": index, "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        chunk(json!({"tool_calls": [call]}), Value::Null)
    };
    mount_sse(
        &server,
        sse_body(&[
            chunk(
                json!({"role": "assistant", "reasoning_content": "plan"}),
                Value::Null,
            ),
            chunk(json!({"reasoning_content": " it"}), Value::Null),
            call(0, Some("call_a"), Some("ls"), ""),
            call(1, Some("call_b"), Some("read_file"), "{\"pa"),
            // A fragment split in the middle of a JSON string.
            call(0, None, None, "{\"path\": \"/mn"),
            call(1, None, None, "th\": \"/x\"}"),
            call(0, None, None, "t\"}"),
            chunk(json!({}), json!("tool_calls")),
            usage_chunk(),
        ]),
    )
    .await;
    let model = model_for(&server);
    let stream = model
        .stream(&request(vec![Message::human("go")]))
        .await
        .expect("stream opens");
    let events = ok_events(events_of(stream).await);
    let delta = |index: u32, delta: &str| {
        StreamEvent::Delta(Event::ToolcallDelta {
            index,
            delta: delta.into(),
        })
    };
    assert_eq!(
        events[..events.len() - 1],
        [
            StreamEvent::Start,
            StreamEvent::Delta(Event::ThinkingStart),
            StreamEvent::Delta(Event::ThinkingDelta {
                delta: "plan".into()
            }),
            StreamEvent::Delta(Event::ThinkingDelta {
                delta: " it".into()
            }),
            StreamEvent::Delta(Event::ThinkingEnd),
            StreamEvent::Delta(Event::ToolcallStart {
                index: 0,
                id: "call_a".into(),
                name: "ls".into()
            }),
            StreamEvent::Delta(Event::ToolcallStart {
                index: 1,
                id: "call_b".into(),
                name: "read_file".into()
            }),
            delta(1, "{\"pa"),
            delta(0, "{\"path\": \"/mn"),
            delta(1, "th\": \"/x\"}"),
            delta(0, "t\"}"),
            StreamEvent::Delta(Event::ToolcallEnd { index: 0 }),
            StreamEvent::Delta(Event::ToolcallEnd { index: 1 }),
        ]
    );
    let message = done_message(&events);
    assert_eq!(message.content, json!(""));
    assert_eq!(
        message.tool_calls,
        vec![
            ToolCall {
                name: "ls".into(),
                args: json!({"path": "/mnt"}),
                id: "call_a".into()
            },
            ToolCall {
                name: "read_file".into(),
                args: json!({"path": "/x"}),
                id: "call_b".into()
            },
        ]
    );
    assert!(message.invalid_tool_calls.is_empty());
    assert_eq!(message.response_metadata["finish_reason"], "tool_calls");
    assert_eq!(
        message.additional_kwargs.get("reasoning_content"),
        Some(&json!("plan it"))
    );
    assert!(message.usage_metadata.is_some());

    // The events fold back into the same message.
    let stream: EventStream = Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
    assert_eq!(collect_stream(stream).await.expect("collects"), message);
}

#[tokio::test]
async fn unparsable_tool_arguments_become_invalid_tool_calls() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_ok", "type": "function",
                        "function": {"name": "ls", "arguments": "{}"}},
                    {"id": "call_bad", "type": "function",
                        "function": {"name": "write_file", "arguments": "{\"path\": \"/a"}}
                ]}}]
        })))
        .mount(&server)
        .await;
    let message = model_for(&server)
        .invoke(&request(vec![Message::human("go")]))
        .await
        .expect("invoke");
    assert_eq!(message.content, json!(""));
    assert_eq!(message.tool_calls.len(), 1);
    assert_eq!(message.tool_calls[0].id, "call_ok");
    assert_eq!(message.usage_metadata, None);
    assert_eq!(message.invalid_tool_calls.len(), 1);
    let invalid = &message.invalid_tool_calls[0];
    assert_eq!(invalid["name"], "write_file");
    assert_eq!(invalid["args"], "{\"path\": \"/a");
    assert_eq!(invalid["id"], "call_bad");
    assert_eq!(invalid["type"], "invalid_tool_call");
    assert!(invalid["error"].as_str().is_some_and(|e| !e.is_empty()));
    let keys: Vec<&String> = invalid
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["name", "args", "id", "error", "type"]);

    // Sent back to the provider, the invalid call keeps its raw arguments.
    let wire = wire::message_to_wire(&message, false);
    assert_eq!(wire["content"], Value::Null);
    assert_eq!(
        wire["tool_calls"][1]["function"]["arguments"],
        "{\"path\": \"/a"
    );
}

/// Feeds `body` to the SSE parser in pieces of `size` bytes, which splits lines and multi-byte
/// characters at every possible place as `size` varies.
async fn parse_in_pieces(body: &[u8], size: usize) -> Vec<Result<StreamEvent, ModelError>> {
    let pieces: Vec<Result<Vec<u8>, ModelError>> =
        body.chunks(size).map(|piece| Ok(piece.to_vec())).collect();
    events_of(sse_events(
        futures::stream::iter(pieces),
        "fallback-model",
        Api::ChatCompletions,
    ))
    .await
}

#[tokio::test]
async fn sse_parser_handles_chunks_split_mid_line_and_mid_utf8() {
    let text_parts = ["Grüße, ", "世界 ", "🦀!"];
    let mut chunks: Vec<Value> = text_parts
        .iter()
        .map(|part| chunk(json!({"content": part}), Value::Null))
        .collect();
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push(usage_chunk());
    // A comment line and CRLF framing on one event must not disturb the parser.
    let body = format!(": keep-alive\n\n{}", sse_body(&chunks)).replacen("\n\n", "\r\n\r\n", 2);
    let bytes = body.as_bytes();
    let expected_text: String = text_parts.concat();
    for size in [1, 2, 3, 5, 7, 64, bytes.len()] {
        let events = ok_events(parse_in_pieces(bytes, size).await);
        let deltas: String = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::Delta(Event::TextDelta { delta }) => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, expected_text, "piece size {size}");
        let message = done_message(&events);
        assert_eq!(message.content, json!(expected_text), "piece size {size}");
        assert_eq!(
            message.usage_metadata.as_ref().map(|u| &u["total_tokens"]),
            Some(&json!(25))
        );
    }
}

#[tokio::test]
async fn truncated_or_broken_streams_are_remote_protocol_errors() {
    // Ends after a text fragment: no finish_reason, no [DONE].
    let truncated = format!(
        "data: {}\n\n",
        chunk(json!({"content": "Hel"}), Value::Null)
    );
    let events = parse_in_pieces(truncated.as_bytes(), 4).await;
    let error = events
        .last()
        .and_then(|event| event.as_ref().err())
        .expect("ends with an error");
    assert_eq!(error.error_type, "RemoteProtocolError");
    assert_eq!(error.class(), ErrorClass::Transient);

    // Not JSON.
    let garbage = "data: {not json\n\n";
    let events = parse_in_pieces(garbage.as_bytes(), 100).await;
    assert!(matches!(events.last(), Some(Err(e)) if e.error_type == "RemoteProtocolError"));

    // The transport fails mid-stream: the error passes through, then the stream ends.
    let pieces: Vec<Result<Vec<u8>, ModelError>> = vec![
        Ok(truncated.into_bytes()),
        Err(ModelError::new("RemoteProtocolError", "connection reset")),
        Ok(b"data: [DONE]\n\n".to_vec()),
    ];
    let events = events_of(sse_events(
        futures::stream::iter(pieces),
        "m",
        Api::ChatCompletions,
    ))
    .await;
    assert!(matches!(events.last(), Some(Err(e)) if e.message == "connection reset"));

    // [DONE] without any choice: an empty answer.
    let events = parse_in_pieces(b"data: [DONE]\n\n", 100).await;
    assert!(matches!(events.last(), Some(Err(e)) if e.error_type == "EmptyResponseError"));

    // A finished choice without [DONE] is accepted (some servers omit the marker).
    let unterminated = format!(
        "data: {}\n\n",
        chunk(json!({"content": "ok"}), json!("stop"))
    );
    let events = ok_events(parse_in_pieces(unterminated.as_bytes(), 100).await);
    assert_eq!(done_message(&events).content, json!("ok"));
}

async fn error_for(status: u16, body: Value, headers: &[(&str, &str)]) -> ModelError {
    let server = MockServer::start().await;
    let mut template = ResponseTemplate::new(status).set_body_json(body);
    for (name, value) in headers {
        template = template.insert_header(*name, *value);
    }
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    model_for(&server)
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("the call fails")
}

#[tokio::test]
async fn http_errors_map_to_python_client_error_types() {
    let error = error_for(
        401,
        json!({"error": {"message": "Invalid token", "type": "invalid_request_error",
            "code": "invalid_api_key"}}),
        &[],
    )
    .await;
    assert_eq!(error.error_type, "AuthenticationError");
    assert_eq!(error.status, Some(401));
    // openai-python's text: the parsed body's Python repr.
    assert_eq!(
        error.message,
        "Error code: 401 - {'error': {'message': 'Invalid token', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}"
    );
    assert_eq!(error.class(), ErrorClass::Auth);

    let error = error_for(
        429,
        json!({"error": {"message": "Rate limit reached for requests", "type": "requests"}}),
        &[("Retry-After", "7")],
    )
    .await;
    assert_eq!(error.error_type, "RateLimitError");
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after, Some(Duration::from_secs(7)));
    assert!(matches!(
        error.class(),
        ErrorClass::Busy | ErrorClass::Transient
    ));

    let error = error_for(
        429,
        json!({"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}),
        &[],
    )
    .await;
    assert_eq!(error.class(), ErrorClass::Quota);
    assert_eq!(error.retry_after, None);

    let error = error_for(
        500,
        json!({"error": {"message": "The server had an error"}}),
        &[],
    )
    .await;
    assert_eq!(error.error_type, "InternalServerError");
    assert_eq!(error.status, Some(500));
    assert_eq!(error.class(), ErrorClass::Transient);

    let error = error_for(418, json!({"unexpected": "x".repeat(2000)}), &[]).await;
    assert_eq!(error.error_type, "APIStatusError");
    assert_eq!(error.status, Some(418));
    // The raw body, cut to 500 characters.
    assert_eq!(
        error.message.chars().count(),
        "Error code: 418 - ".len() + 500
    );

    for (status, error_type) in [
        (400, "BadRequestError"),
        (403, "PermissionDeniedError"),
        (404, "NotFoundError"),
        (409, "ConflictError"),
        (422, "UnprocessableEntityError"),
        (503, "InternalServerError"),
    ] {
        let error = error_for(status, json!({"error": {"message": "x"}}), &[]).await;
        assert_eq!(error.error_type, error_type);
        assert_eq!(error.status, Some(status));
    }
}

#[tokio::test]
async fn streaming_calls_map_http_errors_too() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream overloaded, try later"))
        .mount(&server)
        .await;
    let error = model_for(&server)
        .stream(&request(vec![Message::human("hi")]))
        .await
        .err()
        .expect("stream fails to open");
    assert_eq!(error.error_type, "InternalServerError");
    assert_eq!(error.status, Some(503));
    // openai-python gives a body that is not JSON as it is.
    assert_eq!(error.message, "upstream overloaded, try later");
    assert_eq!(error.class(), ErrorClass::Busy);
}

#[tokio::test]
async fn connection_refused_is_an_api_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    let model = WireChatModel::new(&config(&format!("http://{address}")), Api::ChatCompletions)
        .expect("builds");
    let error = model
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("nothing listens");
    assert_eq!(error.error_type, "APIConnectionError", "{error:?}");
    assert_eq!(error.status, None);
    assert_eq!(error.class(), ErrorClass::Transient);
    assert!(!error.message.contains(KEY));
}

#[tokio::test]
async fn a_slow_provider_is_an_api_timeout_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"choices": []}))
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let mut config = config(&server.uri());
    config.request_timeout_secs = 1;
    let model = WireChatModel::new(&config, Api::ChatCompletions).expect("builds");
    let error = model
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("times out");
    assert_eq!(error.error_type, "APITimeoutError", "{error:?}");
    assert_eq!(error.class(), ErrorClass::Transient);
}

#[tokio::test]
async fn an_answer_without_choices_is_an_empty_response_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "x", "choices": []})))
        .mount(&server)
        .await;
    let error = model_for(&server)
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("no choices");
    assert_eq!(error.error_type, "EmptyResponseError");
    assert_eq!(error.class(), ErrorClass::Transient);
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors_or_debug_output() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {
            "message": format!("Incorrect API key provided: {KEY}. Bearer {KEY}"),
            "type": "invalid_request_error"}})))
        .mount(&server)
        .await;
    let model = model_for(&server);
    let error = model
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("401");
    for text in [
        error.to_string(),
        format!("{error:?}"),
        format!("{model:?}"),
    ] {
        assert!(!text.contains(KEY), "key leaked in: {text}");
        assert!(!text.contains("SECRET123"), "key leaked in: {text}");
    }
    assert!(error.message.contains(SECRET_REMOVED), "{}", error.message);
    assert!(format!("{model:?}").contains("[redacted]"));
    let shared: Arc<dyn ChatModel> = crate::models::ProviderRegistry::with_builtins()
        .get("openai")
        .expect("the openai provider")
        .build(
            &config(&server.uri()),
            &ProviderContext {
                home: std::path::PathBuf::from("."),
                aws_credentials: None,
            },
        )
        .expect("builds");
    assert!(!format!("{shared:?}").contains(KEY));

    // A stream whose error chunk echoes the key is scrubbed the same way.
    let stream_server = MockServer::start().await;
    mount_sse(
        &stream_server,
        format!(
            "data: {}\n\n",
            json!({"error": {"message": format!("bad key {KEY}")}})
        ),
    )
    .await;
    let stream = model_for(&stream_server)
        .stream(&request(vec![Message::human("hi")]))
        .await
        .expect("stream opens");
    let events = events_of(stream).await;
    let error = events
        .last()
        .and_then(|event| event.as_ref().err())
        .expect("error item");
    assert_eq!(error.error_type, "APIError");
    assert!(!format!("{error} {error:?}").contains(KEY));
    assert!(error.message.contains(SECRET_REMOVED));
}

#[tokio::test]
async fn a_missing_key_fails_with_authentication_error_without_calling() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    for key in [None, Some("  ".to_string())] {
        let mut config = config(&server.uri());
        config.api_key = key.map(Into::into);
        let model = WireChatModel::new(&config, Api::ChatCompletions)
            .expect("a missing key is not a build error");
        let error = model
            .invoke(&request(vec![Message::human("hi")]))
            .await
            .expect_err("no key");
        assert_eq!(error.error_type, "AuthenticationError");
        assert_eq!(error.message, "no API key configured for model 'gpt-test'");
        assert_eq!(error.class(), ErrorClass::Auth);
        let error = model
            .stream(&request(vec![Message::human("hi")]))
            .await
            .err()
            .expect("no key");
        assert_eq!(error.error_type, "AuthenticationError");
    }
    let received = server.received_requests().await.expect("recording on");
    assert!(received.is_empty());
}

#[test]
fn build_resolves_base_url_model_id_and_rejects_bad_urls() {
    let mut config = ModelConfig::new("my-model", "openai");
    let model = WireChatModel::new(&config, Api::ChatCompletions).expect("defaults");
    assert_eq!(
        model.endpoint(),
        "https://api.openai.com/v1/chat/completions"
    );
    assert_eq!(model.model_id(), "my-model");
    assert_eq!(model.name(), "my-model");

    config.base_url = Some("http://localhost:8000/v1//".into());
    config.model = Some("qwen".into());
    let model = WireChatModel::new(&config, Api::ChatCompletions).expect("builds");
    assert_eq!(
        model.endpoint(),
        "http://localhost:8000/v1/chat/completions"
    );
    assert_eq!(model.model_id(), "qwen");

    for bad in ["not a url", "ftp://host/v1", "http://"] {
        config.base_url = Some(bad.into());
        let error = WireChatModel::new(&config, Api::ChatCompletions).expect_err(bad);
        assert_eq!(error.error_type, "ConfigurationError", "{bad}");
        assert!(error.message.contains("my-model"), "{}", error.message);
    }
}

#[tokio::test]
async fn a_json_answer_to_a_streaming_call_is_served_as_one_chunk() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "local",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "whole"}}]
        })))
        .mount(&server)
        .await;
    let stream = model_for(&server)
        .stream(&request(vec![Message::human("hi")]))
        .await
        .expect("stream opens");
    let events = ok_events(events_of(stream).await);
    assert_eq!(events[0], StreamEvent::Start);
    assert!(events.contains(&StreamEvent::Delta(Event::TextDelta {
        delta: "whole".into()
    })));
    let message = done_message(&events);
    assert_eq!(message.content, json!("whole"));
    assert_eq!(message.response_metadata["model_name"], "local");
}

/// Issue 21, finding 4: reads from the provider are bounded and linear. A long `data:` line
/// arriving in small pieces is parsed once (the time it takes is reported, not asserted); one
/// longer than the limit, a whole answer larger than its limit, fail the call; an error body is
/// read only as far as its detail needs.
#[tokio::test]
async fn provider_reads_are_bounded_and_a_long_line_is_parsed_once() {
    let long_text = "x".repeat(4 * 1024 * 1024);
    let mut body = sse_body(&[
        chunk(json!({"content": long_text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ])
    .into_bytes();
    let started = std::time::Instant::now();
    let events = ok_events(parse_in_pieces(&body, 1024).await);
    eprintln!(
        "a {} MiB line in 1 KiB pieces: {:?}",
        long_text.len() / (1024 * 1024),
        started.elapsed()
    );
    assert_eq!(done_message(&events).text(), long_text);

    // Past the line limit, with no line end in sight.
    body.truncate(20);
    body.extend(std::iter::repeat_n(b'x', stream::MAX_SSE_LINE_BYTES + 1));
    let events = parse_in_pieces(&body, 64 * 1024).await;
    assert!(
        matches!(events.last(), Some(Err(e)) if e.error_type == "RemoteProtocolError"
            && e.message.contains("longer than")),
        "{:?}",
        events.last()
    );

    let server = MockServer::start().await;
    let huge = format!(
        "{{\"choices\": [], \"pad\": \"{}\"}}",
        "y".repeat(33 * 1024 * 1024)
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(huge, "application/json"))
        .mount(&server)
        .await;
    let error = model_for(&server)
        .invoke(&request(vec![Message::human("hi")]))
        .await
        .expect_err("too large");
    assert_eq!(error.error_type, "APIResponseValidationError");
    assert!(error.message.contains("larger than"), "{}", error.message);

    // An error body far past its limit still reports the status and the start of the body.
    let detail = format!("bad request {}", "z".repeat(2 * 1024 * 1024));
    let error = error_for(400, json!({"error": {"message": detail}}), &[]).await;
    assert_eq!(error.status, Some(400));
    assert!(
        error.message.starts_with("Error code: 400 - ") && error.message.contains("bad request"),
        "{}",
        error.message
    );
}

/// Issue 21, finding 4: a cancelled call stops reading. The stream reads the provider's bytes
/// only when polled and owns the source, so dropping it (what cancelling a run does to its model
/// call) drops the connection at once; nothing goes on reading in the background.
#[tokio::test]
async fn dropping_a_streamed_answer_stops_reading_the_provider() {
    let (sender, receiver) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, ModelError>>();
    let first = format!(
        "data: {}\n\n",
        chunk(json!({"content": "Hel"}), Value::Null)
    );
    sender.unbounded_send(Ok(first.into_bytes())).expect("send");
    let mut events = sse_events(receiver, "m", Api::ChatCompletions);
    assert!(matches!(events.next().await, Some(Ok(StreamEvent::Start))));
    assert!(matches!(
        events.next().await,
        Some(Ok(StreamEvent::Delta(Event::TextStart)))
    ));
    assert!(!sender.is_closed(), "the provider is still being read");
    drop(events);
    assert!(sender.is_closed(), "the read stopped with the stream");
}

/// Ollama's native wire is the model server's alone: a gateway model at it is refused by name,
/// never sent to another wire.
#[test]
fn a_model_at_ollama_s_native_wire_is_refused() {
    for api in [Api::OllamaChat, Api::OllamaGenerate] {
        let Err(refused) = WireChatModel::new(&config("http://127.0.0.1:11434"), api) else {
            panic!("{api:?} was accepted");
        };
        assert_eq!(refused.error_type, "ConfigurationError");
        assert!(refused.message.contains(api.name()), "{}", refused.message);
    }
    assert!(!PROVIDER_APIS.contains(&Api::OllamaChat));
}
