//! The replay `ChatModel`: serves a fixture's recorded outputs to the real gateway by replay key.
//! Registered in the gateway's provider registry under [`REPLAY_PROVIDER`]; it opens no socket.
//!
//! [`REPLAY_PROVIDER`]: crate::adapter::hermetic::REPLAY_PROVIDER

use std::sync::Arc;

use async_trait::async_trait;
use gateway_under_test::config::ModelConfig;
use gateway_under_test::messages::Message;
use gateway_under_test::models::{
    ChatModel, ErrorClass, EventStream, ModelError, ModelProvider, ModelRequest, ProviderContext,
    into_one_chunk_events,
};
use serde_json::Value;

use replay_core::{
    Answer, LookupError, RecordedError, ReplayEngine, Served, caller_identity, names_caller,
};

/// The model. Tool binding is a no-op: the recorded tool calls drive the agent loop.
#[derive(Debug, Clone)]
pub(crate) struct ReplayChatModel {
    engine: Arc<ReplayEngine>,
    /// Each turn's recorded output parsed once, by turn index (`None` for a recorded error):
    /// a call hands the runtime a copy of the typed message, never JSON to parse again.
    outputs: Arc<[Option<Result<Message, String>>]>,
}

impl ReplayChatModel {
    /// A model serving from `engine`.
    pub(crate) fn new(engine: Arc<ReplayEngine>) -> ReplayChatModel {
        let outputs = parsed_outputs(&engine);
        ReplayChatModel { engine, outputs }
    }
}

/// The fixture's outputs as messages, by turn index.
fn parsed_outputs(engine: &ReplayEngine) -> Arc<[Option<Result<Message, String>>]> {
    engine
        .fixture()
        .turns
        .iter()
        .map(|turn| match &turn.answer {
            Answer::Output(output) => Some(Message::from_json(output)),
            Answer::Error(_) => None,
        })
        .collect()
}

/// The gateway-side view of a request, as the core hashes it: the flat message dumps.
pub(crate) fn request_messages(request: &ModelRequest) -> Vec<Value> {
    request.messages.iter().map(|m| m.to_dump()).collect()
}

/// The replay caller of a request (`docs/replay-and-fixtures.md` §4.7).
pub(crate) fn request_caller(request: &ModelRequest) -> String {
    caller_identity(&request.metadata.tags, request.metadata.run_name.as_deref())
}

#[async_trait]
impl ChatModel for ReplayChatModel {
    /// Non-streaming: the recorded AI message as it is, metadata included; a recorded error turn
    /// fails the same way again.
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        let served = self.lookup(request).map_err(|error| {
            let kind = match error {
                LookupError::Miss(_) => "ReplayMiss",
                LookupError::Ambiguous(_) | LookupError::AmbiguousCaller { .. } => {
                    "ReplayAmbiguous"
                }
            };
            ModelError::new(kind, error.to_string()).with_class(ErrorClass::Generic)
        })?;
        if let Answer::Error(error) = &served.answer {
            return Err(recorded_error(error));
        }
        match self.outputs.get(served.turn_index) {
            Some(Some(Ok(message))) => Ok(message.clone()),
            Some(Some(Err(err))) => Err(ModelError::new(
                "ReplayFixtureError",
                format!("turn {} output is not a message: {err}", served.turn_index),
            )),
            // The engine served a turn of its own fixture, whose outputs were all parsed above.
            Some(None) | None => Err(ModelError::new(
                "ReplayFixtureError",
                format!("turn {} has no recorded output", served.turn_index),
            )),
        }
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        self.stream_one_chunk(request).await
    }
}

impl ReplayChatModel {
    /// The engine's answer for `request`: a call whose tags or run name name its caller is served
    /// in recorded order; one that names none (the lead agent) is a call without a caller, for
    /// which a key with several different answers is an ambiguity
    /// (`docs/replay-and-fixtures.md` §5.6).
    fn lookup(&self, request: &ModelRequest) -> Result<Served, LookupError> {
        let metadata = &request.metadata;
        let messages = request_messages(request);
        if names_caller(&metadata.tags, metadata.run_name.as_deref()) {
            self.engine
                .lookup(&request_caller(request), &messages)
                .map_err(|miss| LookupError::Miss(Box::new(miss)))
        } else {
            self.engine.lookup_unnamed(&messages)
        }
    }

    /// Streaming: the recorded message as **one** chunk carrying content, tool calls,
    /// `additional_kwargs` and id, without response or usage metadata (as DeerFlow's replay
    /// model streams).
    pub(crate) async fn stream_one_chunk(
        &self,
        request: &ModelRequest,
    ) -> Result<EventStream, ModelError> {
        let mut message = self.invoke(request).await?;
        message.response_metadata.clear();
        message.usage_metadata = None;
        Ok(Box::pin(futures::stream::iter(into_one_chunk_events(
            message,
        ))))
    }
}

