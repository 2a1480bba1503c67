//! Secret redaction (`docs/recording-format.md` §6), applied to every request and event before it
//! is written, and to every incoming request before replay compares it.
//!
//! Two rules: a value under a secret-looking key is replaced whole ([`is_secret_key`]), and every
//! string has four fixed credential patterns rewritten ([`redact_text`]). There is no entropy
//! rule, on purpose: it would rewrite ordinary prompts and break replay. Redaction cannot be
//! switched off. Pattern 1 also rewrites prose such as `key points` or `token budget`; replay
//! applies the same rewrite to the incoming request, so matching is unaffected.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// What a redacted secret is replaced with.
pub(crate) const PLACEHOLDER: &str = "[secret removed]";

/// The 17 secret key names of §6.3, in normalised form.
const SECRET_KEYS: [&str; 17] = [
    "api_key",
    "apikey",
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "cookie",
    "set-cookie",
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "secret",
    "client_secret",
    "password",
    "session_key",
];

/// The four value patterns of §6.4, quoted exactly, in the order they are applied.
static VALUE_PATTERNS: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    [
        r"(?i)\b(?:bearer|basic|bot|token|key)\s+[\w.:\-~+/]+=*",
        r"\bsk-[A-Za-z0-9_\-]{8,}",
        r"(?i)([?&](?:api[_-]?key|access[_-]?token|token)=)[^&\s]+",
        r"(?i)(https?://)[^/@\s]+:[^/@\s]+@",
    ]
    .map(|pattern| Regex::new(pattern).expect("redaction pattern compiles"))
});

/// The suffix rule of §6.3. Python's `$` also matches before one final newline; `\n?\z` keeps
/// that, so a key such as `"api_key\n"` is still a secret.
static SECRET_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[-_])(?:token|key|secret|password)\n?\z")
        .expect("suffix pattern compiles")
});

/// Redacts a JSON value (§6.2): in objects, a secret key's whole value becomes
/// `"[secret removed]"` whatever its type and every other value is walked; arrays are walked
/// item by item; strings go through [`redact_text`]; numbers, booleans and null are returned
/// unchanged. Keys are kept.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, item) in map {
                let item = if is_secret_key(key) {
                    Value::String(PLACEHOLDER.to_owned())
                } else {
                    redact(item)
                };
                out.insert(key.clone(), item);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(text) => Value::String(redact_text(text)),
        other => other.clone(),
    }
}

/// Applies the four value patterns of §6.4 to `text`, in order.
///
/// For each match: when the pattern has a capture group and group 1 starts with `http`, it
/// becomes group 1 + placeholder + `@`; with any other group 1, group 1 + placeholder; without a
/// group, the placeholder alone. Like the reference, `starts with http` is case-sensitive, so
/// `HTTPS://u:p@h` becomes `HTTPS://[secret removed]h` (still redacted, the `@` is lost).
pub fn redact_text(text: &str) -> String {
    let mut current = Cow::Borrowed(text);
    for pattern in VALUE_PATTERNS.iter() {
        if let Cow::Owned(replaced) = pattern.replace_all(&current, replacement) {
            current = Cow::Owned(replaced);
        }
    }
    current.into_owned()
}

fn replacement(caps: &Captures<'_>) -> String {
    match caps.get(1) {
        Some(group) if group.as_str().starts_with("http") => {
            format!("{}{PLACEHOLDER}@", group.as_str())
        }
        Some(group) => format!("{}{PLACEHOLDER}", group.as_str()),
        None => PLACEHOLDER.to_owned(),
    }
}

/// Whether `key` names a secret (§6.3): its normalised form (a `-` inserted between an ASCII
/// `[a-z0-9]` and a following ASCII `[A-Z]`, then lower-cased) is one of the 17 names, or ends
/// in `token`, `key`, `secret` or `password` at the start or after `-` or `_`.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let normalised = normalise_key(key);
    SECRET_KEYS.contains(&normalised.as_str()) || SECRET_SUFFIX.is_match(&normalised)
}

