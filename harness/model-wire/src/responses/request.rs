//! Writing a request at the Responses wire (`POST {base}/responses`) from a
//! [`conversation`](crate::conversation), as LangChain's `ChatOpenAI(use_responses_api=True)`
//! writes it:
//!
//! - every message is an `input` item, `system` ones included (as `{"type": "message", "role":
//!   "system"}`, not `instructions`);
//! - a user message's content: a string stays a string; blocks become `input_text` parts,
//!   `image_url` blocks `input_image` parts; other blocks pass as they are;
//! - an assistant message is a `message` item with one `output_text` part (left out when its
//!   text is empty), then one `function_call` item per call (`call_id`, `name`, `arguments` as
//!   JSON text);
//! - a tool result is a `function_call_output` item;
//! - tools are `{"type": "function", "name", "description", "parameters"}`.
//!
//! Settings the caller passes (`temperature`, `max_output_tokens`, `reasoning`, …) go into
//! [`ResponsesRequest::extra`].

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::conversation::{Message, Tool, image_url};
use crate::reading::{arguments, text_of, tool_message};

/// The role of a `message` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A system prompt.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// A part of a `message` item's content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text the model reads.
    InputText {
        /// The text.
        text: String,
    },
    /// An image the model reads, by URL (a `data:` URL included).
    InputImage {
        /// The URL.
        image_url: String,
    },
    /// Text the model wrote earlier.
    OutputText {
        /// The text.
        text: String,
    },
}

/// One content part: one this codec writes, or one passed on unchanged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PartParam {
    /// A part this codec knows.
    Known(Part),
    /// A user block of another kind, passed on for the provider to judge.
    Passed(Value),
}

/// A `message` item's content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts.
    Parts(Vec<PartParam>),
}

/// One `input` item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    /// A message.
    Message {
        /// Its role.
        role: Role,
        /// Its content.
        content: Content,
    },
    /// A call the model made.
    FunctionCall {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments' JSON text.
        arguments: String,
    },
    /// The result of a call.
    FunctionCallOutput {
        /// The call it answers.
        call_id: String,
        /// The result text.
        output: String,
    },
}

/// A function tool as this wire declares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// The body of `POST /responses`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponsesRequest {
    /// The model id.
    pub model: String,
    /// The conversation.
    pub input: Vec<InputItem>,
    /// The tools, left out when none are bound.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<FunctionTool>,
    /// Whether the answer streams; left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Further keys (sampling settings, `reasoning`, …), written after the others.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResponsesRequest {
    /// The request for `conversation` with `tools`; see the module documentation.
    pub fn new(
        model: &str,
        conversation: &[Message],
        tools: &[Tool],
        stream: bool,
    ) -> ResponsesRequest {
        ResponsesRequest {
            model: model.to_owned(),
            input: conversation.iter().flat_map(items).collect(),
            tools: tools
                .iter()
                .map(|tool| FunctionTool {
                    kind: "function",
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
            stream,
            extra: Map::new(),
        }
    }

    /// The body as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn user_content(content: &Value) -> Content {
    let text = |text: &str| {
        PartParam::Known(Part::InputText {
            text: text.to_owned(),
        })
    };
    match content {
        Value::String(value) => Content::Text(value.clone()),
        Value::Array(blocks) => Content::Parts(
            blocks
                .iter()
                .map(|block| match block {
                    Value::String(value) => text(value),
                    Value::Object(fields) => match fields.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            text(fields.get("text").and_then(Value::as_str).unwrap_or(""))
                        }
                        Some("image_url") => match image_url(block) {
                            Some(url) => PartParam::Known(Part::InputImage {
                                image_url: url.to_owned(),
                            }),
                            None => PartParam::Passed(block.clone()),
                        },
                        _ => PartParam::Passed(block.clone()),
                    },
                    other => text(&other.to_string()),
                })
                .collect(),
        ),
        Value::Null => Content::Text(String::new()),
        other => Content::Text(other.to_string()),
    }
}

fn items(message: &Message) -> Vec<InputItem> {
    match message {
        Message::System { text } => vec![InputItem::Message {
            role: Role::System,
            content: Content::Text(text.clone()),
        }],
        Message::User { content } => vec![InputItem::Message {
            role: Role::User,
            content: user_content(content),
        }],
        Message::Tool { call_id, content } => vec![InputItem::FunctionCallOutput {
            call_id: call_id.clone(),
            output: content.clone(),
        }],
        // Reasoning is not sent back: this wire's reasoning items carry ids and encrypted
        // content that the AI message does not keep.
        Message::Assistant { text, calls, .. } => {
            let mut items = Vec::new();
            if !text.is_empty() || calls.is_empty() {
                items.push(InputItem::Message {
                    role: Role::Assistant,
                    content: Content::Parts(vec![PartParam::Known(Part::OutputText {
                        text: text.clone(),
                    })]),
                });
            }
            items.extend(calls.iter().map(|call| InputItem::FunctionCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }));
            items
        }
    }
}

/// The text of a Responses message item's `content`: a string, or its parts' `text`
/// concatenated.
fn responses_text(content: Option<&Value>) -> Value {
    match content {
        Some(Value::Array(parts)) => json!(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<String>()
        ),
        Some(Value::String(text)) => json!(text),
        _ => json!(""),
    }
}

/// Reads the Responses API's `input` (a string is one user message;
/// `instructions` is not an input item). Message items by role (`system`/`developer` left out),
/// their `input_text`/`output_text` parts the content; `function_call` items are tool calls of
/// the assistant message they follow (a new, empty one when none does), `call_id` the id and
/// `arguments` JSON text; `function_call_output` items are `tool` messages, the name recovered
/// by `call_id`; `reasoning` items are left out.
pub fn read_conversation(input: &Value) -> Vec<Value> {
    let items = match input {
        Value::String(text) => return vec![json!({"type": "human", "content": text})],
        Value::Array(items) => items,
        _ => return Vec::new(),
    };
    let mut names: HashMap<String, String> = HashMap::new();
    let mut converted: Vec<Value> = Vec::with_capacity(items.len());
    // Whether the last converted message is an assistant message that calls may join.
    let mut open_ai = false;
    for item in items {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                let content = responses_text(item.get("content"));
                open_ai = false;
                match role {
                    "system" | "developer" => {}
                    "user" => converted.push(json!({"type": "human", "content": content})),
                    "assistant" => {
                        converted.push(json!({"type": "ai", "content": content, "tool_calls": []}));
                        open_ai = true;
                    }
                    _ => converted.push(item.clone()),
                }
            }
            "function_call" => {
                let id = text_of(item.get("call_id"));
                let name = text_of(item.get("name"));
                names.insert(id.clone(), name.clone());
                if !open_ai {
                    converted.push(json!({"type": "ai", "content": "", "tool_calls": []}));
                    open_ai = true;
                }
                if let Some(args) = arguments(item.get("arguments"))
                    && let Some(Value::Array(calls)) = converted
                        .last_mut()
                        .and_then(|message| message.get_mut("tool_calls"))
                {
                    calls.push(json!({"name": name, "args": args, "id": id}));
                }
            }
            "function_call_output" => {
                open_ai = false;
                let id = text_of(item.get("call_id"));
                let output = item.get("output").cloned().unwrap_or(json!(""));
                converted.push(tool_message(output, &id, &names));
            }
            // `reasoning` items, and built-in tools' items.
            _ => {}
        }
    }
    converted
}
