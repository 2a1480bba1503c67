//! Pending goldens: a run whose golden is missing or changed writes the new document beside it
//! as insta's `<stem>.snap.new`, so `keyless accept`, `keyless review` and, in a Rust
//! repository, `cargo insta review` all see the same file. Accepting one saves it as
//! `<stem>.snap` through insta's own snapshot API (dropping the pending-only metadata, as
//! `cargo insta accept` does); rejecting one deletes it.
//!
//! Every file is read and written through [`crate::regular_file`] and [`load_snapshot`]: a link
//! or a special file in the golden folder is refused naming it, never read through (review never
//! prints what a link points at, accept never copies it) and never written through. A diff is
//! bounded in time and in lines, so a huge golden is reviewed in seconds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use insta::Snapshot;

use crate::golden::{GoldenError, golden_path, load_snapshot};
use crate::regular_file::{self, FileError};

/// How long the diff of one pending golden may search for the smallest edit before it settles
/// for a coarser one (`similar`'s deadline).
const DIFF_DEADLINE: Duration = Duration::from_secs(2);
/// How many lines of a diff `keyless review` prints; the rest is counted.
const MAX_DIFF_LINES: usize = 2_000;

/// Why a pending golden could not be written, read or accepted.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    /// A file could not be read, written or removed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is a link, a special file, or otherwise not one keyless reads or writes.
    #[error(transparent)]
    File(#[from] FileError),
    /// A golden or pending golden is not a text snapshot keyless reads.
    #[error(transparent)]
    Golden(#[from] GoldenError),
    /// insta could not read or save the snapshot.
    #[error("{}: {message}", .path.display())]
    Snapshot {
        /// The file.
        path: PathBuf,
        /// insta's message.
        message: String,
    },
    /// `accept NAME` named no pending golden.
    #[error("no pending golden {name:?} in {} (pending: {})", .dir.display(), if .pending.is_empty() { "none".to_owned() } else { .pending.join(", ") })]
    NotPending {
        /// The name asked for.
        name: String,
        /// The golden folder.
        dir: PathBuf,
        /// The names that are pending.
        pending: Vec<String>,
    },
}

/// One pending golden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The fixture stem (the snapshot's name).
    pub stem: String,
    /// The `.snap.new` file.
    pub new_path: PathBuf,
    /// The `.snap` file it would replace (it may not exist yet).
    pub golden_path: PathBuf,
}

/// The pending file of `stem` in `golden_dir`.
pub fn pending_path(golden_dir: &Path, stem: &str) -> PathBuf {
    golden_dir.join(format!("{stem}.snap.new"))
}

/// Writes `document` as the pending golden of `stem` in insta's snapshot format, its
/// description naming `fixture` (as the workspace's goldens do), and returns its path.
pub fn write_pending(
    golden_dir: &Path,
    stem: &str,
    fixture: &str,
    document: &str,
) -> Result<PathBuf, PendingError> {
    let path = pending_path(golden_dir, stem);
    let io = |source| PendingError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(golden_dir).map_err(io)?;
    // A JSON string is a YAML double-quoted scalar, which is how insta writes a description.
    let description = serde_json::Value::String(format!("fixture: {fixture}"));
    let text = format!(
        "---\nsource: keyless\ndescription: {description}\n---\n{}\n",
        document.trim_end()
    );
    regular_file::replace(&path, text.as_bytes())?;
    Ok(path)
}

/// Every pending golden in `golden_dir`, sorted by name (none when the folder does not exist).
pub fn pending(golden_dir: &Path) -> Result<Vec<Pending>, PendingError> {
    let listing = match std::fs::read_dir(golden_dir) {
        Ok(listing) => listing,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(PendingError::Io {
                path: golden_dir.to_path_buf(),
                source,
            });
        }
    };
    let mut found: Vec<Pending> = listing
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let stem = name.strip_suffix(".snap.new")?.to_owned();
            Some(Pending {
                golden_path: golden_path(golden_dir, &stem),
                new_path: path,
                stem,
            })
        })
        .collect();
    found.sort_by(|a, b| a.stem.cmp(&b.stem));
    Ok(found)
}

/// The pending golden `name` (a fixture stem, or its `.snap.new` file name).
pub fn find(golden_dir: &Path, name: &str) -> Result<Pending, PendingError> {
    let stem = name
        .strip_suffix(".snap.new")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name);
    let all = pending(golden_dir)?;
    all.iter()
        .find(|p| p.stem == stem)
        .cloned()
        .ok_or_else(|| PendingError::NotPending {
            name: name.to_owned(),
            dir: golden_dir.to_path_buf(),
            pending: all.into_iter().map(|p| p.stem).collect(),
        })
}

/// The snapshot at `path`, which must be there.
fn load(path: &Path) -> Result<Snapshot, PendingError> {
    load_snapshot(path)?.ok_or_else(|| PendingError::Io {
        path: path.to_path_buf(),
        source: std::io::ErrorKind::NotFound.into(),
    })
}

/// Accepts `pending`: its snapshot becomes the golden, and the pending file goes. insta saves
/// it into a private folder; its text then replaces the golden without following a link.
pub fn accept(pending: &Pending) -> Result<(), PendingError> {
    let snapshot = load(&pending.new_path)?;
    regular_file::exists_regular(&pending.golden_path)?;
    let saving = |message: String| PendingError::Snapshot {
        path: pending.golden_path.clone(),
        message,
    };
    let private = tempfile::Builder::new()
        .prefix("keyless-accept-")
        .tempdir()
        .map_err(|err| saving(err.to_string()))?;
    let saved = private.path().join("golden.snap");
    snapshot
        .save(&saved)
        .map_err(|err| saving(err.to_string()))?;
    let text = std::fs::read(&saved).map_err(|err| saving(err.to_string()))?;
    regular_file::replace(&pending.golden_path, &text)?;
    reject(pending)
}

