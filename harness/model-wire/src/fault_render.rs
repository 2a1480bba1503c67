//! Each wire's faults reached through [`Wire`]: the dispatch to the wire modules' own
//! `fault.rs` (the shapes are `fault.rs`'s, which no wire module's import leads back here from).

use crate::fault::{InStreamError, StatusError};
use crate::wire::Wire;
use crate::{anthropic_messages, bedrock_converse, chat_completions, gemini, ollama, responses};

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
            Wire::OllamaChat | Wire::OllamaGenerate => ollama::status_error(status, retry_after),
        }
    }

    /// The error this wire's provider sends inside a stream after `sent` events of it: Chat
    /// Completions' error chunk, Messages' `event: error` (an `overloaded_error`), Responses'
    /// `response.failed`, Gemini's error object, Converse's `modelStreamErrorException`, Ollama's `{"error"}` line. `id` is
    /// the answer's id (Responses' failed response carries it).
    pub fn stream_error(self, id: &str, sent: usize) -> InStreamError {
        match self {
            Wire::ChatCompletions => chat_completions::stream_error(),
            Wire::Responses => responses::stream_error(id, sent),
            Wire::AnthropicMessages => anthropic_messages::stream_error(),
            Wire::Gemini => gemini::stream_error(),
            Wire::BedrockConverse => bedrock_converse::stream_error(),
            Wire::OllamaChat | Wire::OllamaGenerate => ollama::stream_error(),
        }
    }
}
