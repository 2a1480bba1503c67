//! Reading an answer: streamed `chat.completion.chunk`s one `data:` payload at a time
//! ([`ChunkAssembler`]), or a whole `chat.completion` ([`parse_completion`]), into the
//! [`Event`]s a streaming client sees and the one [`Assembled`] answer both give.
//!
//! What providers send besides OpenAI's own form, and how it is read (`docs/recording-format.md`
//! §15 lists the table of streams the tests hold this to):
//!
//! - `content` as a string, or as a list of parts (`[{"type": "text", "text"}]`, Mistral);
//!   `thinking` parts (Mistral's reasoning models) are reasoning.
//! - reasoning as `reasoning_content` (DeepSeek) or `reasoning` (OpenRouter, vLLM).
//! - `refusal` fragments (OpenAI), kept in the answer.
//! - usage in a last chunk whose `choices` is empty (`include_usage`), on the finishing chunk, or
//!   `null` on every chunk: the last object wins.
//! - tool calls: OpenAI's `index`ed fragments, interleaved or not; a whole call in one chunk
//!   (Ollama, Gemini), possibly without `index`; a new `id` under an `index` already used by
//!   another call (a known provider bug that clients tolerate) is a new call; an empty or missing
//!   id is filled with [`fill_call_id`]'s deterministic id; object-valued `arguments` are kept as
//!   their JSON text.
//! - an `error` object in a chunk (OpenRouter, vLLM) is [`WireError::Provider`].
//! - a stream that ends with neither a `finish_reason` nor `[DONE]` is [`WireError::Truncated`];
//!   one that ends with only one of them is accepted and says so in [`Assembled::ending`].

use serde_json::{Map, Value};

use super::error::{WireError, cut};
pub(super) use crate::Event;

/// A tool call of an answer: id (never empty, see [`fill_call_id`]), name, and the arguments
/// as the provider sent them (JSON text; an object the provider sent as such is its JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledCall {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments' JSON text, exactly as sent (not re-serialised).
    pub arguments: String,
}

/// How a streamed answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// A `finish_reason` and `data: [DONE]` (a whole completion is always this).
    #[default]
    Complete,
    /// A `finish_reason` but no `[DONE]` (some compatible servers omit the marker).
    NoDoneMarker,
    /// `[DONE]` but no `finish_reason`.
    NoFinishReason,
}

/// One answer, read from a stream or a whole completion.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Assembled {
    /// The answer text.
    pub text: String,
    /// Reasoning text, empty when none.
    pub reasoning: String,
    /// The signature of the reasoning, empty when none: Anthropic signs its thinking blocks and
    /// requires a thinking block sent back in a tool loop to carry its signature.
    pub reasoning_signature: String,
    /// A refusal, when the provider sent one.
    pub refusal: Option<String>,
    /// The tool calls, in order of first appearance.
    pub calls: Vec<AssembledCall>,
    /// `finish_reason`, when the provider sent one.
    pub finish_reason: Option<String>,
    /// The model the provider reported, when it did.
    pub model: Option<String>,
    /// The provider's `usage` object, when it sent one.
    pub usage: Option<Value>,
    /// A whole completion's extras, in order (`id`, `system_fingerprint`, `service_tier`,
    /// `token_usage`, `logprobs`); empty for a stream.
    pub extra_metadata: Map<String, Value>,
    /// How the stream ended.
    pub ending: Ending,
}

/// The id of a call the provider sent without one: `call_` and 16 hex digits of a hash of the
/// call's position, name and arguments. The same call gets the same id on every run and on
/// both sides of a recording (the gateway's provider and the model server), so a replay's
/// conversation equals the recorded one; calls of one answer, and different calls of different
/// answers, get different ids.
pub fn fill_call_id(position: usize, name: &str, arguments: &str) -> String {
    // FNV-1a, 64 bits: stable across platforms and releases, unlike `std`'s hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = position
        .to_le_bytes()
        .into_iter()
        .chain([0xff])
        .chain(name.bytes())
        .chain([0xff])
        .chain(arguments.bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("call_{hash:016x}")
}

/// Which text-like block is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    None,
    Text,
    Thinking,
}

/// A tool call being streamed.
#[derive(Debug)]
struct PartialCall {
    /// The provider's `index` this call arrived under, when it sent one.
    provider_index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    ended: bool,
}

