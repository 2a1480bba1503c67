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
//!
//! The answer types are the Chat Completions module's: an answer is the same whichever wire it
//! crossed, and the finish reason and usage are kept in OpenAI's terms inside it (`end_turn` is
//! `stop`, `tool_use` is `tool_calls`, `max_tokens` is `length`).

mod assemble;
mod render;

#[cfg(test)]
mod tests;

pub use assemble::{StreamAssembler, parse_message};
pub use render::{SseEvent, error_body, error_kind_for_status, message, stream_events};

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
