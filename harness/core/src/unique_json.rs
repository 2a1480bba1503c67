//! JSON text parsed into a [`serde_json::Value`] with every object key unique (issue 34,
//! finding 20). serde_json keeps the last of two equal keys, so a fixture could hold a turn
//! that a reader of the file sees and the replay never serves; a duplicate is refused instead,
//! with the key and its line and column (serde_json adds the position to a visitor's error).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `text` as one JSON document whose objects have no duplicate keys.
pub(crate) fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let Unique(value) = Unique::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A value whose objects were checked for duplicate keys while being read.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Unique, D::Error> {
        deserializer.deserialize_any(UniqueVisitor)
    }
}

/// Builds the value as `serde_json::Value`'s own visitor does, refusing a repeated key.
struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Unique, E> {
        Ok(Unique(Value::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Unique, E> {
        Ok(Unique(Value::Number(value.into())))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Unique, E> {
        Ok(Unique(Value::Number(value.into())))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Unique, E> {
        Ok(Unique(
            Number::from_f64(value).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E>(self, value: &str) -> Result<Unique, E> {
        Ok(Unique(Value::String(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Unique, E> {
        Ok(Unique(Value::String(value)))
    }

    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Unique, E> {
        Ok(Unique(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Unique(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} (JSON keeps only the last; remove one)"
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Unique(Value::Object(object)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_parse_as_serde_json_parses_them_and_a_duplicate_key_is_named_where_it_is() {
        let same = [
            r#"{"a": 1, "b": [1.5, -2, 18446744073709551615, "x", null, true], "c": {}}"#,
            r#"{"a": {"k": 1}, "b": {"k": 2}}"#,
            "[]",
            "0.1000000000000000055511151231257827",
        ];
        for text in same {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(from_str(text).unwrap(), expected, "{text}");
        }
        let cases = [
            ("{\"a\": 1,\n \"a\": 2}", "duplicate key \"a\"", 2),
            (
                "{\"t\": [{\"x\": 1,\n\n \"x\": 1}]}",
                "duplicate key \"x\"",
                3,
            ),
        ];
        for (text, said, line) in cases {
            let err = from_str(text).unwrap_err();
            assert!(err.to_string().contains(said), "{text}: {err}");
            assert_eq!(err.line(), line, "{text}: {err}");
        }
        assert!(from_str("{} {}").is_err(), "trailing text");
    }
}