/// Rebuilds a recorded failure as the gateway's error.
fn recorded_error(error: &RecordedError) -> ModelError {
    let mut rebuilt = ModelError::new(&error.error_type, &error.message);
    if let Some(status) = error.status {
        rebuilt = rebuilt.with_status(status);
    }
    if error.in_stream {
        rebuilt = rebuilt.reported_in_stream();
    }
    rebuilt
}

/// The provider: every configured entry that names it gets a model over the same engine, and
/// ignores `model`, `api_key` and `base_url`.
pub(crate) fn replay_provider(engine: Arc<ReplayEngine>) -> impl ModelProvider + 'static {
    // One model, its outputs parsed once, shared by every configured entry.
    let model = ReplayChatModel::new(engine);
    move |_: &ModelConfig, _: &ProviderContext| Ok(Arc::new(model.clone()) as Arc<dyn ChatModel>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use gateway_under_test::models::{CallMetadata, StreamEvent};
    use model_wire::Event;
    use replay_core::{Fixture, Scenario, Turn, UiMode, replay_key};
    use serde_json::json;

    fn engine_with_answer() -> (Arc<ReplayEngine>, ModelRequest) {
        let request = ModelRequest {
            messages: vec![{
                let mut human = Message::human("hello");
                human.name = Some("user-input".into());
                human.into()
            }],
            tools: Vec::new(),
            metadata: CallMetadata::default(),
            options: Default::default(),
        };
        let key = replay_key("lead_agent", &request_messages(&request));
        let output = json!({"type": "ai", "data": {"content": "hi", "type": "ai", "id": "lc_run--1",
            "response_metadata": {"finish_reason": "stop"}, "usage_metadata": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
            "tool_calls": [{"name": "ls", "args": {"path": "/"}, "id": "call_1", "type": "tool_call"}]}});
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "hello"),
            turns: vec![Turn {
                caller: Some(key.caller),
                conversation_hash: Some(key.conversation_hash),
                input_hash: key.input_hash,
                answer: Answer::Output(output),
                canonical: None,
            }],
            provenance: None,
            exchanges: Vec::new(),
        };
        (
            Arc::new(ReplayEngine::new(fixture, "f.json").unwrap()),
            request,
        )
    }

    #[tokio::test]
    async fn invoke_returns_the_recorded_message_with_its_metadata() {
        let (engine, request) = engine_with_answer();
        let message = ReplayChatModel::new(engine).invoke(&request).await.unwrap();
        assert_eq!(
            message.id.as_deref(),
            Some("lc_run--1"),
            "recorded ids are reused"
        );
        assert_eq!(message.response_metadata["finish_reason"], "stop");
        assert!(message.usage_metadata.is_some());
    }

    #[tokio::test]
    async fn parallel_nodes_without_a_caller_are_ambiguous_in_process() {
        let (engine, request) = engine_with_answer();
        let mut fixture = engine.fixture().clone();
        let mut other = fixture.turns[0].clone();
        other.answer = Answer::Output(
            json!({"type": "ai", "data": {"content": "the other node", "type": "ai"}}),
        );
        fixture.turns.push(other);
        let engine = Arc::new(ReplayEngine::new(fixture, "f.json").unwrap());
        let model = ReplayChatModel::new(engine.clone());
        let error = model.invoke(&request).await.expect_err("ambiguous");
        assert_eq!(error.error_type, "ReplayAmbiguous", "{error:?}");
        assert_eq!(engine.ambiguities().len(), 1);
        assert!(engine.misses().is_empty());
        // A node that names itself (a caller tag) is served in recorded order.
        let mut named = request.clone();
        named.metadata.tags = vec!["lead_agent".into()];
        let message = model.invoke(&named).await.expect("named");
        assert_eq!(message.id.as_deref(), Some("lc_run--1"));
    }

    #[tokio::test]
    async fn streaming_yields_one_chunk_without_response_or_usage_metadata() {
        let (engine, request) = engine_with_answer();
        let events: Vec<StreamEvent> = ReplayChatModel::new(engine)
            .stream(&request)
            .await
            .unwrap()
            .map(|event| event.unwrap())
            .collect()
            .await;
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Delta(Event::TextDelta { .. })))
            .count();
        assert_eq!(deltas, 1, "the text arrives as one chunk");
        let Some(StreamEvent::Done { message }) = events.last() else {
            panic!("{events:?}")
        };
        assert!(message.response_metadata.is_empty());
        assert_eq!(message.usage_metadata, None);
        assert_eq!(message.tool_calls[0].name, "ls");
        assert_eq!(message.id.as_deref(), Some("lc_run--1"));
    }

    #[tokio::test]
    async fn a_miss_is_a_generic_error_and_lands_in_the_ledger() {
        let (engine, mut request) = engine_with_answer();
        std::sync::Arc::make_mut(&mut request.messages[0]).content = json!("something else");
        let error = ReplayChatModel::new(engine.clone())
            .invoke(&request)
            .await
            .unwrap_err();
        assert_eq!(error.error_type, "ReplayMiss");
        assert_eq!(error.class(), ErrorClass::Generic, "never retried");
        assert_eq!(engine.misses().len(), 1);
    }
}
