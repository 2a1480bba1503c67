//! The verbs of `cargo xtask recordings` as library calls returning typed results
//! (`docs/recording-format.md` §12): record, replay, off, status, list, show, delete, prune, and
//! the info object.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};

use super::config::{Mode, RecordReplay};
use super::ids::{Selector, default_recording_id, normalize_recording_id};
use super::{Location, RecordingsError, RecordingsHome, fsx, is_valid_recording_id};
use replay_core::recording::{Recording, RecordingSink, lock_path_for, read_recording};

/// The info object of `list --json` and `show` (§12).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingInfo {
    /// The managed ID (the file name without `.jsonl`); for an external file the header's
    /// `recording_id`, else the file stem.
    pub recording_id: String,
    /// The file.
    pub(crate) path: PathBuf,
    /// The header's `created_at`, else the file's change time (ISO-8601 UTC).
    pub(crate) created_at: String,
    /// Modification time, epoch seconds.
    pub(crate) modified_at: f64,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Number of calls; `None` when the file is invalid.
    pub(crate) call_count: Option<usize>,
    /// Whether the file passed the permission check and the strict reader.
    pub(crate) valid: bool,
    /// Whether the configuration's record or replay file is this file.
    pub(crate) active: bool,
    /// Why the file is invalid.
    pub(crate) error: Option<String>,
}

impl RecordingInfo {
    /// The JSON object, keys in §12's order.
    pub fn to_json(&self) -> Value {
        json!({
            "recording_id": self.recording_id,
            "path": self.path.to_string_lossy(),
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "size": self.size,
            "call_count": self.call_count,
            "valid": self.valid,
            "active": self.active,
            "error": self.error,
        })
    }
}

/// What `show` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// The info object.
    pub(crate) info: RecordingInfo,
    /// With `--content`: every parsed row (header first); `None` when not asked for or invalid.
    pub(crate) content: Option<Vec<Value>>,
    /// Whether `--content` was asked for.
    pub(crate) with_content: bool,
}

impl Shown {
    /// The info object, plus `content` when it was asked for (`null` for an invalid file).
    pub fn to_json(&self) -> Value {
        let mut object = self.info.to_json();
        if self.with_content
            && let Value::Object(map) = &mut object
        {
            map.insert(
                "content".into(),
                self.content.clone().map_or(Value::Null, Value::Array),
            );
        }
        object
    }
}

/// What `record` created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The new recording's ID.
    pub id: String,
    /// Its header-only file.
    pub(crate) path: PathBuf,
}

/// What `delete` removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The ID.
    pub id: String,
    /// The removed file.
    pub(crate) path: PathBuf,
    /// Its size.
    pub(crate) bytes: u64,
}

/// The result of `prune`, printed as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Old, inactive, valid recordings found.
    pub(crate) matched: usize,
    /// Of those, removed.
    pub(crate) deleted: usize,
    /// Of those, not removed: locked, or the removal failed.
    pub(crate) failed: usize,
    /// Bytes of the matched files (dry run) or of the deleted ones.
    pub(crate) bytes: u64,
    /// The matched IDs, newest first.
    pub(crate) recordings: Vec<String>,
}

impl PruneReport {
    /// `{"bytes", "deleted", "failed", "matched", "recordings"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "bytes": self.bytes,
            "deleted": self.deleted,
            "failed": self.failed,
            "matched": self.matched,
            "recordings": self.recordings,
        })
    }
}

/// The confirmation of `delete` and `prune` (§12): with `yes`, confirmed; when stdin is not a
/// terminal, refused with `<verb> requires --yes when stdin is not a TTY`; on a terminal the user
/// must type the word asked for (the ID, or `prune`).
pub fn terminal_confirmation(
    verb: &'static str,
    yes: bool,
) -> impl FnMut(&str) -> Result<(), RecordingsError> {
    move |word| {
        if yes {
            return Ok(());
        }
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Err(RecordingsError::Refused(format!(
                "{verb} requires --yes when stdin is not a TTY"
            )));
        }
        eprint!("type {word} to confirm {verb}: ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        stdin
            .lock()
            .read_line(&mut answer)
            .map_err(|source| RecordingsError::Io {
                action: "cannot read confirmation from",
                path: PathBuf::from("stdin"),
                source,
            })?;
        if answer.trim() == word {
            Ok(())
        } else {
            Err(RecordingsError::Refused(format!(
                "{verb} not confirmed; nothing changed"
            )))
        }
    }
}

impl RecordingsHome {
    /// `status`: the configuration only; never reads a recording.
    pub fn status(&self) -> Result<RecordReplay, RecordingsError> {
        self.config()
    }

