//! Writing a request at the Messages wire (`POST {base}/v1/messages`) from a
//! [`conversation`](crate::conversation), as `langchain-anthropic`'s `ChatAnthropic` writes it:
//!
//! - `system` messages are the top-level `system` text (joined by blank lines), not messages;
//! - a user message is `{"role": "user", "content"}`: a string stays a string; blocks become
//!   `text` blocks, `image_url` blocks `image` blocks (a base64 `data:` URL as a `base64`
//!   source, any other URL as a `url` source); other blocks pass as they are;
//! - an assistant message's signed thinking is a `thinking` block first (the API requires it
//!   back in a tool loop with extended thinking), its text a `text` block (left out when empty)
//!   and each call a `tool_use` block whose `input` is the arguments object (`{}` when they are
//!   not one);
//! - a tool result is a `tool_result` block in a user message; consecutive user-side messages
//!   (results, then the next user input) are merged into one, as the API asks for alternating
//!   roles;
//! - tools are `{"name", "description", "input_schema"}`.
//!
//! Settings the caller passes (`temperature`, `thinking`, …) go into [`MessagesRequest::extra`].

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::conversation::{self, Message, Tool, data_url, image_url};
use crate::reading::{arguments, text_of, tool_message};

/// The role of a message at this wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user side (inputs and tool results).
    User,
    /// The model's side.
    Assistant,
}

/// A content block of a request message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Signed reasoning the model wrote earlier.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's signature.
        signature: String,
    },
    /// An image, with its `source` (`base64` or `url`).
    Image {
        /// The source object.
        source: Value,
    },
    /// A tool call the assistant made.
    ToolUse {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The arguments object.
        input: Value,
    },
    /// The result of a call.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result text.
        content: String,
    },
}

/// A message's content: a string, or blocks (typed, or passed on as the caller gave them).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Blocks.
    Blocks(Vec<BlockParam>),
}

/// One block: one this codec writes, or one passed on unchanged.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum BlockParam {
    /// A block this codec knows.
    Known(Block),
    /// A user block of another kind, passed on for the provider to judge.
    Passed(Value),
}

/// One request message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageParam {
    /// Its role.
    pub role: Role,
    /// Its content.
    pub content: Content,
}

/// A tool as this wire declares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolParam {
    /// The tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: Value,
}

