//! The `write_file` tool (`docs/gateway-contract.md` §8.4): writes or appends text to a sandbox
//! file, creating missing parent folders, and returns exactly `OK`.
//!
//! Order of checks: arguments; the single-call size limit (non-append calls only, when
//! `write_file_max_bytes > 0`; counted in bytes of the content as the model sent it); the path;
//! a directory at the path; the read-before-write gate; for an append, the size of the resulting
//! file; the write.
//!
//! **Size limit.** `write_file_max_bytes` bounds the file `write_file` leaves behind, appends
//! included: an append that would make the file larger than the limit is refused with
//! `Error: write_file append would make <path> <n> bytes, over the <max>-byte file limit. …`
//! and changes nothing. `<n>` counts the bytes as stored (after the path rewriting below). The
//! check and the append happen on one open file, so a concurrent writer cannot slip between them.
//!
//! **Read-before-write.** When `read_before_write` is on, overwriting or appending to an existing
//! file is refused unless the [`ReadTracker`](super::ReadTracker) holds the file's current version
//! (the SHA-256 of its bytes now). Creating a new file is never blocked. Every write attempt then
//! forgets the file's read, even a failed one (it may have changed the file half-way), so the
//! agent must read again before its next modification. The check and the write are two steps on
//! the blocking pool; two concurrent writes of one file could both pass the gate, which only an
//! agent racing itself could cause.
//!
//! **Paths in content.** Virtual paths inside the content are stored as host paths, and
//! `read_file` translates them back, so the model sees what it wrote.
//!
//! **Size-limit message.** After the contract's fixed head
//! `… exceeds the <max>-byte single-call limit. Split the content into smaller pieces: ` comes
//! our instruction: since appends count towards the same limit, put the first piece in this file
//! and the rest in further files.

use std::io::{self, Read as _, Write};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::{file_tool_parameters, optional_bool, required_path, required_string};
use super::beneath::{Access, Confined};
use super::output::{describe_io_error, finish};
use super::paths::PathError;
use super::read_tracker::content_version;
use super::{SandboxPaths, Tool, ToolContext};
use crate::models::ToolSpec;

/// `write_file`: writes or appends a sandbox text file.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFileTool;

#[async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".to_string(),
            description: "Write text content to a file, creating missing parent directories. By \
                default this overwrites the file; set append=true to add to its end instead. \
                Before overwriting or appending to an existing file, read its current version \
                with read_file (every write invalidates earlier reads). A file written this way \
                stays small (80 KB by default, appends included); split longer content across \
                several files. Put deliverables under /mnt/user-data/outputs."
                .to_string(),
            parameters: file_tool_parameters(
                "Explain why you are writing to this file in short words.",
                "The **absolute** path to the file to write, e.g. /mnt/user-data/outputs/report.md.",
                vec![
                    (
                        "content",
                        json!({"type": "string", "description": "The text to write."}),
                    ),
                    (
                        "append",
                        json!({
                            "type": "boolean",
                            "default": false,
                            "description": "Add the content to the end of the file instead of replacing it. Defaults to false."
                        }),
                    ),
                ],
                &["content"],
            ),
        }
    }

    async fn call(&self, args: &Value, context: ToolContext<'_>) -> String {
        finish(write(args, context).await)
    }
}

/// The whole tool; the result is the tool text before error shortening.
async fn write(args: &Value, context: ToolContext<'_>) -> String {
    let (path, content, append) = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(text) => return text,
    };
    if let Some(text) = size_limit_error(&content, append, context.limits.write_file_max_bytes) {
        return text;
    }

    let gate = context.limits.read_before_write;
    let inspected = tokio::task::spawn_blocking({
        let paths = context.paths.clone();
        let path = path.clone();
        move || inspect(&paths, &path, gate)
    })
    .await;
    let target = match inspected {
        Ok(Ok(target)) => target,
        Ok(Err(text)) => return text,
        Err(join_error) => return failed(&path, &format!("JoinError: {join_error}")),
    };
    let host = target.confined.resolved.host.clone();
    if let Some(version) = &target.existing_version
        && !context.reads.is_current(&host, version)
    {
        return blocked(&path);
    }

    let stored = tokio::task::spawn_blocking({
        let paths = context.paths.clone();
        let path = path.clone();
        let confined = target.confined;
        let mode = if append {
            WriteMode::Append {
                max_bytes: file_limit(context.limits.write_file_max_bytes),
            }
        } else {
            WriteMode::Overwrite
        };
        move || store(&paths, &path, &confined, &content, mode)
    })
    .await;
    // Forget the read whatever happened: a failed write may still have changed the file.
    context.reads.invalidate(&host);
    match stored {
        Ok(Ok(())) => "OK".to_string(),
        Ok(Err(text)) => text,
        Err(join_error) => failed(&path, &format!("JoinError: {join_error}")),
    }
}

