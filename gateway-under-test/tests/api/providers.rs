//! The built-in providers through the whole gateway, at each wire (Chat Completions, the OpenAI
//! provider's `api = "responses"`, `use = "anthropic"`): a provider that fails once with the
//! wire's 503 and then answers (streamed or whole, as the call asks) is retried with an
//! `llm_retry` event, as the Chat Completions client is, and the run ends with the answer.

use gateway_under_test::config::ModelConfig;
use model_wire::chat_completions::{Answer, ChunkRenderer, Identity};
use model_wire::{anthropic_messages, responses};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::vocabulary::*;

/// A wire: its model entry's `use` and settings, the base URL's suffix and the endpoint.
struct Wire {
    name: &'static str,
    use_: &'static str,
    settings: Value,
    base_suffix: &'static str,
    endpoint: &'static str,
}

fn wires() -> [Wire; 3] {
    [
        Wire {
            name: "chat completions",
            use_: "openai",
            settings: json!({}),
            base_suffix: "/v1",
            endpoint: "/v1/chat/completions",
        },
        Wire {
            name: "responses",
            use_: "openai",
            settings: json!({"api": "responses"}),
            base_suffix: "/v1",
            endpoint: "/v1/responses",
        },
        Wire {
            name: "anthropic messages",
            use_: "anthropic",
            settings: json!({}),
            base_suffix: "",
            endpoint: "/v1/messages",
        },
    ]
}

fn identity() -> Identity {
    Identity {
        id: "answer-1".into(),
        model: "m".into(),
        created: 1,
    }
}

/// The answer `text` as one body at the wire (its `model_wire` renderer's).
fn whole(wire: &Wire, text: &str) -> Value {
    let answer = Answer::from_ai_message(&json!({"content": text}));
    match wire.endpoint {
        "/v1/responses" => responses::response(&identity(), &answer),
        "/v1/messages" => anthropic_messages::message(&identity(), &answer),
        _ => serde_json::to_value(model_wire::chat_completions::completion(
            &identity(),
            &answer,
        ))
        .unwrap_or_default(),
    }
}

/// The answer `text` as the wire streams it (its `model_wire` renderer's events).
fn streamed(wire: &Wire, text: &str) -> String {
    let identity = identity();
    let answer = Answer::from_ai_message(&json!({"content": text}));
    match wire.endpoint {
        "/v1/responses" => responses::stream_events(&identity, &answer, &[])
            .iter()
            .map(responses::SseEvent::frame)
            .collect(),
        "/v1/messages" => anthropic_messages::stream_events(&identity, &answer, &[])
            .iter()
            .map(anthropic_messages::SseEvent::frame)
            .collect(),
        _ => {
            let mut renderer = ChunkRenderer::new(identity);
            let mut chunks = vec![renderer.start()];
            chunks.extend(answer.events().iter().filter_map(|e| renderer.event(e)));
            chunks.extend(renderer.finish(&answer));
            let body: String = chunks
                .iter()
                .map(|chunk| format!("data: {}\n\n", chunk.to_value()))
                .collect();
            body + "data: [DONE]\n\n"
        }
    }
}

/// The wire's error body for a 503.
fn unavailable(wire: &Wire) -> Value {
    match wire.endpoint {
        "/v1/messages" => anthropic_messages::error_body("api_error", "try again"),
        _ => json!({"error": {"message": "try again", "type": "server_error"}}),
    }
}

#[tokio::test]
async fn each_wire_s_provider_is_retried_with_llm_retry_events_and_streams_its_answer() {
    for wire in wires() {
        let provider = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(wire.endpoint))
            .respond_with(ResponseTemplate::new(503).set_body_json(unavailable(&wire)))
            .up_to_n_times(1)
            .mount(&provider)
            .await;
        Mock::given(method("POST"))
            .and(path(wire.endpoint))
            .and(body_partial_json(json!({"stream": true})))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(streamed(&wire, "Hello from the wire."), "text/event-stream"),
            )
            .mount(&provider)
            .await;
        Mock::given(method("POST"))
            .and(path(wire.endpoint))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(whole(&wire, "Hello from the wire.")),
            )
            .mount(&provider)
            .await;
        let mut entry = ModelConfig::new("scripted-model", wire.use_);
        entry.api_key = Some("test-key".into());
        entry.base_url = Some(format!("{}{}", provider.uri(), wire.base_suffix));
        entry.settings = wire.settings.as_object().cloned().unwrap_or_default();
        let gateway = spawn_gateway_configured(move |config| config.models = vec![entry]).await;
        let (client, thread_id) = gateway.client_with_thread().await;
        let mut body = run_body("hi", json!({}));
        body["stream_mode"] = json!(["values", "custom"]);
        let transcript = client.stream_run(&thread_id, body).await;

        let retries: Vec<&Frame> = transcript
            .frames
            .iter()
            .filter(|f| f.event == "custom" && f.data["type"] == "llm_retry")
            .collect();
        assert_eq!(retries.len(), 1, "{}:\n{}", wire.name, transcript.raw);
        assert_eq!(retries[0].data["reason"], "transient", "{}", wire.name);
        assert_eq!(
            transcript.last_message()["content"],
            "Hello from the wire.",
            "{}:\n{}",
            wire.name,
            transcript.raw
        );
        assert_eq!(*transcript.events().last().unwrap(), "end", "{}", wire.name);
        let calls = provider.received_requests().await.unwrap_or_default();
        assert!(calls.len() >= 2, "{}: {} calls", wire.name, calls.len());
        gateway.stop().await;
    }
}
