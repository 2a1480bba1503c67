//! Everything the commands print goes through here (issue 34, findings 15 and 21):
//!
//! - control characters are escaped, so a fixture's fields or a file name from a pull request
//!   cannot move the cursor, recolour or retitle the terminal (`\u{1b}` for ESC; a line break
//!   is kept where the text is several lines, escaped where it is one field);
//! - a closed standard output (`keyless test --json | head -1`) is [`StdoutClosed`], an error
//!   the command stops on quietly, after stopping what it started, instead of a panic (as
//!   ripgrep does); a closed standard error is ignored;
//! - a golden's diff is coloured only where standard error is a terminal (issue 47): a CI log
//!   gets the plain diff, never escape codes.

use std::borrow::Cow;
use std::io::Write;

/// Standard output was closed by its reader: nobody reads what the command would print next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("standard output was closed")]
pub struct StdoutClosed;

/// `text` with every control character but line breaks and tabs escaped (`\u{1b}`).
pub fn printable(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// `text` with every control character escaped, line breaks included: one field on one line.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && !keep(c)) || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The Unicode controls that reorder what a terminal shows (a line that reads differently from
/// what it holds).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Prints `line` and a line break on standard output, escaped ([`printable`]).
pub fn out(line: impl AsRef<str>) -> Result<(), StdoutClosed> {
    write_out(&format!("{}\n", printable(line.as_ref())))
}

/// Prints `text` on standard output as it is (escaped), flushed, without a line break: a
/// question waiting for its answer.
pub fn prompt(text: impl AsRef<str>) -> Result<(), StdoutClosed> {
    write_out(&printable(text.as_ref()))
}

fn write_out(text: &str) -> Result<(), StdoutClosed> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        // Any failure to write standard output means nobody reads it (a closed pipe above all):
        // the command ends without printing more.
        Err(_) => Err(StdoutClosed),
    }
}

/// Prints `line` and a line break on standard error, escaped; a closed standard error is
/// ignored.
pub fn err(line: impl AsRef<str>) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{}", printable(line.as_ref()));
}

/// Prints a unified diff on standard error, each line escaped ([`printable`]), removed lines
/// red, added ones green and hunk headers cyan where standard error is a terminal (anstream
/// strips the styles anywhere else, and under `NO_COLOR`).
pub fn err_diff(diff: &str) {
    let mut stderr = anstream::AutoStream::auto(std::io::stderr().lock());
    let _ = stderr.write_all(styled_diff(diff).as_bytes());
}

/// `diff` escaped line by line, each line styled by its kind.
fn styled_diff(diff: &str) -> String {
    use anstyle::{AnsiColor, Style};
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.lines() {
        let style = if line.starts_with("@@") {
            Style::new().fg_color(Some(AnsiColor::Cyan.into()))
        } else if line.starts_with("---") || line.starts_with("+++") {
            Style::new().bold()
        } else if line.starts_with('-') {
            Style::new().fg_color(Some(AnsiColor::Red.into()))
        } else if line.starts_with('+') {
            Style::new().fg_color(Some(AnsiColor::Green.into()))
        } else {
            Style::new()
        };
        out.push_str(&format!("{style}{}{style:#}\n", one_line(line)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 47: a diff's lines are styled by kind, the styles are all that a plain stream
    /// strips, and an escape sequence inside the diff itself is escaped, never passed on.
    #[test]
    fn a_diff_is_styled_by_line_and_its_own_control_characters_are_escaped() {
        let diff = "--- golden/a.snap\n+++ golden/a.snap.new\n@@ -1,2 +1,2 @@\n   \"event\": \"x\",\n-  \"keys\": [\"a\"]\n+  \"keys\": [\"b\u{1b}[2J\"]\n";
        let styled = styled_diff(diff);
        assert!(
            styled.contains("\u{1b}[31m-  \"keys\": [\"a\"]"),
            "{styled:?}"
        );
        assert!(styled.contains("\u{1b}[32m+"), "{styled:?}");
        assert!(styled.contains("\u{1b}[36m@@"), "{styled:?}");
        let plain = anstream::adapter::strip_str(&styled).to_string();
        assert_eq!(
            plain,
            diff.replace('\u{1b}', "\\u{1b}"),
            "without styles, the diff as it is, its own ESC escaped"
        );
    }

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept_only_in_text() {
        let cases = [
            (
                "plain",
                "write_read_file",
                "write_read_file",
                "write_read_file",
            ),
            (
                "an escape sequence",
                "x\u{1b}[2Jy",
                "x\\u{1b}[2Jy",
                "x\\u{1b}[2Jy",
            ),
            ("a line break", "a\nb", "a\nb", "a\\u{a}b"),
            ("a carriage return", "a\rb", "a\\u{d}b", "a\\u{d}b"),
            (
                "a bidi override",
                "a\u{202e}b",
                "a\\u{202e}b",
                "a\\u{202e}b",
            ),
            ("not ASCII", "café ✓", "café ✓", "café ✓"),
        ];
        for (name, text, as_text, as_field) in cases {
            assert_eq!(printable(text), as_text, "{name}");
            assert_eq!(one_line(text), as_field, "{name}");
        }
    }
}