/// `path`, `content` and `append`, owned for the blocking tasks.
fn parse_args(args: &Value) -> Result<(String, String, bool), String> {
    let path = required_path(args)?;
    let content = required_string(args, "content")?;
    let append = optional_bool(args, "append", false)?;
    Ok((path.to_string(), content.to_string(), append))
}

/// The size-limit refusal, when a non-append `content` is over a positive `max_bytes`.
fn size_limit_error(content: &str, append: bool, max_bytes: i64) -> Option<String> {
    let bytes = content.len();
    // A limit of 0 or less disables the check; a positive i64 always fits in u64.
    let over = !append
        && max_bytes > 0
        && u64::try_from(bytes).unwrap_or(u64::MAX) > max_bytes.unsigned_abs();
    over.then(|| {
        format!(
            "Error: write_file content ({bytes} bytes) exceeds the {max_bytes}-byte single-call \
             limit. Split the content into smaller pieces: the limit applies to the whole file, \
             appends included, so write the first piece (at most {max_bytes} bytes) to this file \
             and the rest to further files."
        )
    })
}

/// The largest file `write_file` may leave behind, or `None` when the limit is disabled (0 or
/// less).
fn file_limit(max_bytes: i64) -> Option<u64> {
    u64::try_from(max_bytes).ok().filter(|max| *max > 0)
}

/// The refusal of an append that would make the file `total` bytes, over `max_bytes`.
fn append_over_limit(path: &str, total: u64, max_bytes: u64) -> String {
    format!(
        "Error: write_file append would make {path} {total} bytes, over the {max_bytes}-byte \
         file limit. Write the rest to another file."
    )
}

/// How [`store`] writes.
#[derive(Debug, Clone, Copy)]
enum WriteMode {
    /// Replace the file's content.
    Overwrite,
    /// Add to the end, unless the file would then exceed `max_bytes`.
    Append {
        /// The file limit, `None` when disabled.
        max_bytes: Option<u64>,
    },
}

/// The read-before-write refusal.
fn blocked(path: &str) -> String {
    format!(
        "Error: write_file blocked — {path} already exists and you have not read its current \
         version. Any write invalidates earlier reads, so re-read before every modification. \
         Call read_file on it (a ranged read of the relevant section is enough, e.g. the last \
         ~30 lines before an append), check what is already there, then retry."
    )
}

fn denied(path: &str) -> String {
    format!("Error: Permission denied writing to file: {path}")
}

fn is_directory(path: &str) -> String {
    format!("Error: Path is a directory, not a file: {path}")
}

fn failed(path: &str, detail: &str) -> String {
    format!("Error: Failed to write file '{path}': {detail}")
}

/// An I/O error as the tool's text.
fn from_io(path: &str, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::PermissionDenied => denied(path),
        io::ErrorKind::IsADirectory => is_directory(path),
        _ => failed(path, &describe_io_error(error)),
    }
}

/// A refusal or failure of the sandbox as the tool's text.
fn refused(path: &str, error: PathError) -> String {
    match error {
        PathError::Denied => denied(path),
        PathError::NotRegularFile => format!("{} (not a regular file)", denied(path)),
        PathError::HardLinked => format!("{} (it has other hard links)", denied(path)),
        PathError::Io(error) => from_io(path, &error),
    }
}

/// Where a write goes, and what is there now.
#[derive(Debug)]
struct Target {
    /// The path resolved beneath the opened `user-data` folder.
    confined: Confined,
    /// The existing file's version, when the gate is on and the file exists.
    existing_version: Option<String>,
}

