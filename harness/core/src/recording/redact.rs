//! Secret redaction (`docs/recording-format.md` §6), applied to every request and event before it
//! is written, and to every incoming request before replay compares it.
//!
//! Two rules: a value under a secret-looking key is replaced whole ([`is_secret_key`]), and every
//! string has four fixed credential patterns rewritten ([`redact_text`]). There is no entropy
//! rule, on purpose: it would rewrite ordinary prompts and break replay. Redaction cannot be
//! switched off. Pattern 1 (a scheme or secret word, then a value) removes the value only when
//! it is credential-shaped ([`credential_shaped`]): `Bearer sk-…`, `token: 8f3a…`, `api_key=…`
//! go, while prose such as `Token limit reached` or `key points` stays as it was written.
//!
//! A writer that holds the secret itself (the recording proxy holds its API key) also removes
//! that value, whatever its shape, with [`KnownSecrets`]: the patterns catch `sk-…` keys, not a
//! 32-hex Azure key or a `gsk_…` key an upstream echoes back (issue 34, finding 6).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// What a redacted secret is replaced with.
pub const PLACEHOLDER: &str = "[secret removed]";

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
        r"(?i)\b((?:bearer|basic|bot|token|key|api[_-]?key|access[_-]?token|secret|password|signature|credential)(?:\s*[:=]\s*|\s+))([\w.:\-~+/]+=*)",
        r"\bsk-[A-Za-z0-9_\-]{8,}",
        r"(?i)([?&](?:api[_-]?key|key|access[_-]?token|auth[_-]?token|token|auth|secret|client[_-]?secret|password|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&\s]+",
        r"(?i)(https?://)[^/@\s]+:[^/@\s]+@",
    ]
    .map(|pattern| Regex::new(pattern).expect("redaction pattern compiles"))
});

/// The index of the pattern whose group 1 is the value to check, not a prefix to keep.
const SCHEME_PATTERN: usize = 0;

