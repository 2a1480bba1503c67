//! STAND-IN for the recording file format library (`recording-format.md` §2, §5, §11).
//!
//! **Drop this file at merge time in favour of the real `core::recording` module.** It exists only
//! so that the managed recordings store (`crate::recordings`) compiles and can be tested before
//! the real library lands. It implements exactly the agreed API, honestly but minimally:
//!
//! - [`read_recording`]: the §11.3 permission checks (symlinks refused; managed files tightened to
//!   0600; external files rejected unless exactly 0600, never changed), then a reduced §5 strict
//!   parse (JSON objects, header first with version 1 or 2, known row types, contiguous
//!   `call_index`, events and `call_end` belonging to an open call, `missing call_end`). Event
//!   payload classes and request payloads are not validated.
//! - [`RecordingSink::create_managed`]: exclusive creation of a header-only managed file.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The format version written.
pub const FORMAT_VERSION: u64 = 2;
/// The redaction version written into managed headers.
pub const REDACTION_VERSION: u64 = 1;

/// A recording file read strictly.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The file read.
    pub path: PathBuf,
    /// Its header's `format_version`.
    pub format_version: u64,
    /// The header row.
    pub header: Value,
    /// One entry per call, in `call_index` order.
    pub calls: Vec<RecordedCall>,
    /// Every parsed row, header first.
    pub rows: Vec<Value>,
}

/// One recorded call.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// Its position in the file's total call order.
    pub call_index: usize,
}

/// Why a recording file could not be read or written.
#[derive(Debug, Clone)]
pub struct RecordingFileError {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line, when one applies.
    pub line: Option<usize>,
    /// The call, when one applies.
    pub call_index: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for RecordingFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "recording file {}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, " at line {line}")?;
        }
        if let Some(call_index) = self.call_index {
            write!(f, " for call {call_index}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for RecordingFileError {}

/// How a file is read: managed files are repaired to 0600, external ones only checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A file in the managed root.
    Managed,
    /// Any other file.
    External,
}

fn error(path: &Path, reason: impl Into<String>) -> RecordingFileError {
    RecordingFileError {
        path: path.to_path_buf(),
        line: None,
        call_index: None,
        reason: reason.into(),
    }
}

#[cfg(unix)]
fn open_nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW)
}

