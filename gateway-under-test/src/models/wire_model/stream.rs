//! Streaming answers: SSE bytes → the wire's events (Chat Completions chunks, Responses events,
//! Messages events or Gemini chunks) → [`StreamEvent`]s; and Converse's binary event stream
//! ([`event_stream_events`]: AWS's frames, read and CRC-checked by `transport::eventstream`, the
//! recording proxy's reader too,
//! their `:event-type` and JSON payload) → the same.
//!
//! [`sse_events`] takes any byte stream, so tests feed it chunks split mid-line or mid-UTF-8
//! without HTTP. eventsource-stream does the SSE framing (and keeps an incomplete UTF-8 sequence
//! until its next bytes arrive); the wire's [`StreamReader`] (`model_wire`'s, the one the
//! harness's model server records the same streams with, so both end a stream at the same
//! event) turns each event into the codec's events and assembles the final message. The bounds (the line length, below, and the caller's) are the same on every wire.
//!
//! Event order: `start`; the codec's events (text and thinking blocks, tool calls); then `done`
//! with the assembled message. Failures end the stream with an `Err` item (not an
//! [`StreamEvent::Error`]) so the caller keeps the error type, status and class.

use std::collections::VecDeque;
use std::pin::Pin;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use model_wire::StreamReader;
use model_wire::chat_completions::Ending;

use super::Api;
use super::wire::{message_from_assembled, wire_error};

use crate::models::{EventStream, ModelError, StreamEvent};

/// The longest SSE line the provider accepts, in bytes. A provider's chunk is a few hundred
/// bytes; a whole answer in one chunk (Ollama) stays far below this. A longer line fails the call
/// (`RemoteProtocolError`) instead of growing without bound (issue 21, finding 4).
pub(super) const MAX_SSE_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The byte stream re-cut at line ends (`transport::whole_lines`, shared with the harness's
/// recording proxy), so the SSE parser sees every line once, whole: linear, where a long
/// `data:` line arriving in many pieces would otherwise be re-parsed on every piece; a line
/// longer than [`MAX_SSE_LINE_BYTES`] is a `RemoteProtocolError`.
pub(super) fn whole_lines<S, B>(bytes: S) -> impl Stream<Item = Result<Vec<u8>, ModelError>>
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    transport::whole_lines(bytes, MAX_SSE_LINE_BYTES)
}

impl From<transport::LineTooLong> for ModelError {
    fn from(err: transport::LineTooLong) -> ModelError {
        ModelError::new("RemoteProtocolError", err.to_string())
    }
}

/// The pieces a stream's transport yields: SSE events, or event-stream frames as events named
/// by their `:event-type`.
type Pieces = Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, ModelError>> + Send>>;

/// The state [`sse_events`] carries between items.
struct SseState {
    source: Pieces,
    api: Api,
    reader: Option<StreamReader>,
    model_id: String,
    pending: VecDeque<StreamEvent>,
    done: bool,
}

impl SseState {
    /// Finishes the answer: closing events and `done` go to `pending`, or the error is returned.
    fn complete(&mut self) -> Result<(), ModelError> {
        self.done = true;
        let reader = self.reader.take().ok_or_else(|| {
            ModelError::new("RemoteProtocolError", "the stream was completed twice")
        })?;
        let (closing, assembled) = reader.finish().map_err(|err| wire_error(&err))?;
        // Accepted, as clients accept it, but said: a stream without `[DONE]` or without a
        // finish reason may have been cut short.
        if assembled.ending != Ending::Complete {
            tracing::warn!(ending = ?assembled.ending, model = %self.model_id,
                "the provider's stream ended without [DONE] or without a finish reason");
        }
        self.pending
            .extend(closing.into_iter().map(StreamEvent::Delta));
        self.pending
            .push_back(StreamEvent::done(message_from_assembled(
                self.api,
                &assembled,
                &self.model_id,
            )));
        Ok(())
    }
}

