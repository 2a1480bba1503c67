//! Writing a Converse request from a [`conversation`](crate::conversation): the system prompts
//! are the `system` blocks; user messages are `user` messages of `text` blocks (a base64 `data:`
//! image an `image` block with its format and bytes; other blocks passed on as they are); an
//! assistant message is an `assistant` message (its signed reasoning as a `reasoningContent`
//! block first, which Bedrock asks back in a tool loop with extended thinking; then its text and
//! a `toolUse` block per call); a tool result is a `toolResult` block of one `text` block, in a
//! `user` message merged with the next user-side message, as Bedrock requires alternating
//! roles. Tools are `toolConfig.tools[].toolSpec` with the schema under `inputSchema.json`.
//!
//! The model id is in the path, not the body, and so is the choice to stream.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::conversation::{self, data_url, image_url};
use crate::pyjson::to_python_json;
use crate::reading::{arguments, as_content, text_of, tool_message};

/// A call the assistant made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUse {
    /// The call id.
    pub tool_use_id: String,
    /// The tool name.
    pub name: String,
    /// The arguments object.
    #[serde(default)]
    pub input: Value,
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResultContent {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// Blocks of another kind (`image`, `document`), kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The id of the call it answers.
    pub tool_use_id: String,
    /// The result.
    #[serde(default)]
    pub content: Vec<ToolResultContent>,
    /// `success` or `error`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Signed reasoning text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningText {
    /// The text.
    pub text: String,
    /// The provider's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// A reasoning block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningContent {
    /// The reasoning, when it is readable (not `redactedContent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_text: Option<ReasoningText>,
    /// Other members (`redactedContent`), kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One content block: exactly one member is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentBlock {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// An image (`{"format", "source": {"bytes"}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Value>,
    /// A call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use: Option<ToolUse>,
    /// A call's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_result: Option<ToolResult>,
    /// Reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<ReasoningContent>,
    /// Blocks of another kind (`document`, `cachePoint`, …), kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: &str) -> ContentBlock {
        ContentBlock {
            text: Some(text.to_owned()),
            ..ContentBlock::default()
        }
    }
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: String,
    /// Its blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
}

/// One `system` block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemBlock {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Blocks of another kind (`cachePoint`, `guardContent`), kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A tool's input schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSchema {
    /// The JSON schema.
    pub json: Value,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments' schema.
    pub input_schema: InputSchema,
}

/// One `toolConfig.tools` entry (`{"toolSpec": …}`; a `cachePoint` entry is kept as it is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    /// The tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_spec: Option<ToolSpec>,
    /// Other members, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The tools and the tool choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    /// The tools.
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
    /// Other members (`toolChoice`), kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The body of `converse` / `converse-stream`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConverseRequest {
    /// The conversation.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The system prompt's blocks, left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<SystemBlock>,
    /// The tools, left out when none are bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    /// Further keys (`inferenceConfig`, `additionalModelRequestFields`, …), written after the
    /// others.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConverseRequest {
    /// The request for `conversation` with `tools`; see the module documentation.
    pub fn new(
        conversation: &[conversation::Message],
        tools: &[conversation::Tool],
    ) -> ConverseRequest {
        let system = conversation
            .iter()
            .filter_map(|message| match message {
                conversation::Message::System { text } if !text.is_empty() => Some(SystemBlock {
                    text: Some(text.clone()),
                    other: Map::new(),
                }),
                _ => None,
            })
            .collect();
        let tools: Vec<ToolEntry> = tools
            .iter()
            .map(|tool| ToolEntry {
                tool_spec: Some(ToolSpec {
                    name: tool.name.clone(),
                    description: Some(tool.description.clone()).filter(|d| !d.is_empty()),
                    input_schema: InputSchema {
                        json: tool.parameters.clone(),
                    },
                }),
                other: Map::new(),
            })
            .collect();
        ConverseRequest {
            messages: messages(conversation),
            system,
            tool_config: (!tools.is_empty()).then(|| ToolConfig {
                tools,
                other: Map::new(),
            }),
            extra: Map::new(),
        }
    }

    /// The body as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn user_blocks(content: &Value) -> Vec<ContentBlock> {
    match content {
        Value::String(text) => vec![ContentBlock::text(text)],
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block {
                Value::String(text) => ContentBlock::text(text),
                Value::Object(fields) => match fields.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        ContentBlock::text(fields.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    Some("image_url") => match image_url(block).and_then(data_url) {
                        Some((media_type, data)) => ContentBlock {
                            image: Some(json!({
                                "format": media_type.strip_prefix("image/").unwrap_or(media_type),
                                "source": {"bytes": data}})),
                            ..ContentBlock::default()
                        },
                        None => passed(fields),
                    },
                    _ => passed(fields),
                },
                other => ContentBlock::text(&other.to_string()),
            })
            .collect(),
        Value::Null => vec![ContentBlock::text("")],
        other => vec![ContentBlock::text(&other.to_string())],
    }
}

