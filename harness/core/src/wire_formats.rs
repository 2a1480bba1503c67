//! The conversation of a request at the four wires besides Chat Completions
//! (`docs/replay-and-fixtures.md` §11.1), as the message dicts [`replay_key`](crate::replay_key)
//! reads, so that one fixture serves all five wires with the same key.
//!
//! - [`messages_from_anthropic`]: Anthropic's Messages API `messages` (the top-level `system` is
//!   not a message and is left out, as `system` messages are at Chat Completions). A `user`
//!   message's `tool_result` blocks are `tool` messages (in order, before the rest of its
//!   content), with the tool name recovered from the earlier `tool_use` block of the same id; its
//!   other blocks (text, images) are the human message's content. An `assistant` message's
//!   `tool_use` blocks are its tool calls (`input` is the arguments), its `text` blocks its
//!   content; `thinking` blocks are left out, as the AI message keeps reasoning outside its
//!   content.
//! - [`messages_from_responses`]: the Responses API's `input` (a string is one user message;
//!   `instructions` is not an input item). Message items by role (`system`/`developer` left out),
//!   their `input_text`/`output_text` parts the content; `function_call` items are tool calls of
//!   the assistant message they follow (a new, empty one when none does), `call_id` the id and
//!   `arguments` JSON text; `function_call_output` items are `tool` messages, the name recovered
//!   by `call_id`; `reasoning` items are left out.
//!
//! - [`messages_from_gemini`]: the Gemini API's `contents` (`systemInstruction` is not a
//!   content, and is left out). A `model` content's `text` parts are the AI message's content
//!   (`thought` parts left out), its `functionCall` parts its tool calls (`args` the arguments,
//!   the `id` when sent, else one numbered in order); a `user` content's `functionResponse`
//!   parts are `tool` messages, in order before the rest of its parts: the content is `X` when
//!   the `response` is `{"result": X}` or `{"output": X}` (what `google-genai`'s automatic
//!   function calling and LangChain send; a string as it is, any other value its canonical JSON),
//!   else the canonical JSON of the whole `response`; the name is the part's, and the call id
//!   its `id`, else that of the earliest unanswered call of that name. Either spelling of the
//!   fields (camelCase, snake_case) is read, as the API accepts both.
//! - [`messages_from_converse`]: Bedrock Converse's `messages` (`system` is not a message). An
//!   `assistant` message's `text` blocks are its content, its `toolUse` blocks its tool calls
//!   (`input` the arguments), `reasoningContent` left out; a `user` message's `toolResult`
//!   blocks are `tool` messages, in order before the rest: the content is the text of its `text`
//!   blocks, a `json` block's canonical JSON, the name recovered from the `toolUse` of the same
//!   id.
//!
//! - [`messages_from_ollama`]: Ollama's native `/api/chat` `messages` (`system` messages are
//!   left out). `user` is a human message (its `images` left out), `assistant` an AI message
//!   whose `tool_calls` (`{"function": {"name", "arguments"}}`, the arguments an object) are its
//!   calls, their `id` when sent (LangChain's `ChatOllama` sends its own) else one numbered in
//!   order, and whose `thinking` is left out; `tool` a tool message answering the call its
//!   `tool_call_id` names, else the earliest unanswered call named `tool_name`, else the earliest
//!   unanswered call.
//! - [`messages_from_ollama_prompt`]: Ollama's `/api/generate`, whose `prompt` is one human
//!   message (`system` is not a message).
//!
//! "Canonical JSON" is Python's `json.dumps(value, sort_keys=True, ensure_ascii=False)`
//! ([`to_python_json`]).
//!
//! None of these wires carries message names, so their keys are looked up with
//! [`ReplayEngine::lookup_at_wire_without_names`](crate::ReplayEngine::lookup_at_wire_without_names).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::pyjson::to_python_json;

