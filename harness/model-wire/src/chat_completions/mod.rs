//! OpenAI's Chat Completions wire (`POST {base}/chat/completions`), as OpenAI and the
//! OpenAI-compatible servers (DeepSeek, Mistral, Ollama, Gemini's compatible endpoint,
//! OpenRouter, vLLM, …) speak it.
//!
//! - `types.rs`: the JSON as types (completions, chunks, tool calls, the error body).
//! - `assemble.rs`: reading an answer: a stream's `data:` payloads ([`ChunkAssembler`]) or a
//!   whole completion ([`parse_completion`]) into [`Event`]s and one [`Assembled`] answer.
//! - `message.rs`: the AI message (LangChain's dump form) built from an answer, and read back
//!   into an [`Answer`] to render.
//! - `render.rs`: writing an answer as one completion or as chunks.
//! - `request.rs`: reading a request's `messages` into the conversation the replay key reads.
//! - `error.rs`: what can be wrong with an answer, and the Python client's exception names.

mod assemble;
mod error;
mod fault;
pub(crate) mod message;
mod render;
mod request;
mod types;

#[cfg(test)]
mod tests;

/// The delta vocabulary, named here too because every wire's reader and renderer reads it next to
/// this module's [`Assembled`] and [`Answer`]: the same type as [`crate::Event`].
pub use crate::Event;
pub use assemble::{
    Assembled, AssembledCall, ChunkAssembler, Ending, fill_call_id, parse_completion,
};
pub use error::{WireError, cut, error_message, status_exception_name};
pub use fault::{status_error, stream_error};
pub use message::{
    Answer, MODEL_PROVIDER, REASONING_SIGNATURE, message_fields, new_run_id, openai_usage,
    usage_metadata,
};
pub use render::{ChunkRenderer, Identity, StreamRenderer, completion};
pub use request::read_conversation;
pub use types::{
    Chunk, ChunkChoice, Completion, CompletionChoice, Delta, ErrorBody, ErrorObject, FunctionDelta,
    ResponseMessage, ToolCallDelta, WireFunction, WireToolCall,
};