/// Whether the value after a scheme or secret word (pattern 1) looks like a credential rather
/// than a word of prose (§6.4): at least 4 characters (a closing `.`, `,`, `:`, `;`, `!`, `?` or
/// `)` not counted) holding a digit or one of `~+/=`, or at least 16 characters that are not all
/// lower-case letters and hyphens. `sk-abcdefgh12`, `dXNlcjpwYXNz==`, `xyz789` and
/// `abcdEFGHijklMNOPqrst` are credentials; `limit`, `points.`, `budget`, `step-by-step` and
/// `internationalization` are not.
fn credential_shaped(value: &str) -> bool {
    let core = value.trim_end_matches(['.', ',', ':', ';', '!', '?', ')']);
    let long_and_mixed =
        core.chars().count() >= 16 && !core.chars().all(|c| c.is_lowercase() || c == '-');
    core.chars().count() >= 4
        && (core.chars().any(|c| c.is_ascii_digit())
            || core.contains(['~', '+', '/', '='])
            || long_and_mixed)
}

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
/// Pattern 1's match is replaced only when its value is `credential_shaped`. For each match of
/// the others: when the pattern has a capture group and group 1 starts with `http`, it
/// becomes group 1 + placeholder + `@`; with any other group 1, group 1 + placeholder; without a
/// group, the placeholder alone. Like the reference, `starts with http` is case-sensitive, so
/// `HTTPS://u:p@h` becomes `HTTPS://[secret removed]h` (still redacted, the `@` is lost).
pub fn redact_text(text: &str) -> String {
    let mut current = Cow::Borrowed(text);
    for (index, pattern) in VALUE_PATTERNS.iter().enumerate() {
        let replaced = if index == SCHEME_PATTERN {
            pattern.replace_all(&current, scheme_replacement)
        } else {
            pattern.replace_all(&current, |caps: &Captures<'_>| replacement(caps, &current))
        };
        if let Cow::Owned(replaced) = replaced {
            current = Cow::Owned(replaced);
        }
    }
    current.into_owned()
}

/// Pattern 1: when the value (group 2) is credential-shaped, an assignment (`token: …`,
/// `api_key=…`) keeps its name and separator (group 1) before the placeholder, and a scheme and
/// its credential (`Bearer …`) become the placeholder together; any other match stays as it is.
fn scheme_replacement(caps: &Captures<'_>) -> String {
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let (Some(name), Some(value)) = (caps.get(1), caps.get(2)) else {
        return whole.to_owned();
    };
    if !credential_shaped(value.as_str()) {
        return whole.to_owned();
    }
    if name.as_str().contains([':', '=']) {
        format!("{}{PLACEHOLDER}", name.as_str())
    } else {
        PLACEHOLDER.to_owned()
    }
}

fn replacement(caps: &Captures<'_>, text: &str) -> String {
    // A value pattern 1 already replaced (`?api_key=[secret removed]`) is left alone.
    let whole = caps.get(0).map_or("", |m| m.as_str());
    let value_start = match (caps.get(1), caps.get(0)) {
        (Some(prefix), _) => prefix.end(),
        (None, Some(whole)) => whole.start(),
        (None, None) => 0,
    };
    if text[value_start..].starts_with(PLACEHOLDER) {
        return whole.to_owned();
    }
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
    fn prose_that_is_not_a_credential_stays_as_written() {
        let cases = [
            "Token limit reached",
            "Summarise the key points.",
            "key points: one",
            "mind the token budget",
            "the bearer of bad news",
            "a key step-by-step guide",
            "the key internationalization rule",
            "the secret ingredient",
            "password reset link",
            "the monkey ate",
            "max_tokens is 4096 and the token count is low",
        ];
        for input in cases {
            assert_eq!(redact_text(input), input, "input {input:?}");
        }
        assert_eq!(
            redact(&json!({"content": "Token limit reached"})),
            json!({"content": "Token limit reached"})
        );
    }

    #[test]
    fn credential_shaped_values_after_a_scheme_or_secret_word_are_removed() {
        let cases = [
            ("Bearer sk-abcdefgh12345678", P.to_owned()),
            ("token: abcdEFGH1234ijklMNOP", format!("token: {P}")),
            ("token=abcdEFGHijklMNOPqrst", format!("token={P}")),
            ("api_key=k3y-value-42", format!("api_key={P}")),
            ("API-KEY: 0123456789abcdef", format!("API-KEY: {P}")),
            (
                "access_token = ya29.a0AfH6SM",
                format!("access_token = {P}"),
            ),
            ("password: hunter2", format!("password: {P}")),
            ("secret=s3cr3t!", format!("secret={P}!")),
            ("set key abcd1234. then", format!("set {P} then")),
            (
                "error: Bearer eyJhbGciOiJIUzI1NiJ9 rejected",
                format!("error: {P} rejected"),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "input {input:?}");
        }
    }

    /// A SigV4 `Authorization` value that reached a string: the credential scope and the
    /// signature go; the word "signature" in prose stays.
    #[test]
    fn a_sigv4_authorization_loses_its_credential_and_signature() {
        let header = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260517/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";
        let redacted = redact_text(header);
        for secret in ["AKIDEXAMPLE", "5d672d79c15b"] {
            assert!(!redacted.contains(secret), "{redacted}");
        }
        assert_eq!(
            redact_text("a signature delta arrived"),
            "a signature delta arrived"
        );
    }

    #[test]
    fn query_string_credentials_are_removed_and_their_names_kept() {
        let cases = [
            ("https://h/v1?key=AIzaSyExample", "?key="),
            ("https://h/v1?x=1&key=AIzaSyExample", "&key="),
            ("https://h/?auth=abc", "?auth="),
            ("https://h/?auth_token=abc", "?auth_token="),
            ("https://h/?client_secret=abc", "?client_secret="),
            ("https://h/?sig=abc&x=1", "?sig="),
            ("https://h/?signature=abc", "?signature="),
            ("https://h/?password=abc", "?password="),
            ("https://h/?X-Amz-Signature=abc&x=1", "?X-Amz-Signature="),
            ("https://h/?a=1&X-Amz-Credential=abc", "&X-Amz-Credential="),
            (
                "https://h/?X-Amz-Security-Token=abc",
                "?X-Amz-Security-Token=",
            ),
        ];
        for (input, name) in cases {
            let redacted = redact_text(input);
            assert!(
                redacted.contains(&format!("{name}{P}"))
                    && !redacted.contains("abc")
                    && !redacted.contains("AIza"),
                "input {input:?}: {redacted}"
            );
        }
        assert_eq!(redact_text("https://h/?monkey=1"), "https://h/?monkey=1");
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

/// The shortest secret [`KnownSecrets`] removes: a shorter value would rewrite ordinary text,
/// and no real API key is that short.
pub const MIN_KNOWN_SECRET_LEN: usize = 8;

/// Literal secrets a writer holds (the recording proxy's API key), removed wherever they appear
/// in a string, with their obvious encodings (`docs/recording-format.md` §6.5): the value
/// itself, JSON-escaped, percent-encoded (upper- and lower-case hex, every non-alphanumeric
/// byte or only the reserved ones), and base64 (standard and URL-safe, at each of the three
/// alignments it can have inside a longer base64 text, such as `Basic` credentials). Applied on
/// top of the patterns. `Debug` shows how many forms it holds, never one.
#[derive(Clone, Default)]
pub struct KnownSecrets {
    /// Every form, longest first, so a longer form is replaced before a shorter one inside it.
    forms: Vec<String>,
}

impl std::fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KnownSecrets({} forms)", self.forms.len())
    }
}

/// The bytes left as they are when only reserved characters are percent-encoded (RFC 3986's
/// unreserved set).
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl KnownSecrets {
    /// The forms of every secret of at least [`MIN_KNOWN_SECRET_LEN`] bytes (after trimming).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> KnownSecrets {
        use base64::Engine;
        use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
        let mut forms: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.trim();
            if secret.len() < MIN_KNOWN_SECRET_LEN {
                continue;
            }
            forms.push(secret.to_owned());
            if let Ok(quoted) = serde_json::to_string(secret) {
                forms.push(quoted[1..quoted.len() - 1].to_owned());
            }
            for set in [percent_encoding::NON_ALPHANUMERIC, RESERVED] {
                let encoded = percent_encoding::utf8_percent_encode(secret, set).to_string();
                forms.push(lower_hex_escapes(&encoded));
                forms.push(encoded);
            }
            for offset in 0..3usize {
                let mut bytes = vec![0u8; offset];
                bytes.extend_from_slice(secret.as_bytes());
                // The characters that depend on the secret's bytes alone.
                let start = (offset * 8).div_ceil(6);
                let end = (bytes.len() * 8) / 6;
                for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
                    let encoded = engine.encode(&bytes);
                    if let Some(part) = encoded.get(start..end) {
                        forms.push(part.to_owned());
                    }
                }
            }
        }
        forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
        forms.dedup();
        forms.retain(|form| form.len() >= MIN_KNOWN_SECRET_LEN);
        KnownSecrets { forms }
    }

    /// Whether it holds no secret.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every form of every secret replaced by the placeholder, then the patterns
    /// ([`redact_text`]).
    pub fn redact_text(&self, text: &str) -> String {
        redact_text(&self.remove(text))
    }

    /// `value` redacted as [`redact`] does, every string (and object key) first rid of every
    /// form of every secret.
    pub fn redact(&self, value: &Value) -> Value {
        redact(&self.remove_in(value))
    }

    /// The length of the longest form, in bytes (0 with no secret): the most a form split over
    /// a stream's pieces can leave in the last of them.
    pub fn longest_form(&self) -> usize {
        self.forms.first().map_or(0, String::len)
    }

    /// How many bytes at the end of `text` could be the start of a form (the longest suffix of
    /// `text` that is a proper prefix of a form; 0 when none is): what a stream must hold back
    /// until its next piece says whether a form goes on there.
    pub fn open_form_tail(&self, text: &str) -> usize {
        self.forms
            .iter()
            .filter_map(|form| {
                (1..form.len().min(text.len() + 1))
                    .rev()
                    .find(|&len| form.is_char_boundary(len) && text.ends_with(&form[..len]))
            })
            .max()
            .unwrap_or(0)
    }

    /// `text` with every form of every secret replaced by the placeholder (without the
    /// patterns).
    pub fn remove_forms(&self, text: &str) -> String {
        self.remove(text)
    }

    /// Whether `text` holds a form of a secret.
    pub(crate) fn found(&self, text: &str) -> bool {
        self.forms.iter().any(|form| text.contains(form.as_str()))
    }

    fn remove(&self, text: &str) -> String {
        let mut text = Cow::Borrowed(text);
        for form in &self.forms {
            if text.contains(form.as_str()) {
                text = Cow::Owned(text.replace(form.as_str(), PLACEHOLDER));
            }
        }
        text.into_owned()
    }

    fn remove_in(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| (self.remove(key), self.remove_in(item)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.remove_in(i)).collect()),
            Value::String(text) => Value::String(self.remove(text)),
            other => other.clone(),
        }
    }
}