#[cfg(not(unix))]
fn open_nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// Permission check then strict parse (see the module doc).
pub fn read_recording(path: &Path, access: Access) -> Result<Recording, RecordingFileError> {
    let meta = std::fs::symlink_metadata(path).map_err(|err| error(path, err.to_string()))?;
    if meta.file_type().is_symlink() {
        return Err(error(path, "recording file must not be a symlink"));
    }
    if !meta.is_file() {
        return Err(error(path, "recording file is not a regular file"));
    }
    let mut file = open_nofollow(OpenOptions::new().read(true))
        .open(path)
        .map_err(|err| error(path, err.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if access == Access::Managed {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|err| error(path, err.to_string()))?;
        }
        let mode = file
            .metadata()
            .map_err(|err| error(path, err.to_string()))?
            .permissions()
            .mode()
            & 0o7777;
        if mode != 0o600 {
            return Err(error(
                path,
                format!("recording file must have mode 0600 (has {mode:04o})"),
            ));
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|err| error(path, err.to_string()))?;
    parse(path, &text)
}

struct CallState {
    events: usize,
    ended: bool,
}

fn parse(path: &Path, text: &str) -> Result<Recording, RecordingFileError> {
    let at = |line: usize, call: Option<usize>, reason: String| RecordingFileError {
        path: path.to_path_buf(),
        line: Some(line),
        call_index: call,
        reason,
    };
    let mut rows = Vec::new();
    let mut header: Option<(Value, u64)> = None;
    let mut calls: Vec<CallState> = Vec::new();
    for (number, raw) in text.split('\n').enumerate() {
        let line = number + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let row: Value = serde_json::from_str(raw)
            .map_err(|err| at(line, None, format!("invalid JSON: {err}")))?;
        if !row.is_object() {
            return Err(at(line, None, "row must be an object".into()));
        }
        let kind = row.get("type").and_then(Value::as_str).unwrap_or("");
        if header.is_none() {
            if kind != "header" {
                return Err(at(
                    line,
                    None,
                    "has no format header on its first line".into(),
                ));
            }
            let version = row.get("format_version").and_then(Value::as_u64);
            match version {
                Some(version @ (1 | 2)) => header = Some((row.clone(), version)),
                _ => {
                    return Err(at(
                        line,
                        None,
                        format!(
                            "was written in format version {}; this build replays version {FORMAT_VERSION}",
                            row.get("format_version").unwrap_or(&Value::Null)
                        ),
                    ));
                }
            }
            rows.push(row);
            continue;
        }
        if kind == "header" {
            return Err(at(line, None, "duplicate header".into()));
        }
        if !matches!(kind, "request" | "event" | "call_end") {
            return Err(at(line, None, format!("unknown row type '{kind}'")));
        }
        let index =
            row.get("call_index")
                .and_then(Value::as_u64)
                .ok_or_else(|| at(line, None, "invalid call_index".into()))? as usize;
        match kind {
            "request" => {
                if index > calls.len() {
                    return Err(at(
                        line,
                        Some(index),
                        "request call indexes must be contiguous".into(),
                    ));
                }
                if index < calls.len() {
                    return Err(at(line, Some(index), "duplicate request".into()));
                }
                calls.push(CallState {
                    events: 0,
                    ended: false,
                });
            }
            "event" => {
                let call = calls
                    .get_mut(index)
                    .ok_or_else(|| at(line, Some(index), "orphan event".into()))?;
                if call.ended {
                    return Err(at(line, Some(index), "event after call_end".into()));
                }
                if row.get("event_index").and_then(Value::as_u64) != Some(call.events as u64) {
                    return Err(at(
                        line,
                        Some(index),
                        "event indexes must be contiguous".into(),
                    ));
                }
                if !row.get("event").is_some_and(Value::is_object) {
                    return Err(at(
                        line,
                        Some(index),
                        "event payload must be an object".into(),
                    ));
                }
                call.events += 1;
            }
            _ => {
                let call = calls
                    .get_mut(index)
                    .ok_or_else(|| at(line, Some(index), "orphan call_end".into()))?;
                if call.ended {
                    return Err(at(line, Some(index), "duplicate call_end".into()));
                }
                if row.get("event_count").and_then(Value::as_u64) != Some(call.events as u64) {
                    return Err(at(
                        line,
                        Some(index),
                        "call_end event_count mismatch".into(),
                    ));
                }
                let outcome = row
                    .get("outcome")
                    .and_then(Value::as_str)
                    .unwrap_or("complete");
                if !matches!(outcome, "complete" | "error" | "cancelled" | "abandoned") {
                    return Err(at(line, Some(index), "invalid call_end outcome".into()));
                }
                call.ended = true;
            }
        }
        rows.push(row);
    }
    let Some((header, format_version)) = header else {
        return Err(error(path, "has no format header on its first line"));
    };
    if let Some(open) = calls.iter().position(|call| !call.ended) {
        return Err(RecordingFileError {
            path: path.to_path_buf(),
            line: None,
            call_index: Some(open),
            reason: "missing call_end".into(),
        });
    }
    Ok(Recording {
        path: path.to_path_buf(),
        format_version,
        header,
        calls: (0..calls.len())
            .map(|call_index| RecordedCall { call_index })
            .collect(),
        rows,
    })
}

/// Writes recordings.
pub struct RecordingSink;

impl RecordingSink {
    /// Creates `<root>/<id>.jsonl` exclusively (0600, no symlink follow) holding only a managed
    /// header, fsynced. A partial file is deleted on failure. `root` must exist.
    pub fn create_managed(root: &Path, id: &str) -> Result<PathBuf, RecordingFileError> {
        let path = root.join(format!("{id}.jsonl"));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file: File = open_nofollow(&mut options)
            .open(&path)
            .map_err(|err| error(&path, err.to_string()))?;
        let created_at = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        // Keys sorted, Python's default separators (§2.1).
        let header = json!({
            "created_at": created_at,
            "format_version": FORMAT_VERSION,
            "recording_id": id,
            "redaction_version": REDACTION_VERSION,
            "type": "header",
        });
        let mut line = String::from("{");
        if let Value::Object(map) = &header {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
            line.push_str(&fields.join(", "));
        }
        line.push_str("}\n");
        let written = file
            .write_all(line.as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(err) = written {
            drop(file);
            let _ = std::fs::remove_file(&path);
            return Err(error(&path, err.to_string()));
        }
        Ok(path)
    }
}