/// The camelCase split and lower-casing of §6.3, done with a character loop because Rust's
/// `regex` has no look-around.
fn normalise_key(key: &str) -> String {
    let mut split = String::with_capacity(key.len() + 4);
    let mut previous: Option<char> = None;
    for ch in key.chars() {
        if ch.is_ascii_uppercase()
            && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
        {
            split.push('-');
        }
        split.push(ch);
        previous = Some(ch);
    }
    split.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = PLACEHOLDER;

    #[test]
    fn remove_secret_values_covers_nested_and_inline_secrets() {
        let input = json!({
            "outer": {"inner": [{"access_token": "tok-123", "keep": "visible"}]},
            "note": "call with Bearer sk-abcdefgh12345678 please",
            "url": "https://api.example.com/v1?api_key=XYZ&x=1",
            "numbers": [1, 2.5, true, null, [3]],
        });
        let expected = json!({
            "outer": {"inner": [{"access_token": P, "keep": "visible"}]},
            "note": format!("call with {P} please"),
            "url": format!("https://api.example.com/v1?api_key={P}&x=1"),
            "numbers": [1, 2.5, true, null, [3]],
        });
        assert_eq!(redact(&input), expected);
    }

    #[test]
    fn secret_keys_replace_the_whole_value_whatever_its_type() {
        let input = json!({
            "password": {"nested": "x"},
            "token": 12345,
            "api_key": null,
            "Cookie": ["a=1", "b=2"],
            "authorization": true,
        });
        let redacted = redact(&input);
        for key in ["password", "token", "api_key", "Cookie", "authorization"] {
            assert_eq!(redacted[key], P, "{key}");
        }
        // Keys themselves are kept, in their order.
        let keys: Vec<&String> = redacted.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["password", "token", "api_key", "Cookie", "authorization"]
        );
    }

    #[test]
    fn non_string_leaves_are_unchanged() {
        for value in [
            json!(1),
            json!(-2.5),
            json!(true),
            json!(null),
            json!([1, [2, [false]]]),
        ] {
            assert_eq!(redact(&value), value);
        }
    }

    #[test]
    fn remove_secret_values_covers_auth_schemes_and_url_userinfo() {
        let cases = [
            (
                "Authorization: Basic dXNlcjpwYXNz==",
                format!("Authorization: {P}"),
            ),
            ("header Bot MTIzNDU2.Nzg5 end", format!("header {P} end")),
            ("bearer abc.def-ghi~jkl+mno/pqr=", P.to_owned()),
            ("Token xyz789", P.to_owned()),
            (
                "see https://alice:pw@example.com/x",
                format!("see https://{P}@example.com/x"),
            ),
            ("http://u:p@h:8080/", format!("http://{P}@h:8080/")),
            (
                "https://h/cb?state=1&access-token=abc123&z=2",
                format!("https://h/cb?state=1&access-token={P}&z=2"),
            ),
            (
                "https://h/?access_token=abc",
                format!("https://h/?access_token={P}"),
            ),
            ("https://h/?APIKEY=abc", format!("https://h/?APIKEY={P}")),
            (
                "https://h/?token=abc def",
                format!("https://h/?token={P} def"),
            ),
            ("sk-abcdefgh1234", P.to_owned()),
            ("key sk-abcdefgh12345678", P.to_owned()),
            ("id sk-short", "id sk-short".to_owned()),
            // Group 1 starting with `http` is checked case-sensitively, as in the reference.
            ("HTTPS://u:p@h", format!("HTTPS://{P}h")),
            ("nothing secret here", "nothing secret here".to_owned()),
            ("émoji 😀 stays", "émoji 😀 stays".to_owned()),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn pattern_one_rewrites_prose_such_as_key_points() {
        // Documented behaviour (§6.4 notes): ordinary prose is rewritten too. Replay applies the
        // same rewrite to the incoming request, so matching is unaffected.
        let cases = [
            // The credential class includes `.`, so the full stop goes too.
            ("Summarise the key points.", format!("Summarise the {P}")),
            ("key points: one", format!("{P} one")),
            ("mind the token budget", format!("mind the {P}")),
            ("the monkey ate", "the monkey ate".to_owned()),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "input {input:?}");
        }
        assert_eq!(
            redact(&json!({"content": "key points"})),
            json!({"content": P})
        );
    }

    #[test]
    fn remove_secret_values_covers_compound_secret_field_suffixes() {
        let cases = [
            ("X-Session-Token", true),
            ("service_api_key", true),
            ("client-secret", true),
            ("database_password", true),
            ("refreshToken", true),
            ("accessToken", true),
            ("clientSecret", true),
            ("privateKey", true),
            ("apiKey", true),
            ("APIKey", true),
            ("X-Api-Key", true),
            ("x-goog-api-key", true),
            ("Set-Cookie", true),
            ("Proxy-Authorization", true),
            ("session_key", true),
            ("SECRET", true),
            ("api_key\n", true),
            ("token_count", false),
            ("tokenCount", false),
            ("monkey", false),
            ("tokens", false),
            ("keyboard", false),
            ("passwords", false),
            ("secretary", false),
            ("X-Trace", false),
            ("content", false),
        ];
        for (key, secret) in cases {
            assert_eq!(is_secret_key(key), secret, "key {key:?}");
        }
        let redacted = redact(&json!({"privateKey": "abc", "tokenCount": 12, "monkey": "m"}));
        assert_eq!(
            redacted,
            json!({"privateKey": P, "tokenCount": 12, "monkey": "m"})
        );
    }

    #[test]
    fn normalisation_splits_camel_case_at_ascii_boundaries_only() {
        let cases = [
            ("refreshToken", "refresh-token"),
            ("APIKey", "apikey"),
            ("v2Key", "v2-key"),
            ("X-Session-Token", "x-session-token"),
            ("éToken", "étoken"),
        ];
        for (key, expected) in cases {
            assert_eq!(normalise_key(key), expected, "key {key:?}");
        }
    }
}