/// `%2F` → `%2f`: the same encoding with lower-case hex.
fn lower_hex_escapes(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            for _ in 0..2 {
                if let Some(hex) = chars.next() {
                    out.push(hex.to_ascii_lowercase());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod known_secret_tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    #[test]
    fn a_known_secret_goes_in_every_obvious_encoding_and_nothing_else_does() {
        let azure = "0123456789abcdef0123456789abcdef";
        let groq = "gsk_AbCdEf0123456789/+=GhIjKlMnOpQrStUvWxYz01234567";
        let secrets = KnownSecrets::new([azure, groq, "short"]);
        for key in [azure, groq] {
            let cases = [
                key.to_owned(),
                serde_json::to_string(key).unwrap(),
                percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC)
                    .to_string(),
                lower_hex_escapes(
                    &percent_encoding::utf8_percent_encode(key, RESERVED).to_string(),
                ),
                STANDARD.encode(key),
                URL_SAFE.encode(key),
                STANDARD.encode(format!("user:{key}")),
                STANDARD.encode(format!("ab{key}cd")),
            ];
            for encoded in cases {
                let text = format!("the upstream said {encoded} back");
                let redacted = secrets.redact_text(&text);
                assert!(redacted.contains(PLACEHOLDER), "{encoded}: {redacted}");
                assert!(!redacted.contains(key), "{encoded}: {redacted}");
                assert!(
                    !redacted.contains(&STANDARD.encode(key)[..20]),
                    "{encoded}: {redacted}"
                );
            }
        }
        let value =
            serde_json::json!({"arguments": format!("{{\"k\": \"{azure}\"}}"), azure: [groq]});
        let shown = secrets.redact(&value).to_string();
        assert!(!shown.contains(azure) && !shown.contains(groq), "{shown}");
        // A secret too short to tell from text is not a known secret; prose stays.
        assert_eq!(secrets.redact_text("short and sweet"), "short and sweet");
        assert!(!format!("{secrets:?}").contains("gsk_"));
    }
}
