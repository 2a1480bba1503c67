//! The codecs of the model wires: what a model provider sends and receives, as plain JSON types
//! and functions, with no HTTP, no async runtime and no knowledge of who uses them.
//!
//! [`Wire`] names the wires and is how every user reaches one: its [`StreamReader`] (one end
//! rule per wire), its whole-answer reader, its renderer ([`Wire::render_answer`], and the
//! streaming form [`Wire::stream_renderer`], a [`RenderStream`] that renders a recording's
//! deltas one by one), its client's name for an HTTP failure. One module
//! per wire: [`chat_completions`] is OpenAI's Chat Completions API (and every
//! OpenAI-compatible server's), [`responses`] OpenAI's Responses API, [`anthropic_messages`]
//! Anthropic's Messages API, [`gemini`] Google's Gemini API, [`bedrock_converse`] AWS
//! Bedrock's Converse API and [`ollama`] Ollama's native API (`/api/chat`, `/api/generate`),
//! each with the same parts: the assembler that folds a streamed answer
//! into events and one answer, and the renderer that turns an answer back into a whole answer or
//! into a stream (`docs/recording-format.md` §15, §16). The answer types are shared, and so is
//! what a call sends ([`conversation`]), which the Responses, Messages, Gemini and Converse request
//! builders write in their wire's terms. [`pyrepr`] is Python's `repr()` of JSON both ways (the
//! Python clients' error text and its parser), and [`edge`] how a failed answer is worded, as the
//! client says it and as the recording proxy records it.
//!
//! [`embeddings`] is the embeddings routes of the same providers (OpenAI, Gemini, Bedrock's Titan
//! and Cohere models, Ollama): their requests read into one canonical input, their answers read
//! and rendered, and the compact form a fixture stores a vector in.
//!
//! Adding a wire is one module here (its `assemble.rs`, `render.rs`, `request.rs`) and one
//! [`Wire`] variant; the compiler then lists every `match` that must learn it.
//!
//! The gateway's OpenAI provider and the harness's model server both use these modules, so the
//! way a stream is read when a gateway calls a real provider and the way it is read (and
//! rendered again) when the harness records or replays it cannot drift apart. SSE framing stays
//! with the transports (`eventsource-stream`), and so does AWS's binary event stream
//! (`aws-smithy-eventstream`): the codecs take the parsed payloads.

pub mod anthropic_messages;
pub mod bedrock_converse;
pub mod chat_completions;
pub mod conversation;
pub mod edge;
pub mod embeddings;
mod event;
mod fault;
mod fault_render;
pub mod gemini;
pub mod ollama;
pub mod pyjson;
pub mod pyrepr;
mod reading;
pub mod responses;
mod stream;
mod wire;

pub use event::Event;
pub use fault::{InStreamError, StatusError};
pub use reading::NoConversation;
pub use stream::{RenderStream, StreamEvent, StreamException, StreamPiece};
pub use wire::{
    EVENT_STREAM_CONTENT_TYPE, KeyHeader, NDJSON_CONTENT_TYPE, StreamReader, Wire, model_segment,
};
