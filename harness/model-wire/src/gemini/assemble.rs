//! Reading a Gemini answer: a stream's chunks one at a time ([`StreamAssembler`]), each a whole
//! `GenerateContentResponse` whose parts are the new fragments, or a whole response
//! ([`parse_response`]); and cutting the JSON-array stream (`streamGenerateContent` without
//! `?alt=sse`) into its elements ([`JsonArraySplitter`]).
//!
//! The first candidate is the answer. Text parts are text, `thought: true` text parts reasoning,
//! each `functionCall` part one whole call (Gemini does not split arguments); `usageMetadata`
//! (on every chunk) is cumulative, so the last one wins. A stream is complete once a chunk has
//! carried a `finishReason` (there is no end marker); one that ends before is
//! [`WireError::Truncated`]. A chunk or body with an `error` object is
//! [`WireError::Provider`], and so is a prompt Gemini blocked (`promptFeedback.blockReason`
//! with no candidate).

use serde_json::{Map, Value, json};

use crate::chat_completions::{Assembled, Event, WireError, cut};

use super::finish_reason;

/// Which text-like block is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Open {
    #[default]
    None,
    Text,
    Thinking,
}

/// Folds a Gemini stream into events and one answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    assembled: Assembled,
    open: Open,
    gemini_finish: Option<String>,
    usage: Option<Value>,
}

impl StreamAssembler {
    /// An assembler for one answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// True once a chunk has carried a `finishReason`.
    pub fn finished(&self) -> bool {
        self.gemini_finish.is_some()
    }

    /// One `data:` payload (or one element of the JSON-array stream, as text).
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Event>, WireError> {
        let chunk: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: cut(data, 200),
        })?;
        self.push_chunk(&chunk)
    }

    fn close(&mut self, events: &mut Vec<Event>) {
        match std::mem::take(&mut self.open) {
            Open::Text => events.push(Event::TextEnd),
            Open::Thinking => events.push(Event::ThinkingEnd),
            Open::None => {}
        }
    }

    fn open(&mut self, kind: Open, events: &mut Vec<Event>) {
        if self.open != kind {
            self.close(events);
            events.push(match kind {
                Open::Thinking => Event::ThinkingStart,
                _ => Event::TextStart,
            });
            self.open = kind;
        }
    }

    /// One parsed chunk.
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<Vec<Event>, WireError> {
        let Some(fields) = chunk.as_object() else {
            return Err(WireError::ChunkNotObject);
        };
        if fields.get("error").is_some_and(|error| !error.is_null()) {
            return Err(WireError::from_error_event(&chunk.to_string()));
        }
        if let Some(usage) = fields.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        if let Some(model) = fields
            .get("modelVersion")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
        {
            self.assembled.model = Some(model.to_owned());
        }
        let candidate = fields
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|candidates| candidates.first());
        let Some(candidate) = candidate else {
            if let Some(reason) = fields
                .get("promptFeedback")
                .and_then(|feedback| feedback.get("blockReason"))
                .and_then(Value::as_str)
            {
                return Err(WireError::Provider {
                    message: format!("Gemini blocked the prompt ({reason})"),
                    body: chunk.clone(),
                });
            }
            return Ok(Vec::new());
        };
        let mut events = Vec::new();
        let parts = candidate
            .get("content")
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for part in &parts {
            if let Some(signature) = part.get("thoughtSignature").and_then(Value::as_str) {
                self.assembled.reasoning_signature = signature.to_owned();
            }
            if let Some(call) = part.get("functionCall") {
                self.close(&mut events);
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = match call.get("args") {
                    Some(args @ Value::Object(_)) => args.to_string(),
                    _ => "{}".to_owned(),
                };
                let id = call.get("id").and_then(Value::as_str);
                (self.assembled).push_whole_call(id, name, arguments, &mut events);
                continue;
            }
            let Some(text) = part.get("text").and_then(Value::as_str) else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                self.open(Open::Thinking, &mut events);
                self.assembled.reasoning.push_str(text);
                events.push(Event::ThinkingDelta {
                    delta: text.to_owned(),
                });
            } else {
                self.open(Open::Text, &mut events);
                self.assembled.text.push_str(text);
                events.push(Event::TextDelta {
                    delta: text.to_owned(),
                });
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.close(&mut events);
            self.gemini_finish = Some(reason.to_owned());
        }
        Ok(events)
    }

    /// What the stream has said of its answer so far: the model version and the usage its
    /// latest chunk carried (a live relay's chunks say them before the answer is over).
    pub fn so_far(&self) -> (Option<String>, Option<Value>) {
        (
            self.assembled.model.clone(),
            self.usage.as_ref().and_then(openai_usage),
        )
    }

    /// The answer, once the stream has ended: the closing events of a block still open, and the
    /// answer.
    pub fn finish(mut self) -> Result<(Vec<Event>, Assembled), WireError> {
        let Some(reason) = self.gemini_finish.take() else {
            return Err(WireError::Truncated);
        };
        let mut events = Vec::new();
        self.close(&mut events);
        let called = !self.assembled.calls.is_empty();
        self.assembled.finish_reason = Some(finish_reason(&reason, called));
        self.assembled.usage = self.usage.as_ref().and_then(openai_usage);
        Ok((events, self.assembled))
    }
}

