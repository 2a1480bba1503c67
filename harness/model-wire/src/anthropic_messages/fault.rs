//! Anthropic's faults: a refused call's `{"type": "error", "error": {"type", "message"}}` with
//! its status (429 `rate_limit_error`, 529 `overloaded_error`, 500 `api_error`, …), the
//! `retry-after` and `anthropic-ratelimit-*` headers the `anthropic` clients read, and the
//! `event: error` a stream ends with (an `overloaded_error`, the one Anthropic sends mid-stream).

use super::{error_body, error_kind_for_status};
use crate::fault::{InStreamError, StatusError};

/// Anthropic's answer to a refused call ([`crate::Wire::status_error`]).
pub fn status_error(status: u16, retry_after: Option<u32>) -> StatusError {
    let kind = match status {
        503 => "overloaded_error",
        502 | 504 => "api_error",
        other => error_kind_for_status(other),
    };
    let message = match kind {
        "rate_limit_error" => {
            "Number of requests has exceeded your rate limit (replayed by keyless)"
        }
        "overloaded_error" => "Overloaded (replayed by keyless)",
        _ => "Internal server error (replayed by keyless)",
    };
    let mut headers = vec![("request-id", "req_keyless_fault".to_owned())];
    if status == 429 {
        headers.extend([
            ("anthropic-ratelimit-requests-limit", "50".to_owned()),
            ("anthropic-ratelimit-requests-remaining", "0".to_owned()),
        ]);
    }
    if let Some(secs) = retry_after {
        headers.push(("retry-after", secs.to_string()));
    }
    StatusError {
        status,
        headers,
        body: error_body(kind, message),
    }
}

/// The `event: error` a Messages stream ends with when the model is overloaded mid-answer.
pub fn stream_error() -> InStreamError {
    let body = error_body("overloaded_error", "Overloaded (replayed by keyless)");
    InStreamError::Sse(format!("event: error\ndata: {body}\n\n"))
}