    /// `record [--name NAME]`: creates a header-only managed file (exclusive, 0600), then sets
    /// `mode=record, file=<id>` in one configuration transaction; if that fails, the new file is
    /// deleted and the error returned.
    pub fn record(&self, name: Option<&str>) -> Result<Recorded, RecordingsError> {
        let id = match name {
            Some(name) => normalize_recording_id(name)?,
            None => default_recording_id(),
        };
        let root = self.ensure_root()?;
        let path = RecordingSink::create_managed(&root, &id)?;
        if let Err(err) = self.set_record_replay(Mode::Record, &id) {
            let _ = std::fs::remove_file(&path);
            return Err(err);
        }
        Ok(Recorded { id, path })
    }

    /// `replay <ID-or-PATH>`: reads the file strictly, then sets `mode=replay` storing the ID of
    /// a managed file or the absolute path of an external one. Invalid: config unchanged.
    pub fn replay(&self, selector: &str) -> Result<RecordReplay, RecordingsError> {
        self.set_record_replay(Mode::Replay, selector)
    }

    /// `off`: mode off, `file` kept. Never reads a recording.
    pub fn off(&self) -> Result<RecordReplay, RecordingsError> {
        self.set_off()
    }

    /// `list`: every managed `*.jsonl`, newest first by (modification time, ID). Invalid or
    /// symlinked files are listed with `valid: false` and an `error`.
    pub fn list(&self) -> Result<Vec<RecordingInfo>, RecordingsError> {
        let root = self.ensure_root()?;
        let active = self.active_path()?;
        let entries = std::fs::read_dir(&root).map_err(|source| RecordingsError::Io {
            action: "cannot list",
            path: root.clone(),
            source,
        })?;
        let mut infos = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| RecordingsError::Io {
                action: "cannot list",
                path: root.clone(),
                source,
            })?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_suffix(".jsonl")) else {
                continue;
            };
            let location = Location::Managed {
                id: id.to_string(),
                path: entry.path(),
            };
            match self.inspect(&location, active.as_deref()) {
                Ok((info, _)) => infos.push(info),
                // Removed while listing.
                Err(RecordingsError::NotFound(_)) => {}
                Err(err) => return Err(err),
            }
        }
        infos.sort_by(|a, b| {
            b.modified_at
                .total_cmp(&a.modified_at)
                .then_with(|| b.recording_id.cmp(&a.recording_id))
        });
        Ok(infos)
    }

    /// `show <ID-or-PATH> [--content]`: the info object of one file, and its rows on request.
    pub fn show(&self, selector: &str, content: bool) -> Result<Shown, RecordingsError> {
        let location = self.locate(selector)?;
        let active = self.active_path()?;
        let (info, recording) = self.inspect(&location, active.as_deref())?;
        Ok(Shown {
            info,
            content: if content {
                recording.map(|recording| recording.rows)
            } else {
                None
            },
            with_content: content,
        })
    }

    /// `delete <ID>`: managed IDs only. Refuses a path, a missing file, a symlink, the active
    /// recording; then asks `confirm` (with the ID); then takes the lock without blocking and
    /// removes the file and its lock file.
    pub fn delete(
        &self,
        selector: &str,
        confirm: &mut dyn FnMut(&str) -> Result<(), RecordingsError>,
    ) -> Result<Deleted, RecordingsError> {
        let Selector::Id(id) = self.selector(selector)? else {
            return Err(RecordingsError::DeleteRequiresManagedId);
        };
        let path = self.ensure_root()?.join(format!("{id}.jsonl"));
        let meta = regular_file(&id, &path)?;
        if is_active(self.active_path()?.as_deref(), &path) {
            return Err(RecordingsError::ActiveRecording);
        }
        confirm(&id)?;
        remove_locked(&id, &path)?;
        Ok(Deleted {
            id,
            path,
            bytes: meta.len(),
        })
    }

    /// `prune --older-than-days N [--dry-run]`: matches valid, inactive managed recordings whose
    /// modification time is older than now − N days; unless `dry_run`, asks `confirm` (with
    /// `prune`) and deletes them, counting locked or failing files as `failed`.
    pub fn prune(
        &self,
        older_than_days: i64,
        dry_run: bool,
        confirm: &mut dyn FnMut(&str) -> Result<(), RecordingsError>,
    ) -> Result<PruneReport, RecordingsError> {
        if older_than_days < 1 {
            return Err(RecordingsError::InvalidAge);
        }
        let cutoff =
            fsx::epoch_seconds(SystemTime::now()) - older_than_days.saturating_mul(86_400) as f64;
        let matched: Vec<RecordingInfo> = self
            .list()?
            .into_iter()
            .filter(|info| info.valid && !info.active && info.modified_at < cutoff)
            .collect();
        let mut report = PruneReport {
            matched: matched.len(),
            recordings: matched
                .iter()
                .map(|info| info.recording_id.clone())
                .collect(),
            ..PruneReport::default()
        };
        if dry_run {
            report.bytes = matched.iter().map(|info| info.size).sum();
            return Ok(report);
        }
        confirm("prune")?;
        for info in &matched {
            let removed = regular_file(&info.recording_id, &info.path)
                .and_then(|meta| remove_locked(&info.recording_id, &info.path).map(|()| meta));
            match removed {
                Ok(meta) => {
                    report.deleted += 1;
                    report.bytes += meta.len();
                }
                Err(_) => report.failed += 1,
            }
        }
        Ok(report)
    }

    /// The info object of one located file, and the parsed recording when it is valid.
    fn inspect(
        &self,
        location: &Location,
        active: Option<&Path>,
    ) -> Result<(RecordingInfo, Option<Recording>), RecordingsError> {
        let path = location.path();
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(RecordingsError::NotFound(location.label()));
            }
            Err(source) => {
                return Err(RecordingsError::Io {
                    action: "cannot inspect",
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let stem = path
            .file_name()
            .map(|name| name.to_string_lossy())
            .map(|name| name.strip_suffix(".jsonl").unwrap_or(&name).to_string())
            .unwrap_or_default();
        let mut info = RecordingInfo {
            recording_id: match location {
                Location::Managed { id, .. } => id.clone(),
                Location::External { .. } => stem,
            },
            path: path.to_path_buf(),
            created_at: fsx::change_time(&meta)
                .map(fsx::iso_utc)
                .unwrap_or_default(),
            modified_at: meta.modified().map(fsx::epoch_seconds).unwrap_or(0.0),
            size: meta.len(),
            call_count: None,
            valid: false,
            active: is_active(active, path),
            error: None,
        };
        let problem = if meta.file_type().is_symlink() {
            Some("recording file is a symlink".to_string())
        } else if !meta.is_file() {
            Some("not a regular file".to_string())
        } else if matches!(location, Location::Managed { id, .. } if !is_valid_recording_id(id)) {
            Some(format!("invalid recording ID: '{}'", info.recording_id))
        } else {
            None
        };
        if let Some(problem) = problem {
            info.error = Some(problem);
            return Ok((info, None));
        }
        match read_recording(path, location.access()) {
            Ok(recording) => {
                if let Some(created_at) = recording.header.get("created_at").and_then(Value::as_str)
                {
                    info.created_at = created_at.to_string();
                }
                if let (Location::External { .. }, Some(id)) = (
                    location,
                    recording.header.get("recording_id").and_then(Value::as_str),
                ) {
                    info.recording_id = id.to_string();
                }
                info.call_count = Some(recording.calls.len());
                info.valid = true;
                Ok((info, Some(recording)))
            }
            Err(err) => {
                info.error = Some(err.to_string());
                Ok((info, None))
            }
        }
    }
}

/// Whether `path` is the configuration's active file (same path, or the same directory entry).
fn is_active(active: Option<&Path>, path: &Path) -> bool {
    active.is_some_and(|active| active == path || fsx::same_entry(active, path))
}

/// `lstat` of a managed file that must exist and be a regular file, not a symlink.
fn regular_file(id: &str, path: &Path) -> Result<std::fs::Metadata, RecordingsError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(RecordingsError::Symlink(path.to_path_buf()))
        }
        Ok(meta) if !meta.is_file() => Err(RecordingsError::NotAFile(path.to_path_buf())),
        Ok(meta) => Ok(meta),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(RecordingsError::NotFound(id.to_string()))
        }
        Err(source) => Err(RecordingsError::Io {
            action: "cannot inspect",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Takes `<path>.lock` without blocking (held elsewhere: `recording is locked: <id>`), removes
/// the recording and then the lock file, and releases the lock.
fn remove_locked(id: &str, path: &Path) -> Result<(), RecordingsError> {
    let lock_path = lock_path_for(path);
    let lock = fsx::try_lock_file(&lock_path)
        .map_err(|source| RecordingsError::Io {
            action: "cannot open lock file",
            path: lock_path.clone(),
            source,
        })?
        .ok_or_else(|| RecordingsError::Locked(id.to_string()))?;
    regular_file(id, path)?;
    std::fs::remove_file(path).map_err(|source| RecordingsError::Io {
        action: "cannot delete",
        path: path.to_path_buf(),
        source,
    })?;
    let _ = std::fs::remove_file(&lock_path);
    drop(lock);
    Ok(())
}
