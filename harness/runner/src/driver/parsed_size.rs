//! What a parsed JSON value costs in memory, estimated, and the bound on it: a frame's text is
//! bounded in bytes, but its parse is not (`[0,0,…]` costs 16 times its text as a `Value` tree,
//! issue 45, finding 4), and a JSON Patch can grow a state without any byte arriving (`copy`
//! doubling it, finding 5). Both are measured here, the same way.

use serde_json::Value;

/// The estimated bytes `value` holds: one `Value` (plus a map entry's overhead in an object) per
/// node, and the bytes of every string and key. An estimate, within a small factor of the
/// allocator's figure, which is what a bound needs; a walk of the tree, linear in its size.
pub fn parsed_size(value: &Value) -> usize {
    /// A map entry's key and hash slot, beside its `Value` (`preserve_order`: an `IndexMap`).
    const ENTRY: usize = std::mem::size_of::<String>() + 2 * std::mem::size_of::<usize>();
    let mut total = 0usize;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        total += std::mem::size_of::<Value>();
        match value {
            Value::String(text) => total += text.len(),
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    total += ENTRY + key.len();
                    pending.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    total
}

/// An upper bound on the nodes parsing `text` as JSON yields, read from its bytes without
/// parsing: every value but the first follows a `,` or opens after a `[` or `:` outside a
/// string. A frame whose count is past the bound is refused before its tree is built.
pub fn json_value_count(text: &str) -> usize {
    let mut count = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b',' | b'[' | b':' => count += 1,
            _ => {}
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tree_of_many_small_values_costs_far_more_than_its_text() {
        let text = format!("[{}0]", "0,".repeat(99_999));
        let value: Value = serde_json::from_str(&text).expect("json");
        assert!(
            parsed_size(&value) >= 16 * text.len(),
            "{}",
            parsed_size(&value)
        );
        assert!(json_value_count(&text) >= 100_000);
        let strings = json!({"a": "x".repeat(1000), "b": ["y", "y", "y"]});
        assert!(parsed_size(&strings) >= 1003);
        // Structure inside a string is text, not values.
        assert_eq!(json_value_count(r#"{"a":"[,,,:\"]"}"#), 2);
    }
}