/// Rejects `pending`: the pending file goes, the golden stays.
pub fn reject(pending: &Pending) -> Result<(), PendingError> {
    std::fs::remove_file(&pending.new_path).map_err(|source| PendingError::Io {
        path: pending.new_path.clone(),
        source,
    })
}

/// The unified diff from the golden's document to the pending one (every line added when there
/// is no golden yet), searched for at most 2 s and cut after 2,000 lines, saying how many more
/// there are (a 50,000-line golden took 70 s to review before the bounds).
pub fn diff(pending: &Pending) -> Result<String, PendingError> {
    let new_name = pending.new_path.display().to_string();
    let mut cut = diff_within(pending, MAX_DIFF_LINES)?;
    if cut.left_out > 0 {
        cut.text.push_str(&format!(
            "… {} more diff lines not shown (the whole pending golden is {new_name})\n",
            cut.left_out
        ));
    }
    Ok(cut.text)
}

/// A diff cut to a number of lines: what is shown, and how many lines were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutDiff {
    /// The first lines of the unified diff, each ending in a line break.
    pub text: String,
    /// How many lines of the diff are not in `text`.
    pub left_out: usize,
}

/// The unified diff of [`diff`], its first `max_lines` lines and the count of the rest: what a
/// CI log shows of a changed golden under the fixture's row (`keyless test`).
pub fn diff_within(pending: &Pending, max_lines: usize) -> Result<CutDiff, PendingError> {
    let new = document_of(&load(&pending.new_path)?);
    let old = match load_snapshot(&pending.golden_path)? {
        Some(golden) => document_of(&golden),
        None => String::new(),
    };
    let old_name = pending.golden_path.display().to_string();
    let new_name = pending.new_path.display().to_string();
    let whole = similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    let mut lines = whole.split_inclusive('\n');
    let text: String = lines.by_ref().take(max_lines).collect();
    Ok(CutDiff {
        text,
        left_out: lines.count(),
    })
}

fn document_of(snapshot: &Snapshot) -> String {
    let text = snapshot
        .contents()
        .as_text()
        .map(ToString::to_string)
        .unwrap_or_default();
    format!("{}\n", text.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden::golden_status;
    use replay_core::GoldenStatus;

    const DOCUMENT: &str = "{\n  \"scenario\": \"s\",\n  \"mode\": \"flash\",\n  \"events\": []\n}";

    #[test]
    fn a_written_pending_golden_is_accepted_as_the_golden_insta_compares() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            golden_status(dir.path(), "s.flash", DOCUMENT),
            GoldenStatus::Missing
        );
        write_pending(dir.path(), "s.flash", "fixtures/s.flash.json", DOCUMENT).unwrap();
        let found = find(dir.path(), "s.flash").unwrap();
        assert!(diff(&found).unwrap().contains("+  \"scenario\": \"s\","));
        accept(&found).unwrap();
        assert_eq!(
            golden_status(dir.path(), "s.flash", DOCUMENT),
            GoldenStatus::Ok
        );
        assert!(pending(dir.path()).unwrap().is_empty());
        let saved = std::fs::read_to_string(dir.path().join("s.flash.snap")).unwrap();
        assert!(
            saved.contains("description: \"fixture: fixtures/s.flash.json\""),
            "{saved}"
        );
    }

    #[test]
    fn accepting_an_unknown_name_lists_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        write_pending(dir.path(), "a.flash", "a.flash.json", DOCUMENT).unwrap();
        let err = find(dir.path(), "b.flash").unwrap_err().to_string();
        assert!(
            err.contains("no pending golden \"b.flash\"") && err.contains("a.flash"),
            "{err}"
        );
    }

    /// A golden and a pending golden of `lines` lines each, every `every`th line different.
    fn huge_pair(dir: &Path, lines: usize, every: usize) -> Pending {
        let document = |tag: &str| {
            (0..lines)
                .map(|line| {
                    let tag = if line % every == 0 { tag } else { "same" };
                    format!("  \"{tag}-{line}\",")
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        write_pending(dir, "s.flash", "s.flash.json", &document("old")).unwrap();
        accept(&find(dir, "s.flash").unwrap()).unwrap();
        write_pending(dir, "s.flash", "s.flash.json", &document("new")).unwrap();
        find(dir, "s.flash").unwrap()
    }

    /// Issue 34, finding 20: the diff of a huge pending golden is cut after
    /// `MAX_DIFF_LINES` lines, saying how many more there are.
    #[test]
    fn a_huge_diff_is_cut_saying_how_much_more_there_is() {
        let dir = tempfile::tempdir().unwrap();
        let pending = huge_pair(dir.path(), 5_000, 1);
        let shown = diff(&pending).unwrap();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(
            lines.len(),
            MAX_DIFF_LINES + 1,
            "{}",
            lines[lines.len() - 1]
        );
        assert!(
            lines[MAX_DIFF_LINES].starts_with("… 8003 more diff lines not shown"),
            "{}",
            lines[MAX_DIFF_LINES]
        );
    }
}
