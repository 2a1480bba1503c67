//! Streaming answers: SSE bytes → Chat Completions chunks → [`StreamEvent`]s.
//!
//! [`sse_events`] takes any byte stream, so tests feed it chunks split mid-line or mid-UTF-8
//! without HTTP. eventsource-stream does the SSE framing (and keeps an incomplete UTF-8 sequence
//! until its next bytes arrive); [`ChunkAssembler`] turns each `data:` JSON chunk into events and
//! accumulates the final message.
//!
//! Event order: `start`; a text or thinking block opens on its first non-empty fragment and
//! closes when the other kind of block or the first tool call starts, or when the choice
//! finishes; each tool call gets `toolcall_start` on its first chunk, `toolcall_delta` per
//! argument fragment, and `toolcall_end` (all calls, in index order) when the choice finishes;
//! then `done` with the assembled message. Failures end the stream with an `Err` item (not an
//! [`StreamEvent::Error`]) so the caller keeps the error type, status and class.

use std::collections::VecDeque;
use std::pin::Pin;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::wire::{Assembled, RawToolCall, error_body_message, response_text};
use crate::models::{EventStream, ModelError, StreamEvent};

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

/// Folds Chat Completions chunks into events and the final message.
///
/// Tool calls are kept in "slots" numbered 0, 1, … in order of first appearance; the events use
/// the slot number. With OpenAI the slot equals the provider's `index`, also when parallel calls
/// interleave. The slots exist for compatible servers that put every call under index 0 with
/// distinct ids, or send no index: a new non-empty `id` under an index that already has a
/// different id opens a new slot, and a chunk without index continues the latest slot.
#[derive(Debug)]
pub(super) struct ChunkAssembler {
    model_id: String,
    model_name: Option<String>,
    text: String,
    reasoning: String,
    refusal: String,
    open: Block,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    saw_choice: bool,
}

impl ChunkAssembler {
    /// An assembler for a call to `model_id` (the fallback `model_name`).
    pub(super) fn new(model_id: &str) -> ChunkAssembler {
        ChunkAssembler {
            model_id: model_id.to_string(),
            model_name: None,
            text: String::new(),
            reasoning: String::new(),
            refusal: String::new(),
            open: Block::None,
            calls: Vec::new(),
            finish_reason: None,
            usage: None,
            saw_choice: false,
        }
    }

