//! AWS's binary event stream (`application/vnd.amazon.eventstream`), the framing of Bedrock's
//! `converse-stream` answers: each message is a prelude (total and header lengths, and their
//! CRC32), typed headers (`:event-type`, `:content-type`, `:message-type`, or
//! `:exception-type` for a failure), a JSON payload and the message's CRC32. Frames are written
//! and read, CRCs included, by `aws-smithy-eventstream` (the AWS SDK's own implementation);
//! `model_wire::bedrock_converse` has the payloads.
//!
//! [`event_frame`] and [`exception_frame`] write one message; [`FrameReader`] cuts a byte stream
//! into messages whatever the transport's chunk boundaries, and refuses a corrupt frame (a CRC
//! that does not match, a length that lies) with an error naming the frame by its position.
//! It is the one frame reader: the gateway's Converse provider and the harness's recording proxy
//! both read their upstream with it (a tidy test holds that no other file decodes frames).

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder, write_message_to};
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::{Bytes, BytesMut};
use serde_json::Value;

fn string(value: &str) -> HeaderValue {
    HeaderValue::String(value.to_owned().into())
}

fn encode(message: &Message) -> Bytes {
    let mut buffer: Vec<u8> = Vec::new();
    // Writing to a Vec only fails for a header or payload past the format's size limits
    // (16 MB per message), which one answer's event payload does not reach; such a message
    // would be written empty rather than panic.
    if write_message_to(message, &mut buffer).is_err() {
        buffer.clear();
    }
    Bytes::from(buffer)
}

/// One event message: `:event-type` `event_type`, a JSON payload.
pub fn event_frame(event_type: &str, payload: &Value) -> Bytes {
    let message = Message::new_from_parts(
        vec![
            Header::new(":event-type", string(event_type)),
            Header::new(":content-type", string("application/json")),
            Header::new(":message-type", string("event")),
        ],
        payload.to_string().into_bytes(),
    );
    encode(&message)
}

/// One exception message: `:exception-type` (`modelStreamErrorException`,
/// `throttlingException`, …) and `{"message"}`.
pub fn exception_frame(exception_type: &str, message: &str) -> Bytes {
    let frame = Message::new_from_parts(
        vec![
            Header::new(":exception-type", string(exception_type)),
            Header::new(":content-type", string("application/json")),
            Header::new(":message-type", string("exception")),
        ],
        serde_json::json!({ "message": message })
            .to_string()
            .into_bytes(),
    );
    encode(&frame)
}

/// One message read from a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// An event: its `:event-type` and payload.
    Event {
        /// The event type.
        event_type: String,
        /// The payload, as text.
        payload: String,
    },
    /// An exception (`:message-type: exception`, or `error`): its type and payload.
    Exception {
        /// `:exception-type` (or `:error-code`).
        exception_type: String,
        /// The payload, as text.
        payload: String,
    },
}

/// A frame that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event stream frame {frame} (counting from 1) is corrupt: {reason}")]
pub struct CorruptFrame {
    /// The frame's position in the stream, from 1.
    pub frame: usize,
    /// What `aws-smithy-eventstream` found wrong (a CRC mismatch, a bad length, a bad header).
    pub reason: String,
}

/// Cuts an event stream into messages as its bytes arrive.
#[derive(Debug, Default)]
pub struct FrameReader {
    decoder: MessageFrameDecoder,
    buffer: BytesMut,
    frames: usize,
}

impl FrameReader {
    /// A reader for one stream.
    pub fn new() -> FrameReader {
        FrameReader::default()
    }

    /// True when bytes of an unfinished frame are waiting (a stream that ends here was cut).
    pub fn has_partial_frame(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The end of the stream: an error naming the frame when it ended inside one.
    pub fn finish(&self) -> Result<(), CorruptFrame> {
        if !self.has_partial_frame() {
            return Ok(());
        }
        Err(CorruptFrame {
            frame: self.frames + 1,
            reason: "the stream ended inside it".to_owned(),
        })
    }

    /// The messages `bytes` completes.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, CorruptFrame> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let position = self.frames + 1;
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Incomplete) => return Ok(out),
                Ok(DecodedFrame::Complete(message)) => {
                    self.frames = position;
                    out.push(frame(&message));
                }
                Err(err) => {
                    return Err(CorruptFrame {
                        frame: position,
                        reason: err.to_string(),
                    });
                }
            }
        }
    }
}

fn frame(message: &Message) -> Frame {
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|header| header.name().as_str() == name)
            .and_then(|header| header.value().as_string().ok())
            .map(|value| value.as_str().to_owned())
            .unwrap_or_default()
    };
    let payload = String::from_utf8_lossy(message.payload()).into_owned();
    match header(":message-type").as_str() {
        "exception" => Frame::Exception {
            exception_type: header(":exception-type"),
            payload,
        },
        "error" => Frame::Exception {
            exception_type: header(":error-code"),
            payload,
        },
        _ => Frame::Event {
            event_type: header(":event-type"),
            payload,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stream() -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&event_frame("messageStart", &json!({"role": "assistant"})));
        bytes.extend_from_slice(&event_frame(
            "contentBlockDelta",
            &json!({"delta": {"text": "hi"}, "contentBlockIndex": 0}),
        ));
        bytes.extend_from_slice(&exception_frame("throttlingException", "slow down"));
        bytes
    }

    #[test]
    fn frames_read_back_whatever_the_chunk_boundaries() {
        let bytes = stream();
        for size in [1, 5, 64, bytes.len()] {
            let mut reader = FrameReader::new();
            let mut frames = Vec::new();
            for piece in bytes.chunks(size) {
                frames.extend(reader.push(piece).expect("valid frames"));
            }
            assert!(!reader.has_partial_frame(), "size {size}");
            assert_eq!(
                frames,
                [
                    Frame::Event {
                        event_type: "messageStart".into(),
                        payload: r#"{"role":"assistant"}"#.into()
                    },
                    Frame::Event {
                        event_type: "contentBlockDelta".into(),
                        payload: r#"{"delta":{"text":"hi"},"contentBlockIndex":0}"#.into()
                    },
                    Frame::Exception {
                        exception_type: "throttlingException".into(),
                        payload: r#"{"message":"slow down"}"#.into()
                    },
                ],
                "size {size}"
            );
        }
    }

    /// A flipped payload byte breaks the message CRC, a flipped byte of the prelude's CRC the
    /// prelude check: either is refused, naming the frame. (A flipped length byte makes the
    /// frame look longer: the reader waits for the rest, and a stream that ends there ends
    /// inside a frame, `has_partial_frame`.)
    #[test]
    fn a_corrupt_frame_is_refused_naming_it() {
        let first = event_frame("messageStart", &json!({"role": "assistant"})).len();
        for (flipped, what) in [(first + 20, "payload"), (first + 9, "prelude CRC")] {
            let mut bytes = stream();
            bytes[flipped] ^= 0x01;
            let error = FrameReader::new().push(&bytes).expect_err(what);
            assert_eq!(error.frame, 2, "{what}: {error}");
            assert!(
                error.to_string().starts_with("event stream frame 2"),
                "{error}"
            );
        }
        let mut longer = stream();
        longer[first + 2] ^= 0x01;
        let mut reader = FrameReader::new();
        let read = reader.push(&longer).expect("the frame waits for its rest");
        assert_eq!(read.len(), 1, "the first frame only");
        assert!(reader.has_partial_frame());
        let cut = reader
            .finish()
            .expect_err("the stream ended inside frame 2");
        assert_eq!(cut.frame, 2, "{cut}");
    }
}
