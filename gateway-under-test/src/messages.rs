//! Chat messages in LangChain's shape: the one message type that state, the model boundary, the
//! journal and the wire all share.
//!
//! A [`Message`] serialises ("dumps") to exactly the keys, in exactly the order, that
//! `docs/gateway-contract.md` §6.3 lists for its type, so a `values` frame carries the same objects
//! a DeerFlow frontend expects. Parsing accepts both the flat dump and the `{"type", "data"}` form
//! LangChain uses in fixtures.

use serde_json::{Map, Value, json};

/// LangChain's message type string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// `human`: the user's turn.
    Human,
    /// `ai`: the model's answer, possibly with tool calls.
    Ai,
    /// `tool`: a tool's result, answering one tool call.
    Tool,
    /// `system`: instructions or hidden framework context.
    System,
}

impl MessageType {
    /// The wire string (`human`, `ai`, `tool`, `system`).
    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Human => "human",
            MessageType::Ai => "ai",
            MessageType::Tool => "tool",
            MessageType::System => "system",
        }
    }

    /// Parses a LangChain type or an OpenAI-style role (`user`, `assistant`).
    pub fn parse(text: &str) -> Option<MessageType> {
        match text {
            "human" | "user" => Some(MessageType::Human),
            "ai" | "assistant" => Some(MessageType::Ai),
            "tool" => Some(MessageType::Tool),
            "system" | "developer" => Some(MessageType::System),
            _ => None,
        }
    }
}

/// One tool call requested by an AI message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub args: Value,
    /// The provider's call id (`call_…`), echoed by the tool message's `tool_call_id`.
    pub id: String,
}

impl ToolCall {
    /// `{"name", "args", "id", "type": "tool_call"}`.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "args": self.args, "id": self.id, "type": "tool_call"})
    }

    fn from_json(value: &Value) -> Result<ToolCall, String> {
        let object = value.as_object().ok_or("tool call must be an object")?;
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .ok_or("tool call has no string `name`")?
            .to_string();
        let args = match object.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(text)) => serde_json::from_str(text)
                .map_err(|err| format!("tool call `args` is not JSON: {err}"))?,
            Some(other) => other.clone(),
        };
        let id = object
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Ok(ToolCall { name, args, id })
    }
}

/// A chat message. Fields that do not apply to a type keep their defaults and are not dumped.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The message type.
    pub kind: MessageType,
    /// A string, or a list of content blocks.
    pub content: Value,
    /// Free-form extras (`hide_from_ui`, `run_id`, `token_usage_attribution`, …).
    pub additional_kwargs: Map<String, Value>,
    /// Provider metadata (`finish_reason`, `model_name`, …).
    pub response_metadata: Map<String, Value>,
    /// Optional name: `user-input` on the user's message, the tool name on tool messages.
    pub name: Option<String>,
    /// Message id; the state reducer assigns one when absent.
    pub id: Option<String>,
    /// AI only: requested tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// AI only: tool calls the provider sent but that could not be parsed.
    pub invalid_tool_calls: Vec<Value>,
    /// AI only: token usage, `null` when unknown.
    pub usage_metadata: Option<Value>,
    /// Tool only: the id of the call this message answers.
    pub tool_call_id: Option<String>,
    /// Tool only: a non-textual artifact (always `null` here).
    pub artifact: Value,
    /// Tool only: `success` or `error`.
    pub status: Option<String>,
}

impl Message {
    fn base(kind: MessageType, content: impl Into<Value>) -> Message {
        Message {
            kind,
            content: content.into(),
            additional_kwargs: Map::new(),
            response_metadata: Map::new(),
            name: None,
            id: None,
            tool_calls: Vec::new(),
            invalid_tool_calls: Vec::new(),
            usage_metadata: None,
            tool_call_id: None,
            artifact: Value::Null,
            status: None,
        }
    }

    /// A human message.
    pub fn human(content: impl Into<Value>) -> Message {
        Message::base(MessageType::Human, content)
    }

    /// A system message.
    pub fn system(content: impl Into<Value>) -> Message {
        Message::base(MessageType::System, content)
    }

    /// An AI message with optional tool calls.
    pub fn ai(content: impl Into<Value>, tool_calls: Vec<ToolCall>) -> Message {
        let mut message = Message::base(MessageType::Ai, content);
        message.tool_calls = tool_calls;
        message
    }

    /// A tool message answering `tool_call_id`, named after the tool.
    pub fn tool(
        content: impl Into<Value>,
        tool_name: &str,
        tool_call_id: &str,
        status: &str,
    ) -> Message {
        let mut message = Message::base(MessageType::Tool, content);
        message.name = Some(tool_name.to_string());
        message.tool_call_id = Some(tool_call_id.to_string());
        message.status = Some(status.to_string());
        message
    }

