//! The Vercel AI SDK's dialect (`--api ai-sdk`; `docs/testing-your-own-gateway.md`, "The
//! dialects"): a chat route that `useChat`'s `DefaultChatTransport` posts to and that answers
//! with a UI message stream (`x-vercel-ai-ui-message-stream: v1`, one JSON chunk per `data:`
//! line, `data: [DONE]` last).
//!
//! Each prompt is one `POST <endpoint>` (`/api/chat` by default) with the body the transport
//! sends for a new message: `{"id": <chat id>, "messages": [<UI messages>], "trigger":
//! "submit-message"}` (its `messageId` is `undefined` for a new message, so `JSON.stringify`
//! leaves it out). The user message is `{"parts": [{"type": "text", "text"}], "id", "role":
//! "user"}`, as `Chat.sendMessage({text})` builds it. A follow-up carries the whole
//! conversation back, the assistant message of each run assembled from its stream as the SDK's
//! `processUIMessageStream` assembles it ([`assemble`]): `step-start` parts, text and reasoning
//! parts (`state: "done"`), `tool-<name>` parts with their `input`, `output` and `state`,
//! `data-*` parts (a transient one is not kept), files and sources. Where the client's stream
//! reader fails (a chunk its schema refuses, a delta or output for a part never started), it
//! stops reading and `Chat` keeps the message assembled so far: so does the driver, and the
//! framing rule fails the run, naming the frame.
//!
//! Framing (`run_problem`, run by run): every run answers with the header, every chunk one the client reads,
//! `start` first, `finish` then
//! `[DONE]` last (once each), `start-step`/`finish-step` paired, and no `error` part unless the
//! fixture records a model error. Shapes: a frame is named by its JSON `type`, and a run of
//! `text-delta`s or `reasoning-delta`s of one `id`, or of `tool-input-delta`s of one
//! `toolCallId`, is one entry (`docs/golden-format.md` §10).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use replay_core::{
    DONE_MARKER, DeltaRule, FrameData, FrameName, FramingProblem, Shape, delta_id, first_chars,
    named_frame_shape,
};

use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::RunRequest;
use super::schema_enums::{EnumViolation, SchemaEnums};
use super::transcript::RunTranscript;

/// The AI SDK's UI message stream: routes at the root, a chat route (`/api/chat`), its header
/// kept for the framing rule ([`run_problem`]).
pub const PROTOCOL: Protocol = Protocol {
    base_path: "",
    ready_path: "/",
    endpoint: Some("/api/chat"),
    ui_modes: false,
    headers: &[STREAM_HEADER.0],
    lf_only: false,
    framing,
    named: Some(named),
};

/// The framing of `runs`: the first run [`run_problem`] finds broken.
fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> replay_core::Framing {
    first_violation(runs, |transcript| {
        run_problem(transcript, model_error_recorded)
    })
}

/// The response header that marks a UI message stream, and its value.
pub const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// The delta frames of the UI message stream and the key of the part each streams into.
pub const DELTAS: [DeltaRule; 3] = [
    DeltaRule {
        name: "text-delta",
        id_key: "id",
    },
    DeltaRule {
        name: "reasoning-delta",
        id_key: "id",
    },
    DeltaRule {
        name: "tool-input-delta",
        id_key: "toolCallId",
    },
];

/// The chat route of an AI SDK app, and the conversation its client holds.
#[derive(Debug, Clone)]
pub struct AiSdk {
    endpoint: String,
    chat_id: String,
    /// The UI messages so far: each prompt's user message and each run's assistant message.
    messages: Vec<Value>,
}

impl AiSdk {
    /// The dialect posting to `endpoint` (the path below the gateway's URL).
    pub fn new(endpoint: String) -> AiSdk {
        AiSdk {
            endpoint,
            chat_id: String::new(),
            messages: Vec::new(),
        }
    }
}

/// An id as the AI SDK's `generateId` makes them: 16 characters of `[0-9A-Za-z]`.
fn generate_id() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..16)
        .map(|_| ALPHABET[rand::random::<usize>() % ALPHABET.len()] as char)
        .collect()
}

