//! AWS Bedrock's Converse wire (`POST {base}/model/{modelId}/converse` and
//! `/converse-stream`), as Bedrock and `boto3`'s `bedrock-runtime` client speak it
//! (`docs/recording-format.md` §16).
//!
//! - `assemble.rs`: reading an answer: a stream's events ([`StreamAssembler`]: `messageStart`,
//!   `contentBlockStart` (a `toolUse` start), `contentBlockDelta` (`text`, `toolUse.input`,
//!   `reasoningContent` text and signature), `contentBlockStop`, `messageStop` with the
//!   `stopReason`, `metadata` with the usage, and the stream's exceptions) or a whole answer
//!   ([`parse_response`]) into the shared [`Event`](crate::chat_completions::Event)s and one
//!   [`Assembled`](crate::chat_completions::Assembled) answer.
//! - `render.rs`: writing an [`Answer`](crate::chat_completions::Answer) as one answer or as the
//!   stream's events, and Bedrock's error (`{"message"}` with the exception's name).
//! - `request.rs`: writing a request ([`ConverseRequest`]) from a
//!   [`conversation`](crate::conversation).
//!
//! The stream is AWS's binary event stream (`application/vnd.amazon.eventstream`): this crate
//! only has the events' names and JSON payloads ([`StreamEvent`]); framing them, and checking
//! a frame's CRCs, is the transport's (`aws-smithy-eventstream`, in the model server and the
//! gateway's provider). The finish reason is kept in OpenAI's terms inside the answer
//! (`end_turn` and `stop_sequence` are `stop`, `tool_use` is `tool_calls`, `max_tokens` is
//! `length`, `guardrail_intervened` and `content_filtered` are `content_filter`).

mod assemble;
mod fault;
mod render;
mod request;

#[cfg(test)]
mod tests;

pub use assemble::{StreamAssembler, parse_response};
pub use fault::{status_error, stream_error};
pub use render::{StreamRenderer, error_body, exception_for_status, response, stream_events};
pub use request::{
    ContentBlock, ConverseRequest, InputSchema, Message, ReasoningContent, ReasoningText,
    SystemBlock, ToolConfig, ToolResult, ToolResultContent, ToolSpec, ToolUse, read_conversation,
};

/// Bedrock's `stopReason` for an OpenAI finish reason.
pub fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        "content_filter" => "content_filtered",
        other => other,
    }
}

/// The OpenAI finish reason for Bedrock's `stopReason`.
pub fn finish_reason(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "guardrail_intervened" | "content_filtered" => "content_filter",
        other => other,
    }
}

/// The exception name `boto3` raises for an HTTP status when the error names none (it raises
/// the class the error's `x-amzn-errortype` names, e.g. `client.exceptions.ThrottlingException`;
/// these are Bedrock Runtime's documented errors for each status).
pub fn status_exception_name(status: u16) -> &'static str {
    exception_for_status(status)
}
/// One message of the stream: its `:event-type` and JSON payload.
pub use crate::stream::StreamEvent;
