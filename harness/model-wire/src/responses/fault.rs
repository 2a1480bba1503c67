//! The Responses wire's in-stream failure: `response.failed`, the failed response with its
//! `error` (`{"code": "server_error", "message"}`), as OpenAI ends a stream whose generation
//! failed. A refused call is OpenAI's, shared with Chat Completions
//! ([`crate::chat_completions::status_error`]).

use serde_json::json;

use crate::fault::InStreamError;

/// `response.failed` after `sent` events (its `sequence_number`), for the answer `id`.
pub fn stream_error(id: &str, sent: usize) -> InStreamError {
    let event = json!({
        "type": "response.failed",
        "sequence_number": sent,
        "response": {
            "id": id,
            "object": "response",
            "status": "failed",
            "output": [],
            "error": {
                "code": "server_error",
                "message": "The model failed to generate a response (replayed by keyless).",
            },
            "incomplete_details": null,
        },
    });
    InStreamError::Sse(format!("event: response.failed\ndata: {event}\n\n"))
}
