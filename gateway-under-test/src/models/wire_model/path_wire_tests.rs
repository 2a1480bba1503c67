//! The provider at the two wires whose path names the model and the mode: Gemini (`use =
//! "gemini"`: `…/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`) and Bedrock
//! Converse (`use = "bedrock"`: `…/model/{modelId}/converse`, `/converse-stream`, AWS's binary
//! event stream). Each wire's answers are written by its `model_wire` renderer (the one the
//! harness's model server answers with, Converse's frames by `aws-smithy-eventstream`) and
//! served by wiremock: the streamed and the whole answer read as the same message, the request
//! goes to the wire's route with its credential and body, and a corrupt Converse frame fails the
//! call naming the frame.

use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};
use futures::StreamExt;
use model_wire::chat_completions::Answer;
use model_wire::{bedrock_converse, gemini};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::wire_tests::{
    KEY, assert_full_answer, built, config, conversation, done_message, full_answer, hi, identity,
};
use super::*;
use crate::models::StreamEvent;

/// The model id the tests call, with the `:` of a Bedrock id.
const MODEL: &str = "vendor.model-v1:0";

fn frame(event_type: &str, payload: &Value) -> Vec<u8> {
    let frame = Frame::new_from_parts(
        vec![
            Header::new(
                ":event-type",
                HeaderValue::String(event_type.to_owned().into()),
            ),
            Header::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ),
            Header::new(":message-type", HeaderValue::String("event".into())),
        ],
        payload.to_string().into_bytes(),
    );
    let mut bytes: Vec<u8> = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&frame, &mut bytes).expect("a frame");
    bytes
}

/// The answer's stream at `api`, as the wire's renderer writes it.
fn stream_bytes(api: Api, answer: &Answer) -> Vec<u8> {
    match api {
        Api::Gemini => gemini::stream_chunks(&identity(), answer, &[])
            .iter()
            .map(|chunk| format!("data: {chunk}\r\n\r\n"))
            .collect::<String>()
            .into_bytes(),
        _ => bedrock_converse::stream_events(&identity(), answer, &[])
            .iter()
            .flat_map(|event| frame(event.name, &event.payload))
            .collect(),
    }
}

fn whole_body(api: Api, answer: &Answer) -> Value {
    match api {
        Api::Gemini => gemini::response(&identity(), answer),
        _ => bedrock_converse::response(&identity(), answer),
    }
}

/// The routes a call at `api` goes to (whole, streamed), the model id as the wire encodes it.
fn routes(api: Api) -> (&'static str, &'static str, &'static str) {
    match api {
        Api::Gemini => (
            "/v1beta/models/vendor.model-v1%3A0:generateContent",
            "/v1beta/models/vendor.model-v1%3A0:streamGenerateContent",
            "text/event-stream",
        ),
        _ => (
            "/model/vendor.model-v1%3A0/converse",
            "/model/vendor.model-v1%3A0/converse-stream",
            "application/vnd.amazon.eventstream",
        ),
    }
}

const PATH_WIRES: [Api; 2] = [Api::Gemini, Api::BedrockConverse];

fn entry(api: Api, server: &MockServer) -> crate::config::ModelConfig {
    let mut entry = config(api, &server.uri());
    entry.model = Some(MODEL.into());
    entry
}

#[tokio::test]
async fn each_path_wire_reads_its_streamed_and_its_whole_answer_into_the_same_message() {
    for api in PATH_WIRES {
        let answer = full_answer();
        let (whole, streamed, kind) = routes(api);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(streamed))
            .respond_with(ResponseTemplate::new(200).set_body_raw(stream_bytes(api, &answer), kind))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(whole))
            .respond_with(ResponseTemplate::new(200).set_body_json(whole_body(api, &answer)))
            .mount(&server)
            .await;
        let model = built(&entry(api, &server)).expect("builds");
        let events: Vec<_> = model.stream(&hi()).await.expect("opens").collect().await;
        // A Converse answer names no model: the id asked for stands in the metadata.
        let named = |mut message: crate::messages::Message| {
            if api == Api::BedrockConverse {
                assert_eq!(message.response_metadata["model_name"], MODEL);
                message.response_metadata["model_name"] = json!("m-1-2026");
            }
            message
        };
        assert_full_answer(api, "streamed", &named(done_message(&events)));
        let whole = model.invoke(&hi()).await.expect("invoke");
        assert_full_answer(api, "whole", &named(whole));
        let sent = server.received_requests().await.expect("recording on");
        let header = |index: usize, name: &str| {
            sent[index]
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let bearer = format!("Bearer {KEY}");
        let credential = match api {
            Api::Gemini => ("x-goog-api-key", KEY),
            _ => ("authorization", bearer.as_str()),
        };
        for index in [0, 1] {
            assert_eq!(
                header(index, credential.0).as_deref(),
                Some(credential.1),
                "{api:?}"
            );
        }
        if api == Api::Gemini {
            assert_eq!(sent[0].url.query(), Some("alt=sse"), "the stream as SSE");
        }
    }
}

