//! The model's tool arguments: the schema the file tools declare for them, and reading them.
//! Models send what they send, so nothing here panics: a missing or mistyped argument becomes
//! the `Error: …` text the tool returns, naming the argument.
//!
//! Each reading function returns `Err(text)` with the finished tool output, so a tool can write
//! `let path = match required_path(args) { Ok(p) => p, Err(e) => return e };`.

use serde_json::{Map, Value, json};

/// The argument schema of a file tool. Every file tool takes the same two leading arguments, a
/// `description` of why it is called (documented by `description_doc`) and an absolute `path`
/// (documented by `path_doc`), both required; `extra` are the tool's own arguments, in order,
/// and `extra_required` names those of them the tool cannot do without.
pub(super) fn file_tool_parameters(
    description_doc: &str,
    path_doc: &str,
    extra: Vec<(&str, Value)>,
    extra_required: &[&str],
) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "description".into(),
        json!({"type": "string", "description": description_doc}),
    );
    properties.insert(
        "path".into(),
        json!({"type": "string", "description": path_doc}),
    );
    for (name, schema) in extra {
        properties.insert(name.into(), schema);
    }
    let required: Vec<&str> = ["description", "path"]
        .into_iter()
        .chain(extra_required.iter().copied())
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The `path` argument: a non-empty string.
pub(super) fn required_path(args: &Value) -> Result<&str, String> {
    let path = required_string(args, "path")?;
    if path.is_empty() {
        return Err("Error: Argument 'path' must not be empty".to_string());
    }
    Ok(path)
}

/// A required string argument.
pub(super) fn required_string<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        None | Some(Value::Null) => Err(format!("Error: Missing required argument '{name}'")),
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(format!(
            "Error: Argument '{name}' must be a string, not {}",
            json_type(other)
        )),
    }
}

/// An optional boolean argument. The strings `"true"` and `"false"` are accepted too, because
/// some models quote booleans.
pub(super) fn optional_bool(args: &Value, name: &str, default: bool) -> Result<bool, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(flag)) => Ok(*flag),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(text)) if text.eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(format!(
            "Error: Argument '{name}' must be a boolean, not {}",
            json_type(other)
        )),
    }
}

/// An optional integer argument, such as a line number. Whole floats (`3.0`) and numeric strings
/// (`"3"`) are accepted, because some models send them; values beyond `i64` saturate. The range
/// is not checked here: `read_file` has its own messages for values below 1.
pub(super) fn optional_integer(args: &Value, name: &str) -> Result<Option<i64>, String> {
    let invalid = |other: &Value| {
        Err(format!(
            "Error: Argument '{name}' must be an integer, not {}",
            json_type(other)
        ))
    };
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => {
            if let Some(value) = number.as_i64() {
                Ok(Some(value))
            } else if number.as_u64().is_some() {
                Ok(Some(i64::MAX))
            } else {
                match number.as_f64() {
                    // `as` saturates at the i64 bounds, which is what a line number wants.
                    Some(value) if value.fract() == 0.0 => Ok(Some(value as i64)),
                    _ => invalid(&Value::Number(number.clone())),
                }
            }
        }
        Some(Value::String(text)) => match text.trim().parse::<i64>() {
            Ok(value) => Ok(Some(value)),
            Err(_) => invalid(&Value::String(text.clone())),
        },
        Some(other) => invalid(other),
    }
}

/// The JSON type of a value, for error texts.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_tool_parameters_keep_the_argument_order() {
        let schema = file_tool_parameters(
            "Why.",
            "Where.",
            vec![
                ("content", json!({"type": "string"})),
                ("append", json!({"type": "boolean"})),
            ],
            &["content"],
        );
        // The order is part of what the model is sent (and what recordings hold).
        assert_eq!(
            schema.to_string(),
            r#"{"type":"object","properties":{"description":{"type":"string","description":"Why."},"path":{"type":"string","description":"Where."},"content":{"type":"string"},"append":{"type":"boolean"}},"required":["description","path","content"]}"#
        );
    }

    #[test]
    fn string_arguments() {
        let cases: &[(Value, Result<&str, &str>)] = &[
            (json!({"path": "/a"}), Ok("/a")),
            (json!({}), Err("Error: Missing required argument 'path'")),
            (
                json!({"path": null}),
                Err("Error: Missing required argument 'path'"),
            ),
            (
                json!({"path": 3}),
                Err("Error: Argument 'path' must be a string, not a number"),
            ),
            (
                json!({"path": ""}),
                Err("Error: Argument 'path' must not be empty"),
            ),
            (
                json!("not an object"),
                Err("Error: Missing required argument 'path'"),
            ),
        ];
        for (args, expected) in cases {
            let expected = expected.map_err(str::to_string);
            assert_eq!(required_path(args), expected, "args {args}");
        }
    }

    #[test]
    fn boolean_arguments() {
        let cases: &[(Value, Result<bool, &str>)] = &[
            (json!({}), Ok(false)),
            (json!({"append": null}), Ok(false)),
            (json!({"append": true}), Ok(true)),
            (json!({"append": "True"}), Ok(true)),
            (json!({"append": "false"}), Ok(false)),
            (
                json!({"append": 1}),
                Err("Error: Argument 'append' must be a boolean, not a number"),
            ),
            (
                json!({"append": "yes"}),
                Err("Error: Argument 'append' must be a boolean, not a string"),
            ),
        ];
        for (args, expected) in cases {
            let expected = expected.map_err(str::to_string);
            assert_eq!(
                optional_bool(args, "append", false),
                expected,
                "args {args}"
            );
        }
    }

    #[test]
    fn integer_arguments() {
        let cases: &[(Value, Result<Option<i64>, &str>)] = &[
            (json!({}), Ok(None)),
            (json!({"start_line": null}), Ok(None)),
            (json!({"start_line": 3}), Ok(Some(3))),
            (json!({"start_line": -2}), Ok(Some(-2))),
            (json!({"start_line": 3.0}), Ok(Some(3))),
            (json!({"start_line": " 7 "}), Ok(Some(7))),
            (json!({"start_line": u64::MAX}), Ok(Some(i64::MAX))),
            (
                json!({"start_line": 2.5}),
                Err("Error: Argument 'start_line' must be an integer, not a number"),
            ),
            (
                json!({"start_line": "x"}),
                Err("Error: Argument 'start_line' must be an integer, not a string"),
            ),
            (
                json!({"start_line": [1]}),
                Err("Error: Argument 'start_line' must be an integer, not an array"),
            ),
        ];
        for (args, expected) in cases {
            let expected = expected.map_err(str::to_string);
            assert_eq!(
                optional_integer(args, "start_line"),
                expected,
                "args {args}"
            );
        }
    }
}