/// The request body `DefaultChatTransport` sends for a new user message `prompt` after
/// `history`.
pub fn chat_request(chat_id: &str, history: &[Value], prompt: &str, message_id: &str) -> Value {
    let mut messages = history.to_vec();
    messages.push(
        json!({"parts": [{"type": "text", "text": prompt}], "id": message_id,
                         "role": "user"}),
    );
    json!({"id": chat_id, "messages": messages, "trigger": "submit-message"})
}

#[async_trait::async_trait]
impl Dialect for AiSdk {
    async fn begin(&mut self, _start: Begin<'_>) -> Result<(), DriverError> {
        self.chat_id = generate_id();
        self.messages.clear();
        Ok(())
    }

    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError> {
        let prompt = run.prompt;
        Ok(RunRequest {
            path: self.endpoint.clone(),
            body: chat_request(&self.chat_id, &self.messages, prompt, &generate_id()),
            headers: Vec::new(),
        })
    }

    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        // A stream the client stops reading leaves the message assembled up to there (the
        // framing rule reports where it stopped).
        let (assembled, _) = assemble(transcript.frames().map(|(_, raw, data)| (raw, data)));
        if let Some(messages) = transcript.request["messages"].as_array() {
            self.messages = messages.clone();
        }
        if let Some(mut message) = assembled {
            if message["id"] == "" {
                // `Chat` gives the response message an id of its own when `start` names none.
                message["id"] = json!(generate_id());
            }
            self.messages.push(message);
        }
        Ok(())
    }

    fn history(&self) -> Option<Value> {
        Some(Value::Array(self.messages.clone()))
    }
}

/// Each frame's shape, named by its JSON `type`, with the id of the part a delta streams into
/// ([`super::Api::golden_shapes`] reduces the delta runs; [`framing`] checks run by run).
pub(super) fn named(transcript: &RunTranscript) -> Vec<(Shape, Option<String>)> {
    transcript
        .frames()
        .map(|(event, raw, data)| {
            let shape = named_frame_shape(FrameName::JsonType, Some(event), raw, data);
            let id = delta_id(&shape, data, &DELTAS);
            (shape, id)
        })
        .collect()
}

/// What breaks the UI message stream's framing of one run, if anything.
pub(super) fn run_problem(
    transcript: &RunTranscript,
    model_error_recorded: bool,
) -> Option<FramingProblem> {
    let (header, value) = STREAM_HEADER;
    if transcript.header(header) != Some(value) {
        return Some(FramingProblem::Header {
            name: header.to_owned(),
            expected: value.to_owned(),
            got: transcript.header(header).map(str::to_owned),
        });
    }
    let frames = transcript.frames().map(|(_, raw, data)| (raw, data));
    if let (_, Some(unreadable)) = assemble(frames) {
        return Some(FramingProblem::Invalid {
            problem: unreadable.to_string(),
        });
    }
    let names: Vec<Option<String>> = named(transcript)
        .into_iter()
        .map(|(shape, _)| shape.event)
        .collect();
    let name = |position: usize| names.get(position).cloned().flatten();
    if name(0).as_deref() != Some("start") {
        return Some(FramingProblem::First {
            expected: "\"start\"".into(),
            got: name(0),
        });
    }
    let count = names.len();
    let closed = count >= 2
        && name(count - 2).as_deref() == Some("finish")
        && name(count - 1).as_deref() == Some(DONE_MARKER);
    if !closed {
        return Some(FramingProblem::Last {
            expected: "\"finish\" then \"[DONE]\"".into(),
            got: name(count.saturating_sub(1)),
        });
    }
    let mut step_open = false;
    for (position, frame) in names.iter().enumerate() {
        let frame = frame.as_deref().unwrap_or("");
        let misplaced = match frame {
            "start" => (position != 0).then_some("\"start\" only first"),
            "finish" => {
                (position != count - 2).then_some("\"finish\" only right before \"[DONE]\"")
            }
            DONE_MARKER => (position != count - 1).then_some("\"[DONE]\" only last"),
            "start-step" if step_open => Some("\"finish-step\" before the next \"start-step\""),
            "finish-step" if !step_open => Some("\"start-step\" before \"finish-step\""),
            _ => None,
        };
        if let Some(expected) = misplaced {
            return Some(FramingProblem::OutOfOrder {
                position,
                frame: frame.to_owned(),
                expected: expected.to_owned(),
            });
        }
        match frame {
            "start-step" => step_open = true,
            "finish-step" => step_open = false,
            "error" if !model_error_recorded => {
                return Some(FramingProblem::ErrorFrame {
                    frame: frame.to_owned(),
                    data: first_chars(transcript.events[position].data(), 300).to_owned(),
                });
            }
            _ => {}
        }
    }
    None
}

