//! AG-UI's client side, as `@ag-ui/client`'s `HttpAgent` does it, so that the driver carries into
//! a follow-up exactly what a frontend would: each run's events are parsed against AG-UI's event
//! types (`@ag-ui/core`'s `EventSchemas`), chunk events expanded (`transformChunks`), the sequence
//! checked (`verifyEvents`), and the events applied to the conversation's messages and state
//! (`defaultApplyEvents`: text and tool-call events assemble messages, `TOOL_CALL_RESULT` inserts
//! a tool message after its call, `MESSAGES_SNAPSHOT` replaces what it names, `STATE_SNAPSHOT`
//! replaces the state and `STATE_DELTA` patches it as an RFC 6902 JSON Patch). The next run's
//! `RunAgentInput` then holds those messages (without activity messages) and that state
//! (`AbstractAgent.prepareRunAgentInput`).
//!
//! Where the official client only warns (a patch that does not apply, a delta for an unknown
//! message), this one reports a typed [`AgUiProblem`]: a backend that sends them has drifted from
//! what its frontend can use. `docs/testing-your-own-gateway.md` ("AG-UI") is the specification.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use json_patch::PatchOperation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::driver::parsed_size::parsed_size;
use crate::driver::schema_enums::{EnumViolation, SchemaEnums};

/// The literal unions and enums of AG-UI's events (roles, outcomes, subtypes, patch ops, content
/// part types), as `@ag-ui/core`'s `EventSchema` declares them (`schema_enums.json`, written by
/// `scripts/schema-enums.mjs` from the example client's lockfile).
pub static ENUMS: LazyLock<SchemaEnums> =
    LazyLock::new(|| SchemaEnums::parse(include_str!("schema_enums.json")));

/// A `TOOL_CALL_RESULT`'s content: text, or the content parts a tool returned (`ContentPart[]`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ToolContent {
    /// Text.
    Text(String),
    /// Content parts (text, image, audio, video, document), kept as sent.
    Parts(Vec<Value>),
}

/// Every event type of AG-UI's `EventType` (`@ag-ui/core`), as its `type` field spells it.
pub const EVENT_TYPES: [&str; 33] = [
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_CHUNK",
    "TOOL_CALL_RESULT",
    "THINKING_START",
    "THINKING_END",
    "THINKING_TEXT_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "MESSAGES_SNAPSHOT",
    "ACTIVITY_SNAPSHOT",
    "ACTIVITY_DELTA",
    "RAW",
    "CUSTOM",
    "RUN_STARTED",
    "RUN_FINISHED",
    "RUN_ERROR",
    "STEP_STARTED",
    "STEP_FINISHED",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
    "REASONING_END",
    "REASONING_ENCRYPTED_VALUE",
];

/// One AG-UI event, parsed as `@ag-ui/core`'s schemas read it (unknown fields are ignored, as
/// the schemas pass them through; `null` for an optional field is taken as absent).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
#[allow(missing_docs)] // The fields are AG-UI's own (`@ag-ui/core`'s `events.ts`).
pub enum Event {
    RunStarted {
        thread_id: String,
        run_id: String,
        #[serde(default)]
        input: Option<Value>,
    },
    RunFinished {
        thread_id: String,
        run_id: String,
    },
    RunError {
        message: String,
        #[serde(default)]
        code: Option<String>,
    },
    StepStarted {
        step_name: String,
    },
    StepFinished {
        step_name: String,
    },
    TextMessageStart {
        message_id: String,
        #[serde(default)]
        role: Option<String>,
        #[serde(default)]
        name: Option<String>,
    },
    TextMessageContent {
        message_id: String,
        delta: String,
    },
    TextMessageEnd {
        message_id: String,
    },
    TextMessageChunk {
        #[serde(default)]
        message_id: Option<String>,
        #[serde(default)]
        role: Option<String>,
        #[serde(default)]
        delta: Option<String>,
        #[serde(default)]
        name: Option<String>,
    },
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        #[serde(default)]
        parent_message_id: Option<String>,
    },
    ToolCallArgs {
        tool_call_id: String,
        delta: String,
    },
    ToolCallEnd {
        tool_call_id: String,
    },
    ToolCallChunk {
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        tool_call_name: Option<String>,
        #[serde(default)]
        parent_message_id: Option<String>,
        #[serde(default)]
        delta: Option<String>,
    },
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: ToolContent,
        #[serde(default)]
        role: Option<String>,
    },
    ThinkingStart {},
    ThinkingEnd {},
    ThinkingTextMessageStart {},
    ThinkingTextMessageContent {
        delta: String,
    },
    ThinkingTextMessageEnd {},
    StateSnapshot {
        snapshot: Value,
    },
    StateDelta {
        delta: json_patch::Patch,
    },
    MessagesSnapshot {
        messages: Vec<Value>,
    },
    ActivitySnapshot {
        message_id: String,
        activity_type: String,
        content: Value,
        #[serde(default)]
        replace: Option<bool>,
    },
    ActivityDelta {
        message_id: String,
        activity_type: String,
        patch: json_patch::Patch,
    },
    Raw {},
    Custom {
        name: String,
    },
    ReasoningStart {
        message_id: String,
    },
    ReasoningMessageStart {
        message_id: String,
    },
    ReasoningMessageContent {
        message_id: String,
        delta: String,
    },
    ReasoningMessageEnd {
        message_id: String,
    },
    ReasoningMessageChunk {
        #[serde(default)]
        message_id: Option<String>,
        #[serde(default)]
        delta: Option<String>,
    },
    ReasoningEnd {
        message_id: String,
    },
    ReasoningEncryptedValue {
        subtype: String,
        entity_id: String,
        encrypted_value: String,
    },
}

