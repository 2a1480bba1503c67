//! Google's faults: a refused call's `{"error": {"code", "message", "status"}}` (429
//! `RESOURCE_EXHAUSTED`, 503 `UNAVAILABLE`, …; `google-genai` raises `errors.ClientError` for a
//! 4xx and `errors.ServerError` for a 5xx), a wait to retry after as Google sends it (a
//! `google.rpc.RetryInfo` detail, no header), and the same error object as one chunk of a stream
//! (`google-genai` raises it from the chunk).

use serde_json::json;

use super::error_body;
use crate::fault::{InStreamError, StatusError};

/// Google's answer to a refused call ([`crate::Wire::status_error`]).
pub fn status_error(status: u16, retry_after: Option<u32>) -> StatusError {
    let message = match status {
        429 => "Resource has been exhausted (e.g. check quota). (replayed by keyless)",
        503 | 529 => "The model is overloaded. Please try again later. (replayed by keyless)",
        _ => "An internal error has occurred. (replayed by keyless)",
    };
    let mut body = error_body(status, message);
    if let Some(secs) = retry_after {
        body["error"]["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": format!("{secs}s"),
        }]);
    }
    StatusError {
        status,
        headers: Vec::new(),
        body,
    }
}

/// The error object a Gemini stream carries as a chunk when generation fails mid-answer.
pub fn stream_error() -> InStreamError {
    InStreamError::Chunk(error_body(
        500,
        "An internal error has occurred. (replayed by keyless)",
    ))
}
