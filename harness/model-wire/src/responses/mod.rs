//! OpenAI's Responses wire (`POST {base}/v1/responses`), as OpenAI's API and the `openai` SDKs
//! speak it (`docs/recording-format.md` §16).
//!
//! - `assemble.rs`: reading an answer: a stream's events ([`StreamAssembler`]:
//!   `response.created`, `response.output_item.added` / `.done`, `response.output_text.delta`,
//!   `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`,
//!   `response.completed` / `.incomplete` / `.failed`, `error`) or a whole response
//!   ([`parse_response`]) into the shared [`Event`](crate::chat_completions::Event)s and one
//!   [`Assembled`](crate::chat_completions::Assembled) answer.
//! - `render.rs`: writing an [`Answer`](crate::chat_completions::Answer) as one response object
//!   or as the stream's events, each with its `sequence_number`.
//! - `request.rs`: writing a request ([`ResponsesRequest`]) from a
//!   [`conversation`](crate::conversation).
//!
//! Output items: `reasoning` (its summary text is the answer's reasoning), `message` (its
//! `output_text` parts are the text) and `function_call` (`call_id` is the call id, `arguments`
//! JSON text). The answer types are the Chat Completions module's; errors use OpenAI's error
//! body ([`ErrorBody`](crate::chat_completions::ErrorBody)) over HTTP and an `error` event in a
//! stream.

mod assemble;
mod fault;
mod render;
mod request;

#[cfg(test)]
mod tests;

pub use assemble::{StreamAssembler, parse_response};
pub use fault::stream_error;
pub use render::{SseEvent, StreamRenderer, error_event, response, stream_events};
pub use request::{
    Content, FunctionTool, InputItem, Part, PartParam, ResponsesRequest, Role, read_conversation,
};