/// Turns the SSE body of a streaming call at `api` into events: `start`, the answer's events,
/// `done`.
///
/// The stream stops at the wire's last event: `data: [DONE]` (Chat Completions),
/// `response.completed` / `response.incomplete` (Responses), `message_stop` (Messages). A Chat
/// Completions body that ends without `[DONE]` is accepted when a choice has already finished
/// (some compatible servers omit the marker); a body that ends before its wire's last event, or
/// whose bytes break, ends the stream with a `RemoteProtocolError` (transport errors arrive
/// already mapped, e.g. `APITimeoutError`). A provider's error (an `error` chunk or event,
/// `response.failed`) is an `APIError`. Chat Completions events named other than `message` (the
/// default) or `error` are ignored.
pub(super) fn sse_events<S, B>(bytes: S, model_id: &str, api: Api) -> EventStream
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    let source = whole_lines(bytes).eventsource().map(|item| match item {
        Ok(event) => Ok(event),
        Err(EventStreamError::Transport(err)) => Err(err),
        Err(err) => Err(ModelError::new(
            "RemoteProtocolError",
            format!("malformed event stream: {err}"),
        )),
    });
    events_of(Box::pin(source), model_id, api)
}

/// Turns the binary event stream of a streaming Converse call into events: `start`, the
/// answer's events, `done`. Each frame is read and its prelude and message CRCs checked by
/// `aws-smithy-eventstream`; a corrupt frame, or a body that ends inside one, is a
/// `RemoteProtocolError` naming the frame; an exception message (`:message-type: exception`)
/// is the provider's failure (`APIError`, reported in the stream).
pub(super) fn event_stream_events<S, B>(bytes: S, model_id: &str) -> EventStream
where
    S: Stream<Item = Result<B, ModelError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    use transport::eventstream::{CorruptFrame, Frame, FrameReader};
    struct Frames<S> {
        bytes: Pin<Box<S>>,
        reader: FrameReader,
        pending: VecDeque<Frame>,
        over: bool,
    }
    let frames = Frames {
        bytes: Box::pin(bytes),
        reader: FrameReader::new(),
        pending: VecDeque::new(),
        over: false,
    };
    let corrupt =
        |corrupt: CorruptFrame| ModelError::new("RemoteProtocolError", corrupt.to_string());
    let source = futures::stream::unfold(frames, move |mut state| async move {
        loop {
            if state.over {
                return None;
            }
            match state.pending.pop_front() {
                Some(Frame::Event {
                    event_type,
                    payload,
                }) => {
                    let event = eventsource_stream::Event {
                        event: event_type,
                        data: payload,
                        id: String::new(),
                        retry: None,
                    };
                    return Some((Ok(event), state));
                }
                Some(Frame::Exception {
                    exception_type,
                    payload,
                }) => {
                    state.over = true;
                    let error = Api::BedrockConverse
                        .reader()
                        .push_exception(&exception_type, &payload);
                    return Some((Err(wire_error(&error)), state));
                }
                None => {}
            }
            let read = match state.bytes.next().await {
                Some(Ok(chunk)) => state.reader.push(chunk.as_ref()).map_err(corrupt),
                Some(Err(err)) => Err(err),
                None => match state.reader.finish() {
                    Ok(()) => return None,
                    Err(cut) => Err(corrupt(cut)),
                },
            };
            match read {
                Ok(frames) => state.pending.extend(frames),
                Err(err) => {
                    state.over = true;
                    return Some((Err(err), state));
                }
            }
        }
    });
    events_of(Box::pin(source), model_id, Api::BedrockConverse)
}

/// The events of a stream's pieces at `api`.
fn events_of(source: Pieces, model_id: &str, api: Api) -> EventStream {
    let state = SseState {
        source,
        api,
        reader: Some(api.reader()),
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
                Some(Err(err)) => Err(err),
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

fn on_sse_event(state: &mut SseState, event: &eventsource_stream::Event) -> Result<(), ModelError> {
    let Some(reader) = state.reader.as_mut() else {
        return Ok(());
    };
    let events = reader
        .push(&event.event, &event.data)
        .map_err(|err| wire_error(&err))?;
    state
        .pending
        .extend(events.into_iter().map(StreamEvent::Delta));
    // The wire's one end rule (`model_wire::StreamReader::ended`), the recorder's too.
    if reader.ended() {
        return state.complete();
    }
    Ok(())
}
