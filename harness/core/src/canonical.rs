//! The replay key: canonical projection, conversation hash, caller identity and input hash
//! (`docs/replay-and-fixtures.md` §4.1 to §4.8).
//!
//! The recorder and the replay model must compute the key with the same code, so everything here
//! is a pure function of `serde_json::Value` messages (LangChain-style dicts) and strings; no
//! gateway type is involved. The result must equal DeerFlow's Python computation byte for byte,
//! because fixtures recorded by DeerFlow are looked up with it.
//!
//! Accepted message forms (each a JSON object):
//!
//! - flat: `{"type": "human" | "ai" | "tool" | "system", "content": ..., "name"?, "tool_calls"?,
//!   "additional_kwargs"?, "id"?, "tool_call_id"?}`; `role` may stand in for `type`, with the
//!   OpenAI spellings mapped (`user` → `human`, `assistant` → `ai`, `developer` → `system`);
//! - serialised: `{"type": ..., "data": {...}}` (LangChain's `message_to_dict`), recognised by an
//!   object `data` and no top-level `content`.
//!
//! Choices where DeerFlow's Python objects have no JSON counterpart (documented for porters):
//!
//! - a non-object message, or one with neither `type` nor `role`, is skipped (LangChain could not
//!   have built a message from it);
//! - missing or `null` content counts as `""` (OpenAI-style tool-call turns send `null`, and
//!   LangChain stores `""` for them, which is what DeerFlow hashed);
//! - a list element that is an object with a truthy non-string `text` contributes Python's
//!   `str()` of that `text`; any other non-object element contributes Python's `str()` of the
//!   element (`True`, `None`, `1.5`, `['a']`, see [`python_str`]);
//! - tool calls are read from `ai` and `AIMessageChunk` messages only; a missing `name` or `args`
//!   becomes `null` (Python's `dict.get`); `args` is kept as given, so a string stays a string.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::normalize::{normalize, python_strip};
use super::pyjson::{python_str, to_python_json};

/// The caller used when a call carries no caller information.
pub const DEFAULT_CALLER: &str = "lead_agent";

/// Caller aliases (§4.7): some execution paths lose the tag before the model call, so the run
/// name stands in for it.
const CALLER_ALIASES: &[(&str, &str)] = &[("title_agent", "middleware:title")];

/// The complete replay key of one model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayKey {
    /// The normalised caller identity (§4.7).
    pub caller: String,
    /// The normalised canonical conversation JSON text (§4.2 step 7).
    pub canonical: String,
    /// SHA-256 hex of `canonical` (§4.6); also the legacy lookup key (§5.3).
    pub conversation_hash: String,
    /// SHA-256 hex of the caller-plus-conversation object (§4.8); the lookup key.
    pub input_hash: String,
}

/// Computes the full replay key for a call by `caller` (raw; normalised here) that sends
/// `messages` (system prompt included or not: system messages are skipped either way).
pub fn replay_key(caller: &str, messages: &[Value]) -> ReplayKey {
    let caller = normalize_caller(caller);
    let canonical = canonical_conversation(messages);
    let conversation_hash = conversation_hash(&canonical);
    let input_hash = input_hash(&caller, &conversation_hash);
    ReplayKey {
        caller,
        canonical,
        conversation_hash,
        input_hash,
    }
}

/// The normalised canonical conversation text of §4.2: the projected entries serialised with
/// Python-compatible JSON, then normalised a second time as a whole.
pub(crate) fn canonical_conversation(messages: &[Value]) -> String {
    let entries: Vec<Value> = messages.iter().filter_map(canonical_entry).collect();
    // The second pass must see exactly the serialiser's bytes (§4.4, "Second pass").
    normalize(&to_python_json(&Value::Array(entries)))
}

/// SHA-256 of the canonical text's UTF-8 bytes, as 64 lowercase hex characters (§4.6).
pub(crate) fn conversation_hash(canonical: &str) -> String {
    sha256_hex(canonical)
}

