//! The first-difference walk (`docs/recording-format.md` §7.3): where two JSON documents first
//! differ, as a readable field path such as `context.messages[0].content`.
//!
//! Used to explain replay misses: comparing the recorded canonical conversation with the incoming
//! one points at the field that changed instead of two opaque hashes.
//!
//! Equality of leaves: numbers compare by numeric value (`1 == 1.0`, as in Python), but booleans
//! never equal numbers (unlike Python's `True == 1`), because a boolean turning into a number in a
//! payload is a real change worth reporting.

use serde_json::{Number, Value};

/// The first difference between two documents.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Difference {
    /// The field path: `a.b[2].c`, or `<root>` when the documents differ at the top.
    pub path: String,
    /// The recorded value at `path`; `None` when the recorded side lacks the key or index.
    pub(crate) recorded: Option<Value>,
    /// The incoming value at `path`; `None` when the incoming side lacks the key or index.
    pub(crate) incoming: Option<Value>,
}

impl Difference {
    /// Replaces a side whose JSON is longer than `max` bytes with a string of its start,
    /// saying how much was cut; the path stays whole.
    pub fn cut_to(&mut self, max: usize) {
        for value in [&mut self.recorded, &mut self.incoming]
            .into_iter()
            .flatten()
        {
            let text = value.to_string();
            if text.len() > max {
                *value = Value::String(crate::text::cut_text(&text, max));
            }
        }
    }
}

/// Returns the first difference between `recorded` and `incoming`, or `None` when they are
/// equal.
///
/// Objects are walked over the sorted union of their keys, skipping any key named in `skip_keys`
/// at every depth; arrays by index up to the longer length. A key or index missing on one side is
/// reported at once with `None` for that side. Any other difference, including a type mismatch
/// such as object against array, is reported at the parent path with both whole values.
pub fn first_difference(
    recorded: &Value,
    incoming: &Value,
    skip_keys: &[&str],
) -> Option<Difference> {
    let mut path = String::new();
    walk(recorded, incoming, skip_keys, &mut path)
}

fn walk(
    recorded: &Value,
    incoming: &Value,
    skip: &[&str],
    path: &mut String,
) -> Option<Difference> {
    match (recorded, incoming) {
        (Value::Object(left), Value::Object(right)) => {
            let mut keys: Vec<&String> = left.keys().chain(right.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                if skip.contains(&key.as_str()) {
                    continue;
                }
                let parent_len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let found = compare_child(left.get(key), right.get(key), skip, path);
                if found.is_some() {
                    return found;
                }
                path.truncate(parent_len);
            }
            None
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                let parent_len = path.len();
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
                let found = compare_child(left.get(index), right.get(index), skip, path);
                if found.is_some() {
                    return found;
                }
                path.truncate(parent_len);
            }
            None
        }
        (left, right) if leaves_equal(left, right) => None,
        (left, right) => Some(Difference {
            path: if path.is_empty() {
                "<root>".to_owned()
            } else {
                path.clone()
            },
            recorded: Some(left.clone()),
            incoming: Some(right.clone()),
        }),
    }
}

/// One child of a container: recurse when both sides have it, else report it as missing on
/// one side (`path` already names the child).
fn compare_child(
    recorded: Option<&Value>,
    incoming: Option<&Value>,
    skip: &[&str],
    path: &mut String,
) -> Option<Difference> {
    match (recorded, incoming) {
        (Some(recorded), Some(incoming)) => walk(recorded, incoming, skip, path),
        (recorded, incoming) => Some(Difference {
            path: path.clone(),
            recorded: recorded.cloned(),
            incoming: incoming.cloned(),
        }),
    }
}

fn leaves_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => numbers_equal(l, r),
        _ => left == right,
    }
}

