//! The replay `ChatModel`: serves a fixture's recorded outputs to the real gateway by replay key.
//! Registered in the gateway's provider registry under [`REPLAY_PROVIDER`]; it opens no socket.
//!
//! [`REPLAY_PROVIDER`]: crate::adapter::hermetic::REPLAY_PROVIDER

use std::sync::Arc;

use async_trait::async_trait;
use gateway_under_test::config::ModelConfig;
use gateway_under_test::messages::Message;
use gateway_under_test::models::{
    ChatModel, ErrorClass, ModelError, ModelProvider, ModelRequest, ProviderContext,
};
use serde_json::Value;

use crate::core::{ReplayEngine, caller_identity};

/// The model. Tool binding is a no-op: the recorded tool calls drive the agent loop.
#[derive(Debug, Clone)]
pub struct ReplayChatModel {
    engine: Arc<ReplayEngine>,
}

impl ReplayChatModel {
    /// A model serving from `engine`.
    pub fn new(engine: Arc<ReplayEngine>) -> ReplayChatModel {
        ReplayChatModel { engine }
    }
}

/// The gateway-side view of a request, as the core hashes it: the flat message dumps.
pub fn request_messages(request: &ModelRequest) -> Vec<Value> {
    request.messages.iter().map(Message::to_dump).collect()
}

/// The replay caller of a request (`replay-and-fixtures.md` §4.7).
pub fn request_caller(request: &ModelRequest) -> String {
    caller_identity(&request.metadata.tags, request.metadata.run_name.as_deref())
}

#[async_trait]
impl ChatModel for ReplayChatModel {
    /// Non-streaming: the recorded AI message as it is, metadata included; a recorded error turn
    /// fails the same way again.
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        let caller = request_caller(request);
        let served = self
            .engine
            .lookup(&caller, &request_messages(request))
            .map_err(|miss| {
                ModelError::new("ReplayMiss", miss.to_string()).with_class(ErrorClass::Generic)
            })?;
        if let Some(error) = &served.error {
            return Err(recorded_error(error));
        }
        Message::from_json(&served.output).map_err(|err| {
            ModelError::new(
                "ReplayFixtureError",
                format!("turn {} output is not a message: {err}", served.turn_index),
            )
        })
    }
}

/// Rebuilds a recorded failure: `{"type", "message", "status"?}`.
fn recorded_error(error: &Value) -> ModelError {
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("APIError");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("recorded error");
    let mut rebuilt = ModelError::new(kind, message);
    if let Some(status) = error.get("status").and_then(Value::as_u64) {
        rebuilt = rebuilt.with_status(status as u16);
    }
    rebuilt
}

/// The provider: every configured entry that names it gets a model over the same engine, and
/// ignores `model`, `api_key` and `base_url`.
pub fn replay_provider(engine: Arc<ReplayEngine>) -> impl ModelProvider + 'static {
    move |_: &ModelConfig, _: &ProviderContext| {
        Ok(Arc::new(ReplayChatModel::new(engine.clone())) as Arc<dyn ChatModel>)
    }
}
