//! The metadata stamped on every tool message (`docs/gateway-contract.md` §6.4):
//! `additional_kwargs.deerflow_tool_meta`, which says whether the call succeeded and what the
//! model should do next, derived from the tool's text as DeerFlow derives it, and the
//! `deerflow_read_mark` of a `read_file` result.
//!
//! The tools here never raise: a failure is their text (`Error: …`), so the meta's `source` is
//! `tool_return` for errors and `content_analysis` otherwise, never `exception`.

use serde_json::{Map, Value, json};

use crate::messages::Message;

/// The `additional_kwargs` key of the tool metadata.
pub const TOOL_META_KEY: &str = "deerflow_tool_meta";

/// The `additional_kwargs` key of a `read_file` result's read mark.
pub const READ_MARK_KEY: &str = "deerflow_read_mark";

/// What a tool call returns: the text the model reads and the `additional_kwargs` its message
/// carries (the read mark of `read_file`; empty for most tools).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// The tool message's content.
    pub text: String,
    /// Extra `additional_kwargs` of the tool message.
    pub additional_kwargs: Map<String, Value>,
}

impl ToolOutput {
    /// Text only.
    pub fn text(text: String) -> ToolOutput {
        ToolOutput {
            text,
            additional_kwargs: Map::new(),
        }
    }
}

/// The tool message answering call `tool_call_id` of `tool_name`, with its `status`, the
/// output's `additional_kwargs` and its `deerflow_tool_meta` (a stamp already in the output's
/// `additional_kwargs` is kept).
pub fn tool_message(
    output: ToolOutput,
    tool_name: &str,
    tool_call_id: &str,
    status: &str,
) -> Message {
    let meta = tool_meta(&output.text, status == "error");
    let mut message = Message::tool(output.text, tool_name, tool_call_id, status);
    message.additional_kwargs.extend(output.additional_kwargs);
    message
        .additional_kwargs
        .entry(TOOL_META_KEY)
        .or_insert(meta);
    message
}

/// The `deerflow_tool_meta` of a tool's `text`; `failed` when the message's status is `error`.
/// First match wins: a failure without the `Error:` prefix, an `Error:` text, a JSON object with
/// a real `error` field, text that admits partial results, else success.
pub fn tool_meta(text: &str, failed: bool) -> Value {
    if let Some(rest) = text.strip_prefix("Error:") {
        return error_meta(classify(rest), "tool_return");
    }
    let object = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| value.as_object().cloned());
    let json_error = object.as_ref().and_then(json_error_text);
    if failed {
        let class = match (&object, &json_error) {
            (_, Some(error)) => classify(error),
            (Some(_), None) => UNKNOWN,
            (None, None) => classify(text),
        };
        return error_meta(class, "tool_return");
    }
    if let Some(error) = json_error {
        return error_meta(classify(&error), "tool_return");
    }
    let lower = text.to_lowercase();
    if PARTIAL_MARKERS.iter().any(|marker| lower.contains(marker)) {
        return json!({
            "status": "partial_success", "error_type": null, "recoverable_by_model": true,
            "recommended_next_action": "rewrite_query", "source": "content_analysis",
        });
    }
    json!({
        "status": "success", "error_type": null, "recoverable_by_model": true,
        "recommended_next_action": "continue", "source": "content_analysis",
    })
}

/// Text that says a result is incomplete (matched lower-cased).
const PARTIAL_MARKERS: [&str; 7] = [
    "partial results",
    "limited results",
    "truncated",
    "results may be incomplete",
    "no results found",
    "no content found",
    "no images found",
];

/// Words in an `error` field that mean "no error".
const NO_ERROR_WORDS: [&str; 8] = ["", "none", "null", "false", "no", "ok", "success", "n/a"];

/// The text of a JSON object's `error` field when it reports a real error: truthy and not a
/// "no error" word.
fn json_error_text(object: &Map<String, Value>) -> Option<String> {
    let text = match object.get("error")? {
        Value::Null | Value::Bool(false) => return None,
        Value::String(text) => text.clone(),
        Value::Number(number) if number.as_f64() == Some(0.0) => return None,
        Value::Array(items) if items.is_empty() => return None,
        Value::Object(fields) if fields.is_empty() => return None,
        other => other.to_string(),
    };
    (!NO_ERROR_WORDS.contains(&text.trim().to_lowercase().as_str())).then_some(text)
}

/// An error class: `error_type`, `recoverable_by_model`, `recommended_next_action`.
type ErrorClass = (&'static str, bool, &'static str);

const UNKNOWN: ErrorClass = ("unknown", true, "try_alternative");

/// The classification table: the first row with a keyword in the text wins.
const CLASSES: [(&[&str], ErrorClass); 8] = [
    (
        &[
            "401",
            "403",
            "unauthorized",
            "authentication",
            "invalid api key",
        ],
        ("auth", false, "stop"),
    ),
    (
        &["rate limit", "rate limited", "rate_limit"],
        ("rate_limited", false, "summarize"),
    ),
    (
        &[
            "timeout",
            "timed out",
            "connection",
            "network error",
            "temporarily unavailable",
        ],
        ("transient", false, "try_alternative"),
    ),
    (
        &[
            "not configured",
            "not installed",
            "missing required",
            "disabled",
            "no api key",
        ],
        ("config", false, "stop"),
    ),
    (
        &[
            "permission denied",
            "access denied",
            "path traversal",
            "forbidden",
        ],
        ("permission", true, "try_alternative"),
    ),
    (
        &[
            "no results found",
            "no content found",
            "no images found",
            "no results",
        ],
        ("no_results", true, "rewrite_query"),
    ),
    (
        &["not found", "no such file", "does not exist", "404"],
        ("not_found", true, "rewrite_query"),
    ),
    (
        &["unexpected error", "internal error", "500"],
        ("internal", false, "stop"),
    ),
];