/// The body each path wire sends for the shared conversation, as its reference shows it.
#[tokio::test]
async fn each_path_wire_sends_the_conversation_in_its_own_terms() {
    let cases = [
        (
            Api::Gemini,
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "read it"}]},
                    {"role": "model", "parts": [{"text": "Reading."},
                        {"functionCall": {"id": "call_1", "name": "read_file", "args": {"path": "/mnt/a.txt"}}}]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"id": "call_1", "name": "read_file", "response": {"result": "hi"}}},
                        {"text": "and now?"}]}
                ],
                "systemInstruction": {"parts": [{"text": "be brief"}]},
                "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Read a file",
                    "parametersJsonSchema": {"type": "object"}}]}],
                "generationConfig": {"temperature": 0.5, "maxOutputTokens": 300}
            }),
        ),
        (
            Api::BedrockConverse,
            json!({
                "messages": [
                    {"role": "user", "content": [{"text": "read it"}]},
                    {"role": "assistant", "content": [{"text": "Reading."},
                        {"toolUse": {"toolUseId": "call_1", "name": "read_file", "input": {"path": "/mnt/a.txt"}}}]},
                    {"role": "user", "content": [
                        {"toolResult": {"toolUseId": "call_1", "content": [{"text": "hi"}]}},
                        {"text": "and now?"}]}
                ],
                "system": [{"text": "be brief"}],
                "toolConfig": {"tools": [{"toolSpec": {"name": "read_file", "description": "Read a file",
                    "inputSchema": {"json": {"type": "object"}}}}]},
                "inferenceConfig": {"maxTokens": 300, "temperature": 0.5}
            }),
        ),
    ];
    for (api, want) in cases {
        let (_, streamed, kind) = routes(api);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(streamed))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(stream_bytes(api, &full_answer()), kind),
            )
            .mount(&server)
            .await;
        let mut entry = entry(api, &server);
        entry.settings.insert("temperature".into(), json!(0.5));
        entry.settings.insert("max_tokens".into(), json!(300));
        let model = built(&entry).expect("builds");
        let events: Vec<_> = model
            .stream(&conversation())
            .await
            .expect("opens")
            .collect()
            .await;
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Done { .. }))),
            "{api:?}: {events:?}"
        );
        let sent = server.received_requests().await.expect("recording on");
        let body: Value = sent[0].body_json().expect("a JSON body");
        assert_eq!(body, want, "{api:?}");
    }
}

/// A Converse stream whose second frame's payload was altered (its message CRC no longer
/// matches) fails the call with a `RemoteProtocolError` naming the frame; a stream that ends
/// inside a frame fails too.
#[tokio::test]
async fn a_corrupt_or_cut_converse_frame_fails_the_call_naming_the_frame() {
    let body = stream_bytes(Api::BedrockConverse, &full_answer());
    let first = frame("messageStart", &json!({"role": "assistant"})).len();
    let mut corrupt = body.clone();
    corrupt[first + 20] ^= 0x01;
    let cut = body[..body.len() - 3].to_vec();
    for (bytes, want) in [
        (corrupt, "event stream frame 2 (counting from 1) is corrupt"),
        (cut, "the stream ended inside it"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(bytes, "application/vnd.amazon.eventstream"),
            )
            .mount(&server)
            .await;
        let model = built(&entry(Api::BedrockConverse, &server)).expect("builds");
        let events: Vec<_> = model.stream(&hi()).await.expect("opens").collect().await;
        let Some(Err(error)) = events.last() else {
            panic!("{want}: the call fails: {events:?}")
        };
        assert_eq!(error.error_type, "RemoteProtocolError", "{want}");
        assert!(error.message.contains(want), "{want}: {}", error.message);
    }
}

/// Without an API key, a Bedrock call is signed with SigV4 from the AWS credentials: the
/// signature names the key id, the region and the `bedrock` service, the session token goes in
/// `x-amz-security-token`, and no secret shows in the model's `Debug`. Without either, the call
/// fails with `AuthenticationError` before the network.
#[tokio::test]
async fn a_bedrock_call_without_an_api_key_is_signed_with_sigv4() {
    let (whole, _, _) = routes(Api::BedrockConverse);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(whole))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(whole_body(Api::BedrockConverse, &full_answer())),
        )
        .mount(&server)
        .await;
    let mut keyless = entry(Api::BedrockConverse, &server);
    keyless.api_key = None;
    let unsigned = WireChatModel::new(&keyless, Api::BedrockConverse).expect("builds");
    let refused = unsigned.invoke(&hi()).await.expect_err("no credential");
    assert_eq!(refused.error_type, "AuthenticationError");
    let aws = aws_sign::AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI-SECRET".into(),
        session_token: Some("session-SECRET".into()),
        region: "eu-west-1".into(),
    };
    let model = unsigned.with_aws(Some(aws));
    assert!(!format!("{model:?}").contains("SECRET"));
    model.invoke(&hi()).await.expect("a signed call");
    let sent = server.received_requests().await.expect("recording on");
    let header = |name: &str| {
        sent[0]
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let authorization = header("authorization");
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && authorization.contains("/eu-west-1/bedrock/aws4_request"),
        "{authorization}"
    );
    assert_eq!(header("x-amz-security-token"), "session-SECRET");
}

/// Issue 34, finding 7, at the path wires: a 307 to another origin is not followed, so neither
/// `x-goog-api-key` nor a Bedrock `authorization` reaches it.
#[tokio::test]
async fn each_path_wire_sends_no_credential_to_another_origin_a_redirect_names() {
    for api in PATH_WIRES {
        let answer = full_answer();
        let (_, _, kind) = routes(api);
        let elsewhere = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(stream_bytes(api, &answer), kind))
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
        let model = built(&entry(api, &origin)).expect("builds");
        let failed = match model.stream(&hi()).await {
            Err(_) => true,
            Ok(stream) => stream.collect::<Vec<_>>().await.iter().any(Result::is_err),
        };
        assert!(failed, "{api:?}: a redirect elsewhere is no answer");
        for request in elsewhere.received_requests().await.unwrap_or_default() {
            for header in ["authorization", "x-api-key", "x-goog-api-key"] {
                assert!(
                    !request.headers.contains_key(header),
                    "{api:?}: {header} reached another origin"
                );
            }
        }
    }
}
