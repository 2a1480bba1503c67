//! Reading a Chat Completions request: its `messages` back into the LangChain-style message
//! dicts the replay key reads ([`read_conversation`]; `crate::reading`), names included (only
//! this wire carries message names).
//!
//! The conversion, message by message:
//!
//! - `system` and `developer` messages are dropped, as the projection drops system messages (a
//!   gateway that merges the hidden date reminder into the system prompt loses it with the
//!   prompt; one that sends it as its own message gets a message that is empty once the reminder
//!   is removed, which the projection drops too);
//! - `user` → `human`, with its content (a string or content parts) and its `name`;
//! - `assistant` → `ai`, with `content or ""`, its `name`, and each tool call as its function name
//!   and its parsed JSON arguments. Arguments that do not parse to a JSON object leave the call
//!   out, as LangChain files it under `invalid_tool_calls`, which the key ignores; blank arguments
//!   mean `{}`;
//! - `tool` → `tool`, with its content and **the name of the tool call it answers**, recovered
//!   from the earlier assistant tool call with the same `tool_call_id`: the wire carries no tool
//!   name on tool messages, while the key includes it (a `name` the message does carry is the
//!   fallback);
//! - any other role is kept as it is (the projection reads `role` when there is no `type`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::reading::arguments;

/// The message dicts of a Chat Completions request's `messages`, as the replay key reads them.
/// See the module documentation for the rules.
pub fn read_conversation(messages: &[Value]) -> Vec<Value> {
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        let Some(fields) = message.as_object() else {
            continue;
        };
        let role = fields.get("role").and_then(Value::as_str).unwrap_or("");
        let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
        let mut out = Map::new();
        match role {
            "system" | "developer" => continue,
            "user" => {
                out.insert("type".into(), "human".into());
                out.insert("content".into(), field("content"));
                copy_name(fields, &mut out);
            }
            "assistant" => {
                let calls = tool_calls(fields.get("tool_calls"), &mut tool_names);
                out.insert("type".into(), "ai".into());
                out.insert(
                    "content".into(),
                    match field("content") {
                        Value::Null => Value::String(String::new()),
                        content => content,
                    },
                );
                copy_name(fields, &mut out);
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            "tool" => {
                let call_id = fields.get("tool_call_id").and_then(Value::as_str);
                out.insert("type".into(), "tool".into());
                out.insert("content".into(), field("content"));
                let recovered = call_id.and_then(|id| tool_names.get(id)).cloned();
                match recovered {
                    Some(name) => {
                        out.insert("name".into(), Value::String(name));
                    }
                    None => copy_name(fields, &mut out),
                }
                if let Some(id) = call_id {
                    out.insert("tool_call_id".into(), Value::String(id.to_owned()));
                }
            }
            _ => {
                converted.push(message.clone());
                continue;
            }
        }
        converted.push(Value::Object(out));
    }
    converted
}

fn copy_name(fields: &Map<String, Value>, out: &mut Map<String, Value>) {
    if let Some(name) = fields.get("name").filter(|name| !name.is_null()) {
        out.insert("name".into(), name.clone());
    }
}

/// `[{"name", "args", "id"}]` from an assistant message's wire tool calls, remembering each id's
/// function name for the tool messages that answer it.
fn tool_calls(calls: Option<&Value>, tool_names: &mut HashMap<String, String>) -> Vec<Value> {
    let Some(Value::Array(calls)) = calls else {
        return Vec::new();
    };
    let mut projected = Vec::with_capacity(calls.len());
    for call in calls {
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        if !id.is_empty() {
            tool_names.insert(id.to_owned(), name.to_owned());
        }
        let Some(args) = arguments(function.and_then(|f| f.get("arguments"))) else {
            continue;
        };
        let mut entry = Map::new();
        entry.insert("name".into(), Value::String(name.to_owned()));
        entry.insert("args".into(), args);
        entry.insert("id".into(), Value::String(id.to_owned()));
        projected.push(Value::Object(entry));
    }
    projected
}
