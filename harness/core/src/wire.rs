//! Replay keys computed at the model's wire (`docs/replay-and-fixtures.md` §11): a gateway that
//! runs in another process, in any language, sends its model calls as OpenAI Chat Completions
//! requests, and the key is rebuilt from the request body alone.
//!
//! Two pieces, both pure JSON:
//!
//! - [`messages_from_chat_completions`] turns the body's `messages` back into the LangChain-style
//!   message dicts the canonical projection reads, so the key is computed by the same
//!   [`replay_key`](crate::replay_key) as in-process replay;
//! - [`name_free_key`] and the name-free entries, the key at a wire that carries no message names.
//!
//! It builds keys only: the lookups that use them (`ReplayEngine::lookup_at_wire`, which finds the
//! caller nothing on the wire names) live with the engine, in `replay`, so the engine depends on
//! this module and not the other way round.
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

use crate::canonical::{canonical_conversation, conversation_hash};
use crate::pyjson::to_python_json;

/// The message dicts of a Chat Completions request's `messages`, ready for
/// [`replay_key`](crate::replay_key). See the module documentation for the rules.
pub fn messages_from_chat_completions(messages: &[Value]) -> Vec<Value> {
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
        let Some(args) = parsed_arguments(function.and_then(|f| f.get("arguments"))) else {
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

/// A call's arguments as LangChain parses them: a JSON string holding an object (blank means
/// `{}`), or an object some servers send as it is. `None` for anything else (an invalid call).
fn parsed_arguments(arguments: Option<&Value>) -> Option<Value> {
    match arguments {
        None | Some(Value::Null) => Some(Value::Object(Map::new())),
        Some(object @ Value::Object(_)) => Some(object.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Some(Value::Object(Map::new())),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => Some(object),
            _ => None,
        },
        Some(_) => None,
    }
}

/// The entries of a canonical conversation text with the messages' names left out (a `tool`
/// entry keeps its name: it is the tool's, which every wire carries); `None` when the text is
/// not a JSON list.
pub(crate) fn name_free_entries(canonical: &str) -> Option<Vec<Value>> {
    let Ok(Value::Array(mut entries)) = serde_json::from_str::<Value>(canonical) else {
        return None;
    };
    for entry in &mut entries {
        if let Some(fields) = entry.as_object_mut()
            && fields.get("type").and_then(Value::as_str) != Some("tool")
        {
            fields.remove("name");
        }
    }
    Some(entries)
}

/// The name-free key of a conversation (`messages` as the key reads them): the hash of its
/// canonical entries with the messages' names left out, as a miss report names it.
pub fn name_free_key(messages: &[Value]) -> String {
    let entries = name_free_entries(&canonical_conversation(messages)).unwrap_or_default();
    conversation_hash(&to_python_json(&Value::Array(entries)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::replay_key;
    use serde_json::json;

    /// The prompt of `docs/replay-and-fixtures.md` §2.2.
    const PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

    /// The T2 call of §4.9 as a gateway sends it over the wire: system prompt (with the date
    /// reminder merged in), the wrapped input with its name, the assistant tool call with its
    /// arguments as a JSON string and `content: null`, and a tool message with no name.
    fn t2_wire() -> Vec<Value> {
        vec![
            json!({"role": "system", "content": "You are DeerFlow.\n<system-reminder>Current date: 2026-05-17</system-reminder>"}),
            json!({"role": "user", "name": "user-input", "content": format!("--- BEGIN USER INPUT ---\n{PROMPT}\n--- END USER INPUT ---")}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_Wr1teF1le", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"/mnt/user-data/outputs/note.txt\", \"description\": \"Create the requested output file with exact content\", \"content\": \"hi from replay.\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_Wr1teF1le", "content": "OK"}),
        ]
    }

    #[test]
    fn the_spec_vectors_hold_at_the_wire() {
        let cases = [
            (
                "T0",
                t2_wire()[..2].to_vec(),
                "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f",
            ),
            (
                "T2",
                t2_wire(),
                "f7468603a43d301fcc0167c2f7cd10e53137bfc584f1b3d776614b7a612ed7a6",
            ),
        ];
        for (name, wire, expected) in cases {
            let key = replay_key("", &messages_from_chat_completions(&wire));
            assert_eq!(key.input_hash, expected, "{name}");
        }
    }

    #[test]
    fn conversion_rules() {
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            (
                "the tool name comes from the call it answers, not from the message",
                vec![
                    json!({"role": "assistant", "content": "", "tool_calls": [
                        {"id": "a", "function": {"name": "ls", "arguments": "{}"}},
                        {"id": "b", "function": {"name": "read_file", "arguments": "{\"path\": \"/x\"}"}},
                    ]}),
                    json!({"role": "tool", "tool_call_id": "b", "content": "text", "name": "wrong"}),
                    json!({"role": "tool", "tool_call_id": "unknown", "content": "orphan", "name": "kept"}),
                ],
                r#"[{"content": "", "tool_calls": [{"args": {}, "name": "ls"}, {"args": {"path": "/x"}, "name": "read_file"}], "type": "ai"}, {"content": "text", "name": "read_file", "type": "tool"}, {"content": "orphan", "name": "kept", "type": "tool"}]"#,
            ),
            (
                "invalid arguments leave the call out; blank and object arguments are kept",
                vec![json!({"role": "assistant", "content": "x", "tool_calls": [
                    {"id": "a", "function": {"name": "bad", "arguments": "{\"path\": \"/a"}},
                    {"id": "b", "function": {"name": "list", "arguments": "[1]"}},
                    {"id": "c", "function": {"name": "blank", "arguments": " "}},
                    {"id": "d", "function": {"name": "object", "arguments": {"k": 1.0}}},
                ]})],
                r#"[{"content": "x", "tool_calls": [{"args": {}, "name": "blank"}, {"args": {"k": 1.0}, "name": "object"}], "type": "ai"}]"#,
            ),
            (
                "system and developer messages go; a user message that is only a reminder goes too",
                vec![
                    json!({"role": "developer", "content": "rules"}),
                    json!({"role": "user", "content": "<system-reminder>\n<current_date>2026-05-17</current_date>\n</system-reminder>"}),
                    json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
                ],
                r#"[{"content": "hi", "type": "human"}]"#,
            ),
            (
                "names are kept on user and assistant messages",
                vec![
                    json!({"role": "user", "content": "q", "name": "user-input"}),
                    json!({"role": "assistant", "content": "a", "name": "lead"}),
                ],
                r#"[{"content": "q", "name": "user-input", "type": "human"}, {"content": "a", "name": "lead", "type": "ai"}]"#,
            ),
            (
                "unknown roles and non-objects",
                vec![
                    json!("text"),
                    json!({"role": "function", "content": "f", "name": "fn"}),
                ],
                r#"[{"content": "f", "name": "fn", "type": "function"}]"#,
            ),
        ];
        for (name, wire, expected) in cases {
            assert_eq!(
                canonical_conversation(&messages_from_chat_completions(&wire)),
                expected,
                "{name}"
            );
        }
    }
}
