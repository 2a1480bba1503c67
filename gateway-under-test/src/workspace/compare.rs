//! Comparing two snapshots: which paths changed, how, and their unified diffs (from the
//! `similar` crate, in the form of Python's `difflib.unified_diff(..., lineterm="")`).
//!
//! **Time-bounded** (docs/gateway-contract.md §12). Myers' diff costs O(N·D): rewriting one
//! 40,000-line file cost minutes of gateway CPU at the end of its run. A side with more than
//! [`MAX_DIFF_LINES`] lines gets no diff: the file is reported `large`, as if rewritten (all its
//! new lines added, all its old lines removed); and every diff runs under `similar`'s deadline
//! ([`DIFF_DEADLINE`]), past which it falls back to a coarser, still correct diff.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use similar::{ChangeTag, TextDiff};

use super::{
    ChangeStatus, ChangeSummary, DiffUnavailable, FileChange, FileSnapshot, WorkspaceChanges,
    WorkspaceLimits, WorkspaceSnapshot,
};

/// A side with more lines than this is reported rewritten, without a diff.
pub const MAX_DIFF_LINES: usize = 10_000;

/// How long one file's diff may search for a minimal diff before it settles for a coarser one.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// What the run changed between `before` and `after`.
pub fn compare(
    before: &WorkspaceSnapshot,
    after: &WorkspaceSnapshot,
    limits: &WorkspaceLimits,
) -> WorkspaceChanges {
    let mut summary = ChangeSummary {
        truncated: before.truncated || after.truncated,
        ..ChangeSummary::default()
    };
    let mut files = Vec::new();
    let mut diff_bytes = 0usize;
    for path in changed_paths(before, after) {
        let old = before.files.get(&path);
        let new = after.files.get(&path);
        let Some(sample) = new.or(old) else { continue };
        let status = status(old, new);
        match status {
            ChangeStatus::Created => summary.created += 1,
            ChangeStatus::Modified => summary.modified += 1,
            ChangeStatus::Deleted => summary.deleted += 1,
            ChangeStatus::SymlinkCreated => summary.symlink_created += 1,
        }
        let diff = file_diff(
            &path,
            old,
            new,
            limits.max_total_diff_bytes.saturating_sub(diff_bytes),
        );
        diff_bytes += diff.text.len();
        summary.additions += diff.additions;
        summary.deletions += diff.deletions;
        if diff.truncated
            || matches!(
                diff.unavailable,
                Some(DiffUnavailable::Large | DiffUnavailable::Truncated)
            )
        {
            summary.truncated = true;
        }
        if files.len() >= limits.max_files {
            summary.truncated = true;
            continue;
        }
        files.push(FileChange {
            path,
            root: sample.root,
            status,
            binary: sample.binary,
            sensitive: sample.sensitive,
            size_before: old.map(|f| f.size),
            size_after: new.map(|f| f.size),
            sha256_before: old.and_then(|f| f.sha256.clone()),
            sha256_after: new.and_then(|f| f.sha256.clone()),
            diff: diff.text,
            diff_truncated: diff.truncated,
            diff_unavailable_reason: diff.unavailable,
            additions: diff.additions,
            deletions: diff.deletions,
            symlink: sample.symlink,
            symlink_target_before: old.and_then(|f| f.symlink_target.clone()),
            symlink_target_after: new.and_then(|f| f.symlink_target.clone()),
        });
    }
    WorkspaceChanges {
        version: 1,
        summary,
        files,
        limits: *limits,
    }
}

/// Paths whose file differs. A path missing from a truncated snapshot proves nothing, so it is
/// left out rather than reported as created or deleted.
fn changed_paths(before: &WorkspaceSnapshot, after: &WorkspaceSnapshot) -> BTreeSet<String> {
    before
        .files
        .keys()
        .chain(after.files.keys())
        .filter(|path| {
            let (old, new) = (before.files.get(*path), after.files.get(*path));
            if (old.is_none() && before.truncated) || (new.is_none() && after.truncated) {
                return false;
            }
            !matches!((old, new), (Some(old), Some(new)) if same_file(old, new))
        })
        .cloned()
        .collect()
}

