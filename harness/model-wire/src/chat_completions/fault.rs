//! OpenAI's faults (the Chat Completions and Responses wires share them): a refused call's
//! body `{"error": {"message", "type", "param", "code"}}` with the headers the `openai` clients
//! read (`retry-after-ms` and `retry-after` for the retry's wait, `x-ratelimit-*` as OpenAI
//! sends them with a 429), and the error chunk of a stream (the `openai` Python client raises
//! `APIError` for any streamed object with an `error`).

use serde_json::{Value, json};

use super::ErrorBody;
use crate::fault::{InStreamError, StatusError};

/// OpenAI's answer to a refused call ([`crate::Wire::status_error`]).
pub fn status_error(status: u16, retry_after: Option<u32>) -> StatusError {
    let (message, kind, code) = match status {
        429 => (
            "Rate limit reached for requests (replayed by keyless). Please try again later.",
            "requests",
            Some("rate_limit_exceeded"),
        ),
        503 | 529 => (
            "The server is overloaded or not ready yet (replayed by keyless).",
            "server_error",
            None,
        ),
        _ => (
            "The server had an error while processing your request (replayed by keyless). \
             Sorry about that!",
            "server_error",
            None,
        ),
    };
    let mut headers = vec![("x-request-id", "req_keyless_fault".to_owned())];
    if status == 429 {
        let reset = retry_after.map_or_else(|| "1s".to_owned(), |secs| format!("{secs}s"));
        headers.extend([
            ("x-ratelimit-limit-requests", "500".to_owned()),
            ("x-ratelimit-remaining-requests", "0".to_owned()),
            ("x-ratelimit-reset-requests", reset),
        ]);
    }
    if let Some(secs) = retry_after {
        headers.push(("retry-after", secs.to_string()));
        headers.push(("retry-after-ms", (u64::from(secs) * 1000).to_string()));
    }
    StatusError {
        status,
        headers,
        body: ErrorBody::new(message, kind, code).to_value(),
    }
}

/// The error chunk a Chat Completions stream ends with when the provider fails mid-answer.
pub fn stream_error() -> InStreamError {
    let body: Value = json!({"error": {
        "message": "The server had an error while processing your request (replayed by keyless).",
        "type": "server_error",
        "param": null,
        "code": null,
    }});
    InStreamError::Sse(format!("data: {body}\n\n"))
}