impl Event {
    /// The event's `type`, as AG-UI spells it.
    pub fn name(&self) -> &'static str {
        use Event::*;
        match self {
            RunStarted { .. } => "RUN_STARTED",
            RunFinished { .. } => "RUN_FINISHED",
            RunError { .. } => "RUN_ERROR",
            StepStarted { .. } => "STEP_STARTED",
            StepFinished { .. } => "STEP_FINISHED",
            TextMessageStart { .. } => "TEXT_MESSAGE_START",
            TextMessageContent { .. } => "TEXT_MESSAGE_CONTENT",
            TextMessageEnd { .. } => "TEXT_MESSAGE_END",
            TextMessageChunk { .. } => "TEXT_MESSAGE_CHUNK",
            ToolCallStart { .. } => "TOOL_CALL_START",
            ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            ToolCallEnd { .. } => "TOOL_CALL_END",
            ToolCallChunk { .. } => "TOOL_CALL_CHUNK",
            ToolCallResult { .. } => "TOOL_CALL_RESULT",
            ThinkingStart {} => "THINKING_START",
            ThinkingEnd {} => "THINKING_END",
            ThinkingTextMessageStart {} => "THINKING_TEXT_MESSAGE_START",
            ThinkingTextMessageContent { .. } => "THINKING_TEXT_MESSAGE_CONTENT",
            ThinkingTextMessageEnd {} => "THINKING_TEXT_MESSAGE_END",
            StateSnapshot { .. } => "STATE_SNAPSHOT",
            StateDelta { .. } => "STATE_DELTA",
            MessagesSnapshot { .. } => "MESSAGES_SNAPSHOT",
            ActivitySnapshot { .. } => "ACTIVITY_SNAPSHOT",
            ActivityDelta { .. } => "ACTIVITY_DELTA",
            Raw {} => "RAW",
            Custom { .. } => "CUSTOM",
            ReasoningStart { .. } => "REASONING_START",
            ReasoningMessageStart { .. } => "REASONING_MESSAGE_START",
            ReasoningMessageContent { .. } => "REASONING_MESSAGE_CONTENT",
            ReasoningMessageEnd { .. } => "REASONING_MESSAGE_END",
            ReasoningMessageChunk { .. } => "REASONING_MESSAGE_CHUNK",
            ReasoningEnd { .. } => "REASONING_END",
            ReasoningEncryptedValue { .. } => "REASONING_ENCRYPTED_VALUE",
        }
    }

    /// Parses frame `index`'s data: an unknown `type` and a missing or mistyped field are
    /// problems naming the frame, as `@ag-ui/client` rejects them.
    pub fn parse(index: usize, data: Option<&Value>) -> Result<Event, AgUiProblem> {
        let data = data.ok_or(AgUiProblem::NotJson { frame: index })?;
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .ok_or(AgUiProblem::NoType { frame: index })?;
        if !EVENT_TYPES.contains(&name) {
            return Err(AgUiProblem::UnknownType {
                frame: index,
                name: name.to_owned(),
            });
        }
        let fields = data
            .as_object()
            .ok_or(AgUiProblem::NoType { frame: index })?;
        ENUMS
            .check(name, fields)
            .map_err(|violation| AgUiProblem::NotInSchema {
                frame: index,
                name: name.to_owned(),
                violation: Box::new(violation),
            })?;
        Event::deserialize(data).map_err(|error| AgUiProblem::Malformed {
            frame: index,
            name: name.to_owned(),
            error: error.to_string(),
        })
    }
}

/// Why a run's events are not what an AG-UI client accepts; each names the frame (0-based, in
/// the run) and the event.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgUiProblem {
    /// A frame whose data is not JSON.
    #[error("frame {frame}: the data is not JSON")]
    NotJson {
        /// The frame.
        frame: usize,
    },
    /// A JSON frame without a string `type`.
    #[error("frame {frame}: no string `type`")]
    NoType {
        /// The frame.
        frame: usize,
    },
    /// A `type` AG-UI does not define (a renamed event).
    #[error("frame {frame}: `{name}` is not an AG-UI event type")]
    UnknownType {
        /// The frame.
        frame: usize,
        /// The type sent.
        name: String,
    },
    /// An event whose fields do not match its type's schema.
    #[error("frame {frame}: {name}: {error}")]
    Malformed {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// What serde said.
        error: String,
    },
    /// An event field holding a value outside its enum or literal union (a `role` of
    /// `"pirate"`), which `@ag-ui/core`'s schema refuses.
    #[error("frame {frame}: {name}: {violation}")]
    NotInSchema {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// The field and its value.
        violation: Box<EnumViolation>,
    },
    /// The stream did not open with `RUN_STARTED`.
    #[error("the first event is {}, not RUN_STARTED", .first.as_deref().unwrap_or("missing (an empty stream)"))]
    FirstNotRunStarted {
        /// The first event's type, if any.
        first: Option<String>,
    },
    /// An event out of order (content before its start, an event after the run ended, …).
    #[error("frame {frame}: {name}: {reason}")]
    OutOfOrder {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// What the order broke, in `verifyEvents`' terms.
        reason: String,
    },
    /// The run reported `RUN_ERROR`.
    #[error("frame {frame}: RUN_ERROR{}: {message}", .code.as_deref().map(|code| format!(" ({code})")).unwrap_or_default())]
    RunError {
        /// The frame.
        frame: usize,
        /// Its message.
        message: String,
        /// Its code, when sent.
        code: Option<String>,
    },
    /// The stream ended without `RUN_FINISHED` or `RUN_ERROR`.
    #[error("the stream ended after {}, without RUN_FINISHED or RUN_ERROR", .last.as_deref().unwrap_or("no event"))]
    NotFinished {
        /// The last event's type, if any.
        last: Option<String>,
    },
    /// A JSON Patch (`STATE_DELTA`, `ACTIVITY_DELTA`) that does not apply to what the client
    /// holds.
    #[error("frame {frame}: {name}: the patch does not apply to the client's {target}: {error}")]
    Patch {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// `state`, or the activity message.
        target: String,
        /// What json-patch said.
        error: String,
    },
    /// A JSON Patch that grows what it patches past [`MAX_PATCHED_BYTES`] (issue 45, finding 5:
    /// 40 `copy` operations doubling the state reached 2.4 GB); checked before each operation.
    #[error(
        "{name} at frame {frame} grows the client's {target} past {} MiB (estimated, as parsed) at \
         operation {operation}; the driver does not hold a larger one",
        MAX_PATCHED_BYTES / (1024 * 1024)
    )]
    PatchTooLarge {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// `state`, or the activity message.
        target: String,
        /// The operation's index in the patch, from 0.
        operation: usize,
    },
    /// An event naming a message or tool call the client does not hold.
    #[error("frame {frame}: {name}: no {what} with id {id:?}")]
    UnknownId {
        /// The frame.
        frame: usize,
        /// The event type.
        name: String,
        /// `message` or `tool call`.
        what: &'static str,
        /// The id.
        id: String,
    },
}

