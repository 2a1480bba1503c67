//! The `record_replay` configuration (`docs/recording-format.md` §10): reading, validation when
//! written, and the atomic, locked write.
//!
//! The configuration is the JSON file `<state>/config.json`; this module owns only its
//! `record_replay` subtree and keeps every other key as it is. A write takes an exclusive lock on
//! `<state>/config.json.lock`, reads the document, changes the subtree and replaces the file by
//! renaming a fsynced 0600 temporary file over it, so readers see the old or the new file, never
//! a mixture.

use std::fmt;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ids::Selector;
use super::{Location, RecordingsError, RecordingsHome, fsx};

/// `record_replay.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Nothing installed (the default, also when the key or the subtree is missing).
    #[default]
    Off,
    /// Record every model call into a managed recording.
    Record,
    /// Serve every model call from a recording.
    Replay,
}

impl Mode {
    /// The configuration spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Record => "record",
            Mode::Replay => "replay",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `record_replay` settings as stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordReplay {
    /// `record_replay.mode`.
    pub mode: Mode,
    /// `record_replay.file`: a managed ID, an absolute path, or empty.
    pub file: String,
}

impl RecordReplay {
    /// `{"file": …, "mode": …}` (keys sorted), as `status --json` prints it.
    pub fn to_json(&self) -> Value {
        serde_json::json!({"file": self.file, "mode": self.mode.as_str()})
    }
}

const SUBTREE: &str = "record_replay";

fn parse_record_replay(document: &Map<String, Value>) -> Result<RecordReplay, RecordingsError> {
    let subtree = match document.get(SUBTREE) {
        None | Some(Value::Null) => return Ok(RecordReplay::default()),
        Some(Value::Object(subtree)) => subtree,
        Some(_) => {
            return Err(RecordingsError::Config(
                "record_replay must be an object".into(),
            ));
        }
    };
    let mode = match subtree.get("mode") {
        None | Some(Value::Null) => Mode::Off,
        Some(Value::String(mode)) => match mode.as_str() {
            "" | "off" => Mode::Off,
            "record" => Mode::Record,
            "replay" => Mode::Replay,
            other => {
                return Err(RecordingsError::Config(format!(
                    "unsupported record_replay.mode: '{other}'"
                )));
            }
        },
        Some(other) => {
            return Err(RecordingsError::Config(format!(
                "unsupported record_replay.mode: '{other}'"
            )));
        }
    };
    let file = match subtree.get("file") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(file)) => file.clone(),
        Some(_) => {
            return Err(RecordingsError::Config(
                "record_replay.file must be a string".into(),
            ));
        }
    };
    Ok(RecordReplay { mode, file })
}

impl RecordingsHome {
    /// `<state>/config.json`.
    pub(crate) fn config_path(&self) -> PathBuf {
        self.state_dir.join("config.json")
    }

    /// Reads and checks the `record_replay` settings. A missing file or subtree means off; a
    /// mode other than off, record or replay fails with `unsupported record_replay.mode: '<x>'`.
    /// Never reads a recording.
    pub(crate) fn config(&self) -> Result<RecordReplay, RecordingsError> {
        parse_record_replay(&self.read_document()?)
    }

    /// The recording the configuration makes active, as a path: only when the mode is record or
    /// replay and the file selector parses. Unlike [`Self::config`] an unsupported mode is not
    /// an error here (nothing is active then); an unreadable configuration still is.
    pub(crate) fn active_path(&self) -> Result<Option<PathBuf>, RecordingsError> {
        let document = self.read_document()?;
        let Some(Value::Object(subtree)) = document.get(SUBTREE) else {
            return Ok(None);
        };
        let mode = subtree.get("mode").and_then(Value::as_str);
        let file = subtree.get("file").and_then(Value::as_str).unwrap_or("");
        if !matches!(mode, Some("record" | "replay")) || file.trim().is_empty() {
            return Ok(None);
        }
        Ok(match self.selector(file) {
            Ok(Selector::Id(id)) => Some(self.managed_path(&id)),
            Ok(Selector::Path(path)) => Some(path),
            Err(_) => None,
        })
    }

