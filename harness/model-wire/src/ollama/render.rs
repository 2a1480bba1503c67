//! The Ollama renderer: an answer as one `/api/chat` answer ([`response`]), as the stream's
//! NDJSON lines rendered from the recorded deltas ([`stream_lines`]: a line per text or
//! reasoning fragment, a line per call once its arguments are complete, then the `done` line
//! with the reason and the counts, as Ollama sends them; [`StreamRenderer`], one step at a time,
//! is what every stream at the wire goes through), any of them as `/api/generate`
//! writes it ([`generate_line`]), and Ollama's error body ([`error_body`]), so that
//! [`StreamAssembler`](super::StreamAssembler), the `ollama` client and LangChain's
//! `ChatOllama` read back the same answer.

use chrono::{DateTime, SecondsFormat};
use serde_json::{Map, Value, json};

use crate::chat_completions::{Answer, Event, Identity};
use crate::stream::{RenderStream, StreamPiece};

use super::done_reason;

fn model(identity: &Identity, answer: &Answer) -> String {
    answer
        .model
        .clone()
        .unwrap_or_else(|| identity.model.clone())
}

/// `created` as Ollama's `created_at` (RFC 3339, UTC).
fn created_at(identity: &Identity) -> String {
    let seconds = i64::try_from(identity.created).unwrap_or_default();
    DateTime::from_timestamp(seconds, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Ollama's tool call: the function's position, name and arguments (an object).
fn call(index: usize, name: &str, arguments: &str) -> Value {
    let arguments = match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    };
    json!({"function": {"index": index, "name": name, "arguments": arguments}})
}

/// One line holding `message`, `done` with the answer's reason and counts when `last`.
fn line(identity: &Identity, answer: &Answer, message: Map<String, Value>, last: bool) -> Value {
    let mut line = json!({
        "model": model(identity, answer),
        "created_at": created_at(identity),
        "message": message,
        "done": last,
    });
    if last {
        line["done_reason"] = json!(done_reason(&answer.finish_reason));
        let count = |key: &str| {
            answer
                .usage
                .as_ref()
                .and_then(|usage| usage.get(key))
                .and_then(Value::as_u64)
        };
        if let Some(prompt) = count("prompt_tokens") {
            line["prompt_eval_count"] = json!(prompt);
        }
        if let Some(completion) = count("completion_tokens") {
            line["eval_count"] = json!(completion);
        }
    }
    line
}

fn message(content: &str) -> Map<String, Value> {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(content));
    message
}

/// One whole `/api/chat` answer: the text, the reasoning as `thinking`, each call.
pub fn response(identity: &Identity, answer: &Answer) -> Value {
    let mut whole = message(&answer.text);
    if let Some(reasoning) = answer.reasoning.as_deref().filter(|r| !r.is_empty()) {
        whole.insert("thinking".into(), json!(reasoning));
    }
    if !answer.calls.is_empty() {
        let calls: Vec<Value> = answer
            .calls
            .iter()
            .enumerate()
            .map(|(index, c)| call(index, &c.name, &c.arguments))
            .collect();
        whole.insert("tool_calls".into(), json!(calls));
    }
    line(identity, answer, whole, true)
}

/// The lines of an answer streamed with `events` (the recorded deltas, in order; when they are
/// empty the answer's own [`Answer::events`]), whole, as `/api/chat` streams them:
/// [`StreamRenderer`] over every step.
pub fn stream_lines(identity: &Identity, answer: &Answer, events: &[Event]) -> Vec<Value> {
    let own;
    let events = if events.is_empty() {
        own = answer.events();
        &own
    } else {
        events
    };
    let mut renderer = StreamRenderer::chat(identity, Some(answer));
    let mut pieces = renderer.start();
    for event in events {
        pieces.extend(renderer.event(event));
    }
    pieces.extend(renderer.finish(answer));
    pieces
        .into_iter()
        .filter_map(|piece| match piece {
            StreamPiece::Line(line) => Some(line),
            _ => None,
        })
        .collect()
}