    /// True once a choice has finished (`finish_reason` seen).
    pub(super) fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Handles one parsed chunk, appending the events it causes to `out`.
    pub(super) fn on_chunk(
        &mut self,
        chunk: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ModelError> {
        if !chunk.is_object() {
            return Err(ModelError::new(
                "RemoteProtocolError",
                "a stream chunk is not a JSON object",
            ));
        }
        // Servers report failures mid-stream as a chunk with an `error` object.
        if chunk.get("error").is_some_and(|error| !error.is_null()) {
            let message = error_body_message(chunk)
                .unwrap_or_else(|| "the provider reported an error mid-stream".to_string());
            return Err(ModelError::new("APIError", message));
        }
        if let Some(model) = chunk
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
        {
            self.model_name = Some(model.to_string());
        }
        // With `include_usage` the usage arrives in a last chunk whose `choices` is empty; some
        // servers attach it to the finishing chunk instead, and some send `usage: null` on every
        // chunk. The last object wins.
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        // Only the first choice is followed; we never ask for `n > 1`.
        for choice in choices
            .iter()
            .filter(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        {
            self.saw_choice = true;
            if let Some(delta) = choice.get("delta") {
                self.on_delta(delta, out);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
                self.close_all(out);
            }
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: &Value, out: &mut VecDeque<StreamEvent>) {
        let fragment = |key: &str| {
            delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        if let Some(thinking) = fragment("reasoning_content") {
            self.open_block(Block::Thinking, out);
            self.reasoning.push_str(thinking);
            out.push_back(StreamEvent::ThinkingDelta {
                delta: thinking.to_string(),
            });
        }
        let text = response_text(delta.get("content"));
        if !text.is_empty() {
            self.open_block(Block::Text, out);
            self.text.push_str(&text);
            out.push_back(StreamEvent::TextDelta { delta: text });
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
    fn open_block(&mut self, kind: Block, out: &mut VecDeque<StreamEvent>) {
        if self.open == kind {
            return;
        }
        self.close_block(out);
        out.push_back(match kind {
            Block::Text => StreamEvent::TextStart,
            Block::Thinking => StreamEvent::ThinkingStart,
            Block::None => return,
        });
        self.open = kind;
    }

    fn close_block(&mut self, out: &mut VecDeque<StreamEvent>) {
        match self.open {
            Block::Text => out.push_back(StreamEvent::TextEnd),
            Block::Thinking => out.push_back(StreamEvent::ThinkingEnd),
            Block::None => {}
        }
        self.open = Block::None;
    }

    /// Closes the open block and ends every tool call not yet ended, in slot order.
    fn close_all(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.close_block(out);
        for (slot, call) in self.calls.iter_mut().enumerate() {
            if !call.ended {
                call.ended = true;
                out.push_back(StreamEvent::ToolcallEnd { index: slot as u32 });
            }
        }
    }

    fn on_tool_call(&mut self, call: &Value, out: &mut VecDeque<StreamEvent>) {
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
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            // Some servers send the whole arguments object in one chunk.
            Some(value @ Value::Object(_)) => value.to_string(),
            _ => String::new(),
        };

        let existing = match provider_index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.provider_index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        // A different non-empty id under a known index means a new call, not a continuation.
        let continued = existing.filter(|&slot| {
            let known = &self.calls[slot].id;
            !matches!(id, Some(id) if !known.is_empty() && known != id)
        });
        let slot = match continued {
            Some(slot) => slot,
            None => {
                // The first chunk of a call: close any text or thinking block, then announce it.
                self.close_block(out);
                let slot = self.calls.len();
                let id = id.unwrap_or_default().to_string();
                let name = name.unwrap_or_default().to_string();
                out.push_back(StreamEvent::ToolcallStart {
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
        // Late ids and names fill in what the first chunk lacked; they are never concatenated.
        if entry.id.is_empty()
            && let Some(id) = id
        {
            entry.id = id.to_string();
        }
        if entry.name.is_empty()
            && let Some(name) = name
        {
            entry.name = name.to_string();
        }
        if !arguments.is_empty() {
            entry.arguments.push_str(&arguments);
            out.push_back(StreamEvent::ToolcallDelta {
                index: slot as u32,
                delta: arguments,
            });
        }
    }

    /// Ends the answer: closes what is open (into `out`) and returns the assembled state, or
    /// `EmptyResponseError` when no choice ever arrived.
    pub(super) fn finish(
        mut self,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<Assembled, ModelError> {
        if !self.saw_choice {
            return Err(ModelError::new(
                "EmptyResponseError",
                "the provider's stream carried no choices",
            ));
        }
        self.close_all(out);
        Ok(Assembled {
            text: self.text,
            reasoning: self.reasoning,
            refusal: Some(self.refusal).filter(|refusal| !refusal.is_empty()),
            calls: self
                .calls
                .into_iter()
                .map(|call| RawToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: Value::String(call.arguments),
                })
                .collect(),
            finish_reason: self.finish_reason,
            model_name: self.model_name.unwrap_or(self.model_id),
            usage: self.usage,
            extra_metadata: serde_json::Map::new(),
        })
    }
}

/// The state [`sse_events`] carries between items.
struct SseState<S> {
    source: Pin<Box<eventsource_stream::EventStream<S>>>,
    assembler: Option<ChunkAssembler>,
    pending: VecDeque<StreamEvent>,
    done: bool,
}

impl<S> SseState<S> {
    /// Finishes the answer: closing events and `done` go to `pending`, or the error is returned.
    fn complete(&mut self) -> Result<(), ModelError> {
        self.done = true;
        let assembler = self.assembler.take().ok_or_else(|| {
            ModelError::new("RemoteProtocolError", "the stream was completed twice")
        })?;
        let assembled = assembler.finish(&mut self.pending)?;
        self.pending.push_back(StreamEvent::Done {
            message: assembled.into_message().to_dump(),
        });
        Ok(())
    }
}

/// Turns the SSE body of a streaming call into events: `start`, the answer's events, `done`.
///
/// The stream stops at `data: [DONE]` (which is not JSON, so it is checked before parsing). A
/// body that ends without `[DONE]` is accepted only when a choice has already finished (some
/// compatible servers omit the marker); otherwise, or when the bytes break, the stream ends with
/// a `RemoteProtocolError` (transport errors arrive already mapped, e.g. `APITimeoutError`).
/// Events named other than `message` (the default) or `error` are ignored.
pub(super) fn sse_events<S, B>(bytes: S, model_id: &str) -> EventStream
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    let state = SseState {
        source: Box::pin(bytes.eventsource()),
        assembler: Some(ChunkAssembler::new(model_id)),
        pending: VecDeque::from([StreamEvent::Start]),
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), state));
            }
            if state.done {
                return None;
            }
            let step = match state.source.next().await {
                Some(Ok(event)) => on_sse_event(&mut state, &event),
                Some(Err(EventStreamError::Transport(err))) => Err(err),
                Some(Err(err)) => Err(ModelError::new(
                    "RemoteProtocolError",
                    format!("malformed event stream: {err}"),
                )),
                None => {
                    if state
                        .assembler
                        .as_ref()
                        .is_some_and(ChunkAssembler::finished)
                    {
                        state.complete()
                    } else {
                        Err(ModelError::new(
                            "RemoteProtocolError",
                            "the stream ended before the answer was complete (no [DONE])",
                        ))
                    }
                }
            };
            if let Err(err) = step {
                state.done = true;
                state.pending.clear();
                return Some((Err(err), state));
            }
        }
    }))
}

fn on_sse_event<S>(
    state: &mut SseState<S>,
    event: &eventsource_stream::Event,
) -> Result<(), ModelError> {
    let data = event.data.trim();
    if event.event == "error" {
        let message = serde_json::from_str::<Value>(data)
            .ok()
            .and_then(|body| error_body_message(&body))
            .unwrap_or_else(|| cut(data, 500));
        return Err(ModelError::new("APIError", message));
    }
    if event.event != "message" {
        return Ok(());
    }
    if data == "[DONE]" {
        return state.complete();
    }
    let chunk: Value = serde_json::from_str(data).map_err(|err| {
        ModelError::new(
            "RemoteProtocolError",
            format!(
                "a stream chunk is not valid JSON ({err}): {}",
                cut(data, 200)
            ),
        )
    })?;
    match state.assembler.as_mut() {
        Some(assembler) => assembler.on_chunk(&chunk, &mut state.pending),
        None => Ok(()),
    }
}

/// The first `limit` characters of `text` (never splitting a character).
pub(super) fn cut(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}