    /// The text of `content`: the string itself, or the concatenated `text` of its blocks.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    Value::String(text) => Some(text.as_str()),
                    Value::Object(object) => object.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }

    /// True when `additional_kwargs.hide_from_ui` is truthy.
    pub fn is_hidden(&self) -> bool {
        self.additional_kwargs
            .get("hide_from_ui")
            .is_some_and(is_truthy)
    }

    /// The message dump of `docs/gateway-contract.md` §6.3: the keys for its type, in order.
    pub fn to_dump(&self) -> Value {
        Value::Object(self.to_dump_map())
    }

    /// [`Message::to_dump`]'s object itself.
    pub fn to_dump_map(&self) -> Map<String, Value> {
        let mut dump = Map::new();
        dump.insert("content".into(), self.content.clone());
        dump.insert(
            "additional_kwargs".into(),
            Value::Object(self.additional_kwargs.clone()),
        );
        dump.insert(
            "response_metadata".into(),
            Value::Object(self.response_metadata.clone()),
        );
        dump.insert("type".into(), Value::String(self.kind.as_str().into()));
        dump.insert("name".into(), option_string(&self.name));
        dump.insert("id".into(), option_string(&self.id));
        match self.kind {
            MessageType::Ai => {
                dump.insert(
                    "tool_calls".into(),
                    Value::Array(self.tool_calls.iter().map(ToolCall::to_json).collect()),
                );
                dump.insert(
                    "invalid_tool_calls".into(),
                    Value::Array(self.invalid_tool_calls.clone()),
                );
                dump.insert(
                    "usage_metadata".into(),
                    self.usage_metadata.clone().unwrap_or(Value::Null),
                );
            }
            MessageType::Tool => {
                dump.insert("tool_call_id".into(), option_string(&self.tool_call_id));
                dump.insert("artifact".into(), self.artifact.clone());
                dump.insert(
                    "status".into(),
                    Value::String(self.status.clone().unwrap_or_else(|| "success".into())),
                );
            }
            MessageType::Human | MessageType::System => {}
        }
        dump
    }

    /// LangChain's serialised form used in fixtures: `{"type": <type>, "data": <dump>}`.
    pub fn to_typed_dump(&self) -> Value {
        json!({"type": self.kind.as_str(), "data": self.to_dump()})
    }

    /// Parses a message from a flat dump, the `{"type", "data"}` form, or an OpenAI-style
    /// `{"role", "content"}` object. The error says which field is wrong.
    pub fn from_json(value: &Value) -> Result<Message, String> {
        let object = value.as_object().ok_or("message must be a JSON object")?;
        if let (Some(Value::String(_)), Some(Value::Object(data))) =
            (object.get("type"), object.get("data"))
        {
            let mut flat = data.clone();
            if !flat.contains_key("type") {
                flat.insert("type".into(), object["type"].clone());
            }
            return Message::from_json(&Value::Object(flat));
        }
        let type_text = object
            .get("type")
            .or_else(|| object.get("role"))
            .and_then(Value::as_str)
            .ok_or("message needs a string `type` or `role`")?;
        let kind =
            MessageType::parse(type_text).ok_or_else(|| format!("unknown role '{type_text}'"))?;
        let content = match object.get("content") {
            None | Some(Value::Null) => Value::String(String::new()),
            Some(content @ (Value::String(_) | Value::Array(_))) => content.clone(),
            Some(_) => return Err("`content` must be a string or a list of content blocks".into()),
        };
        let mut message = Message::base(kind, content);
        message.additional_kwargs = object_field(object, "additional_kwargs")?;
        message.response_metadata = object_field(object, "response_metadata")?;
        message.name = string_field(object, "name")?;
        message.id = string_field(object, "id")?;
        if let Some(calls) = object.get("tool_calls").and_then(Value::as_array) {
            message.tool_calls = calls
                .iter()
                .map(ToolCall::from_json)
                .collect::<Result<_, _>>()?;
        }
        if let Some(invalid) = object.get("invalid_tool_calls").and_then(Value::as_array) {
            message.invalid_tool_calls = invalid.clone();
        }
        message.usage_metadata = object
            .get("usage_metadata")
            .filter(|v| !v.is_null())
            .cloned();
        message.tool_call_id = string_field(object, "tool_call_id")?;
        message.artifact = object.get("artifact").cloned().unwrap_or(Value::Null);
        message.status = string_field(object, "status")?;
        Ok(message)
    }
}

/// Python-style truthiness for JSON values.
pub fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

fn option_string(value: &Option<String>) -> Value {
    value.clone().map(Value::String).unwrap_or(Value::Null)
}

fn object_field(object: &Map<String, Value>, key: &str) -> Result<Map<String, Value>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(format!("`{key}` must be an object")),
    }
}

fn string_field(object: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_keys_in_the_contract_order_for_each_type() {
        let keys = |message: &Message| -> Vec<String> {
            message
                .to_dump()
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        let base = [
            "content",
            "additional_kwargs",
            "response_metadata",
            "type",
            "name",
            "id",
        ];
        assert_eq!(keys(&Message::human("hi")), base);
        assert_eq!(keys(&Message::system("hi")), base);
        let mut ai = base.to_vec();
        ai.extend(["tool_calls", "invalid_tool_calls", "usage_metadata"]);
        assert_eq!(keys(&Message::ai("", vec![])), ai);
        let mut tool = base.to_vec();
        tool.extend(["tool_call_id", "artifact", "status"]);
        assert_eq!(
            keys(&Message::tool("OK", "write_file", "call_1", "success")),
            tool
        );
    }

    #[test]
    fn parses_typed_dump_flat_dump_and_role_form_alike() {
        let typed = json!({"type": "ai", "data": {"content": "", "type": "ai", "id": "lc_run--1",
            "tool_calls": [{"name": "ls", "args": {"path": "/mnt"}, "id": "call_1", "type": "tool_call"}]}});
        let message = Message::from_json(&typed).unwrap();
        assert_eq!(message.kind, MessageType::Ai);
        assert_eq!(message.tool_calls[0].args, json!({"path": "/mnt"}));
        assert_eq!(Message::from_json(&message.to_dump()).unwrap(), message);
        let role = Message::from_json(&json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(role.kind, MessageType::Human);
        assert_eq!(role.text(), "hi");
    }

    #[test]
    fn rejects_bad_fields_with_their_name() {
        let err = Message::from_json(&json!({"role": "robot", "content": "x"})).unwrap_err();
        assert!(err.contains("robot"), "{err}");
        let err = Message::from_json(&json!({"role": "user", "content": 5})).unwrap_err();
        assert!(err.contains("content"), "{err}");
    }
}
