//! Provider-boundary recording and strict replay for the gateway's `ChatModel`s
//! (`docs/recording-format.md`): a wrapper that writes each call's request, every streamed event
//! (before passing it on) and its `call_end` to a versioned JSONL recording; a strict replay
//! model that serves a recording call by call, chunk by chunk; and the fail-closed model used
//! when the record/replay configuration is invalid.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use gateway_under_test::messages::Message;
use gateway_under_test::models::{
    ChatModel, ErrorClass, EventStream, ModelError, ModelProvider, ModelRequest, ProviderContext,
    StreamEvent, collect_stream,
};
use serde_json::{Map, Value, json};

use crate::adapter::replay_model::{request_caller, request_messages};
use keyless_runner::server::normalized;
use replay_core::recording::{
    CallWriter, Outcome, RecordedEvent, RecordedRequest, RecordingSink, StrictReplayError,
    StrictReplayer, redact,
};
use replay_core::replay_key;

/// The provider-boundary view of a request. `model` names the configured model (the same name
/// when recording and replaying); `context` holds the caller identity, both replay hashes and the
/// canonical conversation they hash (so a fixture built from the recording can explain misses),
/// the messages as a provider receives them and the bound tools; `options` the call options.
///
/// Text in the messages is normalised (`core::normalize`: dates, UUIDs, timestamps, temporary
/// paths) before it is stored or compared, so a strict replay survives a new day; the replay
/// hashes are computed from the raw messages with the one hashing function of the core.
pub(crate) fn recorded_request(model_name: &str, request: &ModelRequest) -> RecordedRequest {
    let raw = request_messages(request);
    let key = replay_key(&request_caller(request), &raw);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| provider_message(m))
        .collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "parameters": tool.parameters}))
        .collect();
    RecordedRequest {
        model: json!({"name": model_name}),
        context: json!({
            "caller": key.caller,
            "conversation_hash": key.conversation_hash,
            "input_hash": key.input_hash,
            "canonical": key.canonical,
            "messages": messages,
            "tools": tools,
        }),
        options: json!({
            "thinking_enabled": request.options.thinking_enabled,
            "reasoning_effort": request.options.reasoning_effort,
            "tags": request.metadata.tags,
            "run_name": request.metadata.run_name,
        }),
    }
}

/// One message as a provider sees it: type, content, name, tool calls, tool call id; ids and
/// framework metadata left out, volatile text normalised.
fn provider_message(message: &Message) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(message.kind.as_str()));
    out.insert("content".into(), normalized(&message.content));
    if let Some(name) = &message.name {
        out.insert("name".into(), json!(name));
    }
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|call| json!({"name": call.name, "args": normalized(&call.args), "id": call.id}))
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &message.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(out)
}

fn recording_error(error: impl std::fmt::Display) -> ModelError {
    ModelError::new("RecordingError", error.to_string()).with_class(ErrorClass::Generic)
}

/// The gateway's stream event as the recording's event (`docs/recording-format.md` §2.2). A
/// function, not a `From`: both types belong to other crates, and the gateway knows nothing of
/// recordings.
pub(crate) fn recorded_event(event: &StreamEvent) -> RecordedEvent {
    match event {
        StreamEvent::Start => RecordedEvent::Start,
        StreamEvent::Delta(delta) => RecordedEvent::Delta(delta.clone()),
        StreamEvent::Done { message } => RecordedEvent::done(message.to_dump_map()),
        StreamEvent::Error { message } => RecordedEvent::Error {
            message: message.clone(),
            error_type: None,
            status: None,
            in_stream: false,
        },
    }
}