/// Arguments as LangChain parses them: an object as it is, JSON text holding an object (blank
/// means `{}`); anything else is `None` (an invalid call, which the key ignores).
fn arguments(value: Option<&Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => Some(json!({})),
        Some(object @ Value::Object(_)) => Some(object.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Some(json!({})),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => Some(object),
            _ => None,
        },
        Some(_) => None,
    }
}

fn text_of(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn tool_message(content: Value, call_id: &str, names: &HashMap<String, String>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!("tool"));
    out.insert("content".into(), content);
    if let Some(name) = names.get(call_id) {
        out.insert("name".into(), json!(name));
    }
    out.insert("tool_call_id".into(), json!(call_id));
    Value::Object(out)
}

/// The message dicts of an Anthropic Messages request's `messages`. See the module
/// documentation for the rules.
pub fn messages_from_anthropic(messages: &[Value]) -> Vec<Value> {
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

/// The message dicts of a Responses request's `input`. See the module documentation for the
/// rules.
pub fn messages_from_responses(input: &Value) -> Vec<Value> {
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

/// A field in either of the spellings the Gemini API accepts (`functionCall`, `function_call`).
fn either<'a>(value: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    value.get(camel).or_else(|| value.get(snake))
}

/// A value as a tool message's content: a string as it is, anything else its canonical JSON.
fn as_content(value: &Value) -> Value {
    match value {
        Value::String(text) => json!(text),
        other => json!(to_python_json(other)),
    }
}

/// A Gemini `functionResponse`'s `response` as the tool message's content (see the module
/// documentation).
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

/// The message dicts of a Gemini request's `contents`. See the module documentation for the
/// rules.
pub fn messages_from_gemini(contents: &[Value]) -> Vec<Value> {
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

/// A Converse `toolResult`'s `content` as the tool message's content (see the module
/// documentation).
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

/// The message dicts of a Converse request's `messages`. See the module documentation for the
/// rules.
pub fn messages_from_converse(messages: &[Value]) -> Vec<Value> {
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

/// The message dicts of an Ollama `/api/chat` request's `messages`. See the module
/// documentation for the rules.
pub fn messages_from_ollama(messages: &[Value]) -> Vec<Value> {
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
pub fn messages_from_ollama_prompt(prompt: &str) -> Vec<Value> {
    vec![json!({"type": "human", "content": prompt})]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::replay_key;
    use crate::fixture::{Answer, Fixture, Turn};
    use crate::scenario::{Scenario, UiMode};
    use crate::{LookupError, ReplayEngine, messages_from_chat_completions, name_free_key};

    const ARGS: &str = r#"{"path": "/mnt/user-data/outputs/note.txt", "content": "hi"}"#;

    /// One conversation (system prompt, named user input, a tool call, its result, the answer)
    /// as each wire carries it.
    fn chat_completions(named: bool) -> Vec<Value> {
        let mut user = json!({"role": "user", "content": "write it"});
        if named {
            user["name"] = json!("user-input");
        }
        vec![
            json!({"role": "system", "content": "You are DeerFlow."}),
            user,
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "write_file", "arguments": ARGS}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "OK"}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    fn anthropic() -> Vec<Value> {
        let input: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "write it"}]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Hm.", "signature": "x"},
                {"type": "tool_use", "id": "call_1", "name": "write_file", "input": input}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "OK"}]}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    fn responses() -> Value {
        json!([
            {"role": "developer", "content": "You are DeerFlow."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write it"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_1", "name": "write_file", "arguments": ARGS},
            {"type": "function_call_output", "call_id": "call_1", "output": "OK"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
            {"role": "user", "content": "thanks"},
        ])
    }

    fn gemini() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "parts": [{"text": "write it"}]}),
            json!({"role": "model", "parts": [{"text": "Hm.", "thought": true},
                {"functionCall": {"name": "write_file", "args": args}, "thoughtSignature": "x"}]}),
            json!({"role": "user", "parts": [{"functionResponse": {"name": "write_file",
                "response": {"result": "OK"}}}]}),
            json!({"role": "model", "parts": [{"text": "Done."}]}),
            json!({"role": "user", "parts": [{"text": "thanks"}]}),
        ]
    }

    fn converse() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "content": [{"text": "write it"}]}),
            json!({"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Hm.", "signature": "x"}}},
                {"toolUse": {"toolUseId": "call_1", "name": "write_file", "input": args}}]}),
            json!({"role": "user", "content": [{"toolResult": {"toolUseId": "call_1",
                "content": [{"text": "OK"}]}}]}),
            json!({"role": "assistant", "content": [{"text": "Done."}]}),
            json!({"role": "user", "content": [{"text": "thanks"}]}),
        ]
    }

    /// As the `ollama` client sends it (no call ids, the result named by `tool_name`); LangChain's
    /// `ChatOllama` sends ids and `tool_call_id` instead, which the key does not read.
    fn ollama() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "system", "content": "You are DeerFlow."}),
            json!({"role": "user", "content": "write it", "images": []}),
            json!({"role": "assistant", "content": "", "thinking": "Hm.",
                "tool_calls": [{"function": {"name": "write_file", "arguments": args}}]}),
            json!({"role": "tool", "content": "OK", "tool_name": "write_file"}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    #[test]
    fn each_wire_gives_the_chat_completions_key_of_the_same_conversation() {
        let want = replay_key(
            "",
            &messages_from_chat_completions(&chat_completions(false)),
        );
        for (wire, messages) in [
            ("anthropic", messages_from_anthropic(&anthropic())),
            ("responses", messages_from_responses(&responses())),
            ("gemini", messages_from_gemini(&gemini())),
            ("converse", messages_from_converse(&converse())),
            ("ollama", messages_from_ollama(&ollama())),
        ] {
            let got = replay_key("", &messages);
            assert_eq!(got.canonical, want.canonical, "{wire}");
            assert_eq!(got.input_hash, want.input_hash, "{wire}");
        }
    }

    /// A tool result as each wire may carry it, and the tool message content it is.
    #[test]
    fn tool_results_are_their_text_or_their_canonical_json() {
        let gemini_cases = [
            (json!({"result": "OK"}), json!("OK")),
            (
                json!({"output": {"b": 1, "a": [true]}}),
                json!(r#"{"a": [true], "b": 1}"#),
            ),
            (
                json!({"status": "done", "n": 2}),
                json!(r#"{"n": 2, "status": "done"}"#),
            ),
            (json!({"result": 3}), json!("3")),
        ];
        for (response, want) in gemini_cases {
            let contents = [
                json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}},
                    {"functionCall": {"id": "c2", "name": "ls", "args": {}}}]}),
                json!({"role": "user", "parts": [
                    {"functionResponse": {"name": "ls", "response": response.clone()}},
                    {"function_response": {"id": "c2", "name": "ls", "response": response}}]}),
            ];
            let messages = messages_from_gemini(&contents);
            let ids: Vec<&Value> = messages[1..].iter().map(|m| &m["tool_call_id"]).collect();
            assert_eq!(ids, [&json!("gemini_call_1"), &json!("c2")]);
            assert_eq!(messages[1]["content"], want, "{contents:?}");
            assert_eq!(messages[2]["content"], want, "{contents:?}");
            assert_eq!(messages[1]["name"], "ls");
        }
        let converse_cases = [
            (json!([{"text": "a"}, {"text": "b"}]), json!("ab")),
            (
                json!([{"json": {"z": 1, "a": null}}]),
                json!(r#"{"a": null, "z": 1}"#),
            ),
        ];
        for (content, want) in converse_cases {
            let messages = messages_from_converse(&[
                json!({"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "ls", "input": {}}}]}),
                json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": content}}]}),
            ]);
            assert_eq!(messages[1]["content"], want);
            assert_eq!(messages[1]["name"], "ls");
        }
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let one = replay_key("", &[json!({"type": "human", "content": "hi"})]).input_hash;
        assert_eq!(
            replay_key("", &messages_from_responses(&json!("hi"))).input_hash,
            one
        );
        assert_eq!(
            replay_key("", &messages_from_ollama_prompt("hi")).input_hash,
            one
        );
    }

    /// An Ollama tool result names its call by `tool_call_id` (LangChain), by `tool_name` (the
    /// `ollama` client), or by neither (the earliest unanswered call).
    #[test]
    fn an_ollama_tool_result_answers_the_call_it_names() {
        let calls = json!({"role": "assistant", "tool_calls": [
            {"function": {"name": "ls", "arguments": {}}},
            {"id": "c2", "function": {"name": "cat", "arguments": {"path": "a"}}}]});
        let cases = [
            (
                json!({"role": "tool", "content": "x", "tool_call_id": "c2"}),
                "c2",
                "cat",
            ),
            (
                json!({"role": "tool", "content": "x", "tool_name": "cat"}),
                "c2",
                "cat",
            ),
            (
                json!({"role": "tool", "content": "x"}),
                "ollama_call_1",
                "ls",
            ),
        ];
        for (result, id, name) in cases {
            let messages = messages_from_ollama(&[calls.clone(), result.clone()]);
            assert_eq!(messages[1]["tool_call_id"], id, "{result}");
            assert_eq!(messages[1]["name"], name, "{result}");
        }
    }

    fn engine_recorded_with_names() -> ReplayEngine {
        let key = replay_key(
            "lead_agent",
            &messages_from_chat_completions(&chat_completions(true)),
        );
        let turn = Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            answer: Answer::Output(json!({"type": "ai", "data": {"content": "ok", "type": "ai"}})),
            canonical: Some(key.canonical),
        };
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            turns: vec![turn],
            provenance: None,
            exchanges: Vec::new(),
        };
        ReplayEngine::new(fixture, "fixtures/s.flash.json").expect("valid fixture")
    }

    #[test]
    fn a_turn_recorded_with_names_is_served_by_its_name_free_key_only_where_asked() {
        let engine = engine_recorded_with_names();
        let messages = messages_from_anthropic(&anthropic());
        // The named lookup misses: the recorded key has the input's name.
        assert!(matches!(
            engine.lookup_at_wire(None, &messages),
            Err(LookupError::Miss(_))
        ));
        for caller in [None, Some("lead_agent")] {
            let engine = engine_recorded_with_names();
            let served = engine.lookup_at_wire_without_names(caller, &messages);
            assert_eq!(served.map(|s| s.turn_index).ok(), Some(0), "{caller:?}");
        }
        // A different conversation still misses, and its name-free key is not the turn's.
        let mut other = anthropic();
        other[4] = json!({"role": "user", "content": "no thanks"});
        let other = messages_from_anthropic(&other);
        assert!(engine.lookup_at_wire_without_names(None, &other).is_err());
        assert_ne!(name_free_key(&other), name_free_key(&messages));
        assert_eq!(
            name_free_key(&messages),
            name_free_key(&messages_from_chat_completions(&chat_completions(true)))
        );
    }

    /// A miss at a wire without names is reported against the recorded turn as that wire sees
    /// it: the first difference is the drifted message, not the recorded input's `name` (which
    /// no such wire carries), and the nearest turn shares the messages before it.
    #[test]
    fn a_miss_without_names_reports_the_drift_not_the_missing_name() {
        let engine = engine_recorded_with_names();
        let mut drifted = anthropic();
        drifted[4] = json!({"role": "user", "content": "no thanks"});
        for caller in [None, Some("lead_agent")] {
            let Err(LookupError::Miss(miss)) =
                engine.lookup_at_wire_without_names(caller, &messages_from_anthropic(&drifted))
            else {
                panic!("{caller:?}: the drifted conversation must miss");
            };
            let nearest = miss.nearest.as_ref().expect("a nearest turn");
            let path = nearest.difference.as_ref().map(|d| d.path.as_str());
            assert_eq!(path, Some("[4].content"), "{caller:?}: {miss}");
            assert_eq!(nearest.common_prefix, Some(4), "{caller:?}");
        }
    }
}
