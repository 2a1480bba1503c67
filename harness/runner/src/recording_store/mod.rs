//! Managed recordings: the state directory, its `record_replay` configuration, the managed
//! recordings folder, the library behind `cargo xtask recordings <verb>`, and the record/replay
//! **activation decision** a launcher takes once at start-up.
//!
//! The specification is `docs/recording-format.md` §9 (activation and the fail-closed provider),
//! §10 (configuration), §11 (folder, IDs, permissions, locking) and §12 (the CLI). The file format
//! itself (strict reader, writer) is [`replay_core::recording`]; this module only calls
//! [`read_recording`] and [`RecordingSink::create_managed`](replay_core::recording::RecordingSink::create_managed).
//!
//! # Adaptations of OpenProgram's design to this workspace
//!
//! - **State directory.** OpenProgram uses `~/.openprogram` (or `~/.openprogram-<profile>`).
//!   Here it is [`RecordingsHome::new`]'s argument, and [`RecordingsHome::from_env`] takes
//!   `$KEYLESS_STATE_DIR`, else `<repository root>/.harness-state` (gitignored). Nothing else is
//!   read from the environment: no variable enables recording or replay.
//! - **Configuration.** `<state>/config.json` holds `{"record_replay": {"mode", "file"}}`. This
//!   module owns only that subtree and keeps other keys. It is written atomically (a fsynced
//!   0600 temporary file renamed over it) under an exclusive lock on `<state>/config.json.lock`.
//! - **Activation.** There is no provider registry here: [`RecordingsHome::activation`] returns
//!   an [`Activation`] value and the launcher installs the recorder, the replay model, or a
//!   fail-closed model that answers every call with `BLOCKED_MESSAGE`. The configuration is
//!   read once per call, so a change takes effect at the next start.
//! - **Managed root checks.** The root `<state>/recordings` is created 0700 or tightened to 0700
//!   through a no-follow handle, and refused if it is a symlink, not a directory, or still not
//!   0700. The state directory itself may be a symlink (temporary directories often are). A path
//!   selector is normalised lexically (`..` removed) and compared with the root ignoring case; a
//!   path that lands inside the root that way gets the root checks plus a symlink check of every
//!   directory below the state directory, so neither `..` nor a case variant gets around them.
//!   It counts as managed only when its directory is the root itself (or the same directory
//!   entry, on a case-insensitive file system) and its name is `<valid ID>.jsonl`; anything else
//!   is external and read with [`Access::External`].
//! - **"Active".** The spec's definition (mode record or replay, and `file` a managed ID equal to
//!   the recording's ID) is widened to "`file` resolves to the same file", so a hand-written path
//!   to a managed file also protects it from `delete` and `prune`.
//!
//! # Where the spec is silent
//!
//! - `call_count` is `null` and `created_at` falls back to the change time when a file is
//!   invalid; `show --content` of an invalid file gives `"content": null`.
//! - `prune` asks for confirmation on every real run, even when nothing matched (a script
//!   without `--yes` fails the same way every day). `recordings` lists the matched IDs, newest
//!   first; `bytes` is the size of the matched files on a dry run and of the deleted ones
//!   otherwise.
//! - `status` fails on an unsupported mode (it names it); `off` works on any parseable
//!   configuration, whatever its mode or file.

mod config;
mod fsx;
mod ids;
mod store;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use replay_core::protocol::STATE_DIR_VAR;
use replay_core::recording::{Access, RecordingFileError, read_recording};
use replay_core::shorten;

pub use config::{Mode, RecordReplay};
use ids::{Selector, is_valid_recording_id, normalize_lexically, parse_selector};
pub use store::{Deleted, PruneReport, Recorded, RecordingInfo, Shown, terminal_confirmation};

/// The message every model call fails with while record/replay is blocked (§9).
pub const BLOCKED_MESSAGE: &str = "record/replay configuration is invalid; run `cargo xtask recordings status` or `cargo xtask recordings off`";

/// The longest `Activation::Blocked` reason kept (as §9 bounds failure messages).
const MAX_REASON_CHARS: usize = 500;