    /// Validates and writes `record_replay` (§10 "Validation when the setting is written"):
    ///
    /// - record or replay with an empty file: `record_replay.file is required when mode is
    ///   record or replay`;
    /// - record with a path: `record mode requires a managed recording ID`;
    /// - replay whose file fails strict reading: `invalid replay recording: <reason>`.
    ///
    /// On any error the configuration is unchanged. Returns what was stored: for replay the ID
    /// when the file lives in the managed root, else its absolute path.
    pub(crate) fn set_record_replay(
        &self,
        mode: Mode,
        file: &str,
    ) -> Result<RecordReplay, RecordingsError> {
        let stored = match mode {
            Mode::Off => file.to_string(),
            Mode::Record | Mode::Replay if file.trim().is_empty() => {
                return Err(RecordingsError::Config(
                    "record_replay.file is required when mode is record or replay".into(),
                ));
            }
            Mode::Record => match self.selector(file)? {
                Selector::Id(id) => id,
                Selector::Path(_) => return Err(RecordingsError::RecordNeedsId),
            },
            Mode::Replay => match self.validate_replay(file)? {
                Location::Managed { id, .. } => id,
                Location::External { path } => path.to_string_lossy().into_owned(),
            },
        };
        let settings = RecordReplay { mode, file: stored };
        self.update_document(|subtree| {
            subtree.insert("mode".into(), Value::from(settings.mode.as_str()));
            subtree.insert("file".into(), Value::from(settings.file.clone()));
        })?;
        Ok(settings)
    }

    /// Sets `record_replay.mode` to off and keeps `file` as it is, whatever it names and even
    /// when the stored mode is unsupported: the recovery path from the blocked state. Never reads
    /// a recording.
    pub(crate) fn set_off(&self) -> Result<RecordReplay, RecordingsError> {
        let mut file = String::new();
        self.update_document(|subtree| {
            subtree.insert("mode".into(), Value::from("off"));
            file = subtree
                .get("file")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
        })?;
        Ok(RecordReplay {
            mode: Mode::Off,
            file,
        })
    }

    /// Reads `config.json` as a JSON object; a missing file is an empty object.
    fn read_document(&self) -> Result<Map<String, Value>, RecordingsError> {
        let path = self.config_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(source) => {
                return Err(RecordingsError::Io {
                    action: "cannot read config",
                    path,
                    source,
                });
            }
        };
        if text.trim().is_empty() {
            return Ok(Map::new());
        }
        match serde_json::from_str(&text) {
            Ok(Value::Object(document)) => Ok(document),
            Ok(_) => Err(RecordingsError::Config(format!(
                "config {} must hold a JSON object",
                path.display()
            ))),
            // serde_json's message names a line and column, never the text itself.
            Err(err) => Err(RecordingsError::Config(format!(
                "cannot parse config {}: {err}",
                path.display()
            ))),
        }
    }

    /// One configuration transaction: lock, read, change the `record_replay` subtree (created,
    /// or replaced when it is not an object), write atomically.
    fn update_document(
        &self,
        change: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<(), RecordingsError> {
        fsx::create_private_dir_all(&self.state_dir).map_err(|source| RecordingsError::Io {
            action: "cannot create state directory",
            path: self.state_dir.clone(),
            source,
        })?;
        let lock_path = self.state_dir.join("config.json.lock");
        let lock = fsx::private_nofollow(OpenOptions::new().read(true).write(true).create(true))
            .open(&lock_path)
            .and_then(|file| file.lock().map(|()| file))
            .map_err(|source| RecordingsError::Io {
                action: "cannot lock config",
                path: lock_path.clone(),
                source,
            })?;
        let mut document = self.read_document()?;
        let subtree = document
            .entry(SUBTREE)
            .and_modify(|value| {
                if !value.is_object() {
                    *value = Value::Object(Map::new());
                }
            })
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(subtree) = subtree {
            change(subtree);
        }
        let result = write_atomically(&self.config_path(), &Value::Object(document));
        drop(lock);
        result
    }
}

/// Writes `document` (pretty JSON and a newline) over `path` atomically, mode 0600.
fn write_atomically(path: &Path, document: &Value) -> Result<(), RecordingsError> {
    let mut text = serde_json::to_string_pretty(document).expect("a JSON value serialises");
    text.push('\n');
    replay_core::write_atomically(path, text.as_bytes(), 0o600).map_err(|source| {
        RecordingsError::Io {
            action: "cannot write config",
            path: path.to_path_buf(),
            source,
        }
    })
}
