//! What a wire's request is read into: the conversation as the LangChain message dicts
//! (`{"type": "human" | "ai" | "tool", "content", "tool_calls", …}`) the harness's replay key
//! reads (`docs/replay-and-fixtures.md` §11, §11.1), so one fixture serves every wire with the
//! same key. Each wire reads its own request ([`Wire::conversation`](crate::Wire::conversation),
//! its module's `read_conversation`); this module holds what they share. "Canonical JSON" is
//! Python's `json.dumps(value, sort_keys=True, ensure_ascii=False)`
//! ([`to_python_json`](crate::pyjson::to_python_json)).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::pyjson::to_python_json;

/// A request body with no conversation under its wire's key
/// ([`Wire::conversation`](crate::Wire::conversation)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request body has no {what}")]
pub struct NoConversation {
    /// The key and what it must hold, e.g. `"messages" array`.
    pub what: &'static str,
}

/// Arguments as LangChain parses them: an object as it is, JSON text holding an object (blank
/// means `{}`); anything else is `None` (an invalid call, which the key ignores).
pub(crate) fn arguments(value: Option<&Value>) -> Option<Value> {
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

/// A string field's text (empty when absent or not a string).
pub(crate) fn text_of(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A `tool` message answering `call_id`, named after the call it answers when known.
pub(crate) fn tool_message(
    content: Value,
    call_id: &str,
    names: &HashMap<String, String>,
) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!("tool"));
    out.insert("content".into(), content);
    if let Some(name) = names.get(call_id) {
        out.insert("name".into(), json!(name));
    }
    out.insert("tool_call_id".into(), json!(call_id));
    Value::Object(out)
}

/// A value as a tool message's content: a string as it is, anything else its canonical JSON.
pub(crate) fn as_content(value: &Value) -> Value {
    match value {
        Value::String(text) => json!(text),
        other => json!(to_python_json(other)),
    }
}
