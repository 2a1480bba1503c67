//! The `read_file` tool (`docs/gateway-contract.md` §8.3): a sandbox file's raw UTF-8 text, whole
//! or a 1-based inclusive line range, with host paths in it translated back to virtual paths.
//!
//! Order of checks (DeerFlow's): the range arguments first (`(start_line must be >= 1)`,
//! `(end_line must be >= 1)`, `(start_line > end_line — no lines in range)`), then the path, then
//! the read. A `start_line` past the last line (and above 1) gives
//! `(start_line exceeds file length)`; a read that yields no text otherwise gives `(empty)` (an
//! empty file, or a range that is one blank line).
//!
//! Lines are the pieces between `\n`s; a final `\n` ends the last line rather than starting an
//! empty one. A ranged read returns the chosen lines joined with `\n` (without the final line's
//! terminator); `\r` stays part of its line, so the text is otherwise raw. An `end_line` past the
//! end is clamped.
//!
//! Every successful read of the file (whatever the range) records its current version in the
//! [`ReadTracker`](super::ReadTracker), which is what `write_file`'s read-before-write gate checks.

use std::io::{self, Read as _};
use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::{file_tool_parameters, optional_integer, required_path};
use super::beneath::Access;
use super::output::{describe_io_error, finish, truncate_head};
use super::paths::PathError;
use super::read_tracker::content_version;
use super::tool_meta::{READ_MARK_KEY, ToolOutput, read_mark};
use super::{SandboxPaths, Tool, ToolContext};
use crate::models::ToolSpec;

/// Output longer than this many characters is truncated.
const MAX_READ_CHARS: usize = 50_000;
const TRUNCATION_HINT: &str = "Use start_line/end_line to read a specific range";

/// `read_file`: reads a sandbox text file.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFileTool;

#[async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".to_string(),
            description: "Read the contents of a UTF-8 text file, whole or a range of lines. \
                Use this to examine source code, configuration files, logs, or any text-based \
                file. Binary files (spreadsheets, PDFs, images) cannot be read this way."
                .to_string(),
            parameters: file_tool_parameters(
                "Explain why you are reading this file in short words.",
                "The **absolute** path to the file to read, e.g. /mnt/user-data/uploads/report.md.",
                vec![
                    (
                        "start_line",
                        json!({
                            "type": "integer",
                            "minimum": 1,
                            "description": "Optional first line to read, 1-based and inclusive. Omit to start at the beginning."
                        }),
                    ),
                    (
                        "end_line",
                        json!({
                            "type": "integer",
                            "minimum": 1,
                            "description": "Optional last line to read, 1-based and inclusive. Omit to read to the end."
                        }),
                    ),
                ],
                &[],
            ),
        }
    }

    async fn call(&self, args: &Value, context: ToolContext<'_>) -> String {
        self.run(args, context).await.text
    }

    /// The read's text and, for a successful read, its `deerflow_read_mark`: the path read and
    /// the version of the whole file, the one the read-before-write gate checks
    /// (`docs/gateway-contract.md` §6.4).
    async fn run(&self, args: &Value, context: ToolContext<'_>) -> ToolOutput {
        let path = match required_path(args) {
            Ok(path) => path.to_string(),
            Err(error) => return ToolOutput::text(error),
        };
        let range = match LineRange::from_args(args) {
            Ok(range) => range,
            Err(text) => return ToolOutput::text(text),
        };
        let paths = context.paths.clone();
        let outcome = tokio::task::spawn_blocking({
            let path = path.clone();
            move || read(&paths, &path, range)
        })
        .await;
        match outcome {
            Ok(Ok(read)) => {
                let mut output = ToolOutput::text(finish(read.text));
                if read.marked {
                    let mark = read_mark(&path, &read.version);
                    output.additional_kwargs.insert(READ_MARK_KEY.into(), mark);
                }
                // Recorded here, not in the blocking task, because the tracker is borrowed.
                context.reads.record(read.host, read.version);
                output
            }
            Ok(Err(text)) => ToolOutput::text(finish(text)),
            Err(join_error) => ToolOutput::text(finish(format!(
                "Error: Unexpected error reading file: JoinError: {join_error}"
            ))),
        }
    }
}

/// The requested lines, already checked against each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineRange {
    start_line: Option<i64>,
    end_line: Option<i64>,
}

impl LineRange {
    /// Parses and checks `start_line` and `end_line`. `Err` is the finished tool text: an
    /// argument error, or one of the contract's range messages.
    fn from_args(args: &Value) -> Result<LineRange, String> {
        let start_line = optional_integer(args, "start_line")?;
        let end_line = optional_integer(args, "end_line")?;
        if start_line.is_some_and(|start| start < 1) {
            return Err("(start_line must be >= 1)".to_string());
        }
        if end_line.is_some_and(|end| end < 1) {
            return Err("(end_line must be >= 1)".to_string());
        }
        if let Some(end) = end_line
            && start_line.unwrap_or(1) > end
        {
            return Err("(start_line > end_line — no lines in range)".to_string());
        }
        Ok(LineRange {
            start_line,
            end_line,
        })
    }