/// Numeric equality across serde_json's integer and float representations.
fn numbers_equal(left: &Number, right: &Number) -> bool {
    let as_int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (as_int(left), as_int(right)) {
        // Both integers: exact, even beyond f64's 53-bit precision.
        (Some(l), Some(r)) => l == r,
        _ => left.as_f64() == right.as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(path: &str, recorded: Option<Value>, incoming: Option<Value>) -> Option<Difference> {
        Some(Difference {
            path: path.to_owned(),
            recorded,
            incoming,
        })
    }

    #[test]
    fn first_difference_table() {
        let request = |content: &str| {
            json!({
                "model": "m",
                "context": {"messages": [{"role": "user", "content": content}], "timestamp": 1},
                "options": {},
            })
        };
        let cases: Vec<(&str, Value, Value, Option<Difference>)> = vec![
            ("equal", request("hello"), request("hello"), None),
            (
                "§13 example: names the call's field",
                request("goodbye"),
                request("hello"),
                diff(
                    "context.messages[0].content",
                    Some(json!("goodbye")),
                    Some(json!("hello")),
                ),
            ),
            (
                "sorted union: first key in sorted order wins",
                json!({"b": 1, "a": 1, "c": 1}),
                json!({"c": 2, "b": 2, "a": 1}),
                diff("b", Some(json!(1)), Some(json!(2))),
            ),
            (
                "key missing on the incoming side",
                json!({"a": {"x": 1, "y": 2}}),
                json!({"a": {"x": 1}}),
                diff("a.y", Some(json!(2)), None),
            ),
            (
                "key missing on the recorded side",
                json!({"a": 1}),
                json!({"a": 1, "b": [1]}),
                diff("b", None, Some(json!([1]))),
            ),
            (
                "incoming array longer",
                json!({"m": [1, 2]}),
                json!({"m": [1, 2, 3]}),
                diff("m[2]", None, Some(json!(3))),
            ),
            (
                "recorded array longer, at the root",
                json!([{"a": 1}, {"b": 2}]),
                json!([{"a": 1}]),
                diff("[1]", Some(json!({"b": 2})), None),
            ),
            (
                "type mismatch reported at the parent",
                json!({"a": {"b": {"c": 1}}}),
                json!({"a": {"b": [1]}}),
                diff("a.b", Some(json!({"c": 1})), Some(json!([1]))),
            ),
            (
                "object against null",
                json!({"a": {}}),
                json!({"a": null}),
                diff("a", Some(json!({})), Some(json!(null))),
            ),
            (
                "scalars at the root",
                json!("x"),
                json!("y"),
                diff("<root>", Some(json!("x")), Some(json!("y"))),
            ),
            (
                "numbers compare by value",
                json!({"n": 1, "f": 2.5, "z": 0}),
                json!({"n": 1.0, "f": 2.5, "z": -0.0}),
                None,
            ),
            (
                "big integers stay exact",
                json!({"n": u64::MAX}),
                json!({"n": u64::MAX - 1}),
                diff("n", Some(json!(u64::MAX)), Some(json!(u64::MAX - 1))),
            ),
            (
                "booleans are not numbers",
                json!({"b": true}),
                json!({"b": 1}),
                diff("b", Some(json!(true)), Some(json!(1))),
            ),
            (
                "skip keys apply at every depth",
                json!({"timestamp": 1, "a": [{"timestamp": 2, "v": 1}]}),
                json!({"timestamp": 9, "a": [{"timestamp": 8, "v": 1}]}),
                None,
            ),
            (
                "skipped keys missing on one side are ignored too",
                json!({"a": {"timestamp": 2}}),
                json!({"a": {}}),
                None,
            ),
        ];
        for (name, recorded, incoming, expected) in cases {
            assert_eq!(
                first_difference(&recorded, &incoming, &["timestamp"]),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn without_skip_keys_everything_counts() {
        let found = first_difference(&json!({"timestamp": 1}), &json!({"timestamp": 2}), &[]);
        assert_eq!(found, diff("timestamp", Some(json!(1)), Some(json!(2))));
    }
}
