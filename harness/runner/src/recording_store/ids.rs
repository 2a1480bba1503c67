//! Recording IDs and file selectors (`docs/recording-format.md` §10, §11.1).
//!
//! An ID matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$` once one trailing `.jsonl` is removed, and is
//! never `.` or `..`. A selector (a CLI argument or `record_replay.file`) is an explicit path when
//! it is absolute or contains `/` or `\`; otherwise it is an ID.

use std::path::{Component, Path, PathBuf};

use super::RecordingsError;

/// The longest ID (the first character plus 63 more).
pub(crate) const MAX_ID_LEN: usize = 64;

/// Whether `id` (already without `.jsonl`) is a valid recording ID.
pub(crate) fn is_valid_recording_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    if id == "." || id == ".." || bytes.is_empty() || bytes.len() > MAX_ID_LEN {
        return false;
    }
    bytes[0].is_ascii_alphanumeric()
        && bytes[1..]
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
}

/// Removes one trailing `.jsonl` and checks the ID syntax.
pub(crate) fn normalize_recording_id(value: &str) -> Result<String, RecordingsError> {
    let id = value.strip_suffix(".jsonl").unwrap_or(value);
    if is_valid_recording_id(id) {
        Ok(id.to_string())
    } else {
        Err(RecordingsError::InvalidId(value.to_string()))
    }
}

/// A fresh default ID: `YYYYmmddTHHMMSSZ-<8 random hex>`, e.g. `20260811T134502Z-3f9a0c1b`.
pub(crate) fn default_recording_id() -> String {
    format!(
        "{}-{:08x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        rand::random::<u32>()
    )
}

/// What a selector names, before the managed root is consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selector {
    /// A managed recording ID (without `.jsonl`).
    Id(String),
    /// An explicit path: `~` expanded, absolute and lexically normalised.
    Path(PathBuf),
}

/// Parses a selector (§10 "Selector resolution").
///
/// A value that is absolute or contains `/` or `\` is a path: a leading `~` (alone or followed by
/// a separator) becomes `user_home` (the caller's `$HOME`, read once by
/// [`RecordingsHome::from_env`](super::RecordingsHome::from_env); without one it stays), a relative path is joined to the current directory, and `.` and
/// `..` are removed lexically. Anything else must be a valid ID (`.jsonl` is optional).
pub(crate) fn parse_selector(
    value: &str,
    user_home: Option<&Path>,
) -> Result<Selector, RecordingsError> {
    let is_path = Path::new(value).is_absolute() || value.contains('/') || value.contains('\\');
    if !is_path {
        return normalize_recording_id(value).map(Selector::Id);
    }
    let expanded = expand_tilde(value, user_home);
    let absolute = std::path::absolute(&expanded).map_err(|source| RecordingsError::Io {
        action: "cannot make absolute",
        path: expanded.clone(),
        source,
    })?;
    Ok(Selector::Path(normalize_lexically(&absolute)))
}

fn expand_tilde(value: &str, user_home: Option<&Path>) -> PathBuf {
    let rest = if value == "~" {
        Some("")
    } else {
        value
            .strip_prefix("~/")
            .or_else(|| value.strip_prefix("~\\"))
    };
    match (rest, user_home) {
        (Some(rest), Some(home)) if !home.as_os_str().is_empty() => home.join(rest),
        _ => PathBuf::from(value),
    }
}

/// Removes `.` components and resolves `..` against the preceding component, without touching
/// the file system (a `..` at the root stays at the root).
pub(crate) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let at_root = matches!(
                    out.components().next_back(),
                    None | Some(Component::RootDir | Component::Prefix(_))
                );
                if !at_root {
                    out.pop();
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
