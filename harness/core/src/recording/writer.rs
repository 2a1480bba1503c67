//! Writing recordings (`docs/recording-format.md` §3, §4 and §11.2): the append-only
//! [`RecordingSink`], the per-call [`CallWriter`], and [`RecordingSink::create_managed`] for
//! header-only managed files.
//!
//! Every append runs under two locks: the sink's own mutex (threads of this process) and an
//! exclusive `flock` on `<file>.lock` (other processes, and other sinks on the same file). Files
//! are opened without following symlinks and must be regular files with mode exactly 0600.
//! Everything is redacted (§6) before it reaches the disk; there is no way to turn that off.
//!
//! A sink opened with [`RecordingSink::open_remembering`] also keeps every call it wrote in
//! memory, exactly as written (the stored request, the redacted events, the outcome), so that
//! whoever records can build the fixture at the end without reading the file back.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use regex::Regex;
use serde_json::{Value, json};

use super::event::RecordedEvent;
use super::reader::{Access, PRIVATE_MODE, io_reason, open_nofollow, read_recording};
use super::redact::{redact, redact_text};
use super::rows::{
    FORMAT_VERSION, Outcome, REDACTION_VERSION, RecordedCall, RecordedRequest, RecordingFileError,
    index_value,
};
use crate::exchange::Exchange;
use crate::pyjson::{to_python_json, with_sorted_keys};

/// The managed recording ID syntax of §11.1 (after removing a trailing `.jsonl`).
static RECORDING_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\z").expect("ID pattern compiles")
});

