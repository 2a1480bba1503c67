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

use serde::Serialize;
use serde_json::{Map, Value};

use crate::conversation::{Message, Tool, image_url};

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