/// The body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesRequest {
    /// The model id.
    pub model: String,
    /// The most tokens the answer may have (required by the API).
    pub max_tokens: u64,
    /// The system prompt, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<MessageParam>,
    /// The tools, left out when none are bound.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolParam>,
    /// Whether the answer streams; left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Further keys (sampling settings, `thinking`, …), written after the others.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MessagesRequest {
    /// The request for `conversation` with `tools`; see the module documentation.
    pub fn new(
        model: &str,
        max_tokens: u64,
        conversation: &[Message],
        tools: &[Tool],
        stream: bool,
    ) -> MessagesRequest {
        let system: Vec<&str> = conversation
            .iter()
            .filter_map(|message| match message {
                Message::System { text } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        MessagesRequest {
            model: model.to_owned(),
            max_tokens,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages: messages(conversation),
            tools: tools
                .iter()
                .map(|tool| ToolParam {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.parameters.clone(),
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

fn user_blocks(content: &Value) -> Vec<BlockParam> {
    let text = |text: &str| {
        BlockParam::Known(Block::Text {
            text: text.to_owned(),
        })
    };
    match content {
        Value::String(value) => vec![text(value)],
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block {
                Value::String(value) => text(value),
                Value::Object(fields) => match fields.get("type").and_then(Value::as_str) {
                    Some("text") => text(fields.get("text").and_then(Value::as_str).unwrap_or("")),
                    Some("image_url") => match image_url(block) {
                        Some(url) => BlockParam::Known(Block::Image {
                            source: match data_url(url) {
                                Some((media_type, data)) => json!({"type": "base64",
                                    "media_type": media_type, "data": data}),
                                None => json!({"type": "url", "url": url}),
                            },
                        }),
                        None => BlockParam::Passed(block.clone()),
                    },
                    _ => BlockParam::Passed(block.clone()),
                },
                other => text(&other.to_string()),
            })
            .collect(),
        Value::Null => vec![text("")],
        other => vec![text(&other.to_string())],
    }
}

fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

/// The conversation's messages (system prompts left out), consecutive user-side ones merged.
fn messages(conversation: &[conversation::Message]) -> Vec<MessageParam> {
    let mut out: Vec<MessageParam> = Vec::new();
    for message in conversation {
        let (role, content) = match message {
            Message::System { .. } => continue,
            Message::User { content } => match content {
                Value::String(text) => (Role::User, Content::Text(text.clone())),
                other => (Role::User, Content::Blocks(user_blocks(other))),
            },
            Message::Tool { call_id, content } => (
                Role::User,
                Content::Blocks(vec![BlockParam::Known(Block::ToolResult {
                    tool_use_id: call_id.clone(),
                    content: content.clone(),
                })]),
            ),
            Message::Assistant {
                text,
                calls,
                thinking,
            } => {
                let mut blocks = Vec::new();
                if let Some(thinking) = thinking {
                    blocks.push(BlockParam::Known(Block::Thinking {
                        thinking: thinking.text.clone(),
                        signature: thinking.signature.clone(),
                    }));
                }
                if !text.is_empty() {
                    blocks.push(BlockParam::Known(Block::Text { text: text.clone() }));
                }
                blocks.extend(calls.iter().map(|call| {
                    BlockParam::Known(Block::ToolUse {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input: input(&call.arguments),
                    })
                }));
                if blocks.is_empty() {
                    (Role::Assistant, Content::Text(String::new()))
                } else {
                    (Role::Assistant, Content::Blocks(blocks))
                }
            }
        };
        match out.last_mut() {
            Some(last) if last.role == Role::User && role == Role::User => {
                let mut merged = blocks_of(std::mem::replace(
                    &mut last.content,
                    Content::Blocks(Vec::new()),
                ));
                merged.extend(blocks_of(content));
                last.content = Content::Blocks(merged);
            }
            _ => out.push(MessageParam { role, content }),
        }
    }
    out
}

fn blocks_of(content: Content) -> Vec<BlockParam> {
    match content {
        Content::Text(text) => vec![BlockParam::Known(Block::Text { text })],
        Content::Blocks(blocks) => blocks,
    }
}

/// Reads Anthropic's Messages API `messages` (the top-level `system` is
/// not a message and is left out, as `system` messages are at Chat Completions). A `user`
/// message's `tool_result` blocks are `tool` messages (in order, before the rest of its
/// content), with the tool name recovered from the earlier `tool_use` block of the same id; its
/// other blocks (text, images) are the human message's content. An `assistant` message's
/// `tool_use` blocks are its tool calls (`input` is the arguments), its `text` blocks its
/// content; `thinking` blocks are left out, as the AI message keeps reasoning outside its
/// content.
pub fn read_conversation(messages: &[Value]) -> Vec<Value> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        let blocks = match &content {
            Value::Array(blocks) => Some(blocks.clone()),
            _ => None,
        };
        let kind = |block: &Value| text_of(block.get("type"));
        match role {
            "user" => {
                let Some(blocks) = blocks else {
                    converted.push(json!({"type": "human", "content": content}));
                    continue;
                };
                let mut rest = Vec::new();
                for block in blocks {
                    if kind(&block) == "tool_result" {
                        let id = text_of(block.get("tool_use_id"));
                        let result = block.get("content").cloned().unwrap_or(json!(""));
                        converted.push(tool_message(result, &id, &names));
                    } else {
                        rest.push(block);
                    }
                }
                if !rest.is_empty() {
                    converted.push(json!({"type": "human", "content": rest}));
                }
            }
            "assistant" => {
                let Some(blocks) = blocks else {
                    converted.push(json!({"type": "ai", "content": content, "tool_calls": []}));
                    continue;
                };
                let mut text = String::new();
                let mut calls = Vec::new();
                for block in blocks {
                    match kind(&block).as_str() {
                        "text" => text.push_str(&text_of(block.get("text"))),
                        "tool_use" => {
                            let id = text_of(block.get("id"));
                            let name = text_of(block.get("name"));
                            names.insert(id.clone(), name.clone());
                            if let Some(args) = arguments(block.get("input")) {
                                calls.push(json!({"name": name, "args": args, "id": id}));
                            }
                        }
                        _ => {}
                    }
                }
                converted.push(json!({"type": "ai", "content": text, "tool_calls": calls}));
            }
            _ => converted.push(message.clone()),
        }
    }
    converted
}