/// Everything that can go wrong in the store. Messages are the ones §10 and §12 print.
#[derive(Debug, thiserror::Error)]
pub enum RecordingsError {
    /// A file-system operation failed.
    #[error("{action} {}: {source}", .path.display())]
    Io {
        /// What was being done, e.g. `cannot read config`.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An ID that breaks §11.1's syntax.
    #[error("invalid recording ID: '{0}'")]
    InvalidId(String),
    /// A configuration value or document problem (§10 messages).
    #[error("{0}")]
    Config(String),
    /// Record mode was given a path.
    #[error("record mode requires a managed recording ID")]
    RecordNeedsId,
    /// The replay file failed selection or strict reading; nothing was changed.
    #[error("invalid replay recording: {0}")]
    InvalidReplay(String),
    /// The format library refused a file.
    #[error(transparent)]
    File(#[from] RecordingFileError),
    /// The managed root (or a directory below the state directory on the way into it) is unsafe.
    #[error("refusing managed recordings folder {}: {reason}", .path.display())]
    UnsafeRoot {
        /// The offending directory.
        path: PathBuf,
        /// Why, e.g. `it is a symlink`.
        reason: String,
    },
    /// `delete` was given a path.
    #[error("delete requires a managed ID")]
    DeleteRequiresManagedId,
    /// `delete` named the active recording.
    #[error("refusing to delete the active recording")]
    ActiveRecording,
    /// `delete` named a symlink.
    #[error("refusing to delete a symlink: {}", .0.display())]
    Symlink(PathBuf),
    /// `delete` named something that is not a regular file.
    #[error("not a regular recording file: {}", .0.display())]
    NotAFile(PathBuf),
    /// The recording does not exist.
    #[error("recording not found: {0}")]
    NotFound(String),
    /// Another process holds `<recording>.lock`.
    #[error("recording is locked: {0}")]
    Locked(String),
    /// `prune --older-than-days` was not a positive integer.
    #[error("--older-than-days must be a positive integer")]
    InvalidAge,
    /// The user did not confirm a destructive verb (exit code 2).
    #[error("{0}")]
    Refused(String),
}

impl RecordingsError {
    /// The CLI exit code: 2 for a refused confirmation, 1 for everything else (§12).
    pub fn exit_code(&self) -> u8 {
        match self {
            RecordingsError::Refused(_) => 2,
            _ => 1,
        }
    }
}

/// What a launcher installs for this start (§9 "Activation from config").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activation {
    /// Mode off or missing: nothing installed.
    Off,
    /// Record every model call into this existing, strictly valid managed file.
    Record {
        /// The managed recording file.
        path: PathBuf,
    },
    /// Serve every model call from this strictly valid file.
    Replay {
        /// The recording file (managed or external).
        path: PathBuf,
    },
    /// The configuration is unusable: install the fail-closed model (`BLOCKED_MESSAGE`) and
    /// log `reason`, which names the problem but never a recording's contents.
    Blocked {
        /// Why, at most 500 characters.
        reason: String,
    },
}

/// Where a selector leads once the managed root has been consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// `<root>/<id>.jsonl`, read with [`Access::Managed`].
    Managed {
        /// The ID.
        id: String,
        /// The managed file.
        path: PathBuf,
    },
    /// Any other file, read with [`Access::External`].
    External {
        /// Absolute, lexically normalised.
        path: PathBuf,
    },
}

impl Location {
    /// The file.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Location::Managed { path, .. } | Location::External { path } => path,
        }
    }

    /// How the format library must read it.
    pub(crate) fn access(&self) -> Access {
        match self {
            Location::Managed { .. } => Access::Managed,
            Location::External { .. } => Access::External,
        }
    }

    /// The ID for a managed file, else the path: what `replay` stores and prints.
    pub(crate) fn label(&self) -> String {
        match self {
            Location::Managed { id, .. } => id.clone(),
            Location::External { path } => path.to_string_lossy().into_owned(),
        }
    }
}

/// A state directory: its configuration and its managed recordings folder.
#[derive(Debug, Clone)]
pub struct RecordingsHome {
    state_dir: PathBuf,
    /// The user's home folder, which a selector's leading `~` names (none: `~` stays).
    user_home: Option<PathBuf>,
}

