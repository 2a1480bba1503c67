//! What can be wrong with an answer on the wire, and the names the Python `openai` client gives
//! failures (the gateway's LLM error handling classifies by them, as DeerFlow's does, and the
//! harness records them).

use serde_json::Value;

/// An answer that cannot be read as a good one. Each variant says which kind of failure the
/// Python client would raise ([`WireError::exception_name`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    /// A `data:` payload that is neither `[DONE]` nor JSON.
    #[error("a stream chunk is not valid JSON ({reason}): {excerpt}")]
    ChunkNotJson {
        /// The parser's complaint.
        reason: String,
        /// The payload's first 200 characters.
        excerpt: String,
    },
    /// A chunk that is JSON but not an object.
    #[error("a stream chunk is not a JSON object")]
    ChunkNotObject,
    /// The provider reported a failure inside a successful (200) answer: a chunk with an
    /// `error` object (OpenRouter, vLLM and OpenAI do this mid-stream), an SSE `error` event, or
    /// a whole body that is an error instead of a completion.
    #[error("{message}")]
    Provider {
        /// The provider's message ([`error_message`]), or a fallback.
        message: String,
        /// The error payload as the provider sent it.
        body: Value,
    },
    /// The stream ended with neither a `finish_reason` nor `data: [DONE]`: the answer was cut
    /// off.
    #[error("the stream ended before the answer was complete (no finish_reason and no [DONE])")]
    Truncated,
    /// The stream ended without ever carrying a choice.
    #[error("the provider's stream carried no choices")]
    NoChoices,
    /// A whole answer that is not a JSON object.
    #[error("the provider's answer is not a JSON object")]
    CompletionNotObject,
    /// A whole answer without a choice.
    #[error("the provider returned no choices")]
    NoCompletionChoices,
}

impl WireError {
    /// The Python `openai` client's exception name for this failure: a broken stream is the
    /// transport's `RemoteProtocolError`, a reported failure `APIError`, no choices
    /// `EmptyResponseError` (LangChain's), a body that is no completion
    /// `APIResponseValidationError`.
    pub fn exception_name(&self) -> &'static str {
        match self {
            WireError::ChunkNotJson { .. } | WireError::ChunkNotObject | WireError::Truncated => {
                "RemoteProtocolError"
            }
            WireError::Provider { .. } => "APIError",
            WireError::NoChoices | WireError::NoCompletionChoices => "EmptyResponseError",
            WireError::CompletionNotObject => "APIResponseValidationError",
        }
    }

    /// A failure reported in an SSE `error` event: its data's error message, else the data's
    /// first 500 characters.
    pub fn from_error_event(data: &str) -> WireError {
        let data = data.trim();
        let body = serde_json::from_str::<Value>(data).unwrap_or(Value::String(data.to_owned()));
        let message = error_message(&body).unwrap_or_else(|| cut(data, 500));
        WireError::Provider { message, body }
    }

    /// A failure reported in a JSON payload (a chunk or a whole body with an `error`).
    pub(crate) fn reported(body: &Value) -> WireError {
        WireError::Provider {
            message: error_message(body)
                .unwrap_or_else(|| "the provider reported an error mid-stream".to_owned()),
            body: body.clone(),
        }
    }
}

/// The provider's error message in a JSON body: `error.message`, `error` as a string, or a
/// top-level `message` or `detail` (the forms OpenAI, vLLM and FastAPI servers use).
pub fn error_message(body: &Value) -> Option<String> {
    let error = body.get("error");
    error
        .and_then(|error| error.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.and_then(Value::as_str))
        .or_else(|| body.get("message").and_then(Value::as_str))
        .or_else(|| body.get("detail").and_then(Value::as_str))
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
}

/// The Python `openai` client's exception name for an HTTP error status.
pub fn status_exception_name(status: u16) -> &'static str {
    match status {
        400 => "BadRequestError",
        401 => "AuthenticationError",
        403 => "PermissionDeniedError",
        404 => "NotFoundError",
        409 => "ConflictError",
        422 => "UnprocessableEntityError",
        429 => "RateLimitError",
        500.. => "InternalServerError",
        _ => "APIStatusError",
    }
}

/// The first `limit` characters of `text` (never splitting a character).
pub fn cut(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}