/// The ID part of a managed recording selector: `id` without a trailing `.jsonl`, when it matches
/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$` (which already excludes `.` and `..`); otherwise `None`.
pub(crate) fn valid_recording_id(id: &str) -> Option<&str> {
    let id = id.strip_suffix(".jsonl").unwrap_or(id);
    (RECORDING_ID.is_match(id) && id != "." && id != "..").then_some(id)
}

/// The lock file of a recording: `<file>.lock` beside it.
pub fn lock_path_for(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Appends to one recording file. Thread-safe (per-process Mutex) and cross-process safe
/// (exclusive flock on `<file>.lock`, mode 0600, opened without following symlinks).
///
/// Cloning is cheap and shares the sink, so one sink can back every provider of a process.
#[derive(Debug, Clone)]
pub struct RecordingSink {
    inner: Arc<SinkInner>,
}

#[derive(Debug)]
struct SinkInner {
    path: PathBuf,
    lock_path: PathBuf,
    /// Serialises this process's appends; the `flock` serialises processes.
    guard: Mutex<()>,
    /// A remembering sink's calls, as written ([`RecordingSink::open_remembering`]).
    memory: Option<Mutex<Vec<Remembered>>>,
    /// A remembering sink's exchanges, as written.
    exchange_memory: Option<Mutex<Vec<Exchange>>>,
}

/// One call a remembering sink wrote: each part recorded once its row is on disk.
#[derive(Debug)]
struct Remembered {
    call_index: usize,
    /// The 1-based line of its request row.
    line: usize,
    request: RecordedRequest,
    events: Vec<RecordedEvent>,
    /// `None` until its `call_end` row is written.
    outcome: Option<Outcome>,
}

impl RecordingSink {
    /// Opens (creating with mode 0600 and writing `{"format_version": 3, "type": "header"}` when
    /// the file is empty) a recording at an explicit path; the parent folder's permissions are
    /// left as they are. After opening, fstat must show a regular file with mode exactly 0600,
    /// else `recording file must have mode 0600: <path>`.
    ///
    /// An existing non-empty file is appended to as it is; calls continue its numbering.
    pub fn open(path: &Path) -> Result<RecordingSink, RecordingFileError> {
        RecordingSink::open_with(path, false)
    }

    /// [`RecordingSink::open`], remembering every call written from now on (and the calls an
    /// existing file holds, read once here), exactly as written: [`RecordingSink::remembered`]
    /// gives them back without reading the file.
    pub fn open_remembering(path: &Path) -> Result<RecordingSink, RecordingFileError> {
        RecordingSink::open_with(path, true)
    }

    fn open_with(path: &Path, remembering: bool) -> Result<RecordingSink, RecordingFileError> {
        let inner = SinkInner {
            path: path.to_path_buf(),
            lock_path: lock_path_for(path),
            guard: Mutex::new(()),
            memory: None,
            exchange_memory: None,
        };
        let mut held = false;
        inner.with_locks(|| {
            let mut options = OpenOptions::new();
            options.append(true).create_new(true).mode(PRIVATE_MODE);
            let file = match open_nofollow(path, &mut options, libc::O_NONBLOCK) {
                // A new file gets exactly 0600 whatever the umask.
                Ok(file) => {
                    file.set_permissions(Permissions::from_mode(PRIVATE_MODE))
                        .map_err(|err| inner.error(io_reason("cannot set mode 0600", &err)))?;
                    file
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => inner.open_append()?,
                Err(err) => return Err(inner.error(io_reason("cannot create", &err))),
            };
            inner.check_private(&file)?;
            let empty = file
                .metadata()
                .map_err(|err| inner.error(io_reason("cannot stat", &err)))?
                .len()
                == 0;
            if empty {
                let header = json!({"format_version": FORMAT_VERSION, "type": "header"});
                inner.write_row(&file, &header)?;
                inner.sync(&file)?;
            }
            held = !empty;
            Ok(())
        })?;
        let mut inner = inner;
        if remembering {
            // The calls and exchanges a file already held, read once before anything is written
            // to it.
            let (before, exchanges_before) = match held {
                true => {
                    let recording = read_recording(path, Access::External)?;
                    (recording.calls, recording.exchanges)
                }
                false => (Vec::new(), Vec::new()),
            };
            inner.exchange_memory = Some(Mutex::new(exchanges_before));
            let before = before.into_iter().map(|call| Remembered {
                call_index: call.call_index,
                line: call.line,
                request: call.request,
                events: call.events,
                outcome: Some(call.outcome),
            });
            inner.memory = Some(Mutex::new(before.collect()));
        }
        Ok(RecordingSink {
            inner: Arc::new(inner),
        })
    }

    /// A remembering sink's calls ([`RecordingSink::open_remembering`]), in `call_index` order,
    /// as the strict reader would read them from the file: a call whose `call_end` was never
    /// written is the reader's `missing call_end` error. A sink that does not remember has none.
    pub fn remembered(&self) -> Result<Vec<RecordedCall>, RecordingFileError> {
        let Some(memory) = &self.inner.memory else {
            return Ok(Vec::new());
        };
        let mut memory = memory.lock();
        memory.sort_by_key(|call| call.call_index);
        let mut calls = Vec::with_capacity(memory.len());
        for call in memory.iter() {
            let Some(outcome) = call.outcome else {
                return Err(self
                    .inner
                    .error("missing call_end".into())
                    .for_call(call.call_index));
            };
            calls.push(RecordedCall {
                call_index: call.call_index,
                request: call.request.clone(),
                events: call.events.clone(),
                outcome,
                line: call.line,
            });
        }
        Ok(calls)
    }

    /// A remembering sink's exchanges ([`RecordingSink::open_remembering`]), in `exchange_index`
    /// order, as written; a sink that does not remember has none.
    pub fn remembered_exchanges(&self) -> Vec<Exchange> {
        (self.inner.exchange_memory.as_ref()).map_or_else(Vec::new, |memory| memory.lock().clone())
    }

    /// Appends an `exchange` row (§2.2): `exchange` redacted (§6: its label, request and answer)
    /// with the next `exchange_index`, fsynced, and returns it as written. A boundary's recorder
    /// hands the client what it returns, so a live run continues on what its replay will serve.
    pub fn write_exchange(&self, exchange: &Exchange) -> Result<Exchange, RecordingFileError> {
        let written = Exchange {
            boundary: exchange.boundary,
            caller: redact_text(&exchange.caller),
            label: redact_text(&exchange.label),
            request: redact(&exchange.request),
            answer: redact(&exchange.answer),
        };
        let payload = serde_json::to_value(&written)
            .map_err(|err| self.inner.error(format!("cannot write an exchange: {err}")))?;
        let inner = &self.inner;
        inner.with_locks(|| {
            let exchange_index = inner.next_exchange_index()?;
            let row = json!({
                "exchange": payload,
                "exchange_index": exchange_index,
                "type": "exchange",
            });
            let file = inner.open_append()?;
            inner.write_row(&file, &row)?;
            inner.sync(&file)?;
            if let Some(memory) = &inner.exchange_memory {
                memory.lock().push(written.clone());
            }
            Ok(())
        })?;
        Ok(written)
    }

    /// Creates a managed recording `<root>/<id>.jsonl` exclusively (create_new, 0600, no symlink
    /// follow) with the header {format_version, type, recording_id, created_at (UTC
    /// `YYYY-mm-ddTHH:MM:SSZ`), redaction_version}, fsynced; a partial file is deleted on
    /// failure. `root` must already exist (another component manages it).
    ///
    /// `id` may end in `.jsonl`; it must be a valid ID (`valid_recording_id`, else
    /// `invalid recording ID`). An existing file is never overwritten
    /// (`recording already exists`).
    pub fn create_managed(root: &Path, id: &str) -> Result<PathBuf, RecordingFileError> {
        let Some(id) = valid_recording_id(id) else {
            return Err(RecordingFileError::new(
                &root.join(id),
                "invalid recording ID",
            ));
        };
        let path = root.join(format!("{id}.jsonl"));
        let error = |reason: String| RecordingFileError::new(&path, reason);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(PRIVATE_MODE);
        let file = open_nofollow(&path, &mut options, 0).map_err(|err| {
            if err.kind() == io::ErrorKind::AlreadyExists {
                error("recording already exists".into())
            } else {
                error(io_reason("cannot create", &err))
            }
        })?;
        let header = json!({
            "created_at": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "format_version": FORMAT_VERSION,
            "recording_id": id,
            "redaction_version": REDACTION_VERSION,
            "type": "header",
        });
        let written = (|| {
            file.set_permissions(Permissions::from_mode(PRIVATE_MODE))
                .map_err(|err| error(io_reason("cannot set mode 0600", &err)))?;
            check_private(&file, &path)?;
            write_row(&file, &header, &path)?;
            file.sync_all()
                .map_err(|err| error(io_reason("cannot sync", &err)))
        })();
        if let Err(err) = written {
            drop(file);
            let _ = fs::remove_file(&path);
            return Err(err);
        }
        Ok(path)
    }

    /// Starts a call: under the locks, scans the file for the highest request call_index and uses
    /// +1 (so appending continues numbering, and several processes get contiguous indexes);
    /// writes the `request` row with the REDACTED request (options with `signal`/`on_payload`
    /// keys removed).
    pub fn begin_call(&self, request: &RecordedRequest) -> Result<CallWriter, RecordingFileError> {
        let stored = request.stored();
        let inner = &self.inner;
        let call_index = inner.with_locks(|| {
            let (call_index, line) = inner.next_call_index()?;
            let row = json!({
                "call_index": call_index,
                "context": stored.context,
                "model": stored.model,
                "options": stored.options,
                "type": "request",
            });
            let file = inner.open_append()?;
            inner.write_row(&file, &row)?;
            if let Some(memory) = &inner.memory {
                // As a reader of the row would get it: its keys sorted at every depth.
                let request = RecordedRequest::new(
                    with_sorted_keys(&stored.model),
                    with_sorted_keys(&stored.context),
                    with_sorted_keys(&stored.options),
                );
                memory.lock().push(Remembered {
                    call_index,
                    line,
                    request,
                    events: Vec::new(),
                    outcome: None,
                });
            }
            Ok(call_index)
        })?;
        Ok(CallWriter {
            sink: Arc::clone(&self.inner),
            call_index,
            event_count: 0,
            drop_outcome: Outcome::Abandoned,
            finished: false,
        })
    }

    /// The recording file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }
}

impl SinkInner {
    fn error(&self, reason: String) -> RecordingFileError {
        RecordingFileError::new(&self.path, reason)
    }

    /// Runs `body` holding the sink's mutex and the exclusive `flock` on the lock file.
    fn with_locks<T>(
        &self,
        body: impl FnOnce() -> Result<T, RecordingFileError>,
    ) -> Result<T, RecordingFileError> {
        let _guard = self.guard.lock();
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(true)
            .create(true)
            .mode(PRIVATE_MODE);
        let lock = open_nofollow(&self.lock_path, &mut options, 0)
            .map_err(|err| self.error(io_reason("cannot open lock file", &err)))?;
        lock.lock()
            .map_err(|err| self.error(io_reason("cannot lock", &err)))?;
        let result = body();
        // Closing the file releases the lock too; unlocking first keeps the intent explicit.
        let _ = lock.unlock();
        result
    }

    /// Opens the recording write-only, append mode, without following symlinks, and checks it.
    fn open_append(&self) -> Result<File, RecordingFileError> {
        let file = open_nofollow(
            &self.path,
            OpenOptions::new().append(true),
            libc::O_NONBLOCK,
        )
        .map_err(|err| self.error(io_reason("cannot open", &err)))?;
        self.check_private(&file)?;
        Ok(file)
    }

    fn check_private(&self, file: &File) -> Result<(), RecordingFileError> {
        check_private(file, &self.path)
    }

    fn write_row(&self, file: &File, row: &Value) -> Result<(), RecordingFileError> {
        write_row(file, row, &self.path)
    }

    fn sync(&self, file: &File) -> Result<(), RecordingFileError> {
        file.sync_all()
            .map_err(|err| self.error(io_reason("cannot sync", &err)))
    }

    /// Appends one row under the locks, syncing afterwards when asked.
    fn append_row(&self, row: &Value, sync: bool) -> Result<(), RecordingFileError> {
        self.with_locks(|| {
            let file = self.open_append()?;
            self.write_row(&file, row)?;
            if sync {
                self.sync(&file)?;
            }
            Ok(())
        })
    }

    /// One more than the highest `request.call_index` in the file, or 0 (§3: O(n) on purpose),
    /// and the 1-based line the next row goes on. Lines that are not request rows, or not JSON,
    /// are ignored here; the strict reader judges them.
    fn next_call_index(&self) -> Result<(usize, usize), RecordingFileError> {
        let bytes = self.read_all()?;
        let line = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
        Ok((next_index(&bytes, "request", "call_index"), line))
    }

    /// One more than the highest `exchange_index` in the file, or 0 (the O(n) scan of
    /// [`SinkInner::next_call_index`], for the same reason: several processes append).
    fn next_exchange_index(&self) -> Result<usize, RecordingFileError> {
        Ok(next_index(&self.read_all()?, "exchange", "exchange_index"))
    }

    /// The whole file, read without following a link.
    fn read_all(&self) -> Result<Vec<u8>, RecordingFileError> {
        let mut file = open_nofollow(&self.path, OpenOptions::new().read(true), libc::O_NONBLOCK)
            .map_err(|err| self.error(io_reason("cannot open", &err)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|err| self.error(io_reason("cannot read", &err)))?;
        Ok(bytes)
    }

    /// Runs `change` on a remembering sink's record of call `call_index`.
    fn remember(&self, call_index: usize, change: impl FnOnce(&mut Remembered)) {
        if let Some(memory) = &self.memory
            && let Some(call) = memory
                .lock()
                .iter_mut()
                .rev()
                .find(|call| call.call_index == call_index)
        {
            change(call);
        }
    }
}

/// fstat must show a regular file with mode exactly 0600 (§11.2).
fn check_private(file: &File, path: &Path) -> Result<(), RecordingFileError> {
    let metadata = file
        .metadata()
        .map_err(|err| RecordingFileError::new(path, io_reason("cannot stat", &err)))?;
    if metadata.is_file() && metadata.permissions().mode() & 0o7777 == PRIVATE_MODE {
        Ok(())
    } else {
        Err(RecordingFileError::new(
            path,
            format!("recording file must have mode 0600: {}", path.display()),
        ))
    }
}

/// Writes `row` as CPython's `json.dumps(sort_keys=True, ensure_ascii=False)` plus `\n`;
/// `write_all` loops until every byte is written.
fn write_row(mut file: &File, row: &Value, path: &Path) -> Result<(), RecordingFileError> {
    let mut line = to_python_json(row);
    line.push('\n');
    file.write_all(line.as_bytes())
        .map_err(|err| RecordingFileError::new(path, io_reason("cannot write", &err)))
}

/// Writes one call's events and its call_end. Dropping it without `end` writes call_end with the
/// drop outcome (default `abandoned`; see `set_drop_outcome`).
#[derive(Debug)]
pub struct CallWriter {
    sink: Arc<SinkInner>,
    call_index: usize,
    event_count: usize,
    drop_outcome: Outcome,
    finished: bool,
}

impl CallWriter {
    /// The index of this call in the recording.
    pub fn call_index(&self) -> usize {
        self.call_index
    }

    /// How many event rows have been written for this call.
    #[cfg(test)]
    pub(crate) fn event_count(&self) -> usize {
        self.event_count
    }

    /// Appends an `event` row (payload redacted) with the next event_index, and returns the
    /// event as written. Called BEFORE the event is handed to the consumer, which gets the
    /// returned, redacted event: a live run continues on exactly what its replay will serve.
    ///
    /// The redacted payload must still read as an event (redaction can replace a field's value
    /// with text; the strict reader would reject the file otherwise); one that does not is
    /// refused and nothing is written.
    pub fn event(&mut self, event: &RecordedEvent) -> Result<RecordedEvent, RecordingFileError> {
        let payload = redact(&event.to_value());
        let written = RecordedEvent::parse(&payload).map_err(|reason| {
            self.sink
                .error(reason.to_string())
                .for_call(self.call_index)
        })?;
        let row = json!({
            "call_index": self.call_index,
            "event": payload,
            "event_index": self.event_count,
            "type": "event",
        });
        self.sink.append_row(&row, false)?;
        self.event_count += 1;
        if self.sink.memory.is_some() {
            // As the reader will parse the row: its keys sorted at every depth.
            let remembered = RecordedEvent::parse(&with_sorted_keys(&payload));
            if let Ok(remembered) = remembered {
                self.sink
                    .remember(self.call_index, |call| call.events.push(remembered));
            }
        }
        Ok(written)
    }

    /// Writes `call_end` with the event count and outcome, then fsyncs the file.
    pub fn end(mut self, outcome: Outcome) -> Result<(), RecordingFileError> {
        self.finish(outcome)
    }

    /// The outcome written if this writer is dropped without `end` (e.g. `Cancelled` once the
    /// caller knows its task was cancelled).
    pub fn set_drop_outcome(&mut self, outcome: Outcome) {
        self.drop_outcome = outcome;
    }

    /// Writes `call_end` once; a failed attempt is not retried on drop.
    fn finish(&mut self, outcome: Outcome) -> Result<(), RecordingFileError> {
        self.finished = true;
        let row = json!({
            "call_index": self.call_index,
            "event_count": self.event_count,
            "outcome": outcome.as_str(),
            "type": "call_end",
        });
        self.sink.append_row(&row, true)?;
        self.sink
            .remember(self.call_index, |call| call.outcome = Some(outcome));
        Ok(())
    }
}

impl Drop for CallWriter {
    fn drop(&mut self) {
        if !self.finished
            && let Err(err) = self.finish(self.drop_outcome)
        {
            tracing::warn!(error = %err, "could not finish a recorded call");
        }
    }
}

/// One more than the highest `index_field` among the rows of `row_type` in `bytes`, or 0. Lines
/// that are not such rows, or not JSON, are skipped here; the strict reader judges them.
fn next_index(bytes: &[u8], row_type: &str, index_field: &str) -> usize {
    let quoted = format!("\"{row_type}\"");
    bytes
        .split(|&b| b == b'\n')
        .filter(|line| line.windows(quoted.len()).any(|w| w == quoted.as_bytes()))
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|row| row.get("type").and_then(Value::as_str) == Some(row_type))
        .filter_map(|row| index_value(row.get(index_field)))
        .max()
        .map_or(0, |highest| highest + 1)
}