/// Why a stream cannot be assembled into a UI message, where the AI SDK's client fails too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("frame {position} ({frame}): {message}; the AI SDK's client stops reading the stream here")]
pub struct AssembleError {
    /// The frame's position in the run.
    pub position: usize,
    /// Its type (or its data, cut short, when it has none).
    pub frame: String,
    /// What is wrong.
    pub message: String,
}

/// The string fields each chunk type's schema requires (`uiMessageChunkSchema` in `ai`), as
/// `(type, [key])`; every other key is allowed (the schema's objects are loose).
const CHUNK_FIELDS: &[(&str, &[&str])] = &[
    ("text-start", &["id"]),
    ("text-delta", &["id", "delta"]),
    ("text-end", &["id"]),
    ("error", &["errorText"]),
    ("tool-input-start", &["toolCallId", "toolName"]),
    ("tool-input-delta", &["toolCallId", "inputTextDelta"]),
    ("tool-input-available", &["toolCallId", "toolName"]),
    ("tool-input-error", &["toolCallId", "toolName", "errorText"]),
    ("tool-approval-request", &["approvalId", "toolCallId"]),
    ("tool-output-available", &["toolCallId"]),
    ("tool-output-error", &["toolCallId", "errorText"]),
    ("tool-output-denied", &["toolCallId"]),
    ("reasoning-start", &["id"]),
    ("reasoning-delta", &["id", "delta"]),
    ("reasoning-end", &["id"]),
    ("source-url", &["sourceId", "url"]),
    ("source-document", &["sourceId", "mediaType", "title"]),
    ("file", &["url", "mediaType"]),
    ("start-step", &[]),
    ("finish-step", &[]),
    ("start", &[]),
    ("finish", &[]),
    ("abort", &[]),
    ("message-metadata", &[]),
];

/// The literal unions and enums of the UI message chunks (`finish`'s `finishReason`,
/// `tool-input-start`'s `inputEncoding`) and every chunk type, as `ai`'s `uiMessageChunkSchema`
/// declares them (`ai_sdk/schema_enums.json`, written by `scripts/schema-enums.mjs` from the
/// example's lockfile; a test holds [`CHUNK_FIELDS`] to its types).
pub static ENUMS: LazyLock<SchemaEnums> =
    LazyLock::new(|| SchemaEnums::parse(include_str!("ai_sdk/schema_enums.json")));

/// The streaming state of one assistant message (`createStreamingUIMessageState`).
#[derive(Default)]
struct State {
    id: String,
    metadata: Option<Value>,
    parts: Vec<Value>,
    active_text: BTreeMap<String, usize>,
    active_reasoning: BTreeMap<String, usize>,
    /// Tool calls whose input streams: their text so far and their name.
    partial_calls: BTreeMap<String, (String, String)>,
    /// The call whose `tool-input-delta`s are being read, its part not yet updated with them.
    streaming_input: Option<String>,
    /// Whether the client has written the message into its list (any update but a step's).
    written: bool,
}

/// Whether `part` is a tool part (`tool-<name>` or `dynamic-tool`).
fn is_tool_part(part: &Value) -> bool {
    part["type"]
        .as_str()
        .is_some_and(|kind| kind.starts_with("tool-") || kind == "dynamic-tool")
}