/// The recording's event as the gateway's stream event; fails when a `done` message does not
/// read as a message. An `error` event becomes the stream's own error event (its provider
/// failure, if any, is for [`replayed_events`] to raise).
pub(crate) fn stream_event(event: RecordedEvent) -> Result<StreamEvent, String> {
    Ok(match event {
        RecordedEvent::Start => StreamEvent::Start,
        RecordedEvent::Delta(delta) => StreamEvent::Delta(delta),
        RecordedEvent::Done { message } => {
            let message = Message::from_json(&Value::Object(message))
                .map_err(|err| format!("bad final message: {err}"))?;
            StreamEvent::done(message)
        }
        RecordedEvent::Error { message, .. } => StreamEvent::Error { message },
    })
}

/// The error event written before `call_end` when the provider fails, so a fixture built from
/// the recording can replay the same failure. The writer redacts it like everything else.
fn failure_event(error: &ModelError) -> RecordedEvent {
    RecordedEvent::Error {
        message: error.message.clone(),
        error_type: Some(error.error_type.clone()),
        // Written even when `null`, as it always was.
        status: Some(error.status),
        // A failure the provider reported inside a 200 answer replays inside one
        // (`docs/recording-format.md` §2.2).
        in_stream: error.in_stream,
    }
}

/// Records the provider's failure in `call` and returns the error the gateway gets: the one
/// written, redacted, as a replay of this recording will hand it over. Passing the original on
/// would let the live run continue on a conversation (the error middleware's fallback message,
/// the suggestions built from it) that no replay produces. What the event does not hold (a
/// forced class, a `Retry-After`) carries no text and is kept.
fn record_failure(call: &mut CallWriter, error: ModelError) -> ModelError {
    let event = failure_event(&error);
    // When the row cannot be written, the gateway still gets the redacted text.
    let written = call
        .event(&event)
        .ok()
        .or_else(|| RecordedEvent::parse(&redact(&event.to_value())).ok());
    match written {
        Some(RecordedEvent::Error {
            message,
            error_type,
            ..
        }) => ModelError {
            message,
            error_type: error_type.unwrap_or_else(|| error.error_type.clone()),
            ..error
        },
        _ => ModelError {
            message: String::new(),
            ..error
        },
    }
}

/// Wraps the real model and records every call to a shared sink.
#[derive(Debug)]
pub(crate) struct RecordingChatModel {
    inner: Arc<dyn ChatModel>,
    sink: Arc<RecordingSink>,
    model_name: String,
}

impl RecordingChatModel {
    /// Records `inner` (configured as `model_name`) into `sink`.
    pub(crate) fn new(
        inner: Arc<dyn ChatModel>,
        sink: Arc<RecordingSink>,
        model_name: &str,
    ) -> Self {
        RecordingChatModel {
            inner,
            sink,
            model_name: model_name.to_string(),
        }
    }

    /// Starts the call: the request row first, then the source stream, created inside the
    /// guarded section so a provider that fails at start is recorded with outcome `error`.
    async fn start(&self, request: &ModelRequest) -> Result<(CallWriter, EventStream), ModelError> {
        let mut call = self
            .sink
            .begin_call(&recorded_request(&self.model_name, request))
            .map_err(recording_error)?;
        match self.inner.stream(request).await {
            Ok(source) => Ok((call, source)),
            Err(error) => {
                let error = record_failure(&mut call, error);
                call.end(Outcome::Error).map_err(recording_error)?;
                Err(error)
            }
        }
    }
}

