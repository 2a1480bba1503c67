//! The strict reader (`docs/recording-format.md` §5) and the read-permission rules (§11.3).
//!
//! A recording is validated whole before anything is served, so a bad file fails at start-up,
//! not part-way through a run. Every failure is a [`RecordingFileError`] naming the file, and the
//! line and call where they apply.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use serde_json::{Map, Value};

use super::event::{RecordedEvent, describe};
use super::rows::{
    EXCHANGE_ROWS_SINCE, FORMAT_VERSION, Outcome, READABLE_VERSIONS, ROW_TYPES, RecordedCall,
    RecordedRequest, Recording, RecordingFileError, index_value, without_runtime_only,
};

/// The only file mode a recording may have (§11).
pub(crate) const PRIVATE_MODE: u32 = 0o600;

/// How a recording file is reached, which decides the permission rule of §11.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A file in the managed recordings folder: tightened to 0600 before it is read.
    Managed,
    /// Any other path: only checked, never changed; rejected unless its mode is exactly 0600.
    External,
}

/// The state of one call while the file is read.
struct CallState {
    request: RecordedRequest,
    line: usize,
    events: Vec<RecordedEvent>,
    outcome: Option<Outcome>,
}

/// Strict parse of the text (no permission check): §5 checks 2 to 5, in order.
///
/// 2. every non-blank line is JSON (`invalid JSON: <detail>`) and an object
///    (`row must be an object`), reported with its 1-based line;
/// 3. the first row is a header (`has no format header on its first line`) with a readable
///    version (`was written in format version X; this build replays version 2`);
/// 4. every later row passes the row checks of §5, reported with its line and, once its
///    `call_index` is known, its call;
/// 5. every request has a `call_end` (`missing call_end`, naming the first unfinished call).
///
/// Version 1 (§2.4): `signal` and `on_payload` are removed from `options`, a missing `outcome`
/// reads as `complete`, and a request with a non-null `options.response_format` is rejected
/// (`format version 1 cannot replay structured response_format`). In version 2 `outcome` is
/// required. A request row must carry `model`, `context` and `options` (`options` may be null).
/// Blank lines (whitespace only) are skipped but still counted.
pub fn parse_recording(text: &str, path: &Path) -> Result<Recording, RecordingFileError> {
    let error = |reason: String| RecordingFileError::new(path, reason);

    // Check 2: every line.
    let mut parsed: Vec<(usize, Map<String, Value>)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(row)) => parsed.push((line_number, row)),
            Ok(_) => return Err(error("row must be an object".into()).at_line(line_number)),
            Err(err) => {
                return Err(
                    error(format!("invalid JSON: {}", json_detail(&err))).at_line(line_number)
                );
            }
        }
    }

    // Check 3: the header.
    let Some((_, header)) = parsed.first() else {
        return Err(error("has no format header on its first line".into()));
    };
    if header.get("type").and_then(Value::as_str) != Some("header") {
        return Err(error("has no format header on its first line".into()));
    }
    // `Value::as_u64` is `None` for booleans and floats: neither is a version.
    let version = header.get("format_version").and_then(Value::as_u64);
    let Some(format_version) = version.filter(|v| READABLE_VERSIONS.contains(v)) else {
        return Err(error(format!(
            "was written in format version {}; this build replays version {FORMAT_VERSION}",
            header
                .get("format_version")
                .map_or_else(|| "null".to_owned(), Value::to_string)
        )));
    };

    // Check 4: every later row.
    let mut calls: Vec<CallState> = Vec::new();
    let mut exchanges = Vec::new();
    for (line, row) in &parsed[1..] {
        let line = *line;
        let at = |reason: String| error(reason).at_line(line);
        let row_type = match row.get("type") {
            Some(Value::String(t)) if t == "header" => {
                return Err(at("duplicate header".into()));
            }
            Some(Value::String(t)) if ROW_TYPES.contains(&t.as_str()) => t.as_str(),
            other => return Err(at(format!("unknown row type '{}'", describe(other)))),
        };
        if row_type == "exchange" {
            if format_version < EXCHANGE_ROWS_SINCE {
                return Err(at(format!(
                    "an exchange row needs format version {EXCHANGE_ROWS_SINCE}, the header says \
                     {format_version}"
                )));
            }
            if index_value(row.get("exchange_index")) != Some(exchanges.len()) {
                return Err(at("exchange indexes must be contiguous from 0".into()));
            }
            let payload = row.get("exchange").cloned().unwrap_or(Value::Null);
            let exchange = serde_json::from_value(payload)
                .map_err(|err| at(format!("invalid exchange: {err}")))?;
            exchanges.push(exchange);
            continue;
        }
        let Some(call_index) = index_value(row.get("call_index")) else {
            return Err(at("invalid call_index".into()));
        };
        let at_call = |reason: &str| at(reason.to_owned()).for_call(call_index);
        match row_type {
            "request" => {
                if call_index > calls.len() {
                    return Err(at_call("request call indexes must be contiguous"));
                }
                if call_index < calls.len() {
                    return Err(at_call("duplicate request"));
                }
                let field = |name: &str| {
                    row.get(name)
                        .cloned()
                        .ok_or_else(|| at_call(&format!("request row is missing '{name}'")))
                };
                let (model, context, mut options) =
                    (field("model")?, field("context")?, field("options")?);
                if format_version == 1 {
                    if options
                        .get("response_format")
                        .is_some_and(|format| !format.is_null())
                    {
                        return Err(at_call(
                            "format version 1 cannot replay structured response_format",
                        ));
                    }
                    options = without_runtime_only(&options);
                }
                calls.push(CallState {
                    request: RecordedRequest::new(model, context, options),
                    line,
                    events: Vec::new(),
                    outcome: None,
                });
            }
            "event" => {
                let Some(call) = calls.get_mut(call_index) else {
                    return Err(at_call("orphan event"));
                };
                if call.outcome.is_some() {
                    return Err(at_call("event after call_end"));
                }
                if index_value(row.get("event_index")) != Some(call.events.len()) {
                    return Err(at_call("event indexes must be contiguous"));
                }
                let payload = row.get("event").unwrap_or(&Value::Null);
                let event =
                    RecordedEvent::parse(payload).map_err(|reason| at_call(&reason.to_string()))?;
                call.events.push(event);
            }
            _ => {
                // call_end
                let Some(call) = calls.get_mut(call_index) else {
                    return Err(at_call("orphan call_end"));
                };
                if call.outcome.is_some() {
                    return Err(at_call("duplicate call_end"));
                }
                if index_value(row.get("event_count")) != Some(call.events.len()) {
                    return Err(at_call("call_end event_count mismatch"));
                }
                let outcome = match row.get("outcome") {
                    None if format_version == 1 => Some(Outcome::Complete),
                    Some(Value::String(text)) => Outcome::parse(text),
                    _ => None,
                };
                let Some(outcome) = outcome else {
                    return Err(at_call("invalid call_end outcome"));
                };
                call.outcome = Some(outcome);
            }
        }
    }

    // Check 5: every call ended.
    let mut finished = Vec::with_capacity(calls.len());
    for (call_index, call) in calls.into_iter().enumerate() {
        let Some(outcome) = call.outcome else {
            return Err(error("missing call_end".into()).for_call(call_index));
        };
        finished.push(RecordedCall {
            call_index,
            request: call.request,
            events: call.events,
            outcome,
            line: call.line,
        });
    }

    let mut rows = parsed.into_iter().map(|(_, row)| Value::Object(row));
    let header = rows.next().unwrap_or(Value::Null);
    Ok(Recording {
        path: path.to_path_buf(),
        format_version,
        header: header.clone(),
        calls: finished,
        exchanges,
        rows: std::iter::once(header).chain(rows).collect(),
    })
}

