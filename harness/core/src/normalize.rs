//! The volatile-text normaliser of the replay key (`docs/replay-and-fixtures.md` §4.3 and §4.4).
//!
//! Recorded and replayed conversations differ in ids, timestamps, temporary paths and
//! per-request reminder blocks; [`normalize`] rewrites those to fixed placeholders so both sides
//! hash the same. The eight rules run in a fixed order, each on the previous one's output, and
//! are translated from DeerFlow's Python patterns with the two Rust differences §4.4 names:
//! `(?s)`/`(?m)` flags inline, and `[\s\x1C-\x1F]` wherever Python's `\s` matters, because
//! Python's `\s` also matches U+001C..U+001F and Rust's does not.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// One normalisation rule: a compiled pattern and its replacement.
struct Rule {
    pattern: Regex,
    replacement: &'static str,
}

/// The eight rules of §4.3, in order. Compiled once per process; immutable afterwards.
static RULES: LazyLock<[Rule; 8]> = LazyLock::new(|| {
    let rule = |pattern: &str, replacement: &'static str| Rule {
        // The patterns are constants covered by the unit tests, so a failure here is a bug.
        pattern: Regex::new(pattern).expect("normalisation pattern compiles"),
        replacement,
    };
    [
        // 1. System reminder blocks: DOTALL and lazy, so each block is removed on its own.
        rule(r"(?s)<system-reminder>.*?</system-reminder>", ""),
        // 2. The empty role line left behind once a reminder is removed. `\s*` may cross
        //    newlines, exactly as in Python (§4.4's "Assistant: \n\nReturn" example).
        rule(r"(?m)^(User|Assistant):[\s\x1C-\x1F]*$\n?", ""),
        // 3. and 4. The input-sanitisation wrapper.
        rule(r"--- BEGIN USER INPUT ---\n?", ""),
        rule(r"\n?--- END USER INPUT ---", ""),
        // 5. UUIDs, before timestamps and dates so their digit groups are not taken first.
        rule(
            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            "<UUID>",
        ),
        // 6. ISO timestamps, before bare dates so they do not become `<DATE>T...`.
        rule(
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
            "<TS>",
        ),
        // 7. Dates.
        rule(r"\d{4}-\d{2}-\d{2}", "<DATE>"),
        // 8. Temporary paths on macOS and Linux, up to whitespace or a quote (in JSON text the
        //    closing `"` ends the path).
        rule(
            r#"(?:/private)?/(?:var/folders|tmp)/[^\s\x1C-\x1F"']*"#,
            "<PATH>",
        ),
    ]
});

/// Applies DeerFlow's eight normalisation rules, in order, to `text`.
///
/// Removes `<system-reminder>` blocks, empty `User:`/`Assistant:` lines and the
/// `--- BEGIN/END USER INPUT ---` wrapper, then replaces UUIDs with `<UUID>`, ISO timestamps with
/// `<TS>`, dates with `<DATE>` and `/tmp/...`, `/var/folders/...` paths with `<PATH>`.
pub fn normalize(text: &str) -> String {
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    for rule in RULES.iter() {
        // `replace_all` borrows when nothing matches, so clean text is never copied per rule.
        if let Cow::Owned(replaced) = rule.pattern.replace_all(&current, rule.replacement) {
            current = Cow::Owned(replaced);
        }
    }
    current.into_owned()
}

