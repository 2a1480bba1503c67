//! The model boundary: the [`ChatModel`] trait every provider implements, the request it receives,
//! and the [`ProviderRegistry`] that turns a configured model's `use` string into a model.
//!
//! The gateway knows nothing of record or replay. Other crates (the harness) register their own
//! providers by name before the app starts, and the configuration selects them with `use`.
//!
//! What lives here: the `ChatModel` trait, `StreamEvent` (start, `model_wire::Event` deltas, done,
//! error; its `Done` carries the assembled `Message`, typed, so nothing re-parses it; a plain type
//! with no serde form: the gateway writes it nowhere), `StreamFold` (an answer folded as its
//! events arrive), `ModelError` and its classification (and `in_stream`: a failure the provider
//! reported inside a 200 answer), the `ProviderRegistry`, and the four built-in providers
//! (`docs/gateway-contract.md` §15): `openai.rs` (`use = "openai"`: which of OpenAI's two wires an
//! entry chose), `anthropic.rs` (`use = "anthropic"`), `gemini.rs` (`use = "gemini"`) and
//! `bedrock.rs` (`use = "bedrock"`). Each provider only turns its entry into a `WireChatModel`
//! (`wire_model/`), one HTTP transport for the five wires (`Api`, which is `model_wire::Wire`:
//! Chat Completions, the OpenAI provider's `api = "responses"`, Anthropic's Messages, Gemini,
//! Bedrock Converse); providers import `wire_model/`, never each other, and `wire_model/` imports
//! no provider. It holds the wire's endpoint (Gemini's and Converse's name the model and the
//! mode), credentials header, request body (`wire_model/wire.rs` for Chat Completions;
//! `wire_model/responses.rs`, `anthropic_messages.rs`, `gemini.rs` and `bedrock_converse.rs` hand
//! `wire_model/conversation.rs`'s wire-neutral conversation to the `model-wire` request builders)
//! and error mapping (the wire's client class, `Wire::http_error_class`; the text as the Python
//! clients word it, `model_wire::edge::client_error_text`). The answers themselves are read by the
//! wire's `model_wire::StreamReader` (`stream.rs`), the one the model server's recorder reads
//! with. Its reads are bounded on every wire (a whole answer at 32 MiB, an error body at 64 KiB,
//! an SSE line at 8 MiB) and linear: `stream.rs::whole_lines` re-cuts the bytes at line ends
//! before eventsource-stream parses them, which would otherwise re-parse a long incomplete line on
//! every piece. Converse's binary stream is read frame by frame (`stream.rs::event_stream_events`,
//! `aws-smithy-eventstream`, CRCs checked) into the same reader. `wire_model/tests.rs` holds Chat
//! Completions' own cases, `wire_model/wire_tests.rs` the cases every SSE wire must pass, and
//! `wire_model/path_wire_tests.rs` Gemini's and Converse's.

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod openai;
pub mod wire_model;

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use model_wire::Event;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::ModelConfig;
use crate::messages::{Message, ToolCall};

/// Who is calling the model, and how: DeerFlow derives the replay caller from these
/// (`docs/replay-and-fixtures.md` §4.7), so every call passes them explicitly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallMetadata {
    /// Tags such as `middleware:title`, `nostream` or `subagent:<name>`.
    pub tags: Vec<String>,
    /// The run name (`title_agent`, `suggest_agent`), absent for the lead agent.
    pub run_name: Option<String>,
    /// The gateway run this call belongs to, when there is one.
    pub run_id: Option<String>,
    /// The thread this call belongs to, when there is one.
    pub thread_id: Option<String>,
}

impl CallMetadata {
    /// The journal caller (`docs/gateway-contract.md` §12): the first tag that starts with
    /// `subagent:` or `middleware:`, or equals `lead_agent`; otherwise `lead_agent`. Unlike the
    /// replay caller it ignores the run name.
    pub fn journal_caller(&self) -> String {
        self.tags
            .iter()
            .find(|tag| {
                tag.as_str() == "lead_agent"
                    || tag.starts_with("subagent:")
                    || tag.starts_with("middleware:")
            })
            .cloned()
            .unwrap_or_else(|| "lead_agent".to_string())
    }
}

