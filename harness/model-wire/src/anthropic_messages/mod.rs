//! Anthropic's Messages wire (`POST {base}/v1/messages`), as Anthropic's API and the
//! `anthropic` SDKs speak it (`docs/recording-format.md` §16).
//!
//! - `assemble.rs`: reading an answer: a stream's events ([`StreamAssembler`]: `message_start`,
//!   `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`,
//!   `thinking_delta`, `signature_delta`) / `content_block_stop`, `message_delta`,
//!   `message_stop`, `ping`, `error`) or a whole message ([`parse_message`]) into the shared
//!   [`Event`](crate::chat_completions::Event)s and one
//!   [`Assembled`](crate::chat_completions::Assembled) answer.
//! - `render.rs`: writing an [`Answer`](crate::chat_completions::Answer) as one message or as
//!   the stream's named events, and Anthropic's error body.
//! - `request.rs`: writing a request ([`MessagesRequest`]) from a
//!   [`conversation`](crate::conversation).
//!
//! The answer types are the Chat Completions module's: an answer is the same whichever wire it
//! crossed, and the finish reason and usage are kept in OpenAI's terms inside it (`end_turn` is
//! `stop`, `tool_use` is `tool_calls`, `max_tokens` is `length`).

mod assemble;
mod fault;
mod render;
mod request;

#[cfg(test)]
mod tests;

pub use assemble::{StreamAssembler, parse_message};
pub use fault::{status_error, stream_error};
pub use render::{
    SseEvent, StreamRenderer, error_body, error_kind_for_status, message, stream_events,
};
pub use request::{
    Block, BlockParam, Content, MessageParam, MessagesRequest, Role, ToolParam, read_conversation,
};

/// Anthropic's `stop_reason` for an OpenAI finish reason.
pub fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        other => other,
    }
}

/// The OpenAI finish reason for Anthropic's `stop_reason`.
pub fn finish_reason(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        other => other,
    }
}

/// The `anthropic` Python client's exception name for an HTTP status (`_make_status_error`),
/// which the gateway's error classification reads as it reads openai-python's.
pub fn status_exception_name(status: u16) -> &'static str {
    match status {
        400 => "BadRequestError",
        401 => "AuthenticationError",
        403 => "PermissionDeniedError",
        404 => "NotFoundError",
        409 => "ConflictError",
        413 => "RequestTooLargeError",
        422 => "UnprocessableEntityError",
        429 => "RateLimitError",
        503 => "ServiceUnavailableError",
        504 => "DeadlineExceededError",
        529 => "OverloadedError",
        500.. => "InternalServerError",
        _ => "APIStatusError",
    }
}
