//! Python's `repr()` of a parsed JSON value, both ways: the writer ([`python_repr`],
//! [`python_str`]) the gateway's providers word a failed call with, and its parser ([`parse`],
//! `parse.rs`) the model server reads a recorded message back into the body with. They live
//! together so that one cannot change without the other: the round-trip test below holds them
//! to each other.
//!
//! Python's clients word a failed response as `Error code: <status> - <repr of the JSON body>`
//! (openai-python's `_make_status_error_from_response`; `anthropic` words it alike), e.g.
//! `Error code: 400 - {'error': {'message': 'bad', 'type': 'invalid_request_error', 'param':
//! None, 'code': None}}`, and DeerFlow's clients quote that text (`docs/gateway-contract.md`
//! §11.2). The model server answers a recorded message of that form with the very body whose
//! repr the client will print again (`docs/replay-and-fixtures.md` §11).
//!
//! The value is what `json.loads` gives: objects are dicts in key order, `true`/`false`/`null`
//! are `True`/`False`/`None`, integers are ints, other numbers floats (`repr(float)`), strings
//! `str` reprs (single quotes unless the text has a `'` and no `"`, the usual escapes, non-ASCII
//! printable characters raw).

mod parse;

pub use parse::parse;

use std::fmt::Write as _;

use serde_json::Value;

/// `str(json.loads(text))` for the JSON `value`, as an f-string formats it: a string is itself,
/// anything else its `repr`.
pub fn python_str(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => python_repr(other),
    }
}

/// `repr(json.loads(text))` for the JSON `value`.
pub fn python_repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), _, _) => {
                let _ = write!(out, "{int}");
            }
            (None, Some(int), _) => {
                let _ = write!(out, "{int}");
            }
            (None, None, Some(float)) => out.push_str(&float_repr(float)),
            (None, None, None) => out.push_str(&number.to_string()),
        },
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (index, (key, item)) in fields.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_str(out, key);
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// `repr(str)`: CPython's `unicode_repr`.
fn write_str(out: &mut String, text: &str) {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push(quote);
}

/// An approximation of Python's `str.isprintable` for one character: not a control character
/// (Cc), not a format or private-use or unassigned-looking code point of the common ranges, and
/// not a separator other than the ASCII space.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E
            | 0x2060..=0x206F | 0xD800..=0xDFFF | 0xE000..=0xF8FF | 0xFEFF | 0xFFF9..=0xFFFB
            | 0xF0000..
    )
}

/// `repr(float)`: the shortest round-tripping digits, in fixed notation with at least one
/// decimal when the decimal exponent is in `-4..16`, else `<digits>e<sign><at least 2 digits>`.
fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` gives the shortest round-tripping mantissa: `-1.2345e-7`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if (point as usize) >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{first}{fraction}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reprs_match_cpython() {
        let table: Vec<(Value, &str)> = vec![
            (
                json!({"error": {"message": "bad", "type": "invalid_request_error", "param": null, "code": null}}),
                "{'error': {'message': 'bad', 'type': 'invalid_request_error', 'param': None, 'code': None}}",
            ),
            (
                json!({"message": "This model's maximum context length is 8192 tokens"}),
                "{'message': \"This model's maximum context length is 8192 tokens\"}",
            ),
            (json!("both ' and \""), r#"'both \' and "'"#),
            (
                json!("tab\tnew\nline\\ é \u{7f} \u{200b}"),
                r"'tab\tnew\nline\\ é \x7f \u200b'",
            ),
            (
                json!([true, false, 1, -2, 1.5, []]),
                "[True, False, 1, -2, 1.5, []]",
            ),
            (json!({}), "{}"),
            (json!(1.0), "1.0"),
            (json!(0.00001), "1e-05"),
            (json!(0.0001), "0.0001"),
            (json!(1e16), "1e+16"),
            (json!(123456789012345.6), "123456789012345.6"),
            (json!(-2.5e-7), "-2.5e-07"),
        ];
        for (value, expected) in table {
            assert_eq!(python_repr(&value), expected, "{value}");
        }
    }

    /// The parser reads back exactly what the writer wrote.
    #[test]
    fn the_parser_reads_back_what_the_writer_writes() {
        let values = [
            json!({"error": {"message": "This model's \"limit\"", "type": "invalid_request_error", "param": null, "code": 400}}),
            json!([
                "tab\tnew\nline\\ é \u{7f} \u{200b}",
                true,
                false,
                -2,
                1.5,
                0.00001,
                1e16,
                {}
            ]),
        ];
        for value in values {
            assert_eq!(parse(&python_repr(&value)), Some(value.clone()), "{value}");
        }
    }
}