impl RecordingsHome {
    /// A home rooted at `state_dir` (made absolute and lexically normalised; nothing is created
    /// until a verb needs it).
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        let state_dir = state_dir.into();
        let absolute = std::path::absolute(&state_dir).unwrap_or(state_dir);
        RecordingsHome {
            state_dir: normalize_lexically(&absolute),
            user_home: None,
        }
    }

    /// This home, with `~` in a selector meaning `user_home`.
    pub fn with_user_home(mut self, user_home: impl Into<PathBuf>) -> Self {
        let user_home = user_home.into();
        self.user_home = (!user_home.as_os_str().is_empty()).then_some(user_home);
        self
    }

    /// `$KEYLESS_STATE_DIR` (or its alias `$HARNESS_STATE_DIR`) when set and not empty, else `default_state_dir` (the caller's
    /// `<repository root>/.harness-state`: this crate cannot know where a repository is, and a
    /// folder derived from its own manifest would be `harness/runner/`), with `$HOME` as the
    /// `~` of selectors. The one place this module reads the environment.
    pub fn from_env(default_state_dir: impl Into<PathBuf>) -> Self {
        let home = match STATE_DIR_VAR.env_value(|name| std::env::var_os(name)) {
            Some(dir) => Self::new(dir),
            None => Self::new(default_state_dir),
        };
        match std::env::var_os("HOME") {
            Some(user_home) => home.with_user_home(user_home),
            None => home,
        }
    }

    /// Parses a selector, a leading `~` meaning this home's user home.
    pub(crate) fn selector(&self, value: &str) -> Result<Selector, RecordingsError> {
        parse_selector(value, self.user_home.as_deref())
    }

    /// The state directory.
    #[cfg(test)]
    pub(crate) fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The managed root, `<state>/recordings`.
    pub fn root(&self) -> PathBuf {
        self.state_dir.join("recordings")
    }

    /// `<root>/<id>.jsonl` (no checks).
    pub(crate) fn managed_path(&self, id: &str) -> PathBuf {
        self.root().join(format!("{id}.jsonl"))
    }

    /// Creates the managed root (0700) or tightens it to 0700, refusing a symlink, a
    /// non-directory, or a folder that is still not 0700 afterwards (§11.1). Returns the root.
    pub(crate) fn ensure_root(&self) -> Result<PathBuf, RecordingsError> {
        let root = self.root();
        let unsafe_root = |reason: &str| RecordingsError::UnsafeRoot {
            path: root.clone(),
            reason: reason.to_string(),
        };
        match std::fs::symlink_metadata(&root) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(unsafe_root("it is a symlink"));
            }
            Ok(meta) if !meta.is_dir() => return Err(unsafe_root("it is not a directory")),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                fsx::create_private_dir_all(&root).map_err(|source| RecordingsError::Io {
                    action: "cannot create managed recordings folder",
                    path: root.clone(),
                    source,
                })?;
            }
            Err(source) => {
                return Err(RecordingsError::Io {
                    action: "cannot inspect managed recordings folder",
                    path: root,
                    source,
                });
            }
        }
        match fsx::tighten_private_dir(&root) {
            Ok(0o700) => Ok(root),
            Ok(mode) => Err(unsafe_root(&format!(
                "it must have mode 0700 (has {mode:04o})"
            ))),
            // O_NOFOLLOW on a symlink swapped in since the check above.
            Err(err) if err.raw_os_error() == Some(eloop()) => Err(unsafe_root("it is a symlink")),
            Err(source) => Err(RecordingsError::Io {
                action: "cannot tighten managed recordings folder",
                path: root,
                source,
            }),
        }
    }

    /// Resolves a selector (an ID or a path) to a managed or external file, applying the managed
    /// root checks whenever the path lands in the root (see the module doc). Does not check that
    /// the file exists.
    pub(crate) fn locate(&self, selector: &str) -> Result<Location, RecordingsError> {
        match self.selector(selector)? {
            Selector::Id(id) => {
                let root = self.ensure_root()?;
                let path = root.join(format!("{id}.jsonl"));
                Ok(Location::Managed { id, path })
            }
            Selector::Path(path) => self.classify(path),
        }
    }

    fn classify(&self, path: PathBuf) -> Result<Location, RecordingsError> {
        let root = self.root();
        let root_parts: Vec<_> = root.components().collect();
        let parts: Vec<_> = path.components().collect();
        let under_root = parts.len() > root_parts.len()
            && root_parts.iter().zip(&parts).all(|(a, b)| {
                a.as_os_str().to_string_lossy().to_lowercase()
                    == b.as_os_str().to_string_lossy().to_lowercase()
            });
        if !under_root {
            return Ok(Location::External { path });
        }
        self.ensure_root()?;
        // Every directory from just below the state directory down to the file's parent.
        let mut prefix: PathBuf = parts[..root_parts.len() - 1].iter().collect();
        for part in &parts[root_parts.len() - 1..parts.len() - 1] {
            prefix.push(part);
            match std::fs::symlink_metadata(&prefix) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(RecordingsError::UnsafeRoot {
                        path: prefix,
                        reason: "it is a symlink".into(),
                    });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let parent = path.parent().unwrap_or(Path::new(""));
        let in_root = parent == root || fsx::same_entry(parent, &root);
        let id = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".jsonl"))
            .filter(|id| is_valid_recording_id(id));
        match id {
            Some(id) if in_root => Ok(Location::Managed {
                id: id.to_string(),
                path: root.join(format!("{id}.jsonl")),
            }),
            _ => Ok(Location::External { path }),
        }
    }

    /// Resolves and strictly reads a replay file; any failure is `invalid replay recording`.
    pub(crate) fn validate_replay(&self, selector: &str) -> Result<Location, RecordingsError> {
        let location = match self.locate(selector) {
            Ok(location) => location,
            Err(err @ RecordingsError::InvalidId(_)) => return Err(err),
            Err(err) => return Err(RecordingsError::InvalidReplay(err.to_string())),
        };
        read_recording(location.path(), location.access())
            .map_err(|err| RecordingsError::InvalidReplay(err.to_string()))?;
        Ok(location)
    }

    /// The record/replay decision for this start (§9): reads the configuration once and never
    /// panics. Off when the mode is off or missing; Record when the mode is record, `file` is a
    /// managed ID and that file reads strictly; Replay when the file reads strictly (managed or
    /// external access accordingly); Blocked with the reason for anything else, including an
    /// unreadable configuration or an unsupported mode.
    pub fn activation(&self) -> Activation {
        let decided =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_activation()));
        match decided {
            Ok(Ok(activation)) => activation,
            Ok(Err(err)) => Activation::Blocked {
                reason: bounded(&err.to_string()),
            },
            Err(_) => Activation::Blocked {
                reason: "record/replay activation panicked".into(),
            },
        }
    }

    fn try_activation(&self) -> Result<Activation, RecordingsError> {
        let config = self.config()?;
        if config.mode != Mode::Off && config.file.trim().is_empty() {
            return Err(RecordingsError::Config(
                "record_replay.file is required when mode is record or replay".into(),
            ));
        }
        match config.mode {
            Mode::Off => Ok(Activation::Off),
            Mode::Record => {
                let Selector::Id(id) = self.selector(&config.file)? else {
                    return Err(RecordingsError::RecordNeedsId);
                };
                let root = self.ensure_root()?;
                let path = root.join(format!("{id}.jsonl"));
                read_recording(&path, Access::Managed)?;
                Ok(Activation::Record { path })
            }
            Mode::Replay => {
                let location = self.validate_replay(&config.file)?;
                Ok(Activation::Replay {
                    path: location.path().to_path_buf(),
                })
            }
        }
    }
}

/// At most [`MAX_REASON_CHARS`] characters, the cut marked with `…`.
fn bounded(reason: &str) -> String {
    if reason.chars().count() <= MAX_REASON_CHARS {
        reason.to_string()
    } else {
        shorten(reason, MAX_REASON_CHARS - 1).into_owned()
    }
}

#[cfg(unix)]
fn eloop() -> i32 {
    libc::ELOOP
}

#[cfg(not(unix))]
fn eloop() -> i32 {
    -1
}