/// Folds a stream's `data:` payloads into [`Event`]s and, at the end, the [`Assembled`] answer.
///
/// Tool calls are kept in slots numbered 0, 1, … in order of first appearance; the events use
/// the slot. With OpenAI the slot equals the provider's `index`, also when parallel calls
/// interleave. A new non-empty `id` under an index that already has a different id opens a new
/// slot; a fragment without `index` continues the latest slot unless it carries a new id.
#[derive(Debug)]
pub struct ChunkAssembler {
    model: Option<String>,
    text: String,
    reasoning: String,
    refusal: String,
    open: Block,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    saw_choice: bool,
    saw_done: bool,
}

impl Default for ChunkAssembler {
    fn default() -> Self {
        ChunkAssembler::new()
    }
}

impl ChunkAssembler {
    /// An assembler for one answer.
    pub fn new() -> ChunkAssembler {
        ChunkAssembler {
            model: None,
            text: String::new(),
            reasoning: String::new(),
            refusal: String::new(),
            open: Block::None,
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
            saw_choice: false,
            saw_done: false,
        }
    }

    /// True once a choice has finished (`finish_reason` seen).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// True once `data: [DONE]` has arrived: the stream is over, and the caller reads no more.
    pub fn done(&self) -> bool {
        self.saw_done
    }

