//! Capture at the model boundary: a `ChatModel` wrapper that passes every call to the real
//! provider and keeps one fixture turn per call (`{caller, conversation_hash, input_hash,
//! output}`), hashing with the same code the replay model uses. This is how fixtures are built
//! from a run (DeerFlow's `record_gateway.py` capture hook).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use gateway_under_test::messages::Message;
use gateway_under_test::models::{ChatModel, EventStream, ModelError, ModelRequest};
use serde_json::{Value, json};

use crate::adapter::replay_model::{request_caller, request_messages};
use crate::core::{Turn, replay_key};

/// The turns captured so far, shared by every model the capture wraps.
#[derive(Debug, Clone, Default)]
pub struct CapturedTurns {
    turns: Arc<Mutex<Vec<Turn>>>,
}

impl CapturedTurns {
    /// The turns in capture order.
    pub fn turns(&self) -> Vec<Turn> {
        self.turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn push(&self, turn: Turn) {
        self.turns
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(turn);
    }
}

/// Wraps a real model and captures its calls.
#[derive(Debug)]
pub struct CapturingModel {
    inner: Arc<dyn ChatModel>,
    captured: CapturedTurns,
}

impl CapturingModel {
    /// Captures `inner`'s calls into `captured`.
    pub fn new(inner: Arc<dyn ChatModel>, captured: CapturedTurns) -> CapturingModel {
        CapturingModel { inner, captured }
    }

    fn turn(request: &ModelRequest, output: Option<Value>, error: Option<Value>) -> Turn {
        let key = replay_key(&request_caller(request), &request_messages(request));
        Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            output: output.unwrap_or(Value::Null),
            error,
            canonical: Some(key.canonical),
        }
    }
}

/// A recorded failure: `{"type", "message", "status"}`.
pub fn error_record(error: &ModelError) -> Value {
    json!({"type": error.error_type, "message": error.message, "status": error.status})
}

#[async_trait]
impl ChatModel for CapturingModel {
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        match self.inner.invoke(request).await {
            Ok(message) => {
                self.captured
                    .push(Self::turn(request, Some(message.to_typed_dump()), None));
                Ok(message)
            }
            Err(error) => {
                self.captured
                    .push(Self::turn(request, None, Some(error_record(&error))));
                Err(error)
            }
        }
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        // Captured as one turn per call: collect the stream, then hand the events on.
        let message = self.invoke(request).await?;
        Ok(Box::pin(futures::stream::iter(
            gateway_under_test::models::one_chunk_events(&message),
        )))
    }
}

/// The built-in OpenAI provider with every model it builds wrapped in a [`CapturingModel`].
pub fn capturing_openai_provider(
    captured: CapturedTurns,
) -> impl gateway_under_test::models::ModelProvider + 'static {
    use gateway_under_test::models::ModelProvider;
    move |entry: &gateway_under_test::config::ModelConfig,
          context: &gateway_under_test::models::ProviderContext| {
        let inner = gateway_under_test::models::openai::OpenAiProvider.build(entry, context)?;
        Ok(Arc::new(CapturingModel::new(inner, captured.clone())) as Arc<dyn ChatModel>)
    }
}