/// A tool the model may call: name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name as the model must use it.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Per-call options derived from the run context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallOptions {
    /// `thinking_enabled` from the run context.
    pub thinking_enabled: bool,
    /// `reasoning_effort` from the run context, passed to providers that support it.
    pub reasoning_effort: Option<String>,
}

/// Everything a model call receives.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The messages the model sees, system prompt first, after every request-rewriting
    /// middleware has run. Shared with the thread's state, so building or retrying a request
    /// copies no message; a middleware that rewrites one uses [`Arc::make_mut`].
    pub messages: Vec<Arc<Message>>,
    /// The bound tools (empty when none are bound).
    pub tools: Vec<ToolSpec>,
    /// Caller identity and tracing data.
    pub metadata: CallMetadata,
    /// Options such as thinking.
    pub options: CallOptions,
}

/// One event of a streamed model answer: the start, one of the answer's deltas (model-wire's
/// [`Event`], the one delta vocabulary every wire's reader produces), the end (`Done`, carrying
/// the assembled message) or a failure. A plain Rust type of the model boundary: the gateway
/// writes it nowhere (a recording harness converts it to its own recording event).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The answer has started.
    Start,
    /// A text, reasoning or tool call delta.
    Delta(Event),
    /// The answer is complete; `message` is the assembled AI message. The model boundary carries
    /// it typed, so the runtime never re-parses it.
    Done {
        /// The final AI message (boxed: it is much larger than every other event).
        message: Box<Message>,
    },
    /// The provider failed mid-stream.
    Error {
        /// What went wrong.
        message: String,
    },
}

impl StreamEvent {
    /// The `Done` event of `message`.
    pub fn done(message: Message) -> StreamEvent {
        StreamEvent::Done {
            message: Box::new(message),
        }
    }
}

/// A boxed stream of model events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// How a model failure should be treated by the LLM error-handling middleware
/// (`docs/gateway-contract.md` §11.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Out of quota or billing: not retried.
    Quota,
    /// Bad or missing credentials: not retried.
    Auth,
    /// Burst rate limit: retried a little.
    BurstRate,
    /// Timeouts, connection failures, 5xx and friends: retried.
    Transient,
    /// The provider says it is busy or overloaded: retried.
    Busy,
    /// Anything else, including replay misses: not retried.
    Generic,
}

impl ErrorClass {
    /// The string used in `error_reason` and `llm_retry` events.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Quota => "quota",
            ErrorClass::Auth => "auth",
            ErrorClass::BurstRate => "burst_rate",
            ErrorClass::Transient => "transient",
            ErrorClass::Busy => "busy",
            ErrorClass::Generic => "generic",
        }
    }
}

/// A failed model call. Providers fill in what they know; [`ModelError::class`] classifies it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// A type name in the manner of Python's exception names (`APIConnectionError`,
    /// `ReplayMiss`, …); it becomes `error_type` in the fallback message.
    pub error_type: String,
    /// The error text. Never contains a credential.
    pub message: String,
    /// The HTTP status, when the provider answered with one.
    pub status: Option<u16>,
    /// A `Retry-After` the provider asked for.
    pub retry_after: Option<Duration>,
    /// A class forced by the provider; `None` means classify from status and message.
    pub forced_class: Option<ErrorClass>,
    /// The provider reported the failure inside a successful (200) answer (an `error` chunk
    /// mid-stream, an SSE `error` event, or an error body instead of a completion) rather than
    /// with an HTTP error status. A recording keeps this, so that a replay fails the call the
    /// same way (`docs/recording-format.md` §2.2).
    pub in_stream: bool,
}

