//! What an Ollama request sends, read into the conversation the replay key reads
//! ([`Wire::conversation`](crate::Wire::conversation)):
//!
//! - [`read_conversation`]: `/api/chat`'s `messages` (`system` messages are left out). `user`
//!   is a human message (its `images` left out), `assistant` an AI message whose `tool_calls`
//!   (`{"function": {"name", "arguments"}}`, the arguments an object) are its calls, their `id`
//!   when sent (LangChain's `ChatOllama` sends its own) else one numbered in order, and whose
//!   `thinking` is left out; `tool` a tool message answering the call its `tool_call_id` names,
//!   else the earliest unanswered call named `tool_name` (the `ollama` client), else the
//!   earliest unanswered call.
//! - [`read_prompt`]: `/api/generate`, whose `prompt` is one human message (`system` is not a
//!   message).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::reading::{arguments, text_of, tool_message};

/// The message dicts of an Ollama `/api/chat` request's `messages`. See the module
/// documentation for the rules.
pub fn read_conversation(messages: &[Value]) -> Vec<Value> {
    let mut names: HashMap<String, String> = HashMap::new();
    // Calls not answered yet, oldest first: (id, name).
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut next_id = 0usize;
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let content = match message.get("content") {
            None | Some(Value::Null) => json!(""),
            Some(content) => content.clone(),
        };
        match role {
            "system" | "developer" => {}
            "assistant" => {
                let mut calls = Vec::new();
                let sent = message.get("tool_calls").and_then(Value::as_array);
                for call in sent.into_iter().flatten() {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    let name = text_of(function.get("name"));
                    let id = match call.get("id").and_then(Value::as_str) {
                        Some(id) if !id.is_empty() => id.to_owned(),
                        _ => {
                            next_id += 1;
                            format!("ollama_call_{next_id}")
                        }
                    };
                    names.insert(id.clone(), name.clone());
                    open_calls.push((id.clone(), name.clone()));
                    if let Some(args) = arguments(function.get("arguments")) {
                        calls.push(json!({"name": name, "args": args, "id": id}));
                    }
                }
                converted.push(json!({"type": "ai", "content": content, "tool_calls": calls}));
            }
            "tool" => {
                let named = text_of(message.get("tool_name"));
                let id = match message.get("tool_call_id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => open_calls
                        .iter()
                        .find(|(_, called)| named.is_empty() || *called == named)
                        .map(|(id, _)| id.clone())
                        .unwrap_or_default(),
                };
                open_calls.retain(|(open, _)| *open != id);
                if !named.is_empty() {
                    names.entry(id.clone()).or_insert(named);
                }
                converted.push(tool_message(content, &id, &names));
            }
            _ => converted.push(json!({"type": "human", "content": content})),
        }
    }
    converted
}

/// The message dicts of an Ollama `/api/generate` request: its `prompt`, one human message.
pub fn read_prompt(prompt: &str) -> Vec<Value> {
    vec![json!({"type": "human", "content": prompt})]
}