    /// One `data:` payload of the stream: `[DONE]` (checked before parsing, it is not JSON) or a
    /// JSON chunk. Payloads after `[DONE]` are ignored.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Event>, WireError> {
        let data = data.trim();
        if self.saw_done {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.saw_done = true;
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: cut(data, 200),
        })?;
        self.push_chunk(&chunk)
    }

    /// One parsed chunk. A chunk with a non-null `error` is [`WireError::Provider`].
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<Vec<Event>, WireError> {
        let mut out = Vec::new();
        if !chunk.is_object() {
            return Err(WireError::ChunkNotObject);
        }
        if chunk.get("error").is_some_and(|error| !error.is_null()) {
            return Err(WireError::reported(chunk));
        }
        if let Some(model) = chunk
            .get("model")
            .and_then(Value::as_str)
            .filter(|model| !model.is_empty())
        {
            self.model = Some(model.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(out);
        };
        // Only the first choice is followed: nobody here asks for `n > 1`.
        for choice in choices
            .iter()
            .filter(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        {
            self.saw_choice = true;
            if let Some(delta) = choice.get("delta") {
                self.on_delta(delta, &mut out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
                self.close_all(&mut out);
            }
        }
        Ok(out)
    }

    fn on_delta(&mut self, delta: &Value, out: &mut Vec<Event>) {
        let fragment = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        let (text, thinking_parts) = content_text(delta.get("content"));
        // Some servers send the same reasoning under both names: one is read.
        let thinking = fragment("reasoning_content")
            .or_else(|| fragment("reasoning"))
            .map(str::to_owned)
            .unwrap_or_default()
            + &thinking_parts;
        if !thinking.is_empty() {
            self.open_block(Block::Thinking, out);
            self.reasoning.push_str(&thinking);
            out.push(Event::ThinkingDelta { delta: thinking });
        }
        if !text.is_empty() {
            self.open_block(Block::Text, out);
            self.text.push_str(&text);
            out.push(Event::TextDelta { delta: text });
        }
        if let Some(refusal) = fragment("refusal") {
            self.refusal.push_str(refusal);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.on_tool_call(call, out);
            }
        }
    }

    /// Opens `kind`, closing the other text-like block first.
    fn open_block(&mut self, kind: Block, out: &mut Vec<Event>) {
        if self.open == kind {
            return;
        }
        self.close_block(out);
        out.push(match kind {
            Block::Text => Event::TextStart,
            Block::Thinking => Event::ThinkingStart,
            Block::None => return,
        });
        self.open = kind;
    }

    fn close_block(&mut self, out: &mut Vec<Event>) {
        match self.open {
            Block::Text => out.push(Event::TextEnd),
            Block::Thinking => out.push(Event::ThinkingEnd),
            Block::None => {}
        }
        self.open = Block::None;
    }

    /// Closes the open block and ends every call not yet ended, in slot order.
    fn close_all(&mut self, out: &mut Vec<Event>) {
        self.close_block(out);
        for (slot, call) in self.calls.iter_mut().enumerate() {
            if !call.ended {
                call.ended = true;
                out.push(Event::ToolcallEnd { index: slot as u32 });
            }
        }
    }

    fn on_tool_call(&mut self, call: &Value, out: &mut Vec<Event>) {
        let provider_index = call.get("index").and_then(Value::as_u64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty());
        let arguments = arguments_text(function.and_then(|f| f.get("arguments")));

        let existing = match provider_index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.provider_index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        // A different non-empty id under a known slot means a new call, not a continuation.
        let continued = existing.filter(|&slot| {
            let known = &self.calls[slot].id;
            !matches!(id, Some(id) if !known.is_empty() && known != id)
        });
        let slot = match continued {
            Some(slot) => slot,
            None => {
                self.close_block(out);
                let slot = self.calls.len();
                let id = id.unwrap_or_default().to_owned();
                let name = name.unwrap_or_default().to_owned();
                out.push(Event::ToolcallStart {
                    index: slot as u32,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(PartialCall {
                    provider_index,
                    id,
                    name,
                    arguments: String::new(),
                    ended: false,
                });
                slot
            }
        };
        let entry = &mut self.calls[slot];
        // Late ids and names fill in what the first fragment lacked; never concatenated.
        if entry.id.is_empty()
            && let Some(id) = id
        {
            entry.id = id.to_owned();
        }
        if entry.name.is_empty()
            && let Some(name) = name
        {
            entry.name = name.to_owned();
        }
        if !arguments.is_empty() {
            entry.arguments.push_str(&arguments);
            out.push(Event::ToolcallDelta {
                index: slot as u32,
                delta: arguments,
            });
        }
    }

    /// Ends the answer: the closing events of whatever is still open, and the answer. Fails when
    /// no choice ever arrived ([`WireError::NoChoices`]) or the stream was cut off
    /// ([`WireError::Truncated`]: neither a `finish_reason` nor `[DONE]`).
    pub fn finish(mut self) -> Result<(Vec<Event>, Assembled), WireError> {
        if !self.saw_choice {
            return Err(WireError::NoChoices);
        }
        let ending = match (self.finish_reason.is_some(), self.saw_done) {
            (true, true) => Ending::Complete,
            (true, false) => Ending::NoDoneMarker,
            (false, true) => Ending::NoFinishReason,
            (false, false) => return Err(WireError::Truncated),
        };
        let mut out = Vec::new();
        self.close_all(&mut out);
        let calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| AssembledCall {
                id: if call.id.is_empty() {
                    fill_call_id(position, &call.name, &call.arguments)
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let assembled = Assembled {
            text: self.text,
            reasoning: self.reasoning,
            reasoning_signature: String::new(),
            refusal: Some(self.refusal).filter(|refusal| !refusal.is_empty()),
            calls,
            finish_reason: self.finish_reason,
            model: self.model,
            usage: self.usage,
            extra_metadata: Map::new(),
            ending,
        };
        Ok((out, assembled))
    }
}

/// A `content` field's text and reasoning: a string is text; a list's `text` parts (and bare
/// strings) are text, its `thinking` parts (Mistral: `{"type": "thinking", "thinking": [parts]}`)
/// reasoning.
fn content_text(content: Option<&Value>) -> (String, String) {
    let mut text = String::new();
    let mut thinking = String::new();
    match content {
        Some(Value::String(whole)) => text.push_str(whole),
        Some(Value::Array(parts)) => {
            for part in parts {
                match part {
                    Value::String(piece) => text.push_str(piece),
                    part if part.get("type").and_then(Value::as_str) == Some("thinking") => {
                        match part.get("thinking") {
                            Some(Value::String(piece)) => thinking.push_str(piece),
                            inner @ Some(Value::Array(_)) => {
                                thinking.push_str(&content_text(inner).0);
                            }
                            _ => {}
                        }
                    }
                    part => {
                        if let Some(piece) = part.get("text").and_then(Value::as_str) {
                            text.push_str(piece);
                        }
                    }
                }
            }
        }
        _ => {}
    }
    (text, thinking)
}

/// A call's `arguments` as JSON text: a string as it is, an object (some servers send one) as
/// its JSON text, anything else nothing.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        Some(Value::String(text)) => text.clone(),
        Some(value @ (Value::Object(_) | Value::Array(_))) => value.to_string(),
        _ => String::new(),
    }
}

/// A whole (non-streamed) `chat.completion` as the [`Assembled`] answer. A body with an `error`
/// and no choices (some servers answer 200 with an error body) is [`WireError::Provider`].
pub fn parse_completion(body: &Value) -> Result<Assembled, WireError> {
    if !body.is_object() {
        return Err(WireError::CompletionNotObject);
    }
    let choice = match body.get("choices").and_then(Value::as_array) {
        Some(choices) if !choices.is_empty() => &choices[0],
        _ if body.get("error").is_some_and(|error| !error.is_null()) => {
            return Err(WireError::reported(body));
        }
        _ => return Err(WireError::NoCompletionChoices),
    };
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let text_field = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(position, call)| {
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let arguments = arguments_text(function.and_then(|f| f.get("arguments")));
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| fill_call_id(position, &name, &arguments));
            AssembledCall {
                id,
                name,
                arguments,
            }
        })
        .collect();

    let mut extra_metadata = Map::new();
    for key in ["id", "system_fingerprint", "service_tier"] {
        if let Some(value) = body.get(key).filter(|value| !value.is_null()) {
            extra_metadata.insert(key.to_owned(), value.clone());
        }
    }
    let usage = body.get("usage").filter(|usage| usage.is_object()).cloned();
    if let Some(usage) = &usage {
        extra_metadata.insert("token_usage".into(), usage.clone());
    }
    if let Some(logprobs) = choice.get("logprobs").filter(|value| !value.is_null()) {
        extra_metadata.insert("logprobs".into(), logprobs.clone());
    }
    let (text, thinking_parts) = content_text(message.get("content"));
    let reasoning = text_field("reasoning_content")
        .or_else(|| text_field("reasoning"))
        .unwrap_or_default()
        + &thinking_parts;
    Ok(Assembled {
        text,
        reasoning,
        reasoning_signature: String::new(),
        refusal: text_field("refusal"),
        calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .map(str::to_owned),
        usage,
        extra_metadata,
        ending: Ending::Complete,
    })
}

impl Assembled {
    /// The events this answer gives when it is streamed in one piece per block (see
    /// `block_events`), its calls in the provider's order with their arguments as sent.
    pub fn events(&self) -> Vec<Event> {
        block_events(&self.reasoning, &self.text, &self.calls)
    }

    /// Adds a call the provider sent whole in one chunk (Gemini's `functionCall`, Ollama's
    /// `tool_calls`): its `id`, or one filled in ([`fill_call_id`]) when it sent none or an
    /// empty one, and its events to `events` (`toolcall_start`, the arguments as one delta,
    /// `toolcall_end`).
    pub(crate) fn push_whole_call(
        &mut self,
        id: Option<&str>,
        name: String,
        arguments: String,
        events: &mut Vec<Event>,
    ) {
        let position = self.calls.len();
        let id = match id {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => fill_call_id(position, &name, &arguments),
        };
        let index = position as u32;
        events.push(Event::ToolcallStart {
            index,
            id: id.clone(),
            name: name.clone(),
        });
        events.push(Event::ToolcallDelta {
            index,
            delta: arguments.clone(),
        });
        events.push(Event::ToolcallEnd { index });
        self.calls.push(AssembledCall {
            id,
            name,
            arguments,
        });
    }
}

/// The events of an answer streamed in one piece per block: its reasoning, its text, then each
/// call (`toolcall_start`, its arguments as one delta when there are any, `toolcall_end`).
pub(crate) fn block_events(reasoning: &str, text: &str, calls: &[AssembledCall]) -> Vec<Event> {
    let mut events = Vec::new();
    if !reasoning.is_empty() {
        events.push(Event::ThinkingStart);
        events.push(Event::ThinkingDelta {
            delta: reasoning.to_owned(),
        });
        events.push(Event::ThinkingEnd);
    }
    if !text.is_empty() {
        events.push(Event::TextStart);
        events.push(Event::TextDelta {
            delta: text.to_owned(),
        });
        events.push(Event::TextEnd);
    }
    for (index, call) in calls.iter().enumerate() {
        let index = index as u32;
        events.push(Event::ToolcallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        if !call.arguments.is_empty() {
            events.push(Event::ToolcallDelta {
                index,
                delta: call.arguments.clone(),
            });
        }
        events.push(Event::ToolcallEnd { index });
    }
    events
}