/// The lookup key of §4.8: SHA-256 hex of
/// `{"caller": <normalised caller>, "conversation_hash": <hash>}` in Python-compatible JSON.
/// `caller` is normalised again here, as DeerFlow does.
pub(crate) fn input_hash(caller: &str, conversation_hash: &str) -> String {
    let mut preimage = Map::new();
    preimage.insert("caller".to_owned(), Value::String(normalize_caller(caller)));
    preimage.insert(
        "conversation_hash".to_owned(),
        Value::String(conversation_hash.to_owned()),
    );
    sha256_hex(&to_python_json(&Value::Object(preimage)))
}

/// Caller normalisation (§4.7 steps 3 and 4): strip Python whitespace, normalise, default an
/// empty result to `lead_agent`, then apply the alias table (`title_agent` → `middleware:title`).
pub fn normalize_caller(raw: &str) -> String {
    let normalized = normalize(python_strip(raw));
    if normalized.is_empty() {
        return DEFAULT_CALLER.to_owned();
    }
    match CALLER_ALIASES
        .iter()
        .find(|(alias, _)| *alias == normalized)
    {
        Some((_, canonical)) => (*canonical).to_owned(),
        None => normalized,
    }
}

/// The caller identity of a call from its tags and run name (§4.7): the first tag that is
/// exactly `lead_agent` or starts with `middleware:` or `subagent:` wins; otherwise the run name;
/// the result goes through [`normalize_caller`].
pub fn caller_identity(tags: &[String], run_name: Option<&str>) -> String {
    let tagged = tags.iter().find(|tag| {
        tag.as_str() == DEFAULT_CALLER
            || tag.starts_with("middleware:")
            || tag.starts_with("subagent:")
    });
    let raw = match tagged {
        Some(tag) => tag.as_str(),
        None => run_name.unwrap_or(""),
    };
    normalize_caller(raw)
}

/// Whether a call's tags or run name name its caller (§4.7): a caller tag, or a run name that is
/// not blank. A call with neither is `lead_agent` by default, and replay treats it as a call that
/// names no caller (`docs/replay-and-fixtures.md` §5.6).
pub fn names_caller(tags: &[String], run_name: Option<&str>) -> bool {
    tags.iter().any(|tag| {
        tag.as_str() == DEFAULT_CALLER
            || tag.starts_with("middleware:")
            || tag.starts_with("subagent:")
    }) || run_name.is_some_and(|name| !python_strip(name).is_empty())
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Python truthiness of a JSON value: `false`, `null`, zero, and empty strings, lists and
/// objects are falsy.
pub(crate) fn python_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// LangChain's type string for a message, and the object holding its fields.
fn message_view(message: &Value) -> Option<(String, &Map<String, Value>)> {
    let outer = message.as_object()?;
    // The serialised form `{"type", "data": {...}}`; a flat message never has `data` without
    // `content`.
    if let Some(data) = outer.get("data").and_then(Value::as_object)
        && !outer.contains_key("content")
    {
        let kind = outer
            .get("type")
            .and_then(Value::as_str)
            .or_else(|| data.get("type").and_then(Value::as_str))?;
        return Some((kind.to_owned(), data));
    }
    if let Some(kind) = outer.get("type").and_then(Value::as_str) {
        return Some((kind.to_owned(), outer));
    }
    let role = outer.get("role").and_then(Value::as_str)?;
    let kind = match role {
        "user" => "human",
        "assistant" => "ai",
        "developer" => "system",
        other => other,
    };
    Some((kind.to_owned(), outer))
}

/// One entry of the canonical list, or `None` when §4.2 skips or drops the message.
fn canonical_entry(message: &Value) -> Option<Value> {
    let (kind, fields) = message_view(message)?;
    if kind == "system" {
        return None;
    }
    let hidden = fields
        .get("additional_kwargs")
        .and_then(|kwargs| kwargs.get("hide_from_ui"))
        .is_some_and(python_truthy);
    if hidden {
        return None;
    }
    let content = normalize(&content_text(fields.get("content")));
    let tool_calls = if kind == "ai" || kind == "AIMessageChunk" {
        project_tool_calls(fields.get("tool_calls"))
    } else {
        Vec::new()
    };
    if python_strip(&content).is_empty() && tool_calls.is_empty() {
        return None;
    }

    // Key order is irrelevant: the serialiser sorts.
    let mut entry = Map::new();
    entry.insert("type".to_owned(), Value::String(kind));
    entry.insert("content".to_owned(), Value::String(content));
    if !tool_calls.is_empty() {
        entry.insert("tool_calls".to_owned(), Value::Array(tool_calls));
    }
    if let Some(name) = fields.get("name").and_then(Value::as_str)
        && !name.is_empty()
    {
        entry.insert("name".to_owned(), Value::String(name.to_owned()));
    }
    Some(Value::Object(entry))
}

/// `text(content)` of §4.2 step 3.
fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut text = String::new();
            for block in blocks {
                match block {
                    Value::Object(map) => match map.get("text") {
                        Some(Value::String(s)) if !s.is_empty() => text.push_str(s),
                        Some(t) if python_truthy(t) => text.push_str(&python_str(t)),
                        _ => text.push_str(&to_python_json(block)),
                    },
                    other => text.push_str(&python_str(other)),
                }
            }
            text
        }
        Some(other) => python_str(other),
    }
}