impl ModelError {
    /// An error of `error_type` with `message`, classified from its text.
    pub fn new(error_type: impl Into<String>, message: impl Into<String>) -> ModelError {
        ModelError {
            error_type: error_type.into(),
            message: message.into(),
            status: None,
            retry_after: None,
            forced_class: None,
            in_stream: false,
        }
    }

    /// The same error, reported inside a successful answer (see [`ModelError::in_stream`]).
    pub fn reported_in_stream(mut self) -> ModelError {
        self.in_stream = true;
        self
    }

    /// The same error with an HTTP status.
    pub fn with_status(mut self, status: u16) -> ModelError {
        self.status = Some(status);
        self
    }

    /// The same error with a fixed class.
    pub fn with_class(mut self, class: ErrorClass) -> ModelError {
        self.forced_class = Some(class);
        self
    }

    /// Classifies the failure (`docs/gateway-contract.md` §11.2): quota and auth patterns first,
    /// then burst and busy patterns, then transient statuses and transport errors; generic
    /// otherwise.
    pub fn class(&self) -> ErrorClass {
        if let Some(class) = self.forced_class {
            return class;
        }
        let text = self.message.to_lowercase();
        let has = |patterns: &[&str]| patterns.iter().any(|p| text.contains(p));
        if has(&["insufficient_quota", "quota", "billing"]) {
            return ErrorClass::Quota;
        }
        if has(&[
            "authentication",
            "unauthorized",
            "invalid api key",
            "permission",
            "forbidden",
        ]) || matches!(self.status, Some(401 | 403))
        {
            return ErrorClass::Auth;
        }
        if has(&["burst"]) {
            return ErrorClass::BurstRate;
        }
        if has(&[
            "server busy",
            "overloaded",
            "rate limit",
            "too many requests",
        ]) {
            return ErrorClass::Busy;
        }
        if matches!(
            self.status,
            Some(408 | 409 | 425 | 429 | 500 | 502 | 503 | 504)
        ) || matches!(
            self.error_type.as_str(),
            "APITimeoutError"
                | "APIConnectionError"
                | "InternalServerError"
                | "ReadError"
                | "RemoteProtocolError"
                | "StreamChunkTimeoutError"
                | "EmptyResponseError"
        ) {
            return ErrorClass::Transient;
        }
        ErrorClass::Generic
    }
}

/// A chat model. Implementations are shared across runs and must be safe to call concurrently.
#[async_trait]
pub trait ChatModel: Send + Sync + fmt::Debug {
    /// One non-streaming call: the complete AI message.
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError>;

    /// One streaming call. The stream ends with [`StreamEvent::Done`] or an error. The default
    /// implementation calls [`ChatModel::invoke`] and yields the message as one chunk.
    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let message = self.invoke(request).await?;
        Ok(Box::pin(futures::stream::iter(one_chunk_events(&message))))
    }
}

/// The events of a message delivered as a single chunk: `start`, its text, its tool calls, `done`.
pub fn one_chunk_events(message: &Message) -> Vec<Result<StreamEvent, ModelError>> {
    into_one_chunk_events(message.clone())
}

/// [`one_chunk_events`] of an owned message, which `done` then carries without a copy.
pub fn into_one_chunk_events(message: Message) -> Vec<Result<StreamEvent, ModelError>> {
    let mut events = vec![Ok(StreamEvent::Start)];
    let text = message.text();
    if !text.is_empty() {
        events.push(Ok(StreamEvent::Delta(Event::TextStart)));
        events.push(Ok(StreamEvent::Delta(Event::TextDelta { delta: text })));
        events.push(Ok(StreamEvent::Delta(Event::TextEnd)));
    }
    for (index, call) in message.tool_calls.iter().enumerate() {
        let index = index as u32;
        events.push(Ok(StreamEvent::Delta(Event::ToolcallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        })));
        events.push(Ok(StreamEvent::Delta(Event::ToolcallDelta {
            index,
            delta: call.args.to_string(),
        })));
        events.push(Ok(StreamEvent::Delta(Event::ToolcallEnd { index })));
    }
    events.push(Ok(StreamEvent::done(message)));
    events
}