/// OpenAI's `usage` from Gemini's `usageMetadata`: the candidates' and the thoughts' tokens are
/// the completion's, the thoughts its reasoning, the cached content the cached prompt.
pub(crate) fn openai_usage(usage: &Value) -> Option<Value> {
    let usage = usage.as_object()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count("promptTokenCount");
    let thoughts = count("thoughtsTokenCount");
    let completion = count("candidatesTokenCount") + thoughts;
    let total = usage
        .get("totalTokenCount")
        .and_then(Value::as_u64)
        .unwrap_or(prompt + completion);
    let mut out = Map::new();
    out.insert("prompt_tokens".into(), json!(prompt));
    out.insert("completion_tokens".into(), json!(completion));
    out.insert("total_tokens".into(), json!(total));
    out.insert(
        "prompt_tokens_details".into(),
        json!({"cached_tokens": count("cachedContentTokenCount")}),
    );
    out.insert(
        "completion_tokens_details".into(),
        json!({"reasoning_tokens": thoughts}),
    );
    Some(Value::Object(out))
}

/// A whole (non-streamed) `GenerateContentResponse` as the answer; an error body is
/// [`WireError::Provider`], a body that is no object [`WireError::CompletionNotObject`].
pub fn parse_response(body: &Value) -> Result<Assembled, WireError> {
    if !body.is_object() {
        return Err(WireError::CompletionNotObject);
    }
    let mut assembler = StreamAssembler::new();
    assembler.push_chunk(body)?;
    if !assembler.finished() {
        if body.get("candidates").is_none() {
            return Err(WireError::NoCompletionChoices);
        }
        // A whole response always ends; one without a reason ended as a stop.
        assembler.gemini_finish = Some("STOP".to_owned());
    }
    assembler.finish().map(|(_, assembled)| assembled)
}

/// Why the JSON-array stream could not be cut.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The body does not start with `[`.
    #[error("the streamed body is not a JSON array (it starts with {0:?})")]
    NotAnArray(char),
    /// Something other than `,`, `]` or white space between two elements.
    #[error("unexpected {0:?} between two elements of the streamed JSON array")]
    Unexpected(char),
    /// Bytes after the closing `]`.
    #[error("data after the end of the streamed JSON array")]
    TrailingData,
}

/// Cuts `streamGenerateContent`'s JSON-array body (`[{…}\n,\r\n{…}]`, sent as it is produced)
/// into its elements, whatever the transport's chunk boundaries: feed bytes as they come
/// ([`JsonArraySplitter::push`]), each complete element's text comes out.
#[derive(Debug, Default)]
pub struct JsonArraySplitter {
    /// Bytes of the element being read.
    current: Vec<u8>,
    started: bool,
    ended: bool,
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl JsonArraySplitter {
    /// A splitter for one body.
    pub fn new() -> JsonArraySplitter {
        JsonArraySplitter::default()
    }

    /// True once the closing `]` has arrived.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The elements completed by `bytes`, as text.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, SplitError> {
        let mut out = Vec::new();
        for &byte in bytes {
            if self.ended {
                if !byte.is_ascii_whitespace() {
                    return Err(SplitError::TrailingData);
                }
                continue;
            }
            if !self.started {
                match byte {
                    b'[' => self.started = true,
                    b if b.is_ascii_whitespace() => {}
                    other => return Err(SplitError::NotAnArray(char::from(other))),
                }
                continue;
            }
            if self.depth == 0 {
                match byte {
                    b'{' | b'[' => {
                        self.depth = 1;
                        self.current.push(byte);
                    }
                    b']' => self.ended = true,
                    b',' => {}
                    b if b.is_ascii_whitespace() => {}
                    other => return Err(SplitError::Unexpected(char::from(other))),
                }
                continue;
            }
            self.current.push(byte);
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        let element = std::mem::take(&mut self.current);
                        out.push(String::from_utf8_lossy(&element).into_owned());
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}
