//! The volatile-text normaliser of the replay key (`docs/replay-and-fixtures.md` §4.3 and §4.4).
//!
//! Recorded and replayed conversations differ in ids, timestamps, temporary paths and
//! per-request reminder blocks; [`normalize`] rewrites those to fixed placeholders so both sides
//! hash the same. The eight rules run in a fixed order, each on the previous one's output, and
//! are translated from DeerFlow's Python patterns with the two Rust differences §4.4 names:
//! `(?s)`/`(?m)` flags inline, and `[\s\x1C-\x1F]` wherever Python's `\s` matters, because
//! Python's `\s` also matches U+001C..U+001F and Rust's does not.

use std::sync::OnceLock;

use regex_automata::meta::Regex;

/// One normalisation rule: its pattern, compiled on first need in either of two forms, its
/// replacement, and the literals one of which a text must hold for the rule to match.
///
/// **Why not `regex::Regex::new` (issue 46).** Compiling the eight rules took about 1.8 ms, a
/// tenth of a whole Layer 1 test process. Three things made it slow, and each has an exact way
/// round:
/// - literal prefilters, which `regex` extracts and builds for every pattern: for `\d{4}-\d{2}`
///   that is a product of digit literals. The rules are compiled here without them
///   ([`compile`]); a rule that needs a literal says so in `needs_one_of`, and a text holding
///   none of them is not searched at all (nor is the rule compiled);
/// - Unicode classes: `\d` and `\s` match Unicode digits and white space, as in Python's `re`.
///   On a text with no non-ASCII digit or space (nearly every text), a Unicode class matches
///   exactly its ASCII members, so such a text is searched by the rule's ASCII form
///   ([`ascii_form`]), compiled in a twentieth of the time; the Unicode form is compiled only
///   for a text that needs it;
/// - a full DFA built ahead of the search: the lazy one is enough for texts of kilobytes.
struct Rule {
    pattern: &'static str,
    replacement: &'static str,
    /// A text the rule can match holds at least one of these (empty: no such literal).
    needs_one_of: &'static [&'static str],
    unicode: OnceLock<Regex>,
    ascii: OnceLock<Regex>,
}

impl Rule {
    const fn new(
        pattern: &'static str,
        replacement: &'static str,
        needs_one_of: &'static [&'static str],
    ) -> Rule {
        Rule {
            pattern,
            replacement,
            needs_one_of,
            unicode: OnceLock::new(),
            ascii: OnceLock::new(),
        }
    }

    /// Whether the rule may match `text`: false only when `text` lacks every needed literal.
    fn may_match(&self, text: &str) -> bool {
        self.needs_one_of.is_empty() || self.needs_one_of.iter().any(|l| text.contains(l))
    }

    /// The compiled form for a text: the ASCII one when [`has_unicode_class_member`] is false.
    fn regex(&self, ascii_will_do: bool) -> &Regex {
        if ascii_will_do {
            self.ascii
                .get_or_init(|| compile(&ascii_form(self.pattern)))
        } else {
            self.unicode.get_or_init(|| compile(self.pattern))
        }
    }

    /// `text` with every match replaced, as Python's `re.sub` (leftmost-first, non-overlapping);
    /// `None` when nothing matched, so clean text is never copied.
    fn replace_all(&self, text: &str, ascii_will_do: bool) -> Option<String> {
        if !self.may_match(text) {
            return None;
        }
        let mut replaced = String::new();
        let mut copied = 0;
        let mut matched = false;
        for found in self.regex(ascii_will_do).find_iter(text) {
            replaced.push_str(&text[copied..found.start()]);
            replaced.push_str(self.replacement);
            copied = found.end();
            matched = true;
        }
        if !matched {
            return None;
        }
        replaced.push_str(&text[copied..]);
        Some(replaced)
    }
}

/// A rule's pattern compiled with `regex`'s own engine, minus what only pays off on large
/// texts (see [`Rule`]).
fn compile(pattern: &str) -> Regex {
    let config = Regex::config().auto_prefilter(false).dfa(false);
    // The patterns are constants covered by the unit tests, so a failure here is a bug.
    Regex::builder()
        .configure(config)
        .build(pattern)
        .expect("normalisation pattern compiles")
}

/// The eight rules of §4.3, in order. Each form is compiled once per process, when first needed;
/// immutable afterwards.
static RULES: [Rule; 8] = [
    // 1. System reminder blocks: DOTALL and lazy, so each block is removed on its own.
    Rule::new(
        r"(?s)<system-reminder>.*?</system-reminder>",
        "",
        &["<system-reminder>"],
    ),
    // 2. The empty role line left behind once a reminder is removed. `\s*` may cross
    //    newlines, exactly as in Python (§4.4's "Assistant: \n\nReturn" example).
    Rule::new(
        r"(?m)^(User|Assistant):[\s\x1C-\x1F]*$\n?",
        "",
        &["User:", "Assistant:"],
    ),
    // 3. and 4. The input-sanitisation wrapper.
    Rule::new(
        r"--- BEGIN USER INPUT ---\n?",
        "",
        &["--- BEGIN USER INPUT ---"],
    ),
    Rule::new(
        r"\n?--- END USER INPUT ---",
        "",
        &["--- END USER INPUT ---"],
    ),
    // 5. UUIDs, before timestamps and dates so their digit groups are not taken first.
    Rule::new(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        "<UUID>",
        &["-"],
    ),
    // 6. ISO timestamps, before bare dates so they do not become `<DATE>T...`.
    Rule::new(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
        "<TS>",
        &["-"],
    ),
    // 7. Dates.
    Rule::new(r"\d{4}-\d{2}-\d{2}", "<DATE>", &["-"]),
    // 8. Temporary paths on macOS and Linux, up to whitespace or a quote (in JSON text the
    //    closing `"` ends the path).
    Rule::new(
        r#"(?:/private)?/(?:var/folders|tmp)/[^\s\x1C-\x1F"']*"#,
        "<PATH>",
        &["/tmp/", "/var/folders/"],
    ),
];

