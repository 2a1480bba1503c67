//! Faults as each provider sends them (issue 42): a refused call's status, headers and error
//! body ([`Wire::status_error`]), and the error a provider puts inside a stream it had begun
//! ([`Wire::stream_error`]). Each wire's own module writes its forms (its `fault.rs`); this file
//! holds the two shapes they share and the dispatch. The model server applies a fault plan with
//! them: which call, after how many chunks, how late, is the server's business, not a codec's.

use serde_json::Value;

use crate::wire::{StreamException, Wire};
use crate::{anthropic_messages, bedrock_converse, chat_completions, gemini, responses};

/// A call refused with an HTTP status, as the provider refuses it: the status, the headers its
/// client reads (`retry-after`, `x-ratelimit-*`, `x-amzn-errortype`, …) and the error body.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusError {
    /// The HTTP status.
    pub status: u16,
    /// The headers, lower case, in order.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON error body.
    pub body: Value,
}

/// The error a provider sends inside a stream it had begun, before the transport frames it.
#[derive(Debug, Clone, PartialEq)]
pub enum InStreamError {
    /// One server-sent event, framed (`event: …\ndata: …\n\n`, or an unnamed `data:` frame).
    Sse(String),
    /// Gemini: one more chunk of the stream, the error object in place of a response.
    Chunk(Value),
    /// Converse: the exception message that ends the event stream.
    Exception(StreamException),
}

impl Wire {
    /// A call refused with `status` (429, 500, 502, 503, 504 or 529), as this wire's provider
    /// answers it; `retry_after` in seconds, in the form its provider sends it, when given.
    pub fn status_error(self, status: u16, retry_after: Option<u32>) -> StatusError {
        match self {
            Wire::ChatCompletions | Wire::Responses => {
                chat_completions::status_error(status, retry_after)
            }
            Wire::AnthropicMessages => anthropic_messages::status_error(status, retry_after),
            Wire::Gemini => gemini::status_error(status, retry_after),
            Wire::BedrockConverse => bedrock_converse::status_error(status, retry_after),
        }
    }

    /// The error this wire's provider sends inside a stream after `sent` events of it: Chat
    /// Completions' error chunk, Messages' `event: error` (an `overloaded_error`), Responses'
    /// `response.failed`, Gemini's error object, Converse's `modelStreamErrorException`. `id` is
    /// the answer's id (Responses' failed response carries it).
    pub fn stream_error(self, id: &str, sent: usize) -> InStreamError {
        match self {
            Wire::ChatCompletions => chat_completions::stream_error(),
            Wire::Responses => responses::stream_error(id, sent),
            Wire::AnthropicMessages => anthropic_messages::stream_error(),
            Wire::Gemini => gemini::stream_error(),
            Wire::BedrockConverse => bedrock_converse::stream_error(),
        }
    }
}
