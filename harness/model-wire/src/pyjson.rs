//! Python-compatible JSON text, byte for byte (`docs/replay-and-fixtures.md` §4.5): CPython's
//! `json.dumps(value, sort_keys=True, ensure_ascii=False)` ([`to_python_json`]), the text a
//! replay key hashes and a wire's conversation writes a structured tool result as, and Python's
//! float `repr` ([`push_float`]). Here, beside [`pyrepr`](crate::pyrepr), because reading a
//! wire's request into its conversation needs it; the replay core re-uses it for its keys and
//! recordings.
//!
//! The replay key hashes JSON text that DeerFlow produced with CPython's
//! `json.dumps(value, sort_keys=True, ensure_ascii=False)`. A fixture recorded by DeerFlow only
//! replays here if we produce exactly the same bytes, so this module is a hand-written serialiser
//! rather than `serde_json` with options:
//!
//! - `serde_json::Map` is sorted only while `preserve_order` is off, and this workspace turns it on
//!   for fixture writing, so keys are sorted here explicitly (by code point, which is byte order in
//!   UTF-8, which is also what Python's `sorted()` of `str` does);
//! - Python pads negative exponents to two digits and switches to scientific notation at a
//!   different threshold than `serde_json`, so floats are written by Python's `repr` rules here.
//!
//! Parsing matters as much as printing: a float read one ulp off prints differently. The harness
//! enables `serde_json`'s `float_roundtrip` feature so that numbers are parsed exactly, as CPython
//! does; a test below fails without it. Integers beyond 64 bits are held as floats (enabling
//! `arbitrary_precision` would fix that but breaks serde derives workspace-wide); no recorded
//! tool argument needs them.

use std::fmt::Write as _;

use serde_json::Value;

/// Serialises `value` exactly as CPython's `json.dumps(value, sort_keys=True, ensure_ascii=False)`.
///
/// Separators are `", "` and `": "`, object keys are sorted by code point at every depth, strings
/// use JSON's short escapes plus `\u00XX` (lowercase hex) for the other control characters, and
/// everything from U+007F up is written raw. Integers are written plainly; numbers that
/// `serde_json` holds as floats (they had a `.` or an exponent, or overflowed 64 bits) use
/// Python's float `repr`, so `1.0` stays `1.0`.
pub fn to_python_json(value: &Value) -> String {
    // The buffer grows geometrically; strings are copied in slices, never char by char.
    let mut out = String::with_capacity(256);
    write_value(&mut out, value);
    out
}

/// `value` as reading [`to_python_json`]'s text back gives it (with `preserve_order`): object
/// keys in code point order at every depth, everything else as it is. A writer that keeps what
/// it wrote in memory keeps this, so what it holds equals what a reader of the file would get.
pub fn with_sorted_keys(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(with_sorted_keys).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, item)| (key.clone(), with_sorted_keys(item)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorting references is cheap; `str`'s `Ord` is byte order, which for UTF-8 is code
            // point order, matching Python (and unlike UTF-16 order above U+FFFF).
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key);
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Appends a JSON number as Python writes it: an integer plainly, a float by its `repr`.
pub fn write_number(out: &mut String, n: &serde_json::Number) {
    // `as_u64`/`as_i64` only succeed for numbers parsed (or built) as integers, so floats such as
    // `1.0` fall through to the float branch and keep their `.0`.
    if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(f) = n.as_f64() {
        push_float(out, f);
    }
}