/// Passes `source` on, writing each event before yielding it; closes the call at the first
/// terminal event (later ones are dropped), on a provider error, or when the source ends.
///
/// The event passed on is the redacted one, as written. Redaction can rewrite ordinary prose
/// (`key points`); passing the written text on keeps the live run on exactly the conversation a
/// replay of this recording will produce, so the replay keys of later calls still match.
fn recorded_stream(call: CallWriter, source: EventStream) -> EventStream {
    let state = (Some(call), source);
    Box::pin(futures::stream::unfold(
        state,
        |(call, mut source)| async move {
            let mut call = call?;
            match source.next().await {
                Some(Ok(event)) => {
                    let written = match call.event(&recorded_event(&event)) {
                        Ok(written) => written,
                        Err(err) => return Some((Err(recording_error(err)), (None, source))),
                    };
                    let event = match passed_on(written) {
                        Ok(event) => event,
                        Err(err) => {
                            let err = record_failure(&mut call, err);
                            let _ = call.end(Outcome::Error);
                            return Some((Err(err), (None, source)));
                        }
                    };
                    let terminal =
                        matches!(event, StreamEvent::Done { .. } | StreamEvent::Error { .. });
                    if terminal {
                        if let Err(err) = call.end(Outcome::Complete) {
                            return Some((Err(recording_error(err)), (None, source)));
                        }
                        return Some((Ok(event), (None, source)));
                    }
                    Some((Ok(event), (Some(call), source)))
                }
                Some(Err(error)) => {
                    let error = record_failure(&mut call, error);
                    let _ = call.end(Outcome::Error);
                    Some((Err(error), (None, source)))
                }
                None => {
                    let _ = call.end(Outcome::Complete);
                    None
                }
            }
        },
    ))
}

/// The event the run continues with: the redacted one, as written. When redaction has made it
/// unreadable, the call fails: passing the unredacted original on would let the live run
/// continue on a conversation its recording does not hold (and a secret into the state).
fn passed_on(written: RecordedEvent) -> Result<StreamEvent, ModelError> {
    stream_event(written).map_err(|err| {
        ModelError::new(
            "RecordingError",
            format!("the redacted model event no longer reads as an event ({err}); the call fails rather than pass the unredacted one on"),
        )
    })
}

#[async_trait]
impl ChatModel for RecordingChatModel {
    /// Records through the streaming path (the recording format is a stream of events) and
    /// folds the events into the message. Dropping this future mid-call is a cancellation.
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        let (mut call, source) = self.start(request).await?;
        call.set_drop_outcome(Outcome::Cancelled);
        collect_stream(recorded_stream(call, source)).await
    }

    /// Records and passes the events on; a consumer that stops early leaves `abandoned`.
    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let (call, source) = self.start(request).await?;
        Ok(recorded_stream(call, source))
    }
}

/// Wraps every model a provider builds in a [`RecordingChatModel`] over one shared sink.
pub(crate) fn recording_provider(
    inner: Arc<dyn ModelProvider>,
    sink: Arc<RecordingSink>,
) -> Arc<dyn ModelProvider> {
    Arc::new(
        move |entry: &gateway_under_test::config::ModelConfig, context: &ProviderContext| {
            let model = inner.build(entry, context)?;
            Ok(
                Arc::new(RecordingChatModel::new(model, sink.clone(), &entry.name))
                    as Arc<dyn ChatModel>,
            )
        },
    )
}

/// Serves a recording strictly, call by call, for every configured model: each request must
/// equal the recorded one at the same index (after redaction; `timestamp` skipped), and the
/// recorded events are replayed one by one, so a streaming client sees the recorded chunks.
#[derive(Debug)]
pub(crate) struct StrictReplayChatModel {
    replayer: Arc<StrictReplayer>,
    model_name: String,
}

impl StrictReplayChatModel {
    /// A model named `model_name` served by `replayer`.
    pub(crate) fn new(replayer: Arc<StrictReplayer>, model_name: &str) -> Self {
        StrictReplayChatModel {
            replayer,
            model_name: model_name.to_string(),
        }
    }
}

/// The recorded events as model events; a recorded provider failure (an `error` event with an
/// `error_type`) fails the call the same way.
fn replayed_events(events: Vec<RecordedEvent>) -> Vec<Result<StreamEvent, ModelError>> {
    events
        .into_iter()
        .map(|event| match event {
            RecordedEvent::Error {
                message,
                error_type,
                status,
                in_stream,
            } => {
                let kind = error_type.as_deref().unwrap_or("APIError");
                let mut error = ModelError::new(kind, message);
                if let Some(status) = status.flatten() {
                    error = error.with_status(status);
                }
                if in_stream {
                    error = error.reported_in_stream();
                }
                Err(error)
            }
            event => {
                let shown = event.to_value();
                stream_event(event).map_err(|err| {
                    ModelError::new("RecordingError", format!("recorded event {shown}: {err}"))
                })
            }
        })
        .collect()
}

