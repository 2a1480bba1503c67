//! Writing an answer at the Gemini wire: one `GenerateContentResponse` ([`response`]), the
//! stream's chunks ([`stream_chunks`]: a chunk per reasoning or text fragment and per call, the
//! last carrying `finishReason` and every one the `usageMetadata`, as Gemini sends them) and
//! Gemini's error body ([`error_body`]), whole or one recorded step at a time
//! ([`StreamRenderer`]), so that [`StreamAssembler`](super::StreamAssembler) and
//! the `google-genai` SDK read back the same answer.

use serde_json::{Value, json};

use crate::chat_completions::{Answer, Event, Identity};
use crate::stream::{RenderStream, StreamPiece};

use super::gemini_finish_reason;

/// Gemini's `usageMetadata` from the answer's OpenAI usage (`None` when it has none).
fn usage_metadata(answer: &Answer) -> Option<Value> {
    let usage = answer.usage.as_ref()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let detail = |group: &str, key: &str| {
        usage
            .get(group)
            .and_then(|g| g.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let thoughts = detail("completion_tokens_details", "reasoning_tokens");
    let mut metadata = json!({
        "promptTokenCount": count("prompt_tokens"),
        "candidatesTokenCount": count("completion_tokens").saturating_sub(thoughts),
        "totalTokenCount": count("total_tokens"),
    });
    if thoughts > 0 {
        metadata["thoughtsTokenCount"] = json!(thoughts);
    }
    let cached = detail("prompt_tokens_details", "cached_tokens");
    if cached > 0 {
        metadata["cachedContentTokenCount"] = json!(cached);
    }
    Some(metadata)
}

fn model(identity: &Identity, answer: &Answer) -> String {
    answer
        .model
        .clone()
        .unwrap_or_else(|| identity.model.clone())
}

fn args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

fn call_part(id: &str, name: &str, arguments: &str) -> Value {
    json!({"functionCall": {"id": id, "name": name, "args": args(arguments)}})
}

/// One response holding `parts`, finished with the answer's reason when `last`.
fn chunk(identity: &Identity, answer: &Answer, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if last {
        candidate["finishReason"] = json!(gemini_finish_reason(&answer.finish_reason));
    }
    let mut body = json!({"candidates": [candidate]});
    if let Some(usage) = usage_metadata(answer) {
        body["usageMetadata"] = usage;
    }
    body["modelVersion"] = json!(model(identity, answer));
    body["responseId"] = json!(identity.id);
    body
}

/// One whole response: the reasoning as a thought part, the text, then each call.
pub fn response(identity: &Identity, answer: &Answer) -> Value {
    let mut parts = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        parts.push(json!({"text": reasoning, "thought": true}));
    }
    if !answer.text.is_empty() {
        parts.push(json!({"text": answer.text}));
    }
    for call in &answer.calls {
        parts.push(call_part(&call.id, &call.name, &call.arguments));
    }
    chunk(identity, answer, parts, true)
}

/// The chunks of an answer streamed with `events` (the shared events, in order; when they are
/// empty the answer's own [`Answer::events`]), whole: [`StreamRenderer`] over every step.
pub fn stream_chunks(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<Value> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut renderer = StreamRenderer::new(identity, Some(answer));
    let mut out = Vec::new();
    for event in events {
        out.extend(renderer.chunks_of(event));
    }
    out.extend(renderer.closing(answer));
    out
}

/// The Gemini wire's streaming renderer ([`RenderStream`]): a chunk per reasoning or text
/// fragment, a chunk per call once its arguments are complete, the finish reason on the last
/// chunk. Since only the end says which chunk is last, each part is sent when the next one
/// comes (or the end does). Every chunk carries the answer's `usageMetadata` and model when
/// they are known before the stream; the last one always does.
#[derive(Debug)]
pub struct StreamRenderer {
    identity: Identity,
    /// What the chunks before the last say: the answer when known, else an empty one.
    opening: Answer,
    /// The part not sent yet (it may be the last).
    pending: Option<Value>,
    /// Each call being streamed: its position, id, name and arguments so far.
    calls: Vec<(u32, String, String, String)>,
}

impl StreamRenderer {
    /// A renderer for one answer; `known` is the answer when it is known before its stream.
    pub fn new(identity: &Identity, known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            identity: identity.clone(),
            opening: known.cloned().unwrap_or_else(Answer::empty),
            pending: None,
            calls: Vec::new(),
        }
    }

    /// The part this delta completes, if any.
    fn part_of(&mut self, event: &Event) -> Option<Value> {
        match event {
            Event::TextDelta { delta } if !delta.is_empty() => Some(json!({"text": delta})),
            Event::ThinkingDelta { delta } if !delta.is_empty() => {
                Some(json!({"text": delta, "thought": true}))
            }
            Event::ToolcallStart { index, id, name } => {
                self.calls
                    .push((*index, id.clone(), name.clone(), String::new()));
                None
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = self.calls.iter_mut().find(|call| call.0 == *index) {
                    call.3.push_str(delta);
                }
                None
            }
            Event::ToolcallEnd { index } => self
                .calls
                .iter()
                .find(|call| call.0 == *index)
                .map(|call| call_part(&call.1, &call.2, &call.3)),
            _ => None,
        }
    }

    /// The chunk one delta lets go: the part before it, now known not to be the last.
    fn chunks_of(&mut self, event: &Event) -> Vec<Value> {
        let Some(part) = self.part_of(event) else {
            return Vec::new();
        };
        let before = self.pending.replace(part);
        before
            .map(|part| chunk(&self.identity, &self.opening, vec![part], false))
            .into_iter()
            .collect()
    }

    /// The last chunk, with the finish reason (an empty text part when nothing came).
    fn closing(&mut self, answer: &Answer) -> Vec<Value> {
        let part = self.pending.take().unwrap_or_else(|| json!({"text": ""}));
        vec![chunk(&self.identity, answer, vec![part], true)]
    }
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        Vec::new()
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        self.chunks_of(event)
            .into_iter()
            .map(StreamPiece::Chunk)
            .collect()
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        self.closing(answer)
            .into_iter()
            .map(StreamPiece::Chunk)
            .collect()
    }

    /// The part held back, then Gemini's error body as the stream's last chunk.
    fn fail(&mut self, status: u16, message: &str, _body: &Value) -> Vec<StreamPiece> {
        let held = self
            .pending
            .take()
            .map(|part| chunk(&self.identity, &self.opening, vec![part], false));
        held.into_iter()
            .chain([error_body(status, message)])
            .map(StreamPiece::Chunk)
            .collect()
    }
}

/// Gemini's `status` for an HTTP status code (google.rpc.Code's names).
pub fn status_for_code(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        402..=498 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// Gemini's error body, `{"error": {"code", "message", "status"}}`: an HTTP error's body, and a
/// chunk of a stream that failed.
pub fn error_body(code: u16, message: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status_for_code(code)}})
}