impl State {
    /// The index of the first part of the current step (after the last `step-start`).
    fn step_start(&self) -> usize {
        (self.parts.iter())
            .rposition(|part| part["type"] == "step-start")
            .map_or(0, |index| index + 1)
    }

    /// The tool part of `call` in the current step, else the last one in the message.
    fn tool_part(&self, call: &str) -> Option<usize> {
        let matches = |part: &Value| is_tool_part(part) && part["toolCallId"] == call;
        let start = self.step_start();
        (self.parts[start..].iter())
            .position(matches)
            .map(|index| start + index)
            .or_else(|| self.parts.iter().rposition(matches))
    }

    /// `updateToolPart`: the call's part in the current step updated with `fields` (a `None`
    /// value removes the key, as an `undefined` one is dropped by `JSON.stringify`), or a new one
    /// pushed.
    fn update_tool(&mut self, call: &str, name: &str, fields: &[(&str, Option<Value>)]) {
        let start = self.step_start();
        let existing = (self.parts[start..].iter())
            .position(|part| {
                part["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("tool-"))
                    && part["toolCallId"] == call
            })
            .map(|index| start + index);
        let index = existing.unwrap_or_else(|| {
            self.parts
                .push(json!({"type": format!("tool-{name}"), "toolCallId": call}));
            self.parts.len() - 1
        });
        self.set_tool(index, name, fields);
    }

    /// Sets `fields` on the tool part at `index` (its type renamed after `name` unless it is a
    /// dynamic tool), as `updateToolPart` does on an existing part.
    fn set_tool(&mut self, index: usize, name: &str, fields: &[(&str, Option<Value>)]) {
        let Some(part) = self.parts[index].as_object_mut() else {
            return;
        };
        if part["type"] != "dynamic-tool" {
            part.insert("type".into(), json!(format!("tool-{name}")));
        }
        for (key, value) in fields {
            match value {
                Some(value) if !value.is_null() || *key == "output" || *key == "input" => {
                    part.insert((*key).to_owned(), value.clone());
                }
                _ => {
                    part.remove(*key);
                }
            }
        }
    }
}

/// The name a tool part's type carries (`tool-<name>`), or a dynamic tool's `toolName`.
fn tool_name(part: &Value) -> String {
    match part["type"].as_str() {
        Some("dynamic-tool") => part["toolName"].as_str().unwrap_or_default().to_owned(),
        Some(kind) => kind.strip_prefix("tool-").unwrap_or(kind).to_owned(),
        None => String::new(),
    }
}

/// The assistant message a UI message stream assembles into, as `processUIMessageStream` and
/// `Chat` assemble it (`None` when the client would not have written one: a stream with no
/// part and no message id), and the frame where the client's reader fails, if it does: the
/// message is then the one assembled up to that frame, as `Chat` keeps it. `frames` are each
/// frame's data as sent and parsed.
pub fn assemble<'a>(
    frames: impl IntoIterator<Item = (&'a str, &'a FrameData)>,
) -> (Option<Value>, Option<AssembleError>) {
    let mut state = State::default();
    let unreadable = read_frames(&mut state, frames).err();
    (state.into_message(), unreadable)
}

