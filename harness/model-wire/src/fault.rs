//! Faults as each provider sends them (issue 42): a refused call's status, headers and error
//! body (`Wire::status_error`), and the error a provider puts inside a stream it had begun
//! (`Wire::stream_error`). Each wire's own module writes its forms (its `fault.rs`); this file
//! holds the two shapes they share; `fault_render.rs` the dispatch on [`Wire`](crate::Wire). The model server applies a fault plan with
//! them: which call, after how many chunks, how late, is the server's business, not a codec's.

use serde_json::Value;

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
    /// Ollama: one more NDJSON line of the stream, `{"error": "..."}`.
    Line(Value),
    /// Converse: the exception message that ends the event stream (`:exception-type` and the
    /// `{"message"}` payload's text).
    Exception {
        /// The exception's type, e.g. `modelStreamErrorException`.
        exception_type: &'static str,
        /// Its message.
        message: String,
    },
}