/// The class of an error text, lower-cased; a keyword of digits matches as a whole word only.
fn classify(text: &str) -> ErrorClass {
    let lower = text.to_lowercase();
    CLASSES
        .iter()
        .find(|(keywords, _)| keywords.iter().any(|keyword| occurs(&lower, keyword)))
        .map_or(UNKNOWN, |(_, class)| *class)
}

/// Whether `keyword` occurs in `text`; a keyword of digits only as a whole word (`401` in
/// `HTTP 401`, not in `14012`).
fn occurs(text: &str, keyword: &str) -> bool {
    if !keyword.bytes().all(|b| b.is_ascii_digit()) {
        return text.contains(keyword);
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(keyword).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + keyword.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

fn error_meta((error_type, recoverable, next): ErrorClass, source: &str) -> Value {
    json!({
        "status": "error", "error_type": error_type, "recoverable_by_model": recoverable,
        "recommended_next_action": next, "source": source,
    })
}

/// The read mark of a `read_file` of `virtual_path` whose file's bytes hash to `version`
/// (lowercase hex SHA-256): `{"path": <the path, normalised>, "hash": <version>}`.
pub fn read_mark(virtual_path: &str, version: &str) -> Value {
    json!({"path": normalize_path(virtual_path), "hash": version})
}

/// POSIX `normpath` for the absolute paths a successful read accepts (no `..`): repeated
/// slashes and `.` segments dropped, no trailing slash.
fn normalize_path(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .filter(|segment| !segment.is_empty() && *segment != ".")
        .collect();
    format!("/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, status is error) → (status, error_type, recommended_next_action, source).
    #[test]
    fn tool_meta_classifies_as_deerflow_does() {
        let table: [(&str, bool, [&str; 4]); 12] = [
            ("OK", false, ["success", "", "continue", "content_analysis"]),
            (
                "hi from replay.",
                false,
                ["success", "", "continue", "content_analysis"],
            ),
            (
                "Error: Permission denied reading file: /etc/passwd",
                false,
                ["error", "permission", "try_alternative", "tool_return"],
            ),
            (
                "Error: File not found: /mnt/user-data/outputs/x",
                true,
                ["error", "not_found", "rewrite_query", "tool_return"],
            ),
            (
                "Error: read_file is not a valid tool, try one of the available tools.",
                true,
                ["error", "unknown", "try_alternative", "tool_return"],
            ),
            (
                "Error: HTTP 401",
                true,
                ["error", "auth", "stop", "tool_return"],
            ),
            (
                "Error: id 14012",
                true,
                ["error", "unknown", "try_alternative", "tool_return"],
            ),
            (
                "abc\n... [truncated: showing first 3 of 9 chars. x] ...",
                false,
                ["partial_success", "", "rewrite_query", "content_analysis"],
            ),
            (
                r#"{"error": "connection reset"}"#,
                false,
                ["error", "transient", "try_alternative", "tool_return"],
            ),
            (
                r#"{"error": "none"}"#,
                false,
                ["success", "", "continue", "content_analysis"],
            ),
            (
                r#"{"result": 1}"#,
                true,
                ["error", "unknown", "try_alternative", "tool_return"],
            ),
            (
                "the call timed out",
                true,
                ["error", "transient", "try_alternative", "tool_return"],
            ),
        ];
        for (text, failed, [status, error_type, next, source]) in table {
            let meta = tool_meta(text, failed);
            let error_type = (!error_type.is_empty()).then_some(error_type);
            assert_eq!(
                (
                    meta["status"].as_str(),
                    meta["error_type"].as_str(),
                    meta["recommended_next_action"].as_str(),
                    meta["source"].as_str(),
                ),
                (Some(status), error_type, Some(next), Some(source)),
                "{text:?} (failed: {failed})"
            );
        }
    }

    #[test]
    fn a_stamp_already_present_is_kept_and_the_mark_is_carried() {
        let mut output = ToolOutput::text("Error: 500".into());
        output
            .additional_kwargs
            .insert(TOOL_META_KEY.into(), json!({"status": "kept"}));
        output.additional_kwargs.insert(
            READ_MARK_KEY.into(),
            read_mark("/mnt//user-data/./outputs/note.txt", "ab"),
        );
        let message = tool_message(output, "read_file", "call_1", "success");
        assert_eq!(
            message.additional_kwargs[TOOL_META_KEY],
            json!({"status": "kept"})
        );
        assert_eq!(
            message.additional_kwargs[READ_MARK_KEY],
            json!({"path": "/mnt/user-data/outputs/note.txt", "hash": "ab"})
        );
    }
}