/// Reads frames into `state` until one the client's reader fails on.
fn read_frames<'a>(
    state: &mut State,
    frames: impl IntoIterator<Item = (&'a str, &'a FrameData)>,
) -> Result<(), AssembleError> {
    for (position, (raw, data)) in frames.into_iter().enumerate() {
        let input_delta = data
            .json()
            .is_some_and(|chunk| chunk["type"] == "tool-input-delta");
        let same_call = input_delta
            && state.streaming_input.as_deref()
                == data.json().and_then(|chunk| chunk["toolCallId"].as_str());
        if !same_call {
            state.flush_input();
        }
        if raw.trim() == DONE_MARKER {
            continue;
        }
        let fail = |frame: &str, message: String| AssembleError {
            position,
            frame: frame.to_owned(),
            message,
        };
        let Some(chunk) = data.json().and_then(Value::as_object) else {
            return Err(fail(first_chars(raw, 60), "not a JSON object".to_owned()));
        };
        let kind = chunk.get("type").and_then(Value::as_str).unwrap_or("");
        check_schema(kind, chunk).map_err(|err| fail(kind, err.to_string()))?;
        let text = |key: &str| {
            chunk
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let provider = chunk
            .get("providerMetadata")
            .filter(|v| !v.is_null())
            .cloned();
        match kind {
            "text-start" | "reasoning-start" => {
                let mut part = Map::new();
                if kind == "text-start" {
                    part.insert("type".into(), json!("text"));
                } else {
                    part.insert("type".into(), json!("reasoning"));
                    part.insert("id".into(), json!(text("id")));
                }
                part.insert("text".into(), json!(""));
                if let Some(provider) = provider {
                    part.insert("providerMetadata".into(), provider);
                }
                part.insert("state".into(), json!("streaming"));
                state.parts.push(Value::Object(part));
                let index = state.parts.len() - 1;
                let active = if kind == "text-start" {
                    &mut state.active_text
                } else {
                    &mut state.active_reasoning
                };
                active.insert(text("id"), index);
                state.written = true;
            }
            "text-delta" | "reasoning-delta" | "text-end" | "reasoning-end" => {
                let text_kind = kind.starts_with("text-");
                let active = if text_kind {
                    &mut state.active_text
                } else {
                    &mut state.active_reasoning
                };
                let id = text("id");
                let Some(&index) = active.get(&id) else {
                    let start = if text_kind {
                        "text-start"
                    } else {
                        "reasoning-start"
                    };
                    return Err(fail(
                        kind,
                        format!("no {start} came before it for the part with id {id:?}"),
                    ));
                };
                if kind.ends_with("-end") {
                    active.remove(&id);
                }
                let part = &mut state.parts[index];
                if kind.ends_with("-delta") {
                    // Appended in place: a copy per delta would make a long answer quadratic.
                    if let Some(Value::String(so_far)) = part.get_mut("text") {
                        so_far.push_str(chunk.get("delta").and_then(Value::as_str).unwrap_or(""));
                    }
                } else {
                    part["state"] = json!("done");
                }
                if let Some(provider) = provider {
                    part["providerMetadata"] = provider;
                }
                state.written = true;
            }
            "file" | "source-url" | "source-document" => {
                let keys: &[&str] = match kind {
                    "file" => &["mediaType", "url", "providerMetadata"],
                    "source-url" => &["sourceId", "url", "title", "providerMetadata"],
                    _ => &[
                        "sourceId",
                        "mediaType",
                        "title",
                        "filename",
                        "providerMetadata",
                    ],
                };
                let mut part = Map::new();
                part.insert("type".into(), json!(kind));
                for key in keys {
                    if let Some(value) = chunk.get(*key).filter(|v| !v.is_null()) {
                        part.insert((*key).to_owned(), value.clone());
                    }
                }
                state.parts.push(Value::Object(part));
                state.written = true;
            }
            "tool-input-start" => {
                let (call, name) = (text("toolCallId"), text("toolName"));
                state
                    .partial_calls
                    .insert(call.clone(), (String::new(), name.clone()));
                let mut fields = vec![
                    ("state", Some(json!("input-streaming"))),
                    ("input", None),
                    ("title", chunk.get("title").cloned()),
                    ("providerExecuted", chunk.get("providerExecuted").cloned()),
                ];
                if let Some(provider) = provider {
                    fields.push(("callProviderMetadata", Some(provider)));
                }
                if chunk.get("dynamic") == Some(&Value::Bool(true)) {
                    state
                        .parts
                        .push(json!({"type": "dynamic-tool", "toolName": name,
                                            "toolCallId": call}));
                    let index = state.parts.len() - 1;
                    state.set_tool(index, &name, &fields);
                } else {
                    state.update_tool(&call, &name, &fields);
                }
                state.written = true;
            }
            "tool-input-delta" => {
                let call = text("toolCallId");
                let Some((so_far, _)) = state.partial_calls.get_mut(&call) else {
                    return Err(fail(
                        kind,
                        format!("no tool-input-start came before it for the call {call:?}"),
                    ));
                };
                so_far.push_str(&text("inputTextDelta"));
                // The part is brought up to date once the deltas of this call end (`flush`):
                // parsing the whole input again per delta would make a long input quadratic.
                state.streaming_input = Some(call);
                state.written = true;
            }
            "tool-input-available" | "tool-input-error" => {
                let (call, name) = (text("toolCallId"), text("toolName"));
                let error = kind == "tool-input-error";
                let mut fields = vec![
                    (
                        "state",
                        Some(json!(if error {
                            "output-error"
                        } else {
                            "input-available"
                        })),
                    ),
                    (
                        "input",
                        if error {
                            None
                        } else {
                            chunk.get("input").cloned()
                        },
                    ),
                    (
                        "rawInput",
                        if error {
                            chunk.get("input").cloned()
                        } else {
                            None
                        },
                    ),
                    ("output", None),
                    ("errorText", chunk.get("errorText").cloned()),
                    ("preliminary", None),
                ];
                if let Some(value) = chunk.get("title") {
                    fields.push(("title", Some(value.clone())));
                }
                if let Some(value) = chunk.get("providerExecuted") {
                    fields.push(("providerExecuted", Some(value.clone())));
                }
                if let Some(provider) = provider {
                    fields.push(("callProviderMetadata", Some(provider)));
                }
                match state.tool_part(&call).filter(|i| *i >= state.step_start()) {
                    Some(index) => state.set_tool(index, &name, &fields),
                    None if chunk.get("dynamic") == Some(&Value::Bool(true)) => {
                        state
                            .parts
                            .push(json!({"type": "dynamic-tool", "toolName": name,
                                                "toolCallId": call}));
                        let index = state.parts.len() - 1;
                        state.set_tool(index, &name, &fields);
                    }
                    None => state.update_tool(&call, &name, &fields),
                }
                state.written = true;
            }
            "tool-output-available"
            | "tool-output-error"
            | "tool-output-denied"
            | "tool-approval-request" => {
                let call = text("toolCallId");
                let Some(index) = state.tool_part(&call) else {
                    return Err(fail(
                        kind,
                        format!("no tool invocation for the call {call:?} came before it"),
                    ));
                };
                let name = tool_name(&state.parts[index]);
                let mut fields: Vec<(&str, Option<Value>)> = match kind {
                    "tool-output-available" => vec![
                        ("state", Some(json!("output-available"))),
                        ("output", chunk.get("output").cloned()),
                        ("errorText", None),
                        ("rawInput", None),
                        ("preliminary", chunk.get("preliminary").cloned()),
                    ],
                    "tool-output-error" => vec![
                        ("state", Some(json!("output-error"))),
                        ("output", None),
                        ("errorText", chunk.get("errorText").cloned()),
                        ("preliminary", None),
                    ],
                    "tool-output-denied" => vec![("state", Some(json!("output-denied")))],
                    _ => vec![
                        ("state", Some(json!("approval-requested"))),
                        ("approval", Some(json!({"id": text("approvalId")}))),
                    ],
                };
                if kind.starts_with("tool-output-a") || kind.starts_with("tool-output-e") {
                    if let Some(value) = chunk.get("providerExecuted") {
                        fields.push(("providerExecuted", Some(value.clone())));
                    }
                    if let Some(provider) = provider {
                        fields.push(("resultProviderMetadata", Some(provider)));
                    }
                }
                state.set_tool(index, &name, &fields);
                state.written = true;
            }
            "start-step" => state.parts.push(json!({"type": "step-start"})),
            "finish-step" => {
                state.active_text.clear();
                state.active_reasoning.clear();
            }
            "start" => {
                if let Some(id) = chunk.get("messageId").and_then(Value::as_str) {
                    state.id = id.to_owned();
                    state.written = true;
                }
                merge_metadata(state, chunk.get("messageMetadata"));
            }
            "finish" | "message-metadata" => merge_metadata(state, chunk.get("messageMetadata")),
            "error" | "abort" => {}
            data_kind if data_kind.starts_with("data-") => {
                if chunk.get("transient") == Some(&Value::Bool(true)) {
                    continue;
                }
                let id = chunk.get("id").filter(|id| !id.is_null());
                let existing = id.and_then(|id| {
                    (state.parts.iter())
                        .position(|part| part["type"] == data_kind && part.get("id") == Some(id))
                });
                match existing {
                    Some(index) => {
                        state.parts[index]["data"] =
                            chunk.get("data").cloned().unwrap_or(Value::Null)
                    }
                    None => state.parts.push(Value::Object(chunk.clone())),
                }
                state.written = true;
            }
            _ => unreachable!("check_schema refuses every other type"),
        }
    }
    Ok(())
}

impl State {
    /// Updates the part of the call whose input deltas were being read, as the client does on
    /// each `tool-input-delta` (state `input-streaming`, `rawInput` the text so far, `input` its
    /// parse: the client parses partial JSON leniently, this only a whole one; the input is final
    /// once `tool-input-available` names it).
    fn flush_input(&mut self) {
        let Some(call) = self.streaming_input.take() else {
            return;
        };
        let Some((raw_input, name)) = self.partial_calls.get(&call).cloned() else {
            return;
        };
        let input = serde_json::from_str::<Value>(&raw_input).ok();
        let fields = [
            ("state", Some(json!("input-streaming"))),
            ("input", input),
            ("rawInput", Some(json!(raw_input))),
            ("output", None),
            ("errorText", None),
            ("preliminary", None),
        ];
        match self.tool_part(&call) {
            Some(index) => self.set_tool(index, &name, &fields),
            None => self.update_tool(&call, &name, &fields),
        }
    }

    /// The message, once the client has written it into its list.
    fn into_message(mut self) -> Option<Value> {
        self.flush_input();
        if !self.written {
            return None;
        }
        let mut message = Map::new();
        message.insert("id".into(), json!(self.id));
        if let Some(metadata) = self.metadata {
            message.insert("metadata".into(), metadata);
        }
        message.insert("role".into(), json!("assistant"));
        message.insert("parts".into(), Value::Array(self.parts));
        Some(Value::Object(message))
    }
}

/// Merges a chunk's `messageMetadata` into the message's (`mergeObjects`: objects key by key,
/// anything else replaced).
fn merge_metadata(state: &mut State, metadata: Option<&Value>) {
    let Some(metadata) = metadata.filter(|m| !m.is_null()) else {
        return;
    };
    match (&mut state.metadata, metadata) {
        (Some(Value::Object(old)), Value::Object(new)) => {
            for (key, value) in new {
                old.insert(key.clone(), value.clone());
            }
        }
        (slot, _) => *slot = Some(metadata.clone()),
    }
    state.written = true;
}

/// How a chunk breaks the client's schema.
#[derive(Debug, thiserror::Error)]
enum SchemaError {
    /// The type is none the schema knows.
    #[error(
        "{kind:?} is not a UI message chunk type (the client's schema knows {} and data-*)",
        ENUMS.types.join(", ")
    )]
    UnknownType {
        /// The chunk's `type`.
        kind: String,
    },
    /// A required field is missing or not a string.
    #[error("its {key:?} is missing or not a string")]
    Field {
        /// The field.
        key: &'static str,
    },
    /// A field holding a value outside its enum (a `finishReason` the schema does not know).
    #[error(transparent)]
    NotInSchema(#[from] EnumViolation),
}

/// Checks a chunk against the client's schema: a known type (or `data-*`) with its required
/// fields as strings.
fn check_schema(kind: &str, chunk: &Map<String, Value>) -> Result<(), SchemaError> {
    if kind.starts_with("data-") {
        return Ok(());
    }
    let Some((_, fields)) = CHUNK_FIELDS.iter().find(|(name, _)| *name == kind) else {
        return Err(SchemaError::UnknownType {
            kind: kind.to_owned(),
        });
    };
    for key in fields.iter() {
        if !chunk.get(*key).is_some_and(Value::is_string) {
            return Err(SchemaError::Field { key });
        }
    }
    ENUMS.check(kind, chunk)?;
    Ok(())
}

#[cfg(test)]
mod tests;