/// Ollama's streaming renderer ([`RenderStream`]), at `/api/chat` or `/api/generate`: a line
/// per reasoning or text fragment, a line per call once its arguments are complete (Ollama
/// sends each call whole), then the `done` line with the reason and the counts; a failure is
/// one `{"error"}` line. No opening and no end marker: the `done` line is the end.
pub struct StreamRenderer {
    identity: Identity,
    /// What the lines before the last say (their model): the answer when known, else an empty
    /// one (the requested model).
    opening: Answer,
    /// `/api/generate`'s lines (`response`, no calls) rather than `/api/chat`'s.
    generate: bool,
    /// Each call being streamed: its index, name and arguments so far.
    calls: Vec<(u32, String, String)>,
    /// How many calls have been sent (Ollama's `function.index`).
    ended: usize,
}

impl StreamRenderer {
    /// The renderer of `/api/chat`'s stream; `known` is the answer when known before its stream.
    pub fn chat(identity: &Identity, known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            identity: identity.clone(),
            opening: known.cloned().unwrap_or_else(Answer::empty),
            generate: false,
            calls: Vec::new(),
            ended: 0,
        }
    }

    /// The renderer of `/api/generate`'s stream: the chat lines as generate writes them
    /// ([`generate_line`]).
    pub fn generate(identity: &Identity, known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            generate: true,
            ..StreamRenderer::chat(identity, known)
        }
    }

    fn piece(&self, chat: Value) -> StreamPiece {
        StreamPiece::Line(if self.generate {
            generate_line(&chat)
        } else {
            chat
        })
    }

    fn fragment(&self, message: Map<String, Value>) -> Vec<StreamPiece> {
        vec![self.piece(line(&self.identity, &self.opening, message, false))]
    }
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        Vec::new()
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        match event {
            Event::TextDelta { delta } if !delta.is_empty() => self.fragment(message(delta)),
            Event::ThinkingDelta { delta } if !delta.is_empty() => {
                let mut fragment = message("");
                fragment.insert("thinking".into(), json!(delta));
                self.fragment(fragment)
            }
            Event::ToolcallStart { index, name, .. } => {
                self.calls.push((*index, name.clone(), String::new()));
                Vec::new()
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = self.calls.iter_mut().find(|call| call.0 == *index) {
                    call.2.push_str(delta);
                }
                Vec::new()
            }
            Event::ToolcallEnd { index } => {
                let Some((_, name, arguments)) = self.calls.iter().find(|call| call.0 == *index)
                else {
                    return Vec::new();
                };
                let mut fragment = message("");
                fragment.insert(
                    "tool_calls".into(),
                    json!([call(self.ended, name, arguments)]),
                );
                self.ended += 1;
                self.fragment(fragment)
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        vec![self.piece(line(&self.identity, answer, message(""), true))]
    }

    /// Ollama's error line, `{"error": message}`, ends the stream.
    fn fail(&mut self, _status: u16, message: &str, _body: &Value) -> Vec<StreamPiece> {
        vec![StreamPiece::Line(error_body(message))]
    }
}

/// A `/api/chat` line (or whole answer) as `/api/generate` writes it: the message's `content`
/// as `response`, its `thinking` at the top level (generate has no tools, so no call).
pub fn generate_line(chat: &Value) -> Value {
    let Value::Object(fields) = chat else {
        return chat.clone();
    };
    let mut out = Map::new();
    for (key, value) in fields {
        if key != "message" {
            out.insert(key.clone(), value.clone());
            continue;
        }
        out.insert(
            "response".into(),
            value.get("content").cloned().unwrap_or(json!("")),
        );
        if let Some(thinking) = value.get("thinking") {
            out.insert("thinking".into(), thinking.clone());
        }
    }
    Value::Object(out)
}

/// Ollama's error body, `{"error": message}`: an HTTP error's body, and the line that ends a
/// stream that failed.
pub fn error_body(message: &str) -> Value {
    json!({"error": message})
}