#[async_trait]
impl ChatModel for StrictReplayChatModel {
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        collect_stream(self.stream(request).await?).await
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let incoming = recorded_request(&self.model_name, request);
        match self.replayer.next_call(&incoming) {
            Ok(events) => Ok(Box::pin(futures::stream::iter(replayed_events(events)))),
            Err(error) => {
                let message = error.to_string();
                let kind = match error {
                    StrictReplayError::Mismatch(_) => "ReplayMismatch",
                    StrictReplayError::Recording(_) => "RecordingFileError",
                };
                Err(ModelError::new(kind, message).with_class(ErrorClass::Generic))
            }
        }
    }
}

/// A provider that serves every configured entry from one strict replayer.
pub(crate) fn strict_replay_provider(replayer: Arc<StrictReplayer>) -> Arc<dyn ModelProvider> {
    Arc::new(
        move |entry: &gateway_under_test::config::ModelConfig, _: &ProviderContext| {
            Ok(
                Arc::new(StrictReplayChatModel::new(replayer.clone(), &entry.name))
                    as Arc<dyn ChatModel>,
            )
        },
    )
}

/// The fail-closed model installed when the record/replay configuration is invalid: the
/// gateway stays up, and every model call fails with a message naming the recovery commands.
/// It never resolves a credential and never opens a socket.
#[derive(Debug, Clone)]
pub(crate) struct BlockedChatModel {
    message: String,
}

#[async_trait]
impl ChatModel for BlockedChatModel {
    async fn invoke(&self, _request: &ModelRequest) -> Result<Message, ModelError> {
        Err(ModelError::new("RecordReplayBlocked", self.message.clone())
            .with_class(ErrorClass::Generic))
    }
}

