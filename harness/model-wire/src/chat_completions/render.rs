//! Writing an answer: an [`Answer`] (and, for a stream, the [`Event`]s it was streamed with)
//! as one `chat.completion` ([`completion`]) or as `chat.completion.chunk`s
//! ([`ChunkRenderer`]; its streaming form, one recorded step at a time, is [`StreamRenderer`]),
//! in the form OpenAI writes them, so that the assembler reads back the same answer.

use serde_json::Value;

use crate::stream::{RenderStream, StreamPiece};

use super::assemble::Event;
use super::message::Answer;
use super::types::{
    Chunk, ChunkChoice, Completion, CompletionChoice, Delta, FunctionDelta, ResponseMessage,
    ToolCallDelta, WireToolCall,
};

/// The identity every chunk of one answer, or its completion, carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `chatcmpl-…`.
    pub id: String,
    /// The model the request named (a recorded model name wins in completions).
    pub model: String,
    /// Unix seconds.
    pub created: u64,
}

/// One `chat.completion` for an answer. `content` is `null` when the answer has no text but
/// tool calls or a refusal, as OpenAI writes it.
pub fn completion(identity: &Identity, answer: &Answer) -> Completion {
    let content =
        if answer.text.is_empty() && (!answer.calls.is_empty() || answer.refusal.is_some()) {
            None
        } else {
            Some(answer.text.clone())
        };
    let message = ResponseMessage {
        role: "assistant".to_owned(),
        content,
        reasoning_content: answer.reasoning.clone(),
        refusal: answer.refusal.clone(),
        tool_calls: answer
            .calls
            .iter()
            .map(|call| WireToolCall::function(&call.id, &call.name, &call.arguments))
            .collect(),
    };
    Completion {
        id: identity.id.clone(),
        object: "chat.completion".to_owned(),
        created: identity.created,
        model: answer
            .model
            .clone()
            .unwrap_or_else(|| identity.model.clone()),
        choices: vec![CompletionChoice {
            index: 0,
            message,
            logprobs: None,
            finish_reason: Some(answer.finish_reason.clone()),
        }],
        usage: answer.usage.clone(),
    }
}

/// Turns a streamed answer into chunks, one event at a time: [`ChunkRenderer::start`] first,
/// [`ChunkRenderer::event`] per event (the chunk boundaries stay where the events put them),
/// then [`ChunkRenderer::finish`] with the whole answer, after which the caller sends
/// `data: [DONE]`.
#[derive(Debug)]
pub struct ChunkRenderer {
    identity: Identity,
    /// Calls already started on the stream, so that `finish` does not repeat them.
    streamed_calls: usize,
    finished: bool,
}

impl ChunkRenderer {
    /// A renderer for one answer.
    pub fn new(identity: Identity) -> ChunkRenderer {
        ChunkRenderer {
            identity,
            streamed_calls: 0,
            finished: false,
        }
    }