/// Folds a stream of events into the final message: the `Done` message when one arrives, else an
/// AI message assembled from the deltas.
pub async fn collect_stream(mut stream: EventStream) -> Result<Message, ModelError> {
    use futures::StreamExt;
    let mut fold = StreamFold::default();
    while let Some(event) = stream.next().await {
        if let Some(message) = fold.push(event?)? {
            return Ok(message);
        }
    }
    fold.finish()
}

/// A model answer folded as its events arrive, so a consumer that also forwards the events (the
/// runtime's `messages` stream) neither keeps them nor re-reads them.
#[derive(Debug, Default)]
pub struct StreamFold {
    text: String,
    /// Tool calls by index: id, name, the arguments' JSON text so far.
    calls: BTreeMap<u32, (String, String, String)>,
}

impl StreamFold {
    /// Takes one event: the final message when it is `Done`, an error when it is `Error`.
    pub fn push(&mut self, event: StreamEvent) -> Result<Option<Message>, ModelError> {
        match event {
            StreamEvent::Delta(Event::TextDelta { delta }) => self.text.push_str(&delta),
            StreamEvent::Delta(Event::ToolcallStart { index, id, name }) => {
                self.calls.insert(index, (id, name, String::new()));
            }
            StreamEvent::Delta(Event::ToolcallDelta { index, delta }) => {
                self.calls.entry(index).or_default().2.push_str(&delta);
            }
            StreamEvent::Done { message } => return Ok(Some(*message)),
            StreamEvent::Error { message } => {
                return Err(ModelError::new("StreamError", message));
            }
            _ => {}
        }
        Ok(None)
    }

    /// The message of a stream that ended without `Done`: an AI message of the deltas.
    pub fn finish(self) -> Result<Message, ModelError> {
        let mut tool_calls = Vec::new();
        for (id, name, args) in self.calls.into_values() {
            let args = if args.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(&args).map_err(|err| {
                    ModelError::new(
                        "InvalidResponseError",
                        format!("tool call arguments: {err}"),
                    )
                })?
            };
            tool_calls.push(ToolCall { name, args, id });
        }
        Ok(Message::ai(self.text, tool_calls))
    }
}

/// What a provider receives besides the model's own configuration block.
#[derive(Debug, Clone)]
pub struct ProviderContext {
    /// The gateway home folder.
    pub home: std::path::PathBuf,
    /// The AWS credentials the configuration holds ([`Config::aws_credentials`]), for
    /// providers that sign with SigV4.
    ///
    /// [`Config::aws_credentials`]: crate::config::Config::aws_credentials
    pub aws_credentials: Option<aws_sign::AwsCredentials>,
}

/// A provider builds a [`ChatModel`] from a configured model entry.
pub trait ModelProvider: Send + Sync {
    /// Builds the model, or explains why the entry cannot be used.
    fn build(
        &self,
        config: &ModelConfig,
        context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError>;
}

impl<F> ModelProvider for F
where
    F: Fn(&ModelConfig, &ProviderContext) -> Result<Arc<dyn ChatModel>, ModelError> + Send + Sync,
{
    fn build(
        &self,
        config: &ModelConfig,
        context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        self(config, context)
    }
}

/// Providers by `use` string. Each [`crate::app::App`] owns one; nothing is global.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    providers: BTreeMap<String, Arc<dyn ModelProvider>>,
}