/// The sequence rules `@ag-ui/client`'s `verifyEvents` enforces, for one stream.
#[derive(Debug, Default)]
struct Verifier {
    first_seen: bool,
    run_started: bool,
    run_finished: bool,
    run_errored: bool,
    messages: BTreeSet<String>,
    tool_calls: BTreeSet<String>,
    steps: BTreeSet<String>,
    reasoning: BTreeSet<String>,
    reasoning_messages: BTreeSet<String>,
    thinking: bool,
    thinking_message: bool,
}

impl Verifier {
    fn check(&mut self, frame: usize, event: &Event) -> Result<(), AgUiProblem> {
        let name = event.name();
        let order = |reason: String| AgUiProblem::OutOfOrder {
            frame,
            name: name.to_owned(),
            reason,
        };
        let is_start = matches!(event, Event::RunStarted { .. });
        if self.run_errored && !is_start {
            return Err(order("the run already ended with RUN_ERROR".into()));
        }
        if self.run_finished && !is_start && !matches!(event, Event::RunError { .. }) {
            return Err(order("the run already ended with RUN_FINISHED".into()));
        }
        if !self.first_seen {
            self.first_seen = true;
            if !is_start && !matches!(event, Event::RunError { .. }) {
                return Err(AgUiProblem::FirstNotRunStarted {
                    first: Some(name.to_owned()),
                });
            }
        } else if is_start {
            if self.run_started && !self.run_finished && !self.run_errored {
                return Err(order("a run is still active".into()));
            }
            *self = Verifier {
                first_seen: true,
                ..Verifier::default()
            };
        }
        let open = |set: &mut BTreeSet<String>, id: &str, what: &str| {
            if set.insert(id.to_owned()) {
                Ok(())
            } else {
                Err(order(format!(
                    "a {what} with id {id:?} is already in progress"
                )))
            }
        };
        let active = |set: &BTreeSet<String>, id: &str, what: &str| {
            if set.contains(id) {
                Ok(())
            } else {
                Err(order(format!("no active {what} with id {id:?}")))
            }
        };
        match event {
            Event::RunStarted { .. } => self.run_started = true,
            Event::TextMessageStart { message_id, .. } => {
                open(&mut self.messages, message_id, "text message")?
            }
            Event::TextMessageContent { message_id, .. } => {
                active(&self.messages, message_id, "text message")?
            }
            Event::TextMessageEnd { message_id } => {
                active(&self.messages, message_id, "text message")?;
                self.messages.remove(message_id);
            }
            Event::ToolCallStart { tool_call_id, .. } => {
                open(&mut self.tool_calls, tool_call_id, "tool call")?
            }
            Event::ToolCallArgs { tool_call_id, .. } => {
                active(&self.tool_calls, tool_call_id, "tool call")?
            }
            Event::ToolCallEnd { tool_call_id } => {
                active(&self.tool_calls, tool_call_id, "tool call")?;
                self.tool_calls.remove(tool_call_id);
            }
            Event::StepStarted { step_name } => open(&mut self.steps, step_name, "step")?,
            Event::StepFinished { step_name } => {
                active(&self.steps, step_name, "step")?;
                self.steps.remove(step_name);
            }
            Event::ReasoningStart { message_id } => {
                open(&mut self.reasoning, message_id, "reasoning span")?
            }
            Event::ReasoningEnd { message_id } => {
                active(&self.reasoning, message_id, "reasoning span")?;
                self.reasoning.remove(message_id);
            }
            Event::ReasoningMessageStart { message_id } => open(
                &mut self.reasoning_messages,
                message_id,
                "reasoning message",
            )?,
            Event::ReasoningMessageContent { message_id, .. } => {
                active(&self.reasoning_messages, message_id, "reasoning message")?
            }
            Event::ReasoningMessageEnd { message_id } => {
                active(&self.reasoning_messages, message_id, "reasoning message")?;
                self.reasoning_messages.remove(message_id);
            }
            Event::ThinkingStart {} if self.thinking => {
                return Err(order("a thinking step is already in progress".into()));
            }
            Event::ThinkingStart {} => self.thinking = true,
            Event::ThinkingEnd {} if !self.thinking => {
                return Err(order("no active thinking step".into()));
            }
            Event::ThinkingEnd {} => self.thinking = false,
            Event::ThinkingTextMessageStart {} if !self.thinking || self.thinking_message => {
                return Err(order(
                    "needs an active thinking step and no active thinking message".into(),
                ));
            }
            Event::ThinkingTextMessageStart {} => self.thinking_message = true,
            Event::ThinkingTextMessageContent { .. } | Event::ThinkingTextMessageEnd {}
                if !self.thinking_message =>
            {
                return Err(order("no active thinking message".into()));
            }
            Event::ThinkingTextMessageEnd {} => self.thinking_message = false,
            Event::RunFinished { .. } => {
                let still_open: Vec<&str> = [
                    (&self.steps, "steps"),
                    (&self.messages, "text messages"),
                    (&self.reasoning_messages, "reasoning messages"),
                    (&self.reasoning, "reasoning spans"),
                    (&self.tool_calls, "tool calls"),
                ]
                .into_iter()
                .filter(|(set, _)| !set.is_empty())
                .map(|(_, what)| what)
                .collect();
                if let Some(what) = still_open.first() {
                    return Err(order(format!("{what} are still active")));
                }
                self.run_finished = true;
            }
            Event::RunError { .. } => self.run_errored = true,
            _ => {}
        }
        Ok(())
    }
}

/// What `transformChunks` keeps between events: the text message, tool call or reasoning
/// message that chunk events are streaming into, closed by the next event of another kind.
#[derive(Debug, Default, Clone, PartialEq)]
enum OpenChunk {
    #[default]
    None,
    Text(String),
    Tool(String),
    Reasoning(String),
}

impl OpenChunk {
    /// The event that closes the open chunk stream, if any.
    fn close(&mut self) -> Option<Event> {
        match std::mem::take(self) {
            OpenChunk::None => None,
            OpenChunk::Text(message_id) => Some(Event::TextMessageEnd { message_id }),
            OpenChunk::Tool(tool_call_id) => Some(Event::ToolCallEnd { tool_call_id }),
            OpenChunk::Reasoning(message_id) => Some(Event::ReasoningMessageEnd { message_id }),
        }
    }