/// Per-byte escape table: 0 = copy, otherwise the escape character (`u` = `\u00XX`).
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes `s` as a JSON string literal with Python's `ensure_ascii=False` escaping.
fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape = ESCAPE[byte as usize];
        if escape == 0 {
            continue;
        }
        // Every escaped byte is ASCII, so `start..i` always lies on char boundaries.
        out.push_str(&s[start..i]);
        start = i + 1;
        out.push('\\');
        if escape == b'u' {
            out.push_str("u00");
            out.push(HEX[(byte >> 4) as usize] as char);
            out.push(HEX[(byte & 0xf) as usize] as char);
        } else {
            out.push(escape as char);
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A fixed-size, stack-allocated `fmt::Write` sink, so float formatting never allocates.
struct StackBuf {
    buf: [u8; 40],
    len: usize,
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for decimal exponents
/// `-4 <= e < 16` (integral values get `.0`), scientific otherwise (`1e-05`, `1e+16`,
/// `1.2345678901234568e+20`), and `NaN`, `Infinity`, `-Infinity` for non-finite values (the
/// spellings `json.dumps` uses). The writer appends the same text in place; this is its tested
/// form.
#[cfg(test)]
fn python_float_repr(value: f64) -> String {
    let mut out = String::with_capacity(24);
    push_float(&mut out, value);
    out
}

/// Appends Python's `repr()` of a float, by the rules above (`python_float_repr` is its tested form).
pub fn push_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // Python (David Gay's dtoa, mode 0) prints the shortest digit string that round-trips and,
    // among those, the one closest to the exact binary value, ties to even. Rust's `{:e}` finds the
    // same shortest length but, when two candidates are equally close, may pick the upper one:
    // 1213672713700591.25 is `...591.2` in Python and `...591.3` from `{:e}`. Rust's
    // fixed-precision `{:.Ne}` is correctly rounded with ties to even, so re-format at the
    // shortest length and keep that when it round-trips. It does not always: just above a power
    // of two the interval below the value is half as wide, and the nearest string can fall
    // outside it; then the shortest string from `{:e}` is the one Python prints.
    let mut shortest = StackBuf {
        buf: [0; 40],
        len: 0,
    };
    let _ = write!(shortest, "{value:e}");
    let digits = shortest.buf[..shortest.len]
        .iter()
        .take_while(|&&b| b != b'e')
        .filter(|b| b.is_ascii_digit())
        .count();
    let mut nearest = StackBuf {
        buf: [0; 40],
        len: 0,
    };
    let _ = write!(nearest, "{value:.prec$e}", prec = digits.saturating_sub(1));
    let nearest_text = std::str::from_utf8(&nearest.buf[..nearest.len]).unwrap_or("");
    let text = if nearest_text.parse::<f64>().ok() == Some(value) {
        nearest_text
    } else {
        std::str::from_utf8(&shortest.buf[..shortest.len]).unwrap_or("0e0")
    };
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (lead, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // All significant digits, without the point: value = 0.DIGITS × 10^(exponent + 1).
    let digit_count = lead.len() + frac.len();

    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let int_len = exponent as usize + 1;
            if digit_count <= int_len {
                out.push_str(lead);
                out.push_str(frac);
                push_zeros(out, int_len - digit_count);
                out.push_str(".0");
            } else {
                // The integer part takes `int_len` digits: the leading digit plus part of `frac`.
                let split = int_len - 1;
                out.push_str(lead);
                out.push_str(&frac[..split]);
                out.push('.');
                out.push_str(&frac[split..]);
            }
        } else {
            out.push_str("0.");
            push_zeros(out, (-exponent - 1) as usize);
            out.push_str(lead);
            out.push_str(frac);
        }
    } else {
        out.push_str(lead);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        let _ = write!(out, "{magnitude}");
    }
}

