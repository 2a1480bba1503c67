//! A model stream that fails midway: what the failed attempt streamed must not read as part of
//! the answer. Its chunks end with a terminator whose `finish_reason` is `error`, and the retry's
//! answer streams under another id.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use gateway_under_test::config::ModelConfig;
use gateway_under_test::messages::Message;
use gateway_under_test::models::{
    ChatModel, ErrorClass, EventStream, ModelError, ModelRequest, StreamEvent,
};
use model_wire::Event;
use serde_json::{Value, json};

use crate::vocabulary::{GatewayOptions, run_body, spawn_gateway_with, ultra_context};

/// Streams two text deltas and then fails (transient) on its first call; answers in one piece
/// after that.
#[derive(Debug, Default)]
struct FailsMidway {
    calls: AtomicU32,
}

#[async_trait]
impl ChatModel for FailsMidway {
    async fn invoke(&self, _: &ModelRequest) -> Result<Message, ModelError> {
        Ok(Message::ai("title", Vec::new()))
    }

    async fn stream(&self, _: &ModelRequest) -> Result<EventStream, ModelError> {
        let events = if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            vec![
                Ok(StreamEvent::Start),
                Ok(StreamEvent::Delta(Event::TextDelta {
                    delta: "half of ".into(),
                })),
                Ok(StreamEvent::Delta(Event::TextDelta {
                    delta: "an answ".into(),
                })),
                Err(ModelError::new("APIConnectionError", "connection reset")
                    .with_class(ErrorClass::Transient)),
            ]
        } else {
            gateway_under_test::models::one_chunk_events(&Message::ai("the answer", Vec::new()))
        };
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[tokio::test]
async fn a_stream_that_fails_midway_is_closed_as_failed_and_the_retry_streams_apart() {
    let gateway = spawn_gateway_with(GatewayOptions {
        extend: Box::new(|builder| {
            let model = Arc::new(FailsMidway::default());
            builder.provider("scripted", move |_: &ModelConfig, _: &_| {
                Ok(model.clone() as Arc<dyn ChatModel>)
            })
        }),
        ..Default::default()
    })
    .await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let mut body = run_body("hi", ultra_context());
    body["stream_mode"] = json!(["values", "messages-tuple"]);
    let transcript = client.stream_run(&thread_id, body).await;

    // Per AI message id: its streamed text and how its last chunk ended.
    let mut streamed: Vec<(String, String, Value)> = Vec::new();
    for frame in transcript.frames.iter().filter(|f| f.event == "messages") {
        let chunk = &frame.data[0];
        if chunk["type"] != "AIMessageChunk" {
            continue;
        }
        let id = chunk["id"].as_str().unwrap_or_default().to_owned();
        let text = chunk["content"].as_str().unwrap_or_default();
        let index = match streamed.iter().position(|(seen, ..)| *seen == id) {
            Some(index) => index,
            None => {
                streamed.push((id, String::new(), Value::Null));
                streamed.len() - 1
            }
        };
        streamed[index].1.push_str(text);
        if chunk["chunk_position"] == "last" {
            streamed[index].2 = chunk["response_metadata"]["finish_reason"].clone();
        }
    }
    let failed: Vec<_> = streamed
        .iter()
        .filter(|(_, text, _)| text.starts_with("half"))
        .collect();
    assert_eq!(failed.len(), 1, "{streamed:?}\n{}", transcript.raw);
    assert_eq!(
        failed[0].2, "error",
        "the failed attempt is closed as failed: {streamed:?}"
    );
    let answer = streamed.iter().find(|(_, text, _)| text == "the answer");
    let answer = answer.unwrap_or_else(|| panic!("the retry streams apart: {streamed:?}"));
    assert_ne!(answer.0, failed[0].0);
    assert_eq!(transcript.last_message()["content"], "the answer");
}