    fn chunk(&self, delta: Delta, finish_reason: Option<String>) -> Chunk {
        Chunk {
            id: self.identity.id.clone(),
            object: "chat.completion.chunk".to_owned(),
            created: self.identity.created,
            model: self.identity.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason,
            }],
            usage: None,
        }
    }

    /// The first chunk: the assistant role and empty content.
    pub fn start(&self) -> Chunk {
        self.chunk(
            Delta {
                role: Some("assistant".to_owned()),
                content: Some(String::new()),
                ..Delta::default()
            },
            None,
        )
    }

    /// The chunk of one event; block boundaries and `toolcall_end` have none.
    pub fn event(&mut self, event: &Event) -> Option<Chunk> {
        let delta = match event {
            Event::TextDelta { delta } => Delta {
                content: Some(delta.clone()),
                ..Delta::default()
            },
            Event::ThinkingDelta { delta } => Delta {
                reasoning_content: Some(delta.clone()),
                ..Delta::default()
            },
            Event::ToolcallStart { index, id, name } => {
                self.streamed_calls += 1;
                tool_call_delta(ToolCallDelta {
                    index: *index,
                    id: Some(id.clone()),
                    kind: Some("function".to_owned()),
                    function: FunctionDelta {
                        name: Some(name.clone()),
                        arguments: String::new(),
                    },
                })
            }
            Event::ToolcallDelta { index, delta } => tool_call_delta(ToolCallDelta {
                index: *index,
                id: None,
                kind: None,
                function: FunctionDelta {
                    name: None,
                    arguments: delta.clone(),
                },
            }),
            Event::TextStart
            | Event::TextEnd
            | Event::ThinkingStart
            | Event::ThinkingEnd
            | Event::ToolcallEnd { .. } => return None,
        };
        Some(self.chunk(delta, None))
    }

    /// The closing chunks (once): any call the events did not start (whole), the refusal (the
    /// events carry none), the finish reason, then a usage-only chunk when the answer has usage.
    pub fn finish(&mut self, answer: &Answer) -> Vec<Chunk> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let mut chunks = Vec::new();
        for (index, call) in answer.calls.iter().enumerate().skip(self.streamed_calls) {
            chunks.push(self.chunk(
                tool_call_delta(ToolCallDelta {
                    index: index as u32,
                    id: Some(call.id.clone()),
                    kind: Some("function".to_owned()),
                    function: FunctionDelta {
                        name: Some(call.name.clone()),
                        arguments: call.arguments.clone(),
                    },
                }),
                None,
            ));
        }
        if let Some(refusal) = &answer.refusal {
            chunks.push(self.chunk(
                Delta {
                    refusal: Some(refusal.clone()),
                    ..Delta::default()
                },
                None,
            ));
        }
        chunks.push(self.chunk(Delta::default(), Some(answer.finish_reason.clone())));
        if let Some(usage) = &answer.usage {
            chunks.push(Chunk {
                choices: Vec::new(),
                usage: Some(usage.clone()),
                ..self.chunk(Delta::default(), None)
            });
        }
        chunks
    }
}

fn tool_call_delta(call: ToolCallDelta) -> Delta {
    Delta {
        tool_calls: Some(vec![call]),
        ..Delta::default()
    }
}

impl Chunk {
    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Completion {
    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Chat Completions' streaming renderer ([`RenderStream`]): each piece an unnamed `data:` event
/// holding a `chat.completion.chunk` ([`ChunkRenderer`]), a failure the provider reported inside
/// the stream its error body as one more `data:` event, and `data: [DONE]` at the end.
#[derive(Debug)]
pub struct StreamRenderer {
    chunks: ChunkRenderer,
}

impl StreamRenderer {
    /// A renderer for one answer; the chunks name the requested model, so the answer known
    /// before its stream changes nothing.
    pub fn new(identity: &Identity, _known: Option<&Answer>) -> StreamRenderer {
        StreamRenderer {
            chunks: ChunkRenderer::new(identity.clone()),
        }
    }
}

fn data(payload: &Value) -> StreamPiece {
    StreamPiece::Sse(format!("data: {payload}\n\n"))
}

impl RenderStream for StreamRenderer {
    fn start(&mut self) -> Vec<StreamPiece> {
        vec![data(&self.chunks.start().to_value())]
    }

    fn event(&mut self, event: &Event) -> Vec<StreamPiece> {
        self.chunks
            .event(event)
            .map(|chunk| data(&chunk.to_value()))
            .into_iter()
            .collect()
    }

    fn finish(&mut self, answer: &Answer) -> Vec<StreamPiece> {
        self.chunks
            .finish(answer)
            .iter()
            .map(|chunk| data(&chunk.to_value()))
            .collect()
    }

    fn fail(&mut self, _status: u16, _message: &str, body: &Value) -> Vec<StreamPiece> {
        vec![data(body)]
    }

    fn end(&mut self) -> Vec<StreamPiece> {
        vec![StreamPiece::Sse("data: [DONE]\n\n".to_owned())]
    }
}