/// True for the characters Python's `str.strip()` and `\s` treat as whitespace: Unicode
/// White_Space plus the information separators U+001C..U+001F.
pub(crate) fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument: trims [`is_python_whitespace`] characters from both
/// ends.
pub(crate) fn python_strip(text: &str) -> &str {
    text.trim_matches(is_python_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_in_order() {
        let cases: &[(&str, &str, &str)] = &[
            ("unchanged", "plain text", "plain text"),
            (
                "rule 1 spans lines, lazily",
                "a<system-reminder>x\ny</system-reminder>b<system-reminder>z</system-reminder>c",
                "abc",
            ),
            (
                "rule 1 unclosed block stays",
                "<system-reminder>open",
                "<system-reminder>open",
            ),
            ("rule 2 empty role line", "User:   \nhello", "hello"),
            (
                "rule 2 spec example: \\s* crosses the newline",
                "Assistant: \n\nReturn",
                "Return",
            ),
            (
                "rule 2 only at line start",
                "x User:\nhello",
                "x User:\nhello",
            ),
            (
                "rule 2 needs an empty rest",
                "User: hi\nnext",
                "User: hi\nnext",
            ),
            ("rule 2 at end of text", "before\nAssistant:", "before\n"),
            (
                "rule 1 then 2: reminder leaves an empty role line",
                "User: <system-reminder>today</system-reminder>\nQuestion",
                "Question",
            ),
            (
                "rules 3 and 4 wrapper",
                "--- BEGIN USER INPUT ---\nhello\n--- END USER INPUT ---",
                "hello",
            ),
            (
                "rules 3 and 4 without newlines",
                "--- BEGIN USER INPUT ---hello--- END USER INPUT ---",
                "hello",
            ),
            (
                "rule 5 uuid, any case",
                "id 123e4567-E89B-12d3-a456-426614174000 end",
                "id <UUID> end",
            ),
            (
                "rule 6 timestamp with zone",
                "at 2026-01-01T10:20:30Z.",
                "at <TS>.",
            ),
            (
                "rule 6 fraction and offset",
                "2026-01-01 10:20:30.123456+05:30|2026-01-01T10:20:30-0700",
                "<TS>|<TS>",
            ),
            (
                "rule 7 date",
                "on 2026-05-17 and 1999-12-31",
                "on <DATE> and <DATE>",
            ),
            (
                "order UUID -> TS -> DATE",
                "2026-01-02T03:04:05 2026-01-02 12345678-1234-1234-1234-123456789abc",
                "<TS> <DATE> <UUID>",
            ),
            (
                "rule 6 before 7: a timestamp is not split into a date",
                "2026-01-02T03:04:05+01:00",
                "<TS>",
            ),
            ("rule 8 /tmp", "open /tmp/x please", "open <PATH> please"),
            (
                "rule 8 macOS folders",
                "see /private/var/folders/ab/cd_ef/T/tmpq1 now",
                "see <PATH> now",
            ),
            ("rule 8 /var/folders", "/var/folders/x/y", "<PATH>"),
            (
                "rule 8 stops at a double quote",
                r#"{"path": "/tmp/abc/d.txt", "x": 1}"#,
                r#"{"path": "<PATH>", "x": 1}"#,
            ),
            ("rule 8 stops at a single quote", "'/tmp/a b'", "'<PATH> b'"),
            ("rule 8 stops at a newline", "/tmp/a\nnext", "<PATH>\nnext"),
            ("rule 8 stops at U+001C", "/tmp/a\u{1c}b", "<PATH>\u{1c}b"),
            ("rule 8 stops at NBSP", "/tmp/a\u{a0}b", "<PATH>\u{a0}b"),
            ("rule 8 needs the slash after tmp", "/tmpfile", "/tmpfile"),
            ("rule 2 accepts U+001C as whitespace", "User:\u{1c}\nx", "x"),
            (
                "rule 8 other roots untouched",
                "/mnt/user-data/outputs/x",
                "/mnt/user-data/outputs/x",
            ),
        ];
        for &(name, input, expected) in cases {
            assert_eq!(normalize(input), expected, "{name}");
        }
    }

    #[test]
    fn python_strip_uses_pythons_whitespace_set() {
        let cases: &[(&str, &str)] = &[
            ("  a b  ", "a b"),
            ("\n\t\r\u{b}\u{c}x", "x"),
            ("\u{1c}\u{1d}\u{1e}\u{1f}x\u{1f}", "x"),
            ("\u{a0}\u{2028}\u{3000}x\u{85}", "x"),
            // Zero-width space is not whitespace in Python either.
            ("\u{200b}x", "\u{200b}x"),
            ("", ""),
            (" \u{1c} ", ""),
        ];
        for &(input, expected) in cases {
            assert_eq!(python_strip(input), expected, "input {input:?}");
        }
    }
}
