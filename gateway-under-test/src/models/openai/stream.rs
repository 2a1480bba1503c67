//! Streaming answers: SSE bytes → Chat Completions chunks → [`StreamEvent`]s.
//!
//! [`sse_events`] takes any byte stream, so tests feed it chunks split mid-line or mid-UTF-8
//! without HTTP. eventsource-stream does the SSE framing (and keeps an incomplete UTF-8 sequence
//! until its next bytes arrive); the shared Chat Completions codec (`model_wire`'s
//! [`ChunkAssembler`], the one the harness's model server reads the same streams with) turns each
//! `data:` payload into events and assembles the final message.
//!
//! Event order: `start`; the codec's events (text and thinking blocks, tool calls); then `done`
//! with the assembled message. Failures end the stream with an `Err` item (not an
//! [`StreamEvent::Error`]) so the caller keeps the error type, status and class.

use std::collections::VecDeque;
use std::pin::Pin;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use model_wire::chat_completions::{ChunkAssembler, Ending, Event, WireError};

use super::wire::{message_from_assembled, wire_error};

use crate::models::{EventStream, ModelError, StreamEvent};
/// The first `limit` characters of a text (the codec's).
pub(super) use model_wire::chat_completions::cut;

/// The gateway's event for one of the codec's.
pub(super) fn stream_event(event: Event) -> StreamEvent {
    match event {
        Event::TextStart => StreamEvent::TextStart,
        Event::TextDelta { delta } => StreamEvent::TextDelta { delta },
        Event::TextEnd => StreamEvent::TextEnd,
        Event::ThinkingStart => StreamEvent::ThinkingStart,
        Event::ThinkingDelta { delta } => StreamEvent::ThinkingDelta { delta },
        Event::ThinkingEnd => StreamEvent::ThinkingEnd,
        Event::ToolcallStart { index, id, name } => StreamEvent::ToolcallStart { index, id, name },
        Event::ToolcallDelta { index, delta } => StreamEvent::ToolcallDelta { index, delta },
        Event::ToolcallEnd { index } => StreamEvent::ToolcallEnd { index },
    }
}

/// The longest SSE line the provider accepts, in bytes. A provider's chunk is a few hundred
/// bytes; a whole answer in one chunk (Ollama) stays far below this. A longer line fails the call
/// (`RemoteProtocolError`) instead of growing without bound (issue 21, finding 4).
pub(super) const MAX_SSE_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The byte stream re-cut at line ends: each item ends with `\n` (but the last), so the SSE
/// parser sees every line once, whole. Without this, a long `data:` line arriving in many
/// pieces is re-parsed from its start on every piece (eventsource-stream keeps the incomplete
/// line and parses it again), which is quadratic. Only the new bytes of each piece are searched
/// for a line end, so the cut is linear; a line longer than [`MAX_SSE_LINE_BYTES`] is an error.
pub(super) fn whole_lines<S, B>(bytes: S) -> impl Stream<Item = Result<Vec<u8>, ModelError>>
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    struct Lines<S> {
        source: Pin<Box<S>>,
        /// Bytes after the last line end seen (no `\n` among them).
        partial: Vec<u8>,
        ended: bool,
    }
    let state = Lines {
        source: Box::pin(bytes),
        partial: Vec::new(),
        ended: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.ended {
                return None;
            }
            match state.source.next().await {
                Some(Ok(piece)) => {
                    let piece = piece.as_ref();
                    match piece.iter().rposition(|&byte| byte == b'\n') {
                        Some(end) => {
                            let mut lines = std::mem::take(&mut state.partial);
                            lines.extend_from_slice(&piece[..=end]);
                            state.partial.extend_from_slice(&piece[end + 1..]);
                            return Some((Ok(lines), state));
                        }
                        None if state.partial.len() + piece.len() > MAX_SSE_LINE_BYTES => {
                            state.ended = true;
                            let error = ModelError::new(
                                "RemoteProtocolError",
                                format!("a stream line is longer than {MAX_SSE_LINE_BYTES} bytes"),
                            );
                            return Some((Err(error), state));
                        }
                        None => state.partial.extend_from_slice(piece),
                    }
                }
                Some(Err(err)) => {
                    state.ended = true;
                    return Some((Err(err), state));
                }
                None => {
                    state.ended = true;
                    let rest = std::mem::take(&mut state.partial);
                    if !rest.is_empty() {
                        return Some((Ok(rest), state));
                    }
                    return None;
                }
            }
        }
    })
}

/// The state [`sse_events`] carries between items.
struct SseState<S> {
    source: Pin<Box<eventsource_stream::EventStream<S>>>,
    assembler: Option<ChunkAssembler>,
    model_id: String,
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
        let (closing, assembled) = assembler.finish().map_err(|err| wire_error(&err))?;
        // Accepted, as clients accept it, but said: a stream without `[DONE]` or without a
        // finish reason may have been cut short.
        if assembled.ending != Ending::Complete {
            tracing::warn!(ending = ?assembled.ending, model = %self.model_id,
                "the provider's stream ended without [DONE] or without a finish reason");
        }
        self.pending.extend(closing.into_iter().map(stream_event));
        self.pending
            .push_back(StreamEvent::done(message_from_assembled(
                &assembled,
                &self.model_id,
            )));
        Ok(())
    }

    fn push(&mut self, data: &str) -> Result<(), WireError> {
        let Some(assembler) = self.assembler.as_mut() else {
            return Ok(());
        };
        let events = assembler.push_data(data)?;
        self.pending.extend(events.into_iter().map(stream_event));
        Ok(())
    }
}

/// Turns the SSE body of a streaming call into events: `start`, the answer's events, `done`.
///
/// The stream stops at `data: [DONE]`. A body that ends without `[DONE]` is accepted when a
/// choice has already finished (some compatible servers omit the marker); with neither, or when
/// the bytes break, the stream ends with a `RemoteProtocolError` (transport errors arrive
/// already mapped, e.g. `APITimeoutError`). A provider's `error` chunk or SSE `error` event is an
/// `APIError`. Events named other than `message` (the default) or `error` are ignored.
pub(super) fn sse_events<S, B>(bytes: S, model_id: &str) -> EventStream
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    let state = SseState {
        source: Box::pin(whole_lines(bytes).eventsource()),
        assembler: Some(ChunkAssembler::new()),
        model_id: model_id.to_string(),
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
                // The codec judges how the stream ended (cut off, or only without `[DONE]`).
                None => state.complete(),
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
    if event.event == "error" {
        return Err(wire_error(&WireError::from_error_event(&event.data)));
    }
    if event.event != "message" {
        return Ok(());
    }
    state.push(&event.data).map_err(|err| wire_error(&err))?;
    if state.assembler.as_ref().is_some_and(ChunkAssembler::done) {
        return state.complete();
    }
    Ok(())
}