/// A provider building only [`BlockedChatModel`]s.
pub(crate) fn blocked_provider(message: &str) -> Arc<dyn ModelProvider> {
    let model = BlockedChatModel {
        message: message.to_string(),
    };
    Arc::new(
        move |_: &gateway_under_test::config::ModelConfig, _: &ProviderContext| {
            Ok(Arc::new(model.clone()) as Arc<dyn ChatModel>)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_under_test::models::CallMetadata;
    use model_wire::Event;
    use replay_core::recording::{Access, read_recording};

    #[test]
    fn an_event_redaction_made_unreadable_fails_the_call_instead_of_passing_the_original_on() {
        let readable = RecordedEvent::Delta(Event::TextDelta {
            delta: "hello".into(),
        });
        assert!(passed_on(readable).is_ok());
        // A final message whose tool call redaction replaced with text (as it would one under a
        // secret-looking key).
        let unreadable = json!({"type": "ai", "content": "", "tool_calls": ["[secret removed]"]});
        let unreadable = RecordedEvent::done(unreadable.as_object().unwrap().clone());
        let err = passed_on(unreadable).expect_err("unreadable");
        assert_eq!(err.error_type, "RecordingError");
        assert!(err.message.contains("unredacted"), "{}", err.message);
    }

    #[test]
    fn the_gateway_events_are_recorded_in_the_form_they_always_had() {
        let message = Message::from_json(&json!({"type": "ai", "content": "hi", "id": "m1",
            "tool_calls": [{"name": "ls", "args": {"path": "/"}, "id": "c1"}]}))
        .unwrap();
        let written: Vec<Value> = gateway_under_test::models::one_chunk_events(&message)
            .into_iter()
            .map(|event| recorded_event(&event.unwrap()).to_value())
            .collect();
        // The serde form the gateway's own `StreamEvent` derived before the format had its own
        // event (tag `type`, snake case; `done` the flat message dump).
        let before = vec![
            json!({"type": "start"}),
            json!({"type": "text_start"}),
            json!({"type": "text_delta", "delta": "hi"}),
            json!({"type": "text_end"}),
            json!({"type": "toolcall_start", "index": 0, "id": "c1", "name": "ls"}),
            json!({"type": "toolcall_delta", "index": 0, "delta": "{\"path\":\"/\"}"}),
            json!({"type": "toolcall_end", "index": 0}),
            json!({"type": "done", "message": message.to_dump()}),
        ];
        assert_eq!(written, before);
        let failure = ModelError::new("APIError", "boom").reported_in_stream();
        assert_eq!(
            failure_event(&failure).to_value(),
            json!({"type": "error", "message": "boom", "error_type": "APIError",
                   "status": null, "in_stream": true})
        );
        let stream_error = StreamEvent::Error {
            message: "cut".into(),
        };
        assert_eq!(
            recorded_event(&stream_error).to_value(),
            json!({"type": "error", "message": "cut"})
        );
        // And back: what the replay hands the gateway is the event it recorded.
        for event in gateway_under_test::models::one_chunk_events(&message) {
            let event = event.unwrap();
            assert_eq!(stream_event(recorded_event(&event)).unwrap(), event);
        }
    }

    /// A provider whose behaviour each test picks.
    #[derive(Debug, Clone, Copy)]
    enum Script {
        /// `start`, a text delta, `done`, then a second `done` that must be dropped.
        Answer,
        /// Fails before streaming anything.
        FailAtStart,
        /// Streams a delta, then fails.
        FailMidway,
        /// Streams a delta, then never finishes.
        Hang,
    }

    #[derive(Debug)]
    struct Scripted(Script);

    #[async_trait]
    impl ChatModel for Scripted {
        async fn invoke(&self, _: &ModelRequest) -> Result<Message, ModelError> {
            unreachable!("the recording model always streams")
        }

        async fn stream(&self, _: &ModelRequest) -> Result<EventStream, ModelError> {
            let done = StreamEvent::done(Message::ai("hi", Vec::new()));
            let delta = StreamEvent::Delta(Event::TextDelta { delta: "hi".into() });
            let broken = ModelError::new(
                "RemoteProtocolError",
                "stream broke: Authorization Bearer sk-abcdefghijklmnop",
            )
            .with_status(502);
            let events: EventStream = match self.0 {
                Script::Answer => Box::pin(futures::stream::iter(vec![
                    Ok(StreamEvent::Start),
                    Ok(delta),
                    Ok(done.clone()),
                    Ok(done),
                ])),
                Script::FailAtStart => {
                    return Err(ModelError::new(
                        "AuthenticationError",
                        "Invalid key Bearer sk-abcdefghijklmnop",
                    )
                    .with_status(401));
                }
                Script::FailMidway => Box::pin(futures::stream::iter(vec![Ok(delta), Err(broken)])),
                Script::Hang => Box::pin(
                    futures::stream::iter(vec![Ok(delta)]).chain(futures::stream::pending()),
                ),
            };
            Ok(events)
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            messages: vec![Message::human("hello").into()],
            tools: Vec::new(),
            metadata: CallMetadata::default(),
            options: Default::default(),
        }
    }

    fn model(script: Script, folder: &std::path::Path) -> (RecordingChatModel, std::path::PathBuf) {
        let path = folder.join("r.jsonl");
        let sink = Arc::new(RecordingSink::open(&path).unwrap());
        (
            RecordingChatModel::new(Arc::new(Scripted(script)), sink, "m"),
            path,
        )
    }

    fn outcomes(path: &std::path::Path) -> Vec<(Outcome, Vec<String>)> {
        read_recording(path, Access::External)
            .unwrap()
            .calls
            .into_iter()
            .map(|call| {
                let types = call
                    .events
                    .iter()
                    .map(|e| e.type_name().to_string())
                    .collect();
                (call.outcome, types)
            })
            .collect()
    }

    #[tokio::test]
    async fn a_complete_call_stops_at_the_first_terminal_event() {
        let folder = tempfile::tempdir().unwrap();
        let (model, path) = model(Script::Answer, folder.path());
        assert_eq!(model.invoke(&request()).await.unwrap().text(), "hi");
        assert_eq!(
            outcomes(&path),
            [(
                Outcome::Complete,
                vec!["start".into(), "text_delta".into(), "done".into()]
            )]
        );
    }

    #[tokio::test]
    async fn a_provider_failing_at_start_is_recorded_with_outcome_error_and_no_secret() {
        let folder = tempfile::tempdir().unwrap();
        let (model, path) = model(Script::FailAtStart, folder.path());
        let error = model.invoke(&request()).await.unwrap_err();
        assert_eq!(
            (error.error_type.as_str(), error.status),
            ("AuthenticationError", Some(401)),
            "the error is passed on"
        );
        assert_eq!(outcomes(&path), [(Outcome::Error, vec!["error".into()])]);
        assert!(
            !std::fs::read_to_string(&path)
                .unwrap()
                .contains("sk-abcdefghijklmnop")
        );
    }

    #[tokio::test]
    async fn the_gateway_gets_the_failure_exactly_as_recorded() {
        for script in [Script::FailAtStart, Script::FailMidway] {
            let folder = tempfile::tempdir().unwrap();
            let (model, path) = model(script, folder.path());
            let handed = model.invoke(&request()).await.unwrap_err();
            let recording = read_recording(&path, Access::External).unwrap();
            let recorded = recording.calls[0].events.last().unwrap().to_value();
            assert_eq!(
                (
                    json!(handed.message),
                    json!(handed.error_type),
                    json!(handed.status)
                ),
                (
                    recorded["message"].clone(),
                    recorded["error_type"].clone(),
                    recorded["status"].clone()
                ),
                "{script:?}"
            );
            assert!(
                !handed.message.contains("sk-abcdefghijklmnop"),
                "{handed:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_stream_breaking_midway_is_outcome_error() {
        let folder = tempfile::tempdir().unwrap();
        let (model, path) = model(Script::FailMidway, folder.path());
        assert!(model.invoke(&request()).await.is_err());
        assert_eq!(
            outcomes(&path),
            [(Outcome::Error, vec!["text_delta".into(), "error".into()])]
        );
    }

    #[tokio::test]
    async fn a_consumer_closing_the_stream_early_is_outcome_abandoned() {
        let folder = tempfile::tempdir().unwrap();
        let (model, path) = model(Script::Answer, folder.path());
        let mut stream = model.stream(&request()).await.unwrap();
        assert!(matches!(stream.next().await, Some(Ok(StreamEvent::Start))));
        drop(stream);
        assert_eq!(
            outcomes(&path),
            [(Outcome::Abandoned, vec!["start".into()])]
        );
    }

    #[tokio::test]
    async fn a_cancelled_call_is_outcome_cancelled() {
        let folder = tempfile::tempdir().unwrap();
        let (model, path) = model(Script::Hang, folder.path());
        let request = request();
        let cancelled =
            tokio::time::timeout(std::time::Duration::from_millis(50), model.invoke(&request))
                .await;
        assert!(cancelled.is_err(), "the call never finishes on its own");
        assert_eq!(
            outcomes(&path),
            [(Outcome::Cancelled, vec!["text_delta".into()])]
        );
    }

    #[test]
    fn the_recorded_request_normalises_volatile_text_and_keeps_the_replay_key() {
        let mut request = request();
        request.messages[0] =
            Message::human("run 123e4567-e89b-12d3-a456-426614174000 on 2026-11-29").into();
        let recorded = recorded_request("m", &request);
        assert_eq!(
            recorded.context["messages"][0]["content"],
            "run <UUID> on <DATE>"
        );
        let key = replay_key("lead_agent", &request_messages(&request));
        assert_eq!(recorded.context["input_hash"], json!(key.input_hash));
        assert_eq!(recorded.model, json!({"name": "m"}));
    }
}