/// serde_json's message without its position inside the line (the line is reported apart).
fn json_detail(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(cut) => format!("{} at column {}", &text[..cut], err.column()),
        None => text,
    }
}

/// Permission check (§11.3), then [`parse_recording`].
///
/// The file is opened without following symlinks (a symlink is refused, whatever it points at)
/// and must be a regular file. [`Access::Managed`]: a mode other than 0600 is tightened to 0600
/// (through the open handle) before reading. [`Access::External`]: a mode other than exactly 0600
/// (0644 and 0400 alike) is rejected with `recording file must have mode 0600, found 0NNN`, and
/// the file is never changed. Text that is not UTF-8 fails as `invalid JSON` at its line.
pub fn read_recording(path: &Path, access: Access) -> Result<Recording, RecordingFileError> {
    let error = |reason: String| RecordingFileError::new(path, reason);
    let mut file = open_nofollow(path, OpenOptions::new().read(true), libc::O_NONBLOCK)
        .map_err(|err| error(io_reason("cannot open", &err)))?;
    let metadata = file
        .metadata()
        .map_err(|err| error(io_reason("cannot stat", &err)))?;
    if !metadata.is_file() {
        return Err(error("recording file must be a regular file".into()));
    }
    let mode = metadata.permissions().mode() & 0o7777;
    if mode != PRIVATE_MODE {
        match access {
            Access::Managed => file
                .set_permissions(Permissions::from_mode(PRIVATE_MODE))
                .map_err(|err| error(io_reason("cannot tighten mode to 0600", &err)))?,
            Access::External => {
                return Err(error(format!(
                    "recording file must have mode 0600, found {mode:04o}"
                )));
            }
        }
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|err| error(io_reason("cannot read", &err)))?;
    let text = String::from_utf8(bytes).map_err(|err| {
        let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        error("invalid JSON: invalid UTF-8".into()).at_line(line)
    })?;
    parse_recording(&text, path)
}

/// Opens `path` with `options` plus `O_NOFOLLOW` and `extra_flags`: the last component is never
/// followed when it is a symlink (the open fails with `ELOOP`).
pub(crate) fn open_nofollow(
    path: &Path,
    options: &mut OpenOptions,
    extra_flags: i32,
) -> io::Result<File> {
    options
        .custom_flags(libc::O_NOFOLLOW | extra_flags)
        .open(path)
}

/// The reason for an I/O failure; `ELOOP` from an `O_NOFOLLOW` open means a symlink.
pub(crate) fn io_reason(what: &str, err: &io::Error) -> String {
    if err.raw_os_error() == Some(libc::ELOOP) {
        "recording file must not be a symlink".to_owned()
    } else {
        format!("{what}: {err}")
    }
}