fn same_file(old: &FileSnapshot, new: &FileSnapshot) -> bool {
    if old.symlink || new.symlink {
        return old.symlink == new.symlink && old.symlink_target == new.symlink_target;
    }
    match (&old.sha256, &new.sha256) {
        (Some(a), Some(b)) => a == b,
        _ => old.size == new.size && old.mtime_ns == new.mtime_ns,
    }
}

fn status(old: Option<&FileSnapshot>, new: Option<&FileSnapshot>) -> ChangeStatus {
    let was_symlink = old.is_some_and(|f| f.symlink);
    let is_symlink = new.is_some_and(|f| f.symlink);
    match (old, new) {
        _ if is_symlink && !was_symlink => ChangeStatus::SymlinkCreated,
        (None, _) => ChangeStatus::Created,
        (_, None) => ChangeStatus::Deleted,
        _ => ChangeStatus::Modified,
    }
}

struct FileDiff {
    text: String,
    additions: usize,
    deletions: usize,
    truncated: bool,
    unavailable: Option<DiffUnavailable>,
}

impl FileDiff {
    fn unavailable(reason: Option<DiffUnavailable>) -> FileDiff {
        FileDiff {
            text: String::new(),
            additions: 0,
            deletions: 0,
            truncated: false,
            unavailable: reason,
        }
    }
}

/// The diff of one path, or why there is none. The reasons rank symlink, sensitive, binary,
/// large, truncated, as DeerFlow ranks them.
fn file_diff(
    path: &str,
    old: Option<&FileSnapshot>,
    new: Option<&FileSnapshot>,
    remaining_bytes: usize,
) -> FileDiff {
    let sides: Vec<&FileSnapshot> = old.into_iter().chain(new).collect();
    for reason in [
        DiffUnavailable::Symlink,
        DiffUnavailable::Sensitive,
        DiffUnavailable::Binary,
        DiffUnavailable::Large,
        DiffUnavailable::Truncated,
    ] {
        if sides.iter().any(|side| side.unavailable == Some(reason)) {
            return FileDiff::unavailable(Some(reason));
        }
    }
    fn text_of(side: Option<&FileSnapshot>) -> Option<&str> {
        match side {
            None => Some(""),
            Some(file) => file.text.as_deref(),
        }
    }
    let (Some(old_text), Some(new_text)) = (text_of(old), text_of(new)) else {
        return FileDiff::unavailable(None);
    };
    let (old_lines, new_lines) = (old_text.lines().count(), new_text.lines().count());
    if old_lines.max(new_lines) > MAX_DIFF_LINES {
        // Rewritten, as far as the report goes: no diff, every line counted.
        return FileDiff {
            additions: new_lines,
            deletions: old_lines,
            ..FileDiff::unavailable(Some(DiffUnavailable::Large))
        };
    }
    let (text, additions, deletions) = unified_diff(path, old_text, new_text);
    if text.len() > remaining_bytes {
        return FileDiff {
            text: String::new(),
            additions,
            deletions,
            truncated: true,
            unavailable: Some(DiffUnavailable::Truncated),
        };
    }
    FileDiff {
        text,
        additions,
        deletions,
        truncated: false,
        unavailable: None,
    }
}

/// `difflib.unified_diff(old.splitlines(), new.splitlines(), f"a{path}", f"b{path}",
/// lineterm="")` joined by newlines: headers, hunks with three lines of context, no trailing
/// newline; empty when the line lists are equal. Returns the text and the added and removed
/// line counts.
pub(super) fn unified_diff(path: &str, old: &str, new: &str) -> (String, usize, usize) {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = TextDiff::configure()
        .deadline(Instant::now() + DIFF_DEADLINE)
        .diff_slices(&old_lines, &new_lines);
    let mut lines = Vec::new();
    let (mut additions, mut deletions) = (0, 0);
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        if lines.is_empty() {
            lines.push(format!("--- a{path}"));
            lines.push(format!("+++ b{path}"));
        }
        lines.push(hunk.header().to_string());
        for change in hunk.iter_changes() {
            let sign = match change.tag() {
                ChangeTag::Insert => {
                    additions += 1;
                    '+'
                }
                ChangeTag::Delete => {
                    deletions += 1;
                    '-'
                }
                ChangeTag::Equal => ' ',
            };
            lines.push(format!("{sign}{}", change.value()));
        }
    }
    (lines.join("\n"), additions, deletions)
}