fn passed(fields: &Map<String, Value>) -> ContentBlock {
    ContentBlock {
        other: fields.clone(),
        ..ContentBlock::default()
    }
}

fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

fn messages(conversation: &[conversation::Message]) -> Vec<Message> {
    use conversation::Message as M;
    let mut out: Vec<Message> = Vec::new();
    for message in conversation {
        let (role, content) = match message {
            M::System { .. } => continue,
            M::User { content } => ("user", user_blocks(content)),
            M::Tool { call_id, content } => (
                "user",
                vec![ContentBlock {
                    tool_result: Some(ToolResult {
                        tool_use_id: call_id.clone(),
                        content: vec![ToolResultContent {
                            text: Some(content.clone()),
                            ..ToolResultContent::default()
                        }],
                        status: None,
                    }),
                    ..ContentBlock::default()
                }],
            ),
            M::Assistant {
                text,
                calls,
                thinking,
            } => {
                let mut blocks = Vec::new();
                if let Some(thinking) = thinking {
                    blocks.push(ContentBlock {
                        reasoning_content: Some(ReasoningContent {
                            reasoning_text: Some(ReasoningText {
                                text: thinking.text.clone(),
                                signature: Some(thinking.signature.clone()),
                            }),
                            other: Map::new(),
                        }),
                        ..ContentBlock::default()
                    });
                }
                if !text.is_empty() {
                    blocks.push(ContentBlock::text(text));
                }
                for call in calls {
                    blocks.push(ContentBlock {
                        tool_use: Some(ToolUse {
                            tool_use_id: call.id.clone(),
                            name: call.name.clone(),
                            input: input(&call.arguments),
                        }),
                        ..ContentBlock::default()
                    });
                }
                if blocks.is_empty() {
                    // Bedrock refuses an empty content list and an empty text block alike.
                    blocks.push(ContentBlock::text(" "));
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(content),
            _ => out.push(Message {
                role: role.to_owned(),
                content,
            }),
        }
    }
    out
}

/// A Converse `toolResult`'s `content` as the tool message's content (see [`read_conversation`]).
fn converse_result(content: Option<&Value>) -> Value {
    match content {
        Some(Value::Array(blocks)) => json!(
            blocks
                .iter()
                .map(|block| match (block.get("text"), block.get("json")) {
                    (Some(Value::String(text)), _) => text.clone(),
                    (_, Some(value)) => to_python_json(value),
                    _ => to_python_json(block),
                })
                .collect::<String>()
        ),
        Some(other) => as_content(other),
        None => json!(""),
    }
}

/// Reads Bedrock Converse's `messages` (`system` is not a message). An
/// `assistant` message's `text` blocks are its content, its `toolUse` blocks its tool calls
/// (`input` the arguments), `reasoningContent` left out; a `user` message's `toolResult`
/// blocks are `tool` messages, in order before the rest: the content is the text of its `text`
/// blocks, a `json` block's canonical JSON, the name recovered from the `toolUse` of the same
/// id.
pub fn read_conversation(messages: &[Value]) -> Vec<Value> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        match role {
            "assistant" => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for block in &blocks {
                    if let Some(call) = block.get("toolUse") {
                        let id = text_of(call.get("toolUseId"));
                        let name = text_of(call.get("name"));
                        names.insert(id.clone(), name.clone());
                        if let Some(args) = arguments(call.get("input")) {
                            calls.push(json!({"name": name, "args": args, "id": id}));
                        }
                    } else if let Some(Value::String(piece)) = block.get("text") {
                        text.push_str(piece);
                    }
                }
                converted.push(json!({"type": "ai", "content": text, "tool_calls": calls}));
            }
            _ => {
                let mut rest = Vec::new();
                for block in blocks {
                    match block.get("toolResult") {
                        Some(result) => {
                            let id = text_of(result.get("toolUseId"));
                            converted.push(tool_message(
                                converse_result(result.get("content")),
                                &id,
                                &names,
                            ));
                        }
                        None => rest.push(match block.get("text") {
                            Some(text) => json!({"type": "text", "text": text}),
                            None => block.clone(),
                        }),
                    }
                }
                if !rest.is_empty() {
                    converted.push(json!({"type": "human", "content": rest}));
                }
            }
        }
    }
    converted
}
