//! Writing a Gemini request from a [`conversation`](crate::conversation): the conversation's
//! system prompts are the `systemInstruction`; user messages are `user` contents (text parts,
//! a base64 `data:` image an `inlineData` part, another image URL a `fileData` part, a block of
//! another kind passed on as it is); an assistant message is a `model` content (its text, then a
//! `functionCall` part per call, the first carrying the reasoning's signature as
//! `thoughtSignature`, which Gemini asks back in a tool loop; the reasoning text itself is not
//! sent back); a tool result is a `functionResponse` part `{"id", "name", "response": {"result":
//! <text>}}` (the shape `google-genai`'s automatic function calling sends), the name recovered
//! from the call it answers. Consecutive `user`-side contents are one content, as Gemini wants
//! the results of parallel calls together. Tools are `functionDeclarations` whose
//! `parametersJsonSchema` is the tool's JSON schema as it is.
//!
//! The types deserialise too, in either spelling the API accepts (camelCase, and the protobuf
//! field names in snake_case), so the same structs read a request.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::conversation::{self, Message, data_url, image_url};
use crate::reading::{arguments, as_content, text_of, tool_message};

/// A function call part's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The call id, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The arguments object.
    #[serde(default)]
    pub args: Value,
}

/// A function response part's payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    /// The id of the call it answers, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The result object.
    #[serde(default)]
    pub response: Value,
}

/// One part of a content.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// True when the text is reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// The provider's signature of the reasoning that led here.
    #[serde(
        default,
        alias = "thought_signature",
        skip_serializing_if = "Option::is_none"
    )]
    pub thought_signature: Option<String>,
    /// A call.
    #[serde(
        default,
        alias = "function_call",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_call: Option<FunctionCall>,
    /// A call's result.
    #[serde(
        default,
        alias = "function_response",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_response: Option<FunctionResponse>,
    /// Inline bytes (`{"mimeType", "data"}`).
    #[serde(
        default,
        alias = "inline_data",
        skip_serializing_if = "Option::is_none"
    )]
    pub inline_data: Option<Value>,
    /// A file by URI (`{"mimeType"?, "fileUri"}`).
    #[serde(default, alias = "file_data", skip_serializing_if = "Option::is_none")]
    pub file_data: Option<Value>,
    /// Fields of a part kind this codec does not read, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: &str) -> Part {
        Part {
            text: Some(text.to_owned()),
            ..Part::default()
        }
    }
}

/// One content: a role and its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// `user` or `model` (absent in a `systemInstruction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    /// The tool name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The JSON schema of its arguments.
    #[serde(
        default,
        alias = "parameters_json_schema",
        skip_serializing_if = "Option::is_none"
    )]
    pub parameters_json_schema: Option<Value>,
    /// The arguments in Gemini's OpenAPI subset (what older clients send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// One `tools` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The functions.
    #[serde(default, alias = "function_declarations")]
    pub function_declarations: Vec<FunctionDeclaration>,
}

/// The body of `generateContent` / `streamGenerateContent` (the model and the mode are in the
/// path, not the body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    /// The conversation.
    #[serde(default)]
    pub contents: Vec<Content>,
    /// The system prompt, when there is one.
    #[serde(
        default,
        alias = "system_instruction",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_instruction: Option<Content>,
    /// The tools, left out when none are bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Further keys (`generationConfig`, `toolConfig`, `safetySettings`, …), written after the
    /// others.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GenerateContentRequest {
    /// The request for `conversation` with `tools`; see the module documentation.
    pub fn new(conversation: &[Message], tools: &[conversation::Tool]) -> GenerateContentRequest {
        let system: Vec<&str> = conversation
            .iter()
            .filter_map(|message| match message {
                Message::System { text } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let declarations: Vec<FunctionDeclaration> = tools
            .iter()
            .map(|tool| FunctionDeclaration {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters_json_schema: Some(tool.parameters.clone()),
                parameters: None,
            })
            .collect();
        GenerateContentRequest {
            contents: contents(conversation),
            system_instruction: (!system.is_empty()).then(|| Content {
                role: None,
                parts: vec![Part::text(&system.join("\n\n"))],
            }),
            tools: if declarations.is_empty() {
                Vec::new()
            } else {
                vec![Tool {
                    function_declarations: declarations,
                }]
            },
            extra: Map::new(),
        }
    }

    /// The body as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn user_parts(content: &Value) -> Vec<Part> {
    match content {
        Value::String(text) => vec![Part::text(text)],
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block {
                Value::String(text) => Part::text(text),
                Value::Object(fields) => match fields.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        Part::text(fields.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    Some("image_url") => match image_url(block) {
                        Some(url) => match data_url(url) {
                            Some((mime, data)) => Part {
                                inline_data: Some(json!({"mimeType": mime, "data": data})),
                                ..Part::default()
                            },
                            None => Part {
                                file_data: Some(json!({"fileUri": url})),
                                ..Part::default()
                            },
                        },
                        None => passed(fields),
                    },
                    _ => passed(fields),
                },
                other => Part::text(&other.to_string()),
            })
            .collect(),
        Value::Null => vec![Part::text("")],
        other => vec![Part::text(&other.to_string())],
    }
}

/// A block of another kind, passed on for the provider to judge.
fn passed(fields: &Map<String, Value>) -> Part {
    Part {
        other: fields.clone(),
        ..Part::default()
    }
}