fn push_zeros(out: &mut String, count: usize) {
    for _ in 0..count {
        out.push('0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON parses")
    }

    #[test]
    fn float_table_matches_python_repr() {
        // §4.5's table, plus further rows checked against CPython's repr.
        let cases: &[(f64, &str)] = &[
            (1e-05, "1e-05"),
            (1.234e-05, "1.234e-05"),
            (2.5e-06, "2.5e-06"),
            (1e-07, "1e-07"),
            (0.0001, "0.0001"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234568e+20, "1.2345678901234568e+20"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-1.5, "-1.5"),
            (123.456, "123.456"),
            (0.00012345, "0.00012345"),
            (9999999999999998.0, "9999999999999998.0"),
            (1.5e16, "1.5e+16"),
            (1e100, "1e+100"),
            (1e-100, "1e-100"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123456789012345.6, "123456789012345.6"),
            (-1e-05, "-1e-05"),
            // Ties between two shortest candidates round half to even, as in CPython.
            // (Written as sums because the exact literals trip clippy's excessive_precision.)
            (1_213_672_713_700_591.0 + 0.25, "1213672713700591.2"),
            (-1_754_851_680_156_310.0 - 0.25, "-1754851680156310.2"),
            (867_202_583_929_939.0 + 0.25, "867202583929939.2"),
            // Just above a power of two the nearest 16-digit string does not round-trip.
            (7.120236347223045e-307, "7.120236347223045e-307"),
            (5.858190679279809e-244, "5.858190679279809e-244"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for &(value, expected) in cases {
            assert_eq!(python_float_repr(value), expected, "repr of {value:e}");
        }
    }

    #[test]
    fn parsed_numbers_keep_their_python_kind() {
        let cases: &[(&str, &str)] = &[
            ("1.0", "1.0"),
            ("1", "1"),
            ("-0.0", "-0.0"),
            ("0", "0"),
            ("-7", "-7"),
            ("1e2", "100.0"),
            ("1E-5", "1e-05"),
            ("2.5e-6", "2.5e-06"),
            ("18446744073709551615", "18446744073709551615"),
            ("-9223372036854775808", "-9223372036854775808"),
            ("9223372036854775807", "9223372036854775807"),
            // Exact float parsing (serde_json's `float_roundtrip`, enabled in Cargo.toml); the
            // default parser reads these one ulp off.
            ("-3.6551142219e-13", "-3.6551142219e-13"),
            ("-122.41941550000001", "-122.41941550000001"),
            ("9007199254740993.0", "9007199254740992.0"),
            // Beyond u64 serde_json (without arbitrary_precision) holds a float: documented limit.
            ("18446744073709551616", "1.8446744073709552e+19"),
            ("[1, 1.0, -0.0, 1e16]", "[1, 1.0, -0.0, 1e+16]"),
        ];
        for &(input, expected) in cases {
            assert_eq!(to_python_json(&parse(input)), expected, "input {input}");
        }
        assert_eq!(to_python_json(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(to_python_json(&json!(i64::MIN)), "-9223372036854775808");
    }

    #[test]
    fn string_escapes_match_python() {
        let cases: &[(&str, &str)] = &[
            ("plain", r#""plain""#),
            ("quote \" here", r#""quote \" here""#),
            ("back\\slash", r#""back\\slash""#),
            ("a\nb\rc\td", r#""a\nb\rc\td""#),
            ("\u{8}\u{c}", r#""\b\f""#),
            (
                "\u{0}\u{1}\u{b}\u{e}\u{1f}",
                r#""\u0000\u0001\u000b\u000e\u001f""#,
            ),
            ("\u{1c}\u{1a}", r#""\u001c\u001a""#),
            ("del\u{7f}", "\"del\u{7f}\""),
            ("sep\u{2028}\u{2029}", "\"sep\u{2028}\u{2029}\""),
            ("a/b", r#""a/b""#),
            ("em — dash é", "\"em — dash é\""),
            ("emoji 😀", "\"emoji 😀\""),
            ("", r#""""#),
            (" ", r#"" ""#),
        ];
        for &(input, expected) in cases {
            assert_eq!(to_python_json(&json!(input)), expected, "input {input:?}");
        }
    }

    #[test]
    fn containers_use_python_separators_and_sorted_keys() {
        let cases: &[(&str, &str)] = &[
            ("[]", "[]"),
            ("{}", "{}"),
            ("[[], {}]", "[[], {}]"),
            (r#"{"b": 1, "a": 2}"#, r#"{"a": 2, "b": 1}"#),
            (
                r#"{"z": {"y": [true, false, null], "x": {"d": 1, "c": "s"}}, "a": []}"#,
                r#"{"a": [], "z": {"x": {"c": "s", "d": 1}, "y": [true, false, null]}}"#,
            ),
            // Code point order: "B" < "a" < "é" < U+FFFF < U+1F600 (UTF-16 order would put the
            // emoji, a surrogate pair starting 0xD83D, before U+FFFF).
            (
                "{\"\u{1F600}\": 1, \"\u{FFFF}\": 2, \"é\": 3, \"a\": 4, \"B\": 5}",
                "{\"B\": 5, \"a\": 4, \"é\": 3, \"\u{FFFF}\": 2, \"\u{1F600}\": 1}",
            ),
            (r#"{"k\n": "v"}"#, r#"{"k\n": "v"}"#),
        ];
        for &(input, expected) in cases {
            assert_eq!(to_python_json(&parse(input)), expected, "input {input}");
        }
    }
}