    /// The text of the range, or all of it when no range was asked for. `None` when the range
    /// starts past the last line (and past line 1: an empty file read from line 1 is just empty).
    fn select(self, text: &str) -> Option<String> {
        if self.start_line.is_none() && self.end_line.is_none() {
            return Some(text.to_string());
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        let line_count = if text.is_empty() {
            0
        } else {
            body.split('\n').count()
        };
        // Both bounds are >= 1 here (checked in `from_args`); saturate the conversion for huge
        // values on small targets.
        let start = usize::try_from(self.start_line.unwrap_or(1)).unwrap_or(usize::MAX);
        if start > line_count {
            return (start == 1).then(String::new);
        }
        let take = match self.end_line {
            Some(end) => usize::try_from(end)
                .unwrap_or(usize::MAX)
                .saturating_sub(start - 1),
            None => usize::MAX,
        };
        Some(
            body.split('\n')
                .skip(start - 1)
                .take(take)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

/// A successful read: the text for the model and the version to record.
#[derive(Debug)]
struct Read {
    text: String,
    host: PathBuf,
    version: String,
    /// Whether the read earns a read mark: the model was shown file content (an empty file
    /// counts; a start past the end does not), and the file does not read as an `Error:` text.
    marked: bool,
}

/// The whole read, blocking. `Err` is the finished error text.
fn read(paths: &SandboxPaths, path: &str, range: LineRange) -> Result<Read, String> {
    let denied = || format!("Error: Permission denied reading file: {path}");
    let from_io = |error: &io::Error| match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
            format!("Error: File not found: {path}")
        }
        io::ErrorKind::PermissionDenied => denied(),
        io::ErrorKind::IsADirectory => format!("Error: Path is a directory, not a file: {path}"),
        _ => format!(
            "Error: Unexpected error reading file: {}",
            describe_io_error(error)
        ),
    };

    let refused = |error: PathError| match error {
        PathError::Denied | PathError::HardLinked => denied(),
        PathError::NotRegularFile => format!("{} (not a regular file)", denied()),
        PathError::Io(error) => from_io(&error),
    };
    let confined = paths.confine(path, false, false).map_err(refused)?;
    let mut file = confined.open_file(Access::Read).map_err(refused)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| from_io(&error))?;
    let resolved = confined.resolved;
    let version = content_version(&bytes);
    let binary = || {
        format!(
            "Error: cannot read '{path}' as text — it appears to be a binary file (e.g. .xlsx, \
             .pdf, or an image). read_file only supports UTF-8 text. Use bash with a suitable \
             library instead (pandas/openpyxl for spreadsheets), or view_image for images."
        )
    };
    // NUL never occurs in text files but is common in binary ones that happen to be valid UTF-8.
    if bytes.contains(&0) {
        return Err(binary());
    }
    let full = String::from_utf8(bytes).map_err(|_| binary())?;

    let selected = range.select(&full);
    let marked = selected.is_some() && !full.starts_with("Error:");
    let text = match selected {
        None => "(start_line exceeds file length)".to_string(),
        Some(selected) if selected.is_empty() => "(empty)".to_string(),
        Some(selected) => truncate_head(
            paths.host_to_virtual_text(&selected),
            MAX_READ_CHARS,
            TRUNCATION_HINT,
        ),
    };
    Ok(Read {
        text,
        host: resolved.host,
        version,
        marked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_arguments_table() {
        let cases: &[(Value, Result<LineRange, &str>)] = &[
            (
                json!({}),
                Ok(LineRange {
                    start_line: None,
                    end_line: None,
                }),
            ),
            (
                json!({"start_line": 2, "end_line": 2}),
                Ok(LineRange {
                    start_line: Some(2),
                    end_line: Some(2),
                }),
            ),
            (json!({"start_line": 0}), Err("(start_line must be >= 1)")),
            (
                json!({"start_line": -1, "end_line": 0}),
                Err("(start_line must be >= 1)"),
            ),
            (json!({"end_line": 0}), Err("(end_line must be >= 1)")),
            (
                json!({"start_line": 3, "end_line": 2}),
                Err("(start_line > end_line \u{2014} no lines in range)"),
            ),
        ];
        for (args, expected) in cases {
            let expected = expected.map_err(str::to_string);
            assert_eq!(LineRange::from_args(args), expected, "args {args}");
        }
    }

    #[test]
    fn line_selection_table() {
        let range = |start_line, end_line| LineRange {
            start_line,
            end_line,
        };
        let cases: &[(&str, LineRange, Option<&str>)] = &[
            ("a\nb\nc\n", range(None, None), Some("a\nb\nc\n")),
            ("", range(None, None), Some("")),
            ("a\nb\nc\n", range(Some(1), Some(1)), Some("a")),
            ("a\nb\nc\n", range(Some(2), None), Some("b\nc")),
            ("a\nb\nc", range(Some(2), Some(3)), Some("b\nc")),
            ("a\nb\nc", range(None, Some(2)), Some("a\nb")),
            ("a\nb\nc", range(Some(2), Some(99)), Some("b\nc")),
            ("a\nb\nc\n", range(Some(3), None), Some("c")),
            ("a\nb\nc\n", range(Some(4), None), None),
            ("a\n\nc\n", range(Some(2), Some(2)), Some("")),
            ("a\r\nb\r\n", range(Some(1), Some(1)), Some("a\r")),
            ("", range(Some(1), None), Some("")),
            ("", range(Some(2), None), None),
            ("\n", range(Some(1), None), Some("")),
            ("\n", range(Some(2), None), None),
            ("x", range(Some(i64::MAX), None), None),
            ("x", range(Some(1), Some(i64::MAX)), Some("x")),
        ];
        for (text, range, expected) in cases {
            assert_eq!(
                range.select(text).as_deref(),
                *expected,
                "{text:?} {range:?}"
            );
        }
    }
}