impl fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderRegistry")
            .field("providers", &self.providers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The `use` string of the built-in OpenAI-compatible provider.
pub const OPENAI_PROVIDER: &str = "openai";

impl ProviderRegistry {
    /// An empty registry.
    pub fn empty() -> ProviderRegistry {
        ProviderRegistry::default()
    }

    /// A registry with the built-in providers: `openai` (also reachable as
    /// `langchain_openai:ChatOpenAI`, the DeerFlow spelling), `anthropic` (also
    /// `langchain_anthropic:ChatAnthropic`), `gemini` (also
    /// `langchain_google_genai:ChatGoogleGenerativeAI`) and `bedrock` (also
    /// `langchain_aws:ChatBedrockConverse`).
    pub fn with_builtins() -> ProviderRegistry {
        let mut registry = ProviderRegistry::empty();
        let openai: Arc<dyn ModelProvider> = Arc::new(openai::OpenAiProvider);
        registry.register_arc(OPENAI_PROVIDER, openai.clone());
        registry.register_arc("langchain_openai:ChatOpenAI", openai);
        let anthropic: Arc<dyn ModelProvider> = Arc::new(anthropic::AnthropicProvider);
        registry.register_arc(anthropic::ANTHROPIC_PROVIDER, anthropic.clone());
        registry.register_arc("langchain_anthropic:ChatAnthropic", anthropic);
        let gemini: Arc<dyn ModelProvider> = Arc::new(gemini::GeminiProvider);
        registry.register_arc(gemini::GEMINI_PROVIDER, gemini.clone());
        registry.register_arc("langchain_google_genai:ChatGoogleGenerativeAI", gemini);
        let bedrock: Arc<dyn ModelProvider> = Arc::new(bedrock::BedrockProvider);
        registry.register_arc(bedrock::BEDROCK_PROVIDER, bedrock.clone());
        registry.register_arc("langchain_aws:ChatBedrockConverse", bedrock);
        registry
    }

    /// Registers (or replaces) the provider for `use_name`.
    pub fn register(&mut self, use_name: &str, provider: impl ModelProvider + 'static) {
        self.providers
            .insert(use_name.to_string(), Arc::new(provider));
    }

    /// Registers a shared provider.
    pub fn register_arc(&mut self, use_name: &str, provider: Arc<dyn ModelProvider>) {
        self.providers.insert(use_name.to_string(), provider);
    }

    /// The registered `use` names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.providers.keys().cloned().collect()
    }

    /// The provider for `use_name`.
    pub fn get(&self, use_name: &str) -> Option<Arc<dyn ModelProvider>> {
        self.providers.get(use_name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_errors_as_the_contract_table_says() {
        let cases = [
            (
                ModelError::new("RateLimitError", "You exceeded your current quota"),
                ErrorClass::Quota,
            ),
            (
                ModelError::new("AuthenticationError", "Invalid API key").with_status(401),
                ErrorClass::Auth,
            ),
            (
                ModelError::new("APIStatusError", "upstream overloaded"),
                ErrorClass::Busy,
            ),
            (
                ModelError::new("APIStatusError", "bad gateway").with_status(502),
                ErrorClass::Transient,
            ),
            (
                ModelError::new("APIConnectionError", "connection refused"),
                ErrorClass::Transient,
            ),
            (
                ModelError::new("ReplayMiss", "replay miss: no recorded output"),
                ErrorClass::Generic,
            ),
            (
                ModelError::new("X", "anything").with_class(ErrorClass::BurstRate),
                ErrorClass::BurstRate,
            ),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class, "{error:?}");
        }
    }

    #[test]
    fn journal_caller_uses_tags_only() {
        let meta = CallMetadata {
            tags: vec!["nostream".into(), "middleware:title".into()],
            run_name: Some("title_agent".into()),
            ..CallMetadata::default()
        };
        assert_eq!(meta.journal_caller(), "middleware:title");
        let suggest = CallMetadata {
            run_name: Some("suggest_agent".into()),
            ..CallMetadata::default()
        };
        assert_eq!(suggest.journal_caller(), "lead_agent");
    }

    #[tokio::test]
    async fn one_chunk_events_collect_back_to_the_message() {
        let mut message = Message::ai(
            "done",
            vec![ToolCall {
                name: "ls".into(),
                args: serde_json::json!({"path": "/"}),
                id: "c1".into(),
            }],
        );
        message.id = Some("lc_run--x".into());
        let stream: EventStream = Box::pin(futures::stream::iter(one_chunk_events(&message)));
        assert_eq!(collect_stream(stream).await.unwrap(), message);
    }
}