/// Resolves the path, checks what is there and, for the gate, hashes the existing file.
/// Blocking; `Err` is the finished error text.
fn inspect(paths: &SandboxPaths, path: &str, gate: bool) -> Result<Target, String> {
    let confined = paths
        .confine(path, false, true)
        .map_err(|error| refused(path, error))?;
    let existing = match confined
        .user_data
        .symlink_metadata(&confined.resolved.relative)
    {
        Ok(metadata) if metadata.is_dir() => return Err(is_directory(path)),
        Ok(_) => true,
        // A new file (or a parent that is a file, which the write itself will report).
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            false
        }
        Err(error) => return Err(from_io(path, &error)),
    };
    let existing_version = if existing && gate {
        // Opened as for reading, so a FIFO or device is refused here without blocking.
        let mut file = confined
            .open_file(Access::Read)
            .map_err(|error| refused(path, error))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|error| from_io(path, &error))?;
        Some(content_version(&bytes))
    } else {
        None
    };
    Ok(Target {
        confined,
        existing_version,
    })
}

/// Creates the parent folders and writes (or appends) the content, virtual paths rewritten to
/// host paths. Blocking; `Err` is the finished error text.
fn store(
    paths: &SandboxPaths,
    path: &str,
    confined: &Confined,
    content: &str,
    mode: WriteMode,
) -> Result<(), String> {
    let data = paths.virtual_to_host_text(content);
    let added = u64::try_from(data.len()).unwrap_or(u64::MAX);
    // Refused before anything is created: appending this much is over the limit even to a new
    // file.
    if let WriteMode::Append {
        max_bytes: Some(max),
    } = mode
        && added > max
    {
        return Err(append_over_limit(path, added, max));
    }
    let access = match mode {
        WriteMode::Overwrite => Access::Overwrite,
        WriteMode::Append { .. } => Access::Append,
    };
    let mut file = confined
        .open_file(access)
        .map_err(|error| refused(path, error))?;
    let result = (|| -> io::Result<Result<(), String>> {
        match mode {
            // Truncated only now that the open file passed the checks.
            WriteMode::Overwrite => file.set_len(0)?,
            WriteMode::Append { max_bytes } => {
                // Measured on the open file, so the size checked is the size appended to.
                let total = file.metadata()?.len().saturating_add(added);
                if let Some(max) = max_bytes
                    && total > max
                {
                    return Ok(Err(append_over_limit(path, total, max)));
                }
            }
        }
        file.write_all(data.as_bytes())?;
        file.flush()?;
        Ok(Ok(()))
    })();
    result.map_err(|error| from_io(path, &error))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_limit_table() {
        let head = |n: usize, max: i64| {
            format!(
                "Error: write_file content ({n} bytes) exceeds the {max}-byte single-call limit. Split the content into smaller pieces: "
            )
        };
        // (content bytes, append, limit, refused?)
        let cases: &[(usize, bool, i64, bool)] = &[
            (81_920, false, 81_920, false),
            (81_921, false, 81_920, true),
            (81_921, true, 81_920, false),
            (10, false, 0, false),
            (10, false, -1, false),
            (11, false, 10, true),
        ];
        for &(bytes, append, max, refused) in cases {
            let content = "a".repeat(bytes);
            let got = size_limit_error(&content, append, max);
            assert_eq!(got.is_some(), refused, "{bytes} {append} {max}");
            if let Some(text) = got {
                assert!(text.starts_with(&head(bytes, max)), "{text}");
            }
        }
        // Bytes, not characters: 3 × `é` is 6 bytes.
        let text = size_limit_error("ééé", false, 5).unwrap_or_default();
        assert!(text.starts_with(&head(6, 5)), "{text}");
    }

    #[test]
    fn blocked_message_is_exact() {
        assert_eq!(
            blocked("/mnt/user-data/outputs/a.txt"),
            "Error: write_file blocked \u{2014} /mnt/user-data/outputs/a.txt already exists and \
             you have not read its current version. Any write invalidates earlier reads, so \
             re-read before every modification. Call read_file on it (a ranged read of the \
             relevant section is enough, e.g. the last ~30 lines before an append), check what \
             is already there, then retry."
        );
    }
}
