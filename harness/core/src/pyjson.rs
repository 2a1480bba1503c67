//! Python-compatible text the replay core writes beyond `model_wire::pyjson`'s JSON
//! (`docs/replay-and-fixtures.md` §4.5): Python's `repr()` of a string ([`python_repr`]) and
//! `str()` of a value ([`python_str`]), and [`to_python_pretty_json`], the `indent=2` flavour
//! used for fixture files, which keeps the document's own key order (DeerFlow writes fixtures
//! without `sort_keys`). [`to_python_json`] itself, the text the replay key hashes, lives in
//! `model_wire::pyjson`, since reading a wire's request needs it too.

use std::fmt::Write as _;
use std::io;
use std::sync::LazyLock;

use regex::Regex;

use serde::Serialize;
use serde_json::Value;

pub use model_wire::pyjson::to_python_json;
pub(crate) use model_wire::pyjson::with_sorted_keys;
use model_wire::pyjson::{push_float, write_number};

/// Python's `repr()` of a string: single-quoted unless the text contains `'` and no `"`, with
/// `\\`, the chosen quote, `\t`, `\n` and `\r` backslash-escaped, other control characters and DEL
/// as `\xNN`, and other non-printable characters (Unicode categories Other and Separator, except
/// the ASCII space) as `\xNN`, `\uNNNN` or `\UNNNNNNNN`, all lowercase hex.
pub(crate) fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_ascii() => out.push(c),
            c if !is_python_printable(c) => {
                let code = c as u32;
                let _ = match code {
                    0..=0xff => write!(out, "\\x{code:02x}"),
                    0x100..=0xffff => write!(out, "\\u{code:04x}"),
                    _ => write!(out, "\\U{code:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one non-ASCII character: false for the Unicode categories
/// Other (Cc, Cf, Cs, Co, Cn) and Separator (Zs, Zl, Zp).
fn is_python_printable(c: char) -> bool {
    static NON_PRINTABLE: LazyLock<Regex> = LazyLock::new(|| {
        // A constant pattern; covered by the tests.
        Regex::new(r"^[\p{C}\p{Z}]$").expect("printable pattern compiles")
    });
    let mut buf = [0u8; 4];
    !NON_PRINTABLE.is_match(c.encode_utf8(&mut buf))
}

/// Python's `str()` of a JSON value, as DeerFlow's text extraction would see it: strings as
/// themselves, integers plainly, floats in repr form, `True`/`False`/`None`, and lists and dicts
/// in Python's repr form (`['a', 1]`, `{'k': None}`, dict entries in the value's own key order,
/// which with `preserve_order` is the order they were parsed in).
pub(crate) fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => {
            let mut out = String::new();
            push_python_repr_value(&mut out, other);
            out
        }
    }
}

fn push_python_repr_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
                // Python's str(float) spells the non-finite values differently from json.dumps;
                // serde_json never holds them, but keep the mapping honest.
                if f.is_nan() {
                    out.push_str("nan");
                } else if f.is_infinite() {
                    out.push_str(if f > 0.0 { "inf" } else { "-inf" });
                } else {
                    push_float(out, f);
                }
            } else {
                write_number(out, n);
            }
        }
        Value::String(s) => out.push_str(&python_repr(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_python_repr_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&python_repr(key));
                out.push_str(": ");
                push_python_repr_value(out, item);
            }
            out.push('}');
        }
    }
}

/// `serde_json`'s pretty printer (2-space indent, `": "`) with Python's float repr, so that a file
/// written by `json.dumps(..., indent=2, ensure_ascii=False)` round-trips byte for byte even when
/// it holds floats.
struct PythonPrettyFormatter<'a> {
    inner: serde_json::ser::PrettyFormatter<'a>,
}

impl serde_json::ser::Formatter for PythonPrettyFormatter<'_> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut text = String::with_capacity(24);
        push_float(&mut text, value);
        writer.write_all(text.as_bytes())
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_object_value(writer)
    }
}

/// Serialises `value` like Python's `json.dumps(value, indent=2, ensure_ascii=False)`: 2-space
/// indent, `": "` after keys, non-ASCII raw, floats in Python's repr, keys in the order the value
/// holds them (struct field order, or insertion order for maps with `preserve_order`). No trailing
/// newline.
pub(crate) fn to_python_pretty_json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut bytes = Vec::with_capacity(1024);
    let formatter = PythonPrettyFormatter {
        inner: serde_json::ser::PrettyFormatter::with_indent(b"  "),
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    // Serialising plain data (strings, `Value`s, derived structs) into a `Vec` cannot fail.
    if value.serialize(&mut serializer).is_err() {
        return String::new();
    }
    // serde_json only ever writes valid UTF-8.
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON parses")
    }

    #[test]
    fn python_repr_matches_cpython() {
        // Expected values produced by CPython 3's repr().
        let cases: &[(&str, &str)] = &[
            ("abc", "'abc'"),
            ("", "''"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("both ' and \"", "'both \\' and \"'"),
            ("back\\slash", "'back\\\\slash'"),
            ("a\nb\rc\td", "'a\\nb\\rc\\td'"),
            ("\u{0}\u{1b}\u{7f}", "'\\x00\\x1b\\x7f'"),
            ("\u{85}\u{a0}\u{ad}", "'\\x85\\xa0\\xad'"),
            ("\u{2028}\u{200b}\u{3000}", "'\\u2028\\u200b\\u3000'"),
            ("\u{e000}\u{10ffff}", "'\\ue000\\U0010ffff'"),
            ("em — dash é 😀", "'em — dash é 😀'"),
        ];
        for &(input, expected) in cases {
            assert_eq!(python_repr(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn python_str_of_values() {
        let cases: &[(&str, &str)] = &[
            (r#""text""#, "text"),
            ("1", "1"),
            ("-2", "-2"),
            ("1.5", "1.5"),
            ("1e-5", "1e-05"),
            ("true", "True"),
            ("false", "False"),
            ("null", "None"),
            (r#"["a", 1, null, [true]]"#, "['a', 1, None, [True]]"),
            (r#"{"b": "x'", "a": 1.0}"#, "{'b': \"x'\", 'a': 1.0}"),
        ];
        for &(input, expected) in cases {
            assert_eq!(python_str(&parse(input)), expected, "input {input}");
        }
    }

    #[test]
    fn pretty_output_matches_python_indent_2() {
        let value = parse(r#"{"b": [1, 0.00001, {}], "a": {"x": []}, "c": "é"}"#);
        let expected = "{\n  \"b\": [\n    1,\n    1e-05,\n    {}\n  ],\n  \"a\": {\n    \"x\": []\n  },\n  \"c\": \"é\"\n}";
        assert_eq!(to_python_pretty_json(&value), expected);
    }
}