    /// `event` as the events `transformChunks` turns it into.
    fn expand(&mut self, frame: usize, event: Event) -> Result<Vec<Event>, AgUiProblem> {
        let first_needs = |what: &str| AgUiProblem::Malformed {
            frame,
            name: event.name().to_owned(),
            error: format!("the first chunk of a run of chunks needs `{what}`"),
        };
        let mut out = Vec::new();
        match &event {
            Event::TextMessageChunk {
                message_id,
                role,
                delta,
                name,
            } => {
                let current = match self {
                    OpenChunk::Text(id) => Some(id.clone()),
                    _ => None,
                };
                if current.is_none() || message_id.is_some() && *message_id != current {
                    out.extend(self.close());
                }
                if !matches!(self, OpenChunk::Text(_)) {
                    let id = message_id.clone().ok_or_else(|| first_needs("messageId"))?;
                    out.push(Event::TextMessageStart {
                        message_id: id.clone(),
                        role: Some(role.clone().unwrap_or_else(|| "assistant".into())),
                        name: name.clone(),
                    });
                    *self = OpenChunk::Text(id);
                }
                if let (Some(delta), OpenChunk::Text(id)) = (delta, &*self) {
                    out.push(Event::TextMessageContent {
                        message_id: id.clone(),
                        delta: delta.clone(),
                    });
                }
            }
            Event::ToolCallChunk {
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
            } => {
                let current = match self {
                    OpenChunk::Tool(id) => Some(id.clone()),
                    _ => None,
                };
                if current.is_none() || tool_call_id.is_some() && *tool_call_id != current {
                    out.extend(self.close());
                }
                if !matches!(self, OpenChunk::Tool(_)) {
                    let id = tool_call_id
                        .clone()
                        .ok_or_else(|| first_needs("toolCallId"))?;
                    let name = tool_call_name
                        .clone()
                        .ok_or_else(|| first_needs("toolCallName"))?;
                    out.push(Event::ToolCallStart {
                        tool_call_id: id.clone(),
                        tool_call_name: name,
                        parent_message_id: parent_message_id.clone(),
                    });
                    *self = OpenChunk::Tool(id);
                }
                if let (Some(delta), OpenChunk::Tool(id)) = (delta, &*self) {
                    out.push(Event::ToolCallArgs {
                        tool_call_id: id.clone(),
                        delta: delta.clone(),
                    });
                }
            }
            Event::ReasoningMessageChunk { message_id, delta } => {
                let current = match self {
                    OpenChunk::Reasoning(id) => Some(id.clone()),
                    _ => None,
                };
                if current.is_none() || message_id.is_some() && *message_id != current {
                    out.extend(self.close());
                }
                if !matches!(self, OpenChunk::Reasoning(_)) {
                    let id = message_id.clone().ok_or_else(|| first_needs("messageId"))?;
                    out.push(Event::ReasoningMessageStart {
                        message_id: id.clone(),
                    });
                    *self = OpenChunk::Reasoning(id);
                }
                if let (Some(delta), OpenChunk::Reasoning(id)) = (delta, &*self) {
                    out.push(Event::ReasoningMessageContent {
                        message_id: id.clone(),
                        delta: delta.clone(),
                    });
                }
            }
            // These pass through without closing an open chunk stream.
            Event::Raw {}
            | Event::ActivitySnapshot { .. }
            | Event::ActivityDelta { .. }
            | Event::ReasoningEncryptedValue { .. } => out.push(event),
            _ => {
                out.extend(self.close());
                out.push(event);
            }
        }
        Ok(out)
    }
}

/// Appends `delta` to the string `key` of `object` in place (a missing or non-string value counts
/// as `""`, as the official client's `${existing}${delta}` does), so a message streamed in many
/// deltas is assembled in linear time.
fn append_to(object: &mut Map<String, Value>, key: &str, delta: &str) {
    match object.get_mut(key) {
        Some(Value::String(text)) => text.push_str(delta),
        _ => {
            object.insert(key.to_owned(), Value::String(delta.to_owned()));
        }
    }
}

/// Checks one run's frames as `@ag-ui/client` reads them (parsed, chunks expanded, the order
/// verified, `RUN_STARTED` first and `RUN_FINISHED` or `RUN_ERROR` last) without applying them:
/// the dialect's framing rule.
pub fn verify_run<'a>(
    frames: impl IntoIterator<Item = Option<&'a Value>>,
) -> Result<RunEnd, AgUiProblem> {
    Conversation::default().walk(frames, false)
}

/// What a thread holds on the client between runs: the messages and the state, as `HttpAgent`
/// keeps them in `agent.messages` and `agent.state`.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The messages, AG-UI `Message` objects (`id`, `role`, `content`, `toolCalls`, …).
    pub messages: Vec<Value>,
    /// The shared state.
    pub state: Value,
}

impl Default for Conversation {
    fn default() -> Self {
        Conversation {
            messages: Vec::new(),
            state: json!({}),
        }
    }
}

/// How a run ended, once its events applied cleanly.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// `RUN_FINISHED`.
    Finished,
    /// `RUN_ERROR`, with its message: the caller decides whether the fixture expects it.
    Error(AgUiProblem),
}

impl Conversation {
    /// The `RunAgentInput` of the run `run_id` in `thread_id` for the user's `prompt`, sent as
    /// the message `message_id`: every message held but activity messages, then the prompt; the
    /// state; no tools, no context, no forwarded props (`HttpAgent.runAgent` without
    /// parameters, after `addMessage`). The prompt joins the messages when the run is read
    /// ([`Conversation::add_message`]).
    pub fn run_input(
        &self,
        thread_id: &str,
        run_id: &str,
        message_id: &str,
        prompt: &str,
    ) -> Value {
        let prompt = json!({"id": message_id, "role": "user", "content": prompt});
        let messages: Vec<&Value> = self
            .messages
            .iter()
            .filter(|message| message.get("role").and_then(Value::as_str) != Some("activity"))
            .chain([&prompt])
            .collect();
        json!({
            "threadId": thread_id,
            "runId": run_id,
            "state": self.state,
            "messages": messages,
            "tools": [],
            "context": [],
            "forwardedProps": {},
        })
    }

    /// Adds `message` (the prompt a run sent) unless a message with its id is held.
    pub fn add_message(&mut self, message: &Value) {
        let id = message.get("id").and_then(Value::as_str).unwrap_or("");
        if self.position(id).is_none() {
            self.messages.push(message.clone());
        }
    }

