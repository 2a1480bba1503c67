//! Reading an Ollama answer: a stream's NDJSON lines one at a time ([`StreamAssembler`]), each
//! a whole JSON object carrying the new fragment, or a whole answer ([`parse_response`]).
//!
//! `/api/chat` lines carry `message.content`, `message.thinking` and `message.tool_calls` (each
//! call whole, in one line); `/api/generate` lines carry `response` and `thinking` at the top
//! level. The stream is complete once a line says `"done": true` (there is no other end
//! marker); one that ends before is [`WireError::Truncated`]. A line or body with an `error` is
//! [`WireError::Provider`], as the `ollama` client raises it.

use serde_json::{Value, json};

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

/// Folds an Ollama stream into events and one answer.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    assembled: Assembled,
    open: Open,
    done_reason: Option<String>,
    usage: Option<Value>,
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or_default()
}

impl StreamAssembler {
    /// An assembler for one answer.
    pub fn new() -> StreamAssembler {
        StreamAssembler::default()
    }

    /// True once a line has said `"done": true`.
    pub fn finished(&self) -> bool {
        self.done_reason.is_some()
    }

    /// What the stream has said of its answer so far: the model every line names, and the usage
    /// (only the last line carries counts), which a live relay's renderer opens with.
    pub fn so_far(&self) -> (Option<String>, Option<Value>) {
        (self.assembled.model.clone(), self.usage.clone())
    }

    /// One NDJSON line.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Event>, WireError> {
        let line: Value = serde_json::from_str(data).map_err(|err| WireError::ChunkNotJson {
            reason: err.to_string(),
            excerpt: cut(data, 200),
        })?;
        self.push_line(&line)
    }

    fn close(&mut self, events: &mut Vec<Event>) {
        match std::mem::take(&mut self.open) {
            Open::Text => events.push(Event::TextEnd),
            Open::Thinking => events.push(Event::ThinkingEnd),
            Open::None => {}
        }
    }

    fn fragment(&mut self, kind: Open, fragment: &str, events: &mut Vec<Event>) {
        if fragment.is_empty() {
            return;
        }
        if self.open != kind {
            self.close(events);
            events.push(match kind {
                Open::Thinking => Event::ThinkingStart,
                _ => Event::TextStart,
            });
            self.open = kind;
        }
        let delta = fragment.to_owned();
        if kind == Open::Thinking {
            self.assembled.reasoning.push_str(fragment);
            events.push(Event::ThinkingDelta { delta });
        } else {
            self.assembled.text.push_str(fragment);
            events.push(Event::TextDelta { delta });
        }
    }

    /// One parsed line.
    pub fn push_line(&mut self, line: &Value) -> Result<Vec<Event>, WireError> {
        let Some(fields) = line.as_object() else {
            return Err(WireError::ChunkNotObject);
        };
        if let Some(error) = fields.get("error").filter(|error| !error.is_null()) {
            let message = error
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            return Err(WireError::Provider {
                message,
                body: line.clone(),
            });
        }
        if let Some(model) = fields
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
        {
            self.assembled.model = Some(model.to_owned());
        }
        let mut events = Vec::new();
        let message = fields.get("message");
        let at = |key: &str| match message {
            Some(message) => message.get(key),
            None => fields.get(key),
        };
        self.fragment(Open::Thinking, text(at("thinking")), &mut events);
        let content = match message {
            Some(message) => text(message.get("content")),
            None => text(fields.get("response")),
        };
        self.fragment(Open::Text, content, &mut events);
        for call in at("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.close(&mut events);
            let function = call.get("function").unwrap_or(&Value::Null);
            let name = text(function.get("name")).to_owned();
            let arguments = match function.get("arguments") {
                Some(args @ Value::Object(_)) => args.to_string(),
                Some(Value::String(args)) if !args.trim().is_empty() => args.clone(),
                _ => "{}".to_owned(),
            };
            let id = call.get("id").and_then(Value::as_str);
            (self.assembled).push_whole_call(id, name, arguments, &mut events);
        }
        if fields.get("done").and_then(Value::as_bool) == Some(true) {
            self.close(&mut events);
            self.done_reason = Some(text(fields.get("done_reason")).to_owned());
            self.usage = openai_usage(line);
        }
        Ok(events)
    }

    /// The answer, once the stream has ended: the closing events of a block still open, and the
    /// answer.
    pub fn finish(mut self) -> Result<(Vec<Event>, Assembled), WireError> {
        let Some(reason) = self.done_reason.take() else {
            return Err(WireError::Truncated);
        };
        let mut events = Vec::new();
        self.close(&mut events);
        let called = !self.assembled.calls.is_empty();
        self.assembled.finish_reason = Some(finish_reason(&reason, called));
        self.assembled.usage = self.usage.take();
        Ok((events, self.assembled))
    }
}

/// OpenAI's `usage` from the last line's `prompt_eval_count` and `eval_count` (`None` when it
/// has neither).
fn openai_usage(line: &Value) -> Option<Value> {
    let prompt = line.get("prompt_eval_count").and_then(Value::as_u64);
    let completion = line.get("eval_count").and_then(Value::as_u64);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let (prompt, completion) = (prompt.unwrap_or(0), completion.unwrap_or(0));
    Some(json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }))
}

/// A whole (`"stream": false`) answer of `/api/chat` or `/api/generate`: one line that is done.
pub fn parse_response(body: &Value) -> Result<Assembled, WireError> {
    if !body.is_object() {
        return Err(WireError::CompletionNotObject);
    }
    let mut assembler = StreamAssembler::new();
    assembler.push_line(body)?;
    assembler.finish().map(|(_, assembled)| assembled)
}