/// A call's arguments as Gemini's `args` object (`{}` for blank or unparsable text, which the
/// wire cannot carry).
fn args(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

fn contents(conversation: &[Message]) -> Vec<Content> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<Content> = Vec::new();
    for message in conversation {
        let (role, parts) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", user_parts(content)),
            Message::Tool { call_id, content } => (
                "user",
                vec![Part {
                    function_response: Some(FunctionResponse {
                        id: Some(call_id.clone()),
                        name: names
                            .get(call_id.as_str())
                            .copied()
                            .unwrap_or("")
                            .to_owned(),
                        response: json!({"result": content}),
                    }),
                    ..Part::default()
                }],
            ),
            Message::Assistant {
                text,
                calls,
                thinking,
            } => {
                let mut parts = Vec::new();
                if !text.is_empty() {
                    parts.push(Part::text(text));
                }
                for call in calls {
                    names.insert(&call.id, &call.name);
                    parts.push(Part {
                        function_call: Some(FunctionCall {
                            id: Some(call.id.clone()),
                            name: call.name.clone(),
                            args: args(&call.arguments),
                        }),
                        ..Part::default()
                    });
                }
                if let Some(thinking) = thinking {
                    let signed = parts
                        .iter()
                        .position(|part| part.function_call.is_some())
                        .unwrap_or(0);
                    if let Some(part) = parts.get_mut(signed) {
                        part.thought_signature = Some(thinking.signature.clone());
                    }
                }
                if parts.is_empty() {
                    parts.push(Part::text(""));
                }
                ("model", parts)
            }
        };
        match out.last_mut() {
            Some(last) if last.role.as_deref() == Some("user") && role == "user" => {
                last.parts.extend(parts);
            }
            _ => out.push(Content {
                role: Some(role.to_owned()),
                parts,
            }),
        }
    }
    out
}

/// A field in either of the spellings the Gemini API accepts (`functionCall`, `function_call`).
fn either<'a>(value: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    value.get(camel).or_else(|| value.get(snake))
}

/// A Gemini `functionResponse`'s `response` as the tool message's content (see [`read_conversation`]).
fn gemini_result(response: Option<&Value>) -> Value {
    match response {
        Some(Value::Object(fields)) if fields.len() == 1 => {
            match fields.get("result").or_else(|| fields.get("output")) {
                Some(inner) => as_content(inner),
                None => as_content(&Value::Object(fields.clone())),
            }
        }
        Some(other) => as_content(other),
        None => json!(""),
    }
}

/// Reads the Gemini API's `contents` (`systemInstruction` is not a
/// content, and is left out). A `model` content's `text` parts are the AI message's content
/// (`thought` parts left out), its `functionCall` parts its tool calls (`args` the arguments,
/// the `id` when sent, else one numbered in order); a `user` content's `functionResponse`
/// parts are `tool` messages, in order before the rest of its parts: the content is `X` when
/// the `response` is `{"result": X}` or `{"output": X}` (what `google-genai`'s automatic
/// function calling and LangChain send; a string as it is, any other value its canonical JSON),
/// else the canonical JSON of the whole `response`; the name is the part's, and the call id
/// its `id`, else that of the earliest unanswered call of that name. Either spelling of the
/// fields (camelCase, snake_case) is read, as the API accepts both.
pub fn read_conversation(contents: &[Value]) -> Vec<Value> {
    let mut names: HashMap<String, String> = HashMap::new();
    // Calls not answered yet, oldest first: (id, name).
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut next_id = 0usize;
    let mut converted = Vec::with_capacity(contents.len());
    for content in contents {
        let role = content
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if role == "model" {
            let mut text = String::new();
            let mut calls = Vec::new();
            for part in &parts {
                if let Some(call) = either(part, "functionCall", "function_call") {
                    let name = text_of(call.get("name"));
                    let id = match call.get("id").and_then(Value::as_str) {
                        Some(id) if !id.is_empty() => id.to_owned(),
                        _ => {
                            next_id += 1;
                            format!("gemini_call_{next_id}")
                        }
                    };
                    names.insert(id.clone(), name.clone());
                    open_calls.push((id.clone(), name.clone()));
                    if let Some(args) = arguments(call.get("args")) {
                        calls.push(json!({"name": name, "args": args, "id": id}));
                    }
                } else if part.get("thought").and_then(Value::as_bool) != Some(true) {
                    text.push_str(&text_of(part.get("text")));
                }
            }
            converted.push(json!({"type": "ai", "content": text, "tool_calls": calls}));
            continue;
        }
        let mut rest = Vec::new();
        for part in parts {
            let Some(response) = either(&part, "functionResponse", "function_response") else {
                rest.push(match part.get("text") {
                    Some(text) => json!({"type": "text", "text": text}),
                    None => part.clone(),
                });
                continue;
            };
            let name = text_of(response.get("name"));
            let id = match response.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => open_calls
                    .iter()
                    .find(|(_, called)| *called == name)
                    .map(|(id, _)| id.clone())
                    .unwrap_or_default(),
            };
            open_calls.retain(|(open, _)| *open != id);
            names.entry(id.clone()).or_insert(name);
            converted.push(tool_message(
                gemini_result(response.get("response")),
                &id,
                &names,
            ));
        }
        if !rest.is_empty() {
            converted.push(json!({"type": "human", "content": rest}));
        }
    }
    converted
}
