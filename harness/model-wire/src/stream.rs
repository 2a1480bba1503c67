//! The streaming form of every wire's renderer: one [`RenderStream`] per wire (its
//! `StreamRenderer`, in the wire's own `render.rs`) turns a recorded answer into the wire's
//! stream one recorded step at a time: the answer's start, each delta ([`Event`], the one delta
//! vocabulary), the end with the whole answer, or a failure the provider reported inside its
//! stream. Each delta becomes its own pieces, so every wire keeps the chunk boundaries a
//! recording streamed with, and a live relay (the recording proxy) and a replay render the same
//! way. [`Wire::stream_renderer`](crate::Wire::stream_renderer) picks a wire's renderer.
//!
//! What comes out is [`StreamPiece`]s, before the transport frames them: an SSE event already in
//! its text form, a Gemini chunk (an SSE `data:` frame or an element of one JSON array, as the
//! client asked), an Ollama NDJSON line, or a Converse event-stream message (framed and checksummed by the transport).

use serde_json::Value;

use crate::Event;
// The answer from its own file, not through `chat_completions`, whose renderer implements
// [`RenderStream`] (no import circle between files).
use crate::chat_completions::message::Answer;

/// One piece of a rendered stream, before the transport frames it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamPiece {
    /// One server-sent event, framed (`event: <name>\ndata: <json>\n\n`, or Chat Completions'
    /// unnamed `data: <json>\n\n` and `data: [DONE]\n\n`).
    Sse(String),
    /// One Gemini chunk, a whole response: an SSE `data:` frame (`?alt=sse`) or an element of
    /// one streamed JSON array, as the client asked.
    Chunk(Value),
    /// One Ollama NDJSON line, a whole JSON object (the transport adds the `\n`).
    Line(Value),
    /// One Converse event-stream message (`:event-type` and JSON payload).
    Event(StreamEvent),
    /// The exception message that ends a failed Converse stream.
    Exception(StreamException),
}

/// One event-stream message of a stream (Converse's): its name (the frame's `:event-type`)
/// and its JSON payload.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The event name.
    pub name: &'static str,
    /// The payload.
    pub payload: Value,
}

/// An exception message of an event stream (`:message-type: exception`): its
/// `:exception-type` and the `{"message"}` payload's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamException {
    /// The exception's type, e.g. `modelStreamErrorException`.
    pub exception_type: &'static str,
    /// Its message.
    pub message: String,
}

/// A wire's streaming renderer: what one answer's stream is, step by step. The steps come in
/// the order a recording holds them: [`start`](RenderStream::start) once, then
/// [`event`](RenderStream::event) per delta, then either [`finish`](RenderStream::finish) with
/// the whole answer or [`fail`](RenderStream::fail); [`end`](RenderStream::end) last, when the
/// stream ended as its wire ends one (a replay always, a relay when the upstream sent its end
/// marker).
///
/// A renderer is made with the answer when it is known before its stream is rendered (a replay
/// knows the recorded answer: its model and usage go into the stream's opening, as the provider
/// sent them there) or without it (a live relay, whose opening names the requested model and no
/// usage; the closing pieces carry the answer's).
pub trait RenderStream: Send + Sync {
    /// The stream's opening (Chat Completions' role chunk, Responses' `response.created`,
    /// Messages' `message_start`, Converse's `messageStart`; nothing at Gemini).
    fn start(&mut self) -> Vec<StreamPiece>;
    /// One delta's pieces (none for a block boundary a wire does not mark).
    fn event(&mut self, event: &Event) -> Vec<StreamPiece>;
    /// The closing pieces, with the whole answer (finish reason, usage, calls the deltas did not
    /// stream).
    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece>;
    /// A failure the provider reported inside its stream: the wire's error event. `status` is
    /// the failure's status, `message` its text and `body` the failure in OpenAI's error form
    /// (`{"error": {"message", …}}`, the recorded body where there is one), which Chat
    /// Completions sends as it is; the other wires write `message` in their own error event.
    fn fail(&mut self, status: u16, message: &str, body: &Value) -> Vec<StreamPiece>;
    /// The wire's end marker after a stream that ended (`data: [DONE]` at Chat Completions;
    /// none at the other wires, whose last event is their end).
    fn end(&mut self) -> Vec<StreamPiece> {
        Vec::new()
    }
}