/// `[{"name", "args"}, ...]` from a message's `tool_calls` (ids and types are never hashed).
fn project_tool_calls(tool_calls: Option<&Value>) -> Vec<Value> {
    let Some(Value::Array(calls)) = tool_calls else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let field = |key: &str| call.get(key).cloned().unwrap_or(Value::Null);
            let mut projected = Map::new();
            projected.insert("name".to_owned(), field("name"));
            projected.insert("args".to_owned(), field("args"));
            Value::Object(projected)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The prompt of `docs/replay-and-fixtures.md` §2.2, verbatim (with its U+2014 EM DASH).
    const PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

    const T0_CANONICAL: &str = "[{\"content\": \"Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.\", \"name\": \"user-input\", \"type\": \"human\"}]";

    const T2_CANONICAL: &str = "[{\"content\": \"Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.\", \"name\": \"user-input\", \"type\": \"human\"}, {\"content\": \"\", \"tool_calls\": [{\"args\": {\"content\": \"hi from replay.\", \"description\": \"Create the requested output file with exact content\", \"path\": \"/mnt/user-data/outputs/note.txt\"}, \"name\": \"write_file\"}], \"type\": \"ai\"}, {\"content\": \"OK\", \"name\": \"write_file\", \"type\": \"tool\"}]";

    /// The messages the lead agent's model saw on its first call (system prompt included).
    fn t0_messages() -> Vec<Value> {
        vec![
            json!({"type": "system", "content": "You are DeerFlow, an agent. Today is 2026-05-17."}),
            json!({
                "type": "system",
                "content": "<system-reminder>Current date: 2026-05-17</system-reminder>",
                "additional_kwargs": {"hide_from_ui": true},
            }),
            json!({
                "type": "human",
                "content": format!("--- BEGIN USER INPUT ---\n{PROMPT}\n--- END USER INPUT ---"),
                "name": "user-input",
                "id": "5f0c1e2a-8d7b-4c3e-9f10-123456789abc",
                "additional_kwargs": {},
            }),
        ]
    }

    fn t2_messages() -> Vec<Value> {
        let mut messages = t0_messages();
        messages.push(json!({
            "type": "ai",
            "content": "",
            "tool_calls": [{
                "name": "write_file",
                "args": {
                    "path": "/mnt/user-data/outputs/note.txt",
                    "description": "Create the requested output file with exact content",
                    "content": "hi from replay.",
                },
                "id": "call_Wr1teF1le",
                "type": "tool_call",
            }],
            "id": "lc_run--0b0c8c9e-0000-4000-8000-000000000001",
            "response_metadata": {"finish_reason": "tool_calls"},
        }));
        messages.push(json!({
            "type": "tool",
            "content": "OK",
            "name": "write_file",
            "tool_call_id": "call_Wr1teF1le",
        }));
        messages
    }

    #[test]
    fn spec_vectors_t0_and_t2() {
        let cases = [
            (
                "T0",
                t0_messages(),
                T0_CANONICAL,
                361,
                363,
                "9c50eda6ab7e8593dabccbdeadc70a4a7bf778b2c0c3f275f1f96cf2c8ab58db",
                "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f",
            ),
            (
                "T2",
                t2_messages(),
                T2_CANONICAL,
                642,
                644,
                "6af134379b2a9efa01b4f63032f88211d5f38f459f8bed621eb6c65e8e05c1f9",
                "f7468603a43d301fcc0167c2f7cd10e53137bfc584f1b3d776614b7a612ed7a6",
            ),
        ];
        assert_eq!(PROMPT.chars().count(), 305);
        assert_eq!(PROMPT.len(), 307);
        for (name, messages, canonical, chars, bytes, conversation, input) in cases {
            let key = replay_key("", &messages);
            assert_eq!(key.canonical, canonical, "{name} canonical");
            assert_eq!(key.canonical.chars().count(), chars, "{name} characters");
            assert_eq!(key.canonical.len(), bytes, "{name} bytes");
            assert_eq!(
                key.conversation_hash, conversation,
                "{name} conversation hash"
            );
            assert_eq!(key.input_hash, input, "{name} input hash");
            assert_eq!(key.caller, "lead_agent", "{name} caller");
            assert_eq!(
                conversation_hash(canonical),
                conversation,
                "{name} direct hash"
            );
            assert_eq!(
                input_hash("lead_agent", conversation),
                input,
                "{name} direct key"
            );
            // The caller is normalised again inside input_hash.
            assert_eq!(
                input_hash("  lead_agent\n", conversation),
                input,
                "{name} re-normalised"
            );
        }
        let preimage = json!({
            "conversation_hash": "9c50eda6ab7e8593dabccbdeadc70a4a7bf778b2c0c3f275f1f96cf2c8ab58db",
            "caller": "lead_agent",
        });
        assert_eq!(
            to_python_json(&preimage),
            "{\"caller\": \"lead_agent\", \"conversation_hash\": \"9c50eda6ab7e8593dabccbdeadc70a4a7bf778b2c0c3f275f1f96cf2c8ab58db\"}"
        );
    }

    #[test]
    fn spec_vectors_also_hold_in_other_message_forms() {
        // The same T2 conversation as OpenAI-style roles and as LangChain's serialised form.
        let roles: Vec<Value> = vec![
            json!({"role": "system", "content": "prompt"}),
            json!({"role": "user", "content": format!("--- BEGIN USER INPUT ---\n{PROMPT}\n--- END USER INPUT ---"), "name": "user-input"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"name": "write_file", "args": {"content": "hi from replay.", "description": "Create the requested output file with exact content", "path": "/mnt/user-data/outputs/note.txt"}, "id": "c1"}]}),
            json!({"role": "tool", "content": "OK", "name": "write_file", "tool_call_id": "c1"}),
        ];
        assert_eq!(canonical_conversation(&roles), T2_CANONICAL);
        let typed: Vec<Value> = t2_messages()
            .into_iter()
            .map(|m| json!({"type": m["type"].clone(), "data": m}))
            .collect();
        assert_eq!(canonical_conversation(&typed), T2_CANONICAL);
    }

    #[test]
    fn projection_rules() {
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            (
                "list content: text blocks, a non-text object and a number",
                vec![json!({"type": "human", "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {"url": "u"}},
                    {"type": "text", "text": ""},
                    7, 1.5, true, null, "s", ["x"],
                ]})],
                r#"[{"content": "a{\"image_url\": {\"url\": \"u\"}, \"type\": \"image_url\"}{\"text\": \"\", \"type\": \"text\"}71.5TrueNones['x']", "type": "human"}]"#,
            ),
            (
                "hidden human message dropped",
                vec![
                    json!({"type": "human", "content": "secret", "additional_kwargs": {"hide_from_ui": true}}),
                    json!({"type": "human", "content": "shown", "additional_kwargs": {"hide_from_ui": 0}}),
                    json!({"type": "human", "content": "shown too", "additional_kwargs": {"hide_from_ui": ""}}),
                    json!({"type": "human", "content": "hidden by truthy string", "additional_kwargs": {"hide_from_ui": "yes"}}),
                ],
                r#"[{"content": "shown", "type": "human"}, {"content": "shown too", "type": "human"}]"#,
            ),
            (
                "empty ai dropped, ai with tool calls kept, whitespace-only dropped",
                vec![
                    json!({"type": "ai", "content": ""}),
                    json!({"type": "ai", "content": " \n\u{1c}"}),
                    json!({"type": "ai", "content": "", "tool_calls": []}),
                    json!({"type": "ai", "content": "", "tool_calls": [{"name": "ls", "args": {}, "id": "x", "type": "tool_call"}]}),
                    json!({"type": "tool", "content": "  ", "name": "ls"}),
                ],
                r#"[{"content": "", "tool_calls": [{"args": {}, "name": "ls"}], "type": "ai"}]"#,
            ),
            (
                "content keeps its surrounding whitespace once kept",
                vec![json!({"type": "ai", "content": " hi \n"})],
                r#"[{"content": " hi \n", "type": "ai"}]"#,
            ),
            (
                "name only when a non-empty string",
                vec![
                    json!({"type": "human", "content": "a", "name": ""}),
                    json!({"type": "human", "content": "b", "name": null}),
                    json!({"type": "human", "content": "c", "name": 5}),
                    json!({"type": "human", "content": "d", "name": "n"}),
                ],
                r#"[{"content": "a", "type": "human"}, {"content": "b", "type": "human"}, {"content": "c", "type": "human"}, {"content": "d", "name": "n", "type": "human"}]"#,
            ),
            (
                "role aliases; developer is a system message; type wins over role",
                vec![
                    json!({"role": "developer", "content": "skip"}),
                    json!({"role": "user", "content": "u"}),
                    json!({"role": "assistant", "content": "a"}),
                    json!({"role": "user", "type": "ai", "content": "t"}),
                ],
                r#"[{"content": "u", "type": "human"}, {"content": "a", "type": "ai"}, {"content": "t", "type": "ai"}]"#,
            ),
            (
                "typed data form, hidden flag inside data",
                vec![
                    json!({"type": "human", "data": {"content": "q", "type": "human", "name": "user-input", "id": null}}),
                    json!({"type": "system", "data": {"content": "sys"}}),
                    json!({"type": "human", "data": {"content": "h", "additional_kwargs": {"hide_from_ui": true}}}),
                ],
                r#"[{"content": "q", "name": "user-input", "type": "human"}]"#,
            ),
            (
                "second pass rewrites uuids, dates and paths inside args; string args stay strings",
                vec![
                    json!({"type": "ai", "content": "at 2026-01-01T00:00:00Z", "tool_calls": [
                        {"name": "write_file", "args": {"path": "/tmp/run-1/x.txt", "id": "123e4567-e89b-12d3-a456-426614174000", "when": "2026-05-17", "n": 1.0}},
                        {"name": "raw", "args": "{\"a\": 1}"},
                        {"args": {}},
                    ]}),
                ],
                r#"[{"content": "at <TS>", "tool_calls": [{"args": {"id": "<UUID>", "n": 1.0, "path": "<PATH>", "when": "<DATE>"}, "name": "write_file"}, {"args": "{\"a\": 1}", "name": "raw"}, {"args": {}, "name": null}], "type": "ai"}]"#,
            ),
            (
                "tool calls of non-ai messages are ignored",
                vec![
                    json!({"type": "human", "content": "", "tool_calls": [{"name": "x", "args": {}}]}),
                ],
                "[]",
            ),
            (
                "first pass strips the wrapper and reminders inside content",
                vec![
                    json!({"type": "human", "content": "<system-reminder>r</system-reminder>\n--- BEGIN USER INPUT ---\nhi\n--- END USER INPUT ---"}),
                ],
                r#"[{"content": "\nhi", "type": "human"}]"#,
            ),
            (
                "non-objects and untyped messages are skipped",
                vec![
                    json!("text"),
                    json!({"content": "no type"}),
                    json!({"type": "human", "content": 3}),
                ],
                r#"[{"content": "3", "type": "human"}]"#,
            ),
        ];
        for (name, messages, expected) in cases {
            assert_eq!(canonical_conversation(&messages), expected, "{name}");
        }
    }

    #[test]
    fn caller_identity_table() {
        let tags = |list: &[&str]| list.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        let cases: Vec<(&str, Vec<String>, Option<&str>, &str)> = vec![
            ("lead agent default", tags(&[]), None, "lead_agent"),
            (
                "lead agent tag",
                tags(&["x", "lead_agent"]),
                Some("other"),
                "lead_agent",
            ),
            (
                "title via tag",
                tags(&["nostream", "middleware:title"]),
                Some("title_agent"),
                "middleware:title",
            ),
            (
                "title via run-name alias",
                tags(&["nostream"]),
                Some("title_agent"),
                "middleware:title",
            ),
            (
                "suggestions",
                tags(&[]),
                Some("suggest_agent"),
                "suggest_agent",
            ),
            (
                "subagent tag wins over run name",
                tags(&["subagent:general"]),
                Some("suggest_agent"),
                "subagent:general",
            ),
            (
                "first matching tag wins",
                tags(&["subagent:a", "middleware:b"]),
                None,
                "subagent:a",
            ),
            (
                "tag must match exactly or by prefix",
                tags(&["lead_agent2", "xmiddleware:y"]),
                Some("run"),
                "run",
            ),
            ("whitespace run name", tags(&[]), Some("  \n"), "lead_agent"),
            ("empty run name", tags(&[]), Some(""), "lead_agent"),
            (
                "run name is stripped",
                tags(&[]),
                Some("  suggest_agent \t"),
                "suggest_agent",
            ),
            (
                "run name is normalised",
                tags(&[]),
                Some("job-2026-01-01"),
                "job-<DATE>",
            ),
        ];
        for (name, tag_list, run_name, expected) in cases {
            assert_eq!(caller_identity(&tag_list, run_name), expected, "{name}");
        }
        assert_eq!(normalize_caller(" title_agent "), "middleware:title");
        assert_eq!(normalize_caller("\u{1c}"), "lead_agent");
        assert_eq!(normalize_caller("middleware:title"), "middleware:title");
    }

    #[test]
    fn caller_changes_the_input_hash_but_not_the_conversation_hash() {
        let messages = t0_messages();
        let lead = replay_key("lead_agent", &messages);
        let title = replay_key("title_agent", &messages);
        assert_eq!(title.caller, "middleware:title");
        assert_eq!(lead.conversation_hash, title.conversation_hash);
        assert_ne!(lead.input_hash, title.input_hash);
        assert_eq!(
            title.input_hash,
            input_hash("middleware:title", &title.conversation_hash)
        );
    }

    #[test]
    fn truthiness() {
        let cases = [
            (json!(null), false),
            (json!(false), false),
            (json!(0), false),
            (json!(0.0), false),
            (json!(""), false),
            (json!([]), false),
            (json!({}), false),
            (json!(true), true),
            (json!(-1), true),
            (json!("0"), true),
            (json!([0]), true),
            (json!({"a": null}), true),
        ];
        for (value, expected) in cases {
            assert_eq!(python_truthy(&value), expected, "{value}");
        }
    }
}
