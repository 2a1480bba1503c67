//! Google's Gemini API wire (`POST {base}/v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent`), as the Gemini API and the `google-genai` SDKs speak it
//! (`docs/recording-format.md` §16).
//!
//! - `assemble.rs`: reading an answer: a stream's chunks ([`StreamAssembler`]; each chunk is a
//!   whole `GenerateContentResponse`, sent as an SSE `data:` frame with `?alt=sse` and with no
//!   `[DONE]`, or as an element of one streamed JSON array without it, which
//!   [`JsonArraySplitter`] cuts into elements) or a whole response ([`parse_response`]) into the
//!   shared [`Event`](crate::chat_completions::Event)s and one
//!   [`Assembled`](crate::chat_completions::Assembled) answer.
//! - `render.rs`: writing an [`Answer`](crate::chat_completions::Answer) as one response or as
//!   the stream's chunks, and Gemini's error body (`{"error": {"code", "message", "status"}}`).
//! - `request.rs`: writing a request ([`GenerateContentRequest`]) from a
//!   [`conversation`](crate::conversation).
//!
//! Parts: `text` (with `thought: true`, reasoning), `functionCall` (`name`, `args` an object, an
//! optional `id`) and `functionResponse`; `thoughtSignature` on a part is the reasoning's
//! signature. Gemini names no call ids as a rule, so a call without one gets
//! [`fill_call_id`](crate::chat_completions::fill_call_id)'s deterministic id. The finish reason
//! is kept in OpenAI's terms inside the answer (`STOP` is `stop`, or `tool_calls` when the answer
//! called tools; `MAX_TOKENS` is `length`; the safety reasons are `content_filter`).

mod assemble;
mod fault;
mod render;
mod request;

#[cfg(test)]
mod tests;

pub use assemble::{JsonArraySplitter, SplitError, StreamAssembler, parse_response};
pub use fault::{status_error, stream_error};
pub use render::{StreamRenderer, error_body, response, status_for_code, stream_chunks};
pub use request::{
    Content, FunctionCall, FunctionDeclaration, FunctionResponse, GenerateContentRequest, Part,
    Tool, read_conversation,
};

/// Gemini's `finishReason` for an OpenAI finish reason.
pub fn gemini_finish_reason(finish_reason: &str) -> String {
    match finish_reason {
        "stop" | "tool_calls" => "STOP".to_owned(),
        "length" => "MAX_TOKENS".to_owned(),
        "content_filter" => "SAFETY".to_owned(),
        other => other.to_ascii_uppercase(),
    }
}

/// The OpenAI finish reason for Gemini's `finishReason` (`called` when the answer called tools:
/// Gemini finishes a tool call with `STOP`).
pub fn finish_reason(gemini: &str, called: bool) -> String {
    match gemini {
        "STOP" if called => "tool_calls".to_owned(),
        "STOP" => "stop".to_owned(),
        "MAX_TOKENS" => "length".to_owned(),
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            "content_filter".to_owned()
        }
        other => other.to_ascii_lowercase(),
    }
}

/// The `google-genai` Python client's exception class for an HTTP status (`errors.APIError`
/// raises `ClientError` for a 4xx and `ServerError` for a 5xx).
pub fn status_exception_name(status: u16) -> &'static str {
    match status {
        400..=499 => "ClientError",
        500..=599 => "ServerError",
        _ => "APIError",
    }
}
