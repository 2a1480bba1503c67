//! The value-level golden: a fixture's final thread messages after the web client's flow,
//! normalised so that only what varies from run to run is replaced, committed as
//! `golden/<stem>.messages.snap` (`docs/golden-format.md` §9).
//!
//! Shapes guard the keys a client relies on; this guards the values below them that DeerFlow's
//! clients read (`token_usage_attribution`, `deerflow_tool_meta`, `deerflow_read_mark`, the
//! reminder's placement), which a key-only golden cannot see.

use serde_json::{Map, Value};

/// The suffix of a messages golden's stem: `golden/<fixture stem>.messages.snap`.
pub const MESSAGES_GOLDEN_SUFFIX: &str = ".messages";

/// The `__user` suffix of the visible copy of a user message.
const USER_COPY_SUFFIX: &str = "__user";

/// `additional_kwargs` values that change with every run or day, and what replaces them.
const VOLATILE_KWARGS: [(&str, &str); 3] = [
    ("run_id", "<run_id>"),
    ("timestamp", "<timestamp>"),
    ("reminder_date", "<date>"),
];

/// The messages golden document of a thread's final `values`: its `messages`, with each message
/// id replaced by its order of first appearance (`#1`, `#2`, …; a `<id>__user` copy becomes
/// `#<n>__user`, so the reminder taking the user message's id stays visible), the volatile
/// `additional_kwargs` of `VOLATILE_KWARGS` replaced, and the date in a reminder's content
/// replaced by `<date>`. Pretty-printed JSON, two-space indent.
pub fn messages_document(values: &Value) -> String {
    let mut ids: Vec<String> = Vec::new();
    let messages: Vec<Value> = values
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|message| normalise(message, &mut ids))
        .collect();
    serde_json::to_string_pretty(&Value::Array(messages)).unwrap_or_default()
}

fn normalise(message: &Value, ids: &mut Vec<String>) -> Value {
    let Some(object) = message.as_object() else {
        return message.clone();
    };
    let mut object: Map<String, Value> = object.clone();
    if let Some(Value::String(id)) = object.get("id") {
        let (base, suffix) = match id.strip_suffix(USER_COPY_SUFFIX) {
            Some(base) => (base.to_string(), USER_COPY_SUFFIX),
            None => (id.clone(), ""),
        };
        let index = ids
            .iter()
            .position(|seen| *seen == base)
            .unwrap_or_else(|| {
                ids.push(base);
                ids.len() - 1
            });
        object.insert(
            "id".into(),
            Value::String(format!("#{}{suffix}", index + 1)),
        );
    }
    if let Some(Value::Object(kwargs)) = object.get_mut("additional_kwargs") {
        for (key, replacement) in VOLATILE_KWARGS {
            if let Some(value) = kwargs.get_mut(key) {
                *value = Value::String(replacement.into());
            }
        }
    }
    if let Some(Value::String(content)) = object.get_mut("content") {
        *content = without_dates(content);
    }
    Value::Object(object)
}

/// `content` with the text of every `<current_date>…</current_date>` replaced by `<date>`.
fn without_dates(content: &str) -> String {
    const OPEN: &str = "<current_date>";
    const CLOSE: &str = "</current_date>";
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(start) = rest.find(OPEN) {
        let after = start + OPEN.len();
        let Some(end) = rest[after..].find(CLOSE) else {
            break;
        };
        out.push_str(&rest[..after]);
        out.push_str("<date>");
        rest = &rest[after + end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_ids_run_ids_timestamps_and_dates_are_replaced() {
        let values = json!({"messages": [
            {"id": "abc", "type": "system", "content": "<system-reminder>\n<current_date>2026-12-01, Tuesday</current_date>\n</system-reminder>",
             "additional_kwargs": {"reminder_date": "2026-12-01, Tuesday", "hide_from_ui": true}},
            {"id": "abc__user", "type": "human", "content": "hi",
             "additional_kwargs": {"run_id": "r-1", "timestamp": "2026-12-01T00:00:00+00:00"}},
            {"id": "lc_run--x", "type": "ai", "content": "done",
             "additional_kwargs": {"token_usage_attribution": {"shared_attribution": false}}},
        ]});
        let document: Value = serde_json::from_str(&messages_document(&values)).unwrap();
        assert_eq!(
            document,
            json!([
                {"id": "#1", "type": "system", "content": "<system-reminder>\n<current_date><date></current_date>\n</system-reminder>",
                 "additional_kwargs": {"reminder_date": "<date>", "hide_from_ui": true}},
                {"id": "#1__user", "type": "human", "content": "hi",
                 "additional_kwargs": {"run_id": "<run_id>", "timestamp": "<timestamp>"}},
                {"id": "#2", "type": "ai", "content": "done",
                 "additional_kwargs": {"token_usage_attribution": {"shared_attribution": false}}},
            ])
        );
    }
}
