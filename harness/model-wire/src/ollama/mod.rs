//! Ollama's native wire (`POST {root}/api/chat` and `/api/generate`), as the Ollama server and
//! its official clients (`ollama` for Python and JavaScript, LangChain's `ChatOllama`) speak it
//! (`docs/recording-format.md` §17).
//!
//! - `assemble.rs`: reading an answer: a stream's NDJSON lines ([`StreamAssembler`]; each line
//!   a whole JSON object with the new fragment, the last one `"done": true` with the reason and
//!   the counts) or a whole answer ([`parse_response`]) into the shared
//!   [`Event`](crate::Event)s and one [`Assembled`](crate::chat_completions::Assembled) answer.
//!   `/api/chat` carries the fragment in `message` (`content`, `thinking`, `tool_calls`),
//!   `/api/generate` at the top level (`response`, `thinking`); one reader reads both.
//! - `render.rs`: the renderer: an [`Answer`](crate::chat_completions::Answer) as one chat
//!   answer ([`response`]) or as the stream's lines, from the recorded deltas ([`stream_lines`]:
//!   a line per text or reasoning fragment and per call, as Ollama sends them), either as
//!   `/api/generate` writes it ([`generate_line`]), and Ollama's error body (`{"error"}`);
//!   [`StreamRenderer`] is the wire's streaming renderer
//!   ([`Wire::stream_renderer`](crate::Wire::stream_renderer)).
//! - `request.rs`: a request's conversation as the replay key reads it ([`read_conversation`],
//!   [`read_prompt`] for `/api/generate`).
//! - `fault.rs`: Ollama's faults (`{"error": "..."}` with the status, and the same object as a
//!   stream's last line).
//!
//! Ollama sends each tool call whole (its `arguments` an object, no call id), so a call gets
//! [`fill_call_id`](crate::chat_completions::fill_call_id)'s deterministic id. The finish reason
//! is kept in OpenAI's terms inside the answer: `done_reason` `stop` is `stop` (`tool_calls`
//! when the answer called tools), `length` is `length`. Usage is OpenAI's, from
//! `prompt_eval_count` and `eval_count`.

mod assemble;
mod fault;
mod render;
mod request;

#[cfg(test)]
mod tests;

pub use assemble::{StreamAssembler, parse_response};
pub use fault::{status_error, stream_error};
pub use render::{StreamRenderer, error_body, generate_line, response, stream_lines};
pub use request::{read_conversation, read_prompt};

/// The `ollama` Python client's exception class for any HTTP failure (`ResponseError`, which
/// carries the status).
pub fn status_exception_name(_status: u16) -> &'static str {
    "ResponseError"
}

/// Ollama's `done_reason` for an OpenAI finish reason.
pub fn done_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "tool_calls" | "content_filter" => "stop",
        other => other,
    }
}

/// The OpenAI finish reason for Ollama's `done_reason` (`called` when the answer called tools:
/// Ollama finishes a tool call with `stop`).
pub fn finish_reason(done_reason: &str, called: bool) -> String {
    match done_reason {
        "stop" | "" if called => "tool_calls".to_owned(),
        "" => "stop".to_owned(),
        other => other.to_owned(),
    }
}
