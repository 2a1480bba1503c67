//! A recorded answer's stream at any wire, the one way for every wire and every mode:
//! [`StreamOut`] feeds the recording's events one by one (`start`, each delta, `done` or
//! `error`) to the wire's streaming renderer (`model_wire::Wire::stream_renderer`) and frames
//! its pieces as the client asked (SSE, one streamed JSON array, AWS's event stream, NDJSON), whether the
//! events come from a fixture or a recording (a replay, which knows the answer before its
//! stream) or from an upstream as it answers (the recording proxy, which passes each written
//! event on as it is written). So every wire keeps the chunk boundaries the recording holds,
//! and a live run gets the stream its replay will give.
//!
//! A failure the provider reported inside its stream (`in_stream`) is the wire's error event;
//! any other failure (a cut-off or broken stream) ends the stream with nothing more.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use model_wire::chat_completions::{Answer, Identity, error_message};
use model_wire::{RenderStream, StreamPiece};
use replay_core::recording::RecordedEvent;
use serde_json::Value;
use transport::eventstream::{event_frame, exception_frame};

use super::answer::failure;
use super::request::{Framing, Wire};

/// One answer's stream at one wire: recorded events in, framed bytes out.
pub(super) struct StreamOut {
    renderer: Box<dyn RenderStream>,
    framing: Framing,
    /// The JSON array framing has its first element.
    sent: bool,
    /// The answer failed: nothing more is rendered, and no end marker.
    failed: bool,
}

impl StreamOut {
    /// The stream of one answer at `wire`, framed as `framing` says; `known` is the answer when
    /// it is known before its stream (a replay's `done` message).
    pub(super) fn new(
        wire: Wire,
        identity: &Identity,
        known: Option<&Answer>,
        framing: Framing,
    ) -> StreamOut {
        StreamOut {
            renderer: wire.stream_renderer(identity, known),
            framing,
            sent: false,
            failed: false,
        }
    }

    /// What one recorded event becomes on the stream (nothing once the answer has failed).
    pub(super) fn push(&mut self, event: &RecordedEvent) -> Vec<u8> {
        if self.failed {
            return Vec::new();
        }
        let pieces = match event {
            RecordedEvent::Start => self.renderer.start(),
            RecordedEvent::Delta(delta) => self.renderer.event(delta),
            RecordedEvent::Done { message } => self
                .renderer
                .finish(&Answer::from_ai_message(&Value::Object(message.clone()))),
            RecordedEvent::Error { .. } => {
                self.failed = true;
                match failure(event).filter(|error| error.in_stream) {
                    Some(error) => {
                        let body = error.body();
                        let message = error_message(&body).unwrap_or(error.message);
                        self.renderer.fail(error.status, &message, &body)
                    }
                    None => Vec::new(),
                }
            }
        };
        self.frame(pieces)
    }

    /// The stream's last bytes: the wire's end marker when the answer `ended` as its wire ends
    /// one (and did not fail), then what closes the framing (a JSON array's `]`).
    pub(super) fn end(&mut self, ended: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if ended && !self.failed {
            let marker = self.renderer.end();
            out = self.frame(marker);
        }
        if self.framing == Framing::JsonArray {
            out.extend_from_slice(if self.sent { b"]" } else { b"[]" });
        }
        out
    }

    /// Pieces as the transport sends them.
    fn frame(&mut self, pieces: Vec<StreamPiece>) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in pieces {
            match piece {
                StreamPiece::Sse(text) => out.extend_from_slice(text.as_bytes()),
                StreamPiece::Chunk(chunk) if self.framing == Framing::JsonArray => {
                    let separator = if self.sent { ",\r\n" } else { "[" };
                    self.sent = true;
                    out.extend_from_slice(format!("{separator}{chunk}").as_bytes());
                }
                StreamPiece::Chunk(chunk) => {
                    out.extend_from_slice(format!("data: {chunk}\r\n\r\n").as_bytes());
                }
                StreamPiece::Line(line) => {
                    out.extend_from_slice(format!("{line}\n").as_bytes());
                }
                StreamPiece::Event(event) => {
                    out.extend_from_slice(&event_frame(event.name, &event.payload));
                }
                StreamPiece::Exception(exception) => out.extend_from_slice(&exception_frame(
                    exception.exception_type,
                    &exception.message,
                )),
            }
        }
        out
    }
}

/// A whole stream of recorded events, as a replay answers it.
pub(super) fn replayed_stream(
    wire: Wire,
    identity: &Identity,
    framing: Framing,
    events: &[RecordedEvent],
) -> Response {
    let known = events.iter().find_map(super::answer::done_answer);
    let mut out = StreamOut::new(wire, identity, known.as_ref(), framing);
    let mut body: Vec<u8> = events.iter().flat_map(|event| out.push(event)).collect();
    body.extend(out.end(true));
    stream_response(framing, body)
}

/// A streamed answer with its framing's content type.
pub(super) fn stream_response(framing: Framing, body: impl Into<axum::body::Body>) -> Response {
    let content_type = match framing {
        Framing::Sse => return sse_response(body),
        Framing::JsonArray => "application/json; charset=UTF-8",
        Framing::AwsEventStream => model_wire::EVENT_STREAM_CONTENT_TYPE,
        Framing::Ndjson => model_wire::NDJSON_CONTENT_TYPE,
    };
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

/// A server-sent event stream body.
pub(super) fn sse_response(body: impl Into<axum::body::Body>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
        .into_response()
}

/// A fault's in-stream error (`faulted.rs`) as the request's stream frames it after `sent`
/// pieces went out: an event-stream exception frame, an SSE event as the wire wrote it, a chunk
/// as an SSE `data:` line or, in a JSON array stream, its next element and the closing bracket,
/// an NDJSON line (Ollama's `{"error"}`).
pub(super) fn in_stream_error(
    error: model_wire::InStreamError,
    framing: Framing,
    sent: usize,
) -> axum::body::Bytes {
    use model_wire::InStreamError;
    let text = match error {
        InStreamError::Exception {
            exception_type,
            message,
        } => return exception_frame(exception_type, &message),
        InStreamError::Sse(frame) => frame,
        InStreamError::Chunk(chunk) => match (framing, sent) {
            (Framing::JsonArray, 0) => format!("{chunk}]"),
            (Framing::JsonArray, _) => format!(",\r\n{chunk}]"),
            _ => format!("data: {chunk}\r\n\r\n"),
        },
        InStreamError::Line(line) => format!("{line}\n"),
    };
    axum::body::Bytes::from(text)
}