/// `pattern` with its Unicode classes cut to their ASCII members: `\d` becomes `[0-9]`, and
/// `\s` (always inside a bracketed class in [`RULES`]) becomes the six ASCII white-space
/// characters, which are exactly the ASCII members of Unicode's `White_Space`.
fn ascii_form(pattern: &str) -> String {
    pattern
        .replace(r"\d", "[0-9]")
        .replace(r"\s", r"\t\n\x0B\x0C\r ")
}

/// Whether `text` holds a non-ASCII character that a Unicode `\d` or `\s` might match. When it
/// holds none, every rule's ASCII form matches exactly what its Unicode form matches, on `text`
/// and on every rule's output (rules only remove text or insert ASCII). `is_numeric` is wider
/// than `\d` (it also takes `²` or `Ⅻ`), which only sends a few more texts the exact, slower way.
fn has_unicode_class_member(text: &str) -> bool {
    !text.is_ascii()
        && text
            .chars()
            .any(|c| !c.is_ascii() && (c.is_numeric() || c.is_whitespace()))
}

/// Applies DeerFlow's eight normalisation rules, in order, to `text`.
///
/// Removes `<system-reminder>` blocks, empty `User:`/`Assistant:` lines and the
/// `--- BEGIN/END USER INPUT ---` wrapper, then replaces UUIDs with `<UUID>`, ISO timestamps with
/// `<TS>`, dates with `<DATE>` and `/tmp/...`, `/var/folders/...` paths with `<PATH>`.
pub fn normalize(text: &str) -> String {
    let ascii_will_do = !has_unicode_class_member(text);
    let mut current = text.to_owned();
    for rule in &RULES {
        if let Some(replaced) = rule.replace_all(&current, ascii_will_do) {
            current = replaced;
        }
    }
    current
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
            (
                "rule 7 takes Unicode digits, as Python's \\d does",
                "on \u{662}\u{660}\u{662}\u{666}-\u{661}\u{662}-\u{660}\u{666}",
                "on <DATE>",
            ),
            (
                "rule 6 with full-width digits",
                "\u{ff12}\u{ff10}\u{ff12}\u{ff16}-01-02T03:04:05Z",
                "<TS>",
            ),
            ("rule 2 takes NBSP as whitespace", "User:\u{a0}\nx", "x"),
            (
                "rule 2 takes U+3000 as whitespace",
                "Assistant:\u{3000}\nx",
                "x",
            ),
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

    /// The rules as first written: `regex::Regex` with its defaults, Unicode classes, no literal
    /// guard. What [`normalize`] must equal on every text.
    fn normalize_as_first_written(text: &str) -> String {
        RULES.iter().fold(text.to_owned(), |current, rule| {
            regex::Regex::new(rule.pattern)
                .expect("compiles")
                .replace_all(&current, rule.replacement)
                .into_owned()
        })
    }

    /// Every shortcut of [`Rule`] (the ASCII forms, the literal guards, the engine without
    /// prefilters) is a shortcut, never a change: on texts with and without non-ASCII digits and
    /// spaces, and on every fixture of the workspace and its examples, [`normalize`] equals the
    /// rules as first written.
    #[test]
    fn the_shortcuts_change_no_output() {
        let mut texts: Vec<String> = [
            "User: \n2026-01-02T03:04:05Z /tmp/a b 12345678-1234-1234-1234-123456789abc",
            "Assistant:\t\x0b\x0c\r\n--- BEGIN USER INPUT ---\nhi\n--- END USER INPUT ---",
            "caf\u{e9} 2026-05-17 \u{4f60}\u{597d} /var/folders/x\u{e9}y",
            "\u{663}\u{663}\u{663}\u{663}-01-02 and 2026-01-02",
            "User:\u{2003}\n/tmp/a\u{2003}b 2026-01-02 10:20:30",
            "\u{b2}\u{b2}\u{b2}\u{b2}-12-12 \u{2162} <system-reminder>\u{3000}</system-reminder>",
        ]
        .map(String::from)
        .to_vec();
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let examples = std::fs::read_dir(workspace.join("examples")).expect("examples");
        let folders = examples
            .map(|entry| entry.expect("entry").path().join("fixtures"))
            .chain([workspace.join("fixtures")])
            .filter(|folder| folder.is_dir());
        for folder in folders {
            for entry in std::fs::read_dir(&folder).expect("fixtures folder") {
                let path = entry.expect("entry").path();
                if path.extension().is_some_and(|e| e == "json") {
                    texts.push(std::fs::read_to_string(&path).expect("fixture"));
                }
            }
        }
        assert!(texts.len() > 20, "the fixtures were found");
        for text in &texts {
            assert_eq!(
                normalize(text),
                normalize_as_first_written(text),
                "{text:.200}"
            );
        }
        assert!(!has_unicode_class_member(
            "caf\u{e9} \u{4f60}\u{597d} 2026-01-02"
        ));
        for text in ["\u{663}", "x\u{a0}y", "\u{3000}", "\u{ff11}", "\u{b2}"] {
            assert!(has_unicode_class_member(text), "{text:?}");
        }
        assert_eq!(
            ascii_form(r"^[\s\x1C]\d{2}$"),
            r"^[\t\n\x0B\x0C\r \x1C][0-9]{2}$"
        );
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