    /// Applies one run's frames (each frame's data, `None` when it is not JSON): parsed,
    /// chunks expanded, the order verified and each event applied. The stream must open with
    /// `RUN_STARTED` and end with `RUN_FINISHED` or `RUN_ERROR`.
    pub fn apply_run<'a>(
        &mut self,
        frames: impl IntoIterator<Item = Option<&'a Value>>,
    ) -> Result<RunEnd, AgUiProblem> {
        self.walk(frames, true)
    }

    /// Parses, expands and verifies the frames, applying each event when `apply` says so.
    fn walk<'a>(
        &mut self,
        frames: impl IntoIterator<Item = Option<&'a Value>>,
        apply: bool,
    ) -> Result<RunEnd, AgUiProblem> {
        let mut verifier = Verifier::default();
        let mut chunk = OpenChunk::None;
        let mut last: Option<(usize, Event)> = None;
        for (index, data) in frames.into_iter().enumerate() {
            let event = Event::parse(index, data)?;
            for event in chunk.expand(index, event)? {
                verifier.check(index, &event)?;
                if apply {
                    self.apply(index, &event)?;
                }
                last = Some((index, event));
            }
        }
        match last {
            None => Err(AgUiProblem::FirstNotRunStarted { first: None }),
            Some((_, Event::RunFinished { .. })) => Ok(RunEnd::Finished),
            Some((frame, Event::RunError { message, code })) => {
                Ok(RunEnd::Error(AgUiProblem::RunError {
                    frame,
                    message,
                    code,
                }))
            }
            Some((_, event)) => Err(AgUiProblem::NotFinished {
                last: Some(event.name().to_owned()),
            }),
        }
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.messages
            .iter()
            .position(|message| message.get("id").and_then(Value::as_str) == Some(id))
    }

    /// The tool call `id` and the index of the message holding it.
    fn tool_call_mut(&mut self, id: &str) -> Option<(usize, &mut Map<String, Value>)> {
        self.messages
            .iter_mut()
            .enumerate()
            .find_map(|(index, message)| {
                let calls = message.get_mut("toolCalls")?.as_array_mut()?;
                let call = calls
                    .iter_mut()
                    .find(|call| call.get("id").and_then(Value::as_str) == Some(id))?;
                Some((index, call.as_object_mut()?))
            })
    }

    /// Appends `delta` to the string `key` of the message `id`.
    fn append(
        &mut self,
        frame: usize,
        name: &str,
        id: &str,
        delta: &str,
    ) -> Result<(), AgUiProblem> {
        let unknown = || AgUiProblem::UnknownId {
            frame,
            name: name.to_owned(),
            what: "message",
            id: id.to_owned(),
        };
        let index = self.position(id).ok_or_else(unknown)?;
        let message = self.messages[index].as_object_mut().ok_or_else(unknown)?;
        append_to(message, "content", delta);
        Ok(())
    }

    /// Applies one verified event as `defaultApplyEvents` does.
    fn apply(&mut self, frame: usize, event: &Event) -> Result<(), AgUiProblem> {
        let name = event.name();
        match event {
            Event::RunStarted {
                input: Some(input), ..
            } => {
                let sent = input.get("messages").and_then(Value::as_array);
                for message in sent.into_iter().flatten() {
                    let id = message.get("id").and_then(Value::as_str).unwrap_or("");
                    if self.position(id).is_none() {
                        self.messages.push(message.clone());
                    }
                }
            }
            Event::TextMessageStart {
                message_id,
                role,
                name: author,
            } if self.position(message_id).is_none() => {
                let mut message = json!({
                    "id": message_id,
                    "role": role.as_deref().unwrap_or("assistant"),
                    "content": "",
                });
                if let Some(author) = author {
                    message["name"] = json!(author);
                }
                self.messages.push(message);
            }
            Event::TextMessageContent { message_id, delta }
            | Event::ReasoningMessageContent { message_id, delta } => {
                self.append(frame, name, message_id, delta)?
            }
            Event::ReasoningMessageStart { message_id } if self.position(message_id).is_none() => {
                self.messages
                    .push(json!({"id": message_id, "role": "reasoning", "content": ""}));
            }
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => {
                if let Some((_, call)) = self.tool_call_mut(tool_call_id) {
                    call.insert("function".into(), json!({
                        "name": tool_call_name,
                        "arguments": call.get("function").and_then(|f| f.get("arguments")).cloned().unwrap_or(json!("")),
                    }));
                    return Ok(());
                }
                let index = self.owner_of_new_call(parent_message_id.as_deref(), tool_call_id);
                let call = json!({
                    "id": tool_call_id,
                    "type": "function",
                    "function": {"name": tool_call_name, "arguments": ""},
                });
                let message = &mut self.messages[index];
                match message.get_mut("toolCalls").and_then(Value::as_array_mut) {
                    Some(calls) => calls.push(call),
                    None => message["toolCalls"] = json!([call]),
                }
            }
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => {
                let (_, call) =
                    self.tool_call_mut(tool_call_id)
                        .ok_or_else(|| AgUiProblem::UnknownId {
                            frame,
                            name: name.to_owned(),
                            what: "tool call",
                            id: tool_call_id.clone(),
                        })?;
                let function = call.entry("function").or_insert_with(|| json!({}));
                if let Some(function) = function.as_object_mut() {
                    append_to(function, "arguments", delta);
                }
            }
            Event::ToolCallResult {
                message_id,
                tool_call_id,
                content,
                role,
            } => {
                let message = json!({
                    "id": message_id,
                    "toolCallId": tool_call_id,
                    "role": role.as_deref().unwrap_or("tool"),
                    "content": content,
                });
                // After the assistant message holding the call and the tool messages after it.
                let owner = self.messages.iter().position(|message| {
                    message.get("role").and_then(Value::as_str) == Some("assistant")
                        && message
                            .get("toolCalls")
                            .and_then(Value::as_array)
                            .is_some_and(|calls| {
                                calls.iter().any(|call| {
                                    call.get("id").and_then(Value::as_str)
                                        == Some(tool_call_id.as_str())
                                })
                            })
                });
                match owner {
                    None => self.messages.push(message),
                    Some(owner) => {
                        let mut at = owner + 1;
                        while self
                            .messages
                            .get(at)
                            .is_some_and(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
                        {
                            at += 1;
                        }
                        self.messages.insert(at, message);
                    }
                }
            }
            Event::StateSnapshot { snapshot } => self.state = snapshot.clone(),
            Event::StateDelta { delta } => {
                // Applied to a copy, so a patch that fails halfway leaves the state as it was
                // (fast-json-patch's applyPatch validates before it mutates).
                let mut state = self.state.clone();
                bounded_patch(&mut state, delta)
                    .map_err(|failed| failed.problem(frame, name, "state"))?;
                self.state = state;
            }
            Event::MessagesSnapshot { messages } => self.apply_messages_snapshot(messages),
            Event::ActivitySnapshot {
                message_id,
                activity_type,
                content,
                replace,
            } => {
                let message = json!({
                    "id": message_id,
                    "role": "activity",
                    "activityType": activity_type,
                    "content": content,
                });
                match self.position(message_id) {
                    None => self.messages.push(message),
                    Some(index) if replace.unwrap_or(true) => self.messages[index] = message,
                    Some(_) => {}
                }
            }
            Event::ActivityDelta {
                message_id,
                activity_type,
                patch,
            } => {
                let Some(index) = self.position(message_id) else {
                    return Ok(());
                };
                let message = &mut self.messages[index];
                let mut content = message.get("content").cloned().unwrap_or(json!({}));
                bounded_patch(&mut content, patch).map_err(|failed| {
                    failed.problem(frame, name, &format!("activity message {message_id:?}"))
                })?;
                message["content"] = content;
                message["activityType"] = json!(activity_type);
            }
            Event::ReasoningEncryptedValue {
                subtype,
                entity_id,
                encrypted_value,
            } => {
                if subtype == "tool-call" {
                    if let Some((_, call)) = self.tool_call_mut(entity_id) {
                        call.insert("encryptedValue".into(), json!(encrypted_value));
                    }
                } else if let Some(index) = self.position(entity_id) {
                    let message = &mut self.messages[index];
                    if message.get("role").and_then(Value::as_str) != Some("activity") {
                        message["encryptedValue"] = json!(encrypted_value);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The index of the assistant message a new tool call goes into (`TOOL_CALL_START`'s
    /// `resolveOrCreateAssistantMessage`): its parent when that is an assistant message, else a
    /// new assistant message with the parent's id (or the call's, when the parent id is taken or
    /// absent).
    fn owner_of_new_call(&mut self, parent: Option<&str>, tool_call_id: &str) -> usize {
        let id = match parent {
            Some(parent) => match self.position(parent) {
                Some(index)
                    if self.messages[index].get("role").and_then(Value::as_str)
                        == Some("assistant") =>
                {
                    return index;
                }
                Some(_) => tool_call_id,
                None => parent,
            },
            None => tool_call_id,
        };
        self.messages
            .push(json!({"id": id, "role": "assistant", "toolCalls": []}));
        self.messages.len() - 1
    }

    /// `MESSAGES_SNAPSHOT`: the messages the snapshot names are replaced by its own, those it
    /// does not name are dropped (except activity and reasoning messages when it holds none of
    /// that role: they are the client's own), and its new ones are appended.
    fn apply_messages_snapshot(&mut self, snapshot: &[Value]) {
        let role = |message: &Value| {
            message
                .get("role")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let id = |message: &Value| message.get("id").and_then(Value::as_str).map(str::to_owned);
        let has_role = |name: &str| snapshot.iter().any(|m| role(m).as_deref() == Some(name));
        let (has_activity, has_reasoning) = (has_role("activity"), has_role("reasoning"));
        let client_only = |message: &Value| match role(message).as_deref() {
            Some("activity") => !has_activity,
            Some("reasoning") => !has_reasoning,
            _ => false,
        };
        let by_id = |wanted: &Option<String>| snapshot.iter().find(|m| id(m) == *wanted);
        let mut messages: Vec<Value> = self
            .messages
            .iter()
            .filter_map(|message| {
                if client_only(message) {
                    Some(message.clone())
                } else {
                    by_id(&id(message)).cloned()
                }
            })
            .collect();
        let held: BTreeSet<Option<String>> = messages.iter().map(id).collect();
        messages.extend(
            snapshot
                .iter()
                .filter(|message| !held.contains(&id(message)))
                .cloned(),
        );
        self.messages = messages;
    }
}

/// The most a patched state (or activity message's content) may hold, as [`parsed_size`]
/// estimates it: far above any real frontend's state, far below memory trouble.
pub const MAX_PATCHED_BYTES: usize = 64 * 1024 * 1024;

/// Why a JSON Patch was not applied.
enum PatchFailed {
    /// An operation does not apply (json-patch's error, its index that of the whole patch).
    Apply(json_patch::PatchError),
    /// The operation at this index would grow the target past [`MAX_PATCHED_BYTES`].
    TooLarge(usize),
}

impl PatchFailed {
    /// The problem of frame `frame`'s event `name` patching `target`.
    fn problem(self, frame: usize, name: &str, target: &str) -> AgUiProblem {
        match self {
            PatchFailed::Apply(error) => AgUiProblem::Patch {
                frame,
                name: name.to_owned(),
                target: target.to_owned(),
                error: error.to_string(),
            },
            PatchFailed::TooLarge(operation) => AgUiProblem::PatchTooLarge {
                frame,
                name: name.to_owned(),
                target: target.to_owned(),
                operation,
            },
        }
    }
}

/// Applies `ops` to `target` one operation at a time, refusing the first that would take it past
/// [`MAX_PATCHED_BYTES`]: its growth is at most the size of the value it adds (`add`,
/// `replace`) or copies (`copy`), checked before it is built. The caller patches a copy, so a
/// refused patch leaves what it held as it was.
fn bounded_patch(target: &mut Value, ops: &[PatchOperation]) -> Result<(), PatchFailed> {
    let mut size = parsed_size(target);
    for (index, op) in ops.iter().enumerate() {
        let added = match op {
            PatchOperation::Add(add) => parsed_size(&add.value),
            PatchOperation::Replace(replace) => parsed_size(&replace.value),
            PatchOperation::Copy(copy) => target.pointer(copy.from.as_str()).map_or(0, parsed_size),
            PatchOperation::Remove(_) | PatchOperation::Move(_) | PatchOperation::Test(_) => 0,
        };
        size = size.saturating_add(added);
        if size > MAX_PATCHED_BYTES {
            return Err(PatchFailed::TooLarge(index));
        }
        json_patch::patch(target, std::slice::from_ref(op)).map_err(|mut error| {
            error.operation = index;
            PatchFailed::Apply(error)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::schema_enums::set_at;

    fn run(conversation: &mut Conversation, events: &[Value]) -> Result<RunEnd, AgUiProblem> {
        conversation.apply_run(events.iter().map(Some))
    }

    /// Sends `prompt` as `HttpAgent` does and reads the run's `events`.
    fn prompt_and_run(
        conversation: &mut Conversation,
        (run_id, message_id, prompt): (&str, &str, &str),
        events: &[Value],
    ) -> Result<RunEnd, AgUiProblem> {
        let input = conversation.run_input("t", run_id, message_id, prompt);
        conversation.add_message(input["messages"].as_array().unwrap().last().unwrap());
        run(conversation, events)
    }

    fn started() -> Value {
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    }

    fn finished() -> Value {
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    }

    /// A tool loop as Pydantic AI's adapter streams it: an empty text message that parents the
    /// tool call, the call's arguments in two deltas, its result, a state patch, the answer in
    /// two deltas.
    fn tool_loop() -> Vec<Value> {
        vec![
            started(),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "a1"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "add_item", "parentMessageId": "a1"}),
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"item\":"}),
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": " \"milk\"}"}),
            json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
            json!({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "Added milk.", "role": "tool"}),
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/items", "value": ["milk"]}]}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "Done: "}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "added."}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "a2"}),
            finished(),
        ]
    }

    /// The messages and state `@ag-ui/client` 1.0.0's `HttpAgent` holds after `tool_loop`
    /// (`examples/ag-ui-agent/client/drive.mjs` against the example agent, ids renamed).
    fn tool_loop_assembled() -> Conversation {
        Conversation {
            messages: vec![
                json!({"id": "u1", "role": "user", "content": "Put 'milk' on my list."}),
                json!({"id": "a1", "role": "assistant", "content": "", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "add_item", "arguments": "{\"item\": \"milk\"}"}}]}),
                json!({"id": "t1", "toolCallId": "c1", "role": "tool", "content": "Added milk."}),
                json!({"id": "a2", "role": "assistant", "content": "Done: added."}),
            ],
            state: json!({"items": ["milk"]}),
        }
    }

    #[test]
    fn a_tool_loop_assembles_the_messages_and_state_the_official_client_holds() {
        let mut conversation = Conversation::default();
        let prompt = ("r", "u1", "Put 'milk' on my list.");
        let end = prompt_and_run(&mut conversation, prompt, &tool_loop());
        assert_eq!(end, Ok(RunEnd::Finished));
        assert_eq!(conversation, tool_loop_assembled());
    }

    #[test]
    fn the_follow_up_carries_the_thread_the_messages_and_the_patched_state() {
        let mut conversation = Conversation::default();
        let prompt = ("r1", "u1", "Put 'milk' on my list.");
        prompt_and_run(&mut conversation, prompt, &tool_loop()).unwrap();
        let input = conversation.run_input("t", "r2", "u2", "And eggs.");
        assert_eq!(input["threadId"], "t");
        assert_eq!(input["runId"], "r2");
        assert_eq!(input["state"], json!({"items": ["milk"]}));
        let messages = input["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
        assert_eq!(messages[1]["toolCalls"][0]["id"], "c1");
        assert_eq!(messages[2]["toolCallId"], "c1");
        for key in ["tools", "context", "forwardedProps"] {
            assert!(input.get(key).is_some(), "RunAgentInput lacks {key}");
        }
    }

    /// Each drift a frontend would trip over, and the problem it is reported as.
    /// A JSON Patch that makes `at` an array of a 1 kB string, then copies the array into itself
    /// 40 times, doubling it each time (issue 45, finding 5: 2.4 GB unbounded).
    fn doubling(at: &str) -> Value {
        let mut ops = vec![json!({"op": "add", "path": at, "value": ["x".repeat(1000)]})];
        ops.extend((0..40).map(|_| json!({"op": "copy", "from": at, "path": format!("{at}/-")})));
        Value::Array(ops)
    }

    #[test]
    fn drifted_streams_are_problems_that_name_the_frame() {
        let with = |index: usize, replacement: Option<Value>| {
            let mut events = tool_loop();
            match replacement {
                Some(event) => events[index] = event,
                None => {
                    events.remove(index);
                }
            }
            events
        };
        let content_before_start = {
            let mut events = tool_loop();
            events.swap(9, 10);
            events
        };
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            (
                "a renamed event type",
                with(
                    9,
                    Some(json!({"type": "TEXT_MESSAGE_BEGIN", "messageId": "a2"})),
                ),
                "frame 9: `TEXT_MESSAGE_BEGIN` is not an AG-UI event type",
            ),
            (
                "a dropped RUN_FINISHED",
                with(13, None),
                "the stream ended after TEXT_MESSAGE_END, without RUN_FINISHED or RUN_ERROR",
            ),
            (
                "TEXT_MESSAGE_CONTENT before its START",
                content_before_start,
                "frame 9: TEXT_MESSAGE_CONTENT: no active text message with id \"a2\"",
            ),
            (
                "no RUN_STARTED",
                with(0, None),
                "the first event is TEXT_MESSAGE_START, not RUN_STARTED",
            ),
            (
                "RUN_FINISHED with a tool call open",
                with(6, None),
                "frame 12: RUN_FINISHED: tool calls are still active",
            ),
            (
                "a field renamed",
                with(
                    4,
                    Some(json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "args": "{}"})),
                ),
                "frame 4: TOOL_CALL_ARGS: missing field `delta`",
            ),
            (
                "a patch that does not apply",
                with(
                    8,
                    Some(
                        json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/items/0", "value": "x"}]}),
                    ),
                ),
                "frame 8: STATE_DELTA: the patch does not apply to the client's state",
            ),
            (
                "a STATE_DELTA whose copies double the state (finding 5)",
                with(
                    8,
                    Some(json!({"type": "STATE_DELTA", "delta": doubling("/s")})),
                ),
                "STATE_DELTA at frame 8 grows the client's state past 64 MiB",
            ),
            (
                "an ACTIVITY_DELTA whose copies double the content",
                {
                    let mut events = tool_loop();
                    events[8] = json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "plan", "content": {}});
                    events.insert(9, json!({"type": "ACTIVITY_DELTA", "messageId": "act", "activityType": "plan", "patch": doubling("/s")}));
                    events
                },
                "ACTIVITY_DELTA at frame 9 grows the client's activity message \"act\" past 64 MiB",
            ),
            (
                "a role outside AG-UI's (issue 45, finding 2)",
                with(
                    9,
                    Some(
                        json!({"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "pirate"}),
                    ),
                ),
                "frame 9: TEXT_MESSAGE_START: its role is \"pirate\", not one of developer, \
                 system, assistant, user (@ag-ui/core@",
            ),
            (
                "an event after RUN_FINISHED",
                {
                    let mut events = tool_loop();
                    events.push(json!({"type": "CUSTOM", "name": "late", "value": 1}));
                    events
                },
                "frame 14: CUSTOM: the run already ended with RUN_FINISHED",
            ),
        ];
        for (drift, events, expected) in cases {
            let mut conversation = Conversation::default();
            let problem = run(&mut conversation, &events)
                .err()
                .unwrap_or_else(|| panic!("{drift}: no problem reported"));
            let message = problem.to_string();
            assert!(
                message.starts_with(expected),
                "{drift}: reported {message:?}, expected it to start with {expected:?}"
            );
        }
    }

    #[test]
    fn run_error_ends_the_run_and_names_its_message() {
        let mut conversation = Conversation::default();
        let events = [
            started(),
            json!({"type": "RUN_ERROR", "message": "model refused", "code": "400"}),
        ];
        let end = run(&mut conversation, &events).unwrap();
        let RunEnd::Error(problem) = end else {
            panic!("not an error: {end:?}")
        };
        assert_eq!(
            problem.to_string(),
            "frame 1: RUN_ERROR (400): model refused"
        );
    }

    /// The framing rule sees what applying sees, without a conversation.
    #[test]
    fn verifying_a_run_reports_what_applying_it_would() {
        assert_eq!(
            verify_run(tool_loop().iter().map(Some)),
            Ok(RunEnd::Finished)
        );
        let mut unfinished = tool_loop();
        unfinished.pop();
        let problem = verify_run(unfinished.iter().map(Some)).unwrap_err();
        assert!(
            matches!(problem, AgUiProblem::NotFinished { .. }),
            "{problem}"
        );
        assert_eq!(
            verify_run([None]),
            Err(AgUiProblem::NotJson { frame: 0 }),
            "a frame that is not JSON"
        );
    }

    /// `EVENT_TYPES` and the `Event` variants are one list: every listed type is a variant
    /// whose `name()` gives it back.
    #[test]
    fn every_listed_event_type_is_an_event_variant() {
        for name in EVENT_TYPES {
            match serde_json::from_value::<Event>(json!({"type": name})) {
                Ok(event) => assert_eq!(event.name(), name),
                Err(error) => assert!(
                    !error.to_string().contains("unknown variant"),
                    "{name} is listed but no Event variant: {error}"
                ),
            }
        }
    }

    #[test]
    fn chunks_expand_into_start_content_and_end() {
        let mut chunked = Conversation::default();
        let events = [
            started(),
            json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "Hel"}),
            json!({"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"}),
            json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m", "delta": "{}"}),
            finished(),
        ];
        assert_eq!(run(&mut chunked, &events), Ok(RunEnd::Finished));
        assert_eq!(
            chunked.messages,
            [
                json!({"id": "m", "role": "assistant", "content": "Hello", "toolCalls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
            ]
        );
    }

    #[test]
    fn a_messages_snapshot_replaces_what_it_names_and_keeps_client_only_roles() {
        let mut conversation = Conversation {
            messages: vec![
                json!({"id": "u", "role": "user", "content": "hi"}),
                json!({"id": "gone", "role": "assistant", "content": "stale"}),
                json!({"id": "r", "role": "reasoning", "content": "thinking"}),
            ],
            ..Conversation::default()
        };
        let events = [
            started(),
            json!({"type": "MESSAGES_SNAPSHOT", "messages": [
                {"id": "u", "role": "user", "content": "hi!"},
                {"id": "new", "role": "assistant", "content": "hello"}]}),
            json!({"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}}),
            json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]}),
            finished(),
        ];
        run(&mut conversation, &events).unwrap();
        let ids: Vec<&str> = conversation
            .messages
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["u", "r", "new"]);
        assert_eq!(conversation.messages[0]["content"], "hi!");
        assert_eq!(conversation.state, json!({"n": 2}));
    }

    #[test]
    fn activity_messages_are_kept_but_not_sent() {
        let mut conversation = Conversation::default();
        let events = [
            started(),
            json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "plan", "content": {"steps": []}}),
            json!({"type": "ACTIVITY_DELTA", "messageId": "act", "activityType": "plan", "patch": [{"op": "add", "path": "/steps/-", "value": "a"}]}),
            finished(),
        ];
        run(&mut conversation, &events).unwrap();
        assert_eq!(conversation.messages[0]["content"], json!({"steps": ["a"]}));
        let input = conversation.run_input("t", "r2", "u", "next");
        assert_eq!(input["messages"].as_array().unwrap().len(), 1);
    }

    /// Issue 45, finding 2: every enum and literal union of AG-UI's events (from `@ag-ui/core`,
    /// `schema_enums.json`) takes each of its values and refuses another, naming the field,
    /// for each event type the client reads. A tool's result may be content parts, not only text.
    #[test]
    fn every_enum_field_of_agui_events_refuses_a_value_outside_it() {
        let read = |field: &&crate::driver::schema_enums::EnumField| {
            EVENT_TYPES.contains(&field.event.as_str())
        };
        let fields: Vec<_> = ENUMS.fields.iter().filter(read).collect();
        assert!(fields.len() >= 15, "{} enum fields", fields.len());
        for field in fields {
            let name = format!("{} {}", field.event, field.path);
            // The event's other required enum fields hold an allowed value.
            let mut event = json!({"type": field.event});
            for other in (ENUMS.fields.iter()).filter(|o| o.event == field.event && o.required) {
                set_at(&mut event, &other.path, json!(other.values[0]));
            }
            for allowed in &field.values {
                set_at(&mut event, &field.path, json!(allowed));
                let checked = ENUMS.check(&field.event, event.as_object().unwrap());
                assert_eq!(checked, Ok(()), "{name} = {allowed}: {event}");
            }
            set_at(&mut event, &field.path, json!("pirate"));
            match Event::parse(3, Some(&event)) {
                Err(AgUiProblem::NotInSchema {
                    frame: 3,
                    violation,
                    ..
                }) => {
                    assert_eq!(violation.at, field.path.replace("[]", "[0]"), "{name}");
                    assert_eq!(violation.allowed, field.values, "{name}");
                }
                other => panic!("{name} = \"pirate\": {other:?}"),
            }
        }
        let parts = json!({"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c",
                           "content": [{"type": "text", "text": "Added milk."}]});
        assert!(Event::parse(0, Some(&parts)).is_ok());
    }
}
