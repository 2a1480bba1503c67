//! Ollama's faults: a refused call is the HTTP status with Ollama's one error shape,
//! `{"error": "<message>"}` (the `ollama` client raises `ResponseError` carrying the status and
//! that text; LangChain's `ChatOllama` lets it through), and a failure inside a stream it had
//! begun is one more NDJSON line holding the same object (the `ollama` client raises
//! `ResponseError` from the line). Ollama sends no retry header of its own; a wait to retry
//! after, when given, goes in the standard `retry-after` header, which HTTP-level retries read.

use super::error_body;
use crate::fault::{InStreamError, StatusError};

/// Ollama's answer to a refused call ([`crate::Wire::status_error`]).
pub fn status_error(status: u16, retry_after: Option<u32>) -> StatusError {
    let message = match status {
        429 => "too many requests (replayed by keyless)",
        503 | 529 => "server busy, please try again (replayed by keyless)",
        _ => "an internal error occurred (replayed by keyless)",
    };
    StatusError {
        status,
        headers: retry_after
            .map(|secs| ("retry-after", secs.to_string()))
            .into_iter()
            .collect(),
        body: error_body(message),
    }
}

/// The `{"error"}` line an Ollama stream ends with when the model fails mid-answer.
pub fn stream_error() -> InStreamError {
    InStreamError::Line(error_body(
        "an internal error occurred (replayed by keyless)",
    ))
}
