//! What a run changed in its thread's sandbox: a bounded snapshot of the `workspace`, `uploads`
//! and `outputs` folders before the run and after it, compared file by file, with unified diffs
//! for text files. The run worker records the comparison in the run journal (event type
//! [`EVENT_TYPE`]) and `GET /api/threads/{id}/runs/{run_id}/workspace-changes` answers it.
//!
//! Everything is bounded by [`WorkspaceLimits`]: how many files are scanned and listed, which
//! files get a diff, and how many diff bytes a run keeps. Symlinks are recorded, never followed;
//! files whose path looks like a secret are listed without hash or diff.

mod compare;
mod scan;

use std::path::PathBuf;

use serde::Serialize;

pub use compare::compare;
pub use scan::is_sensitive_path;

use crate::tools::SandboxPaths;
use crate::tools::paths::VIRTUAL_USER_DATA;

/// The journal event type of a run's recorded changes.
pub const EVENT_TYPE: &str = "workspace.changes";
/// The journal category of [`EVENT_TYPE`] rows.
pub const EVENT_CATEGORY: &str = "workspace";

/// The bounds of one recording (DeerFlow's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkspaceLimits {
    /// At most this many files are listed; the summary still counts every change.
    pub max_files: usize,
    /// At most this many files are scanned per snapshot; beyond it the snapshot is truncated.
    pub max_scanned_files: usize,
    /// Larger files get no text, hence no diff (`large`).
    pub max_file_bytes_for_diff: u64,
    /// The diffs of one run together keep at most this many bytes (`truncated` beyond).
    pub max_total_diff_bytes: usize,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        WorkspaceLimits {
            max_files: 200,
            max_scanned_files: 2000,
            max_file_bytes_for_diff: 256 * 1024,
            max_total_diff_bytes: 1024 * 1024,
        }
    }
}

impl WorkspaceLimits {
    /// The most text one snapshot holds in memory: beyond it, later files keep their hash but no
    /// text, and their diff is `truncated`. Bounds the memory of a run with many large files.
    pub fn max_snapshot_text_bytes(&self) -> u64 {
        16 * self.max_total_diff_bytes as u64
    }
}

/// Which sandbox folder a file lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootName {
    /// `/mnt/user-data/workspace`.
    Workspace,
    /// `/mnt/user-data/uploads`.
    Uploads,
    /// `/mnt/user-data/outputs`.
    Outputs,
}

/// One scanned folder: its host path and the virtual prefix the model sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRoot {
    /// Which folder.
    pub name: RootName,
    /// Where it lives on the host.
    pub host: PathBuf,
    /// `/mnt/user-data/<name>`.
    pub virtual_prefix: String,
}

/// The three scanned folders of a thread.
pub fn thread_roots(paths: &SandboxPaths) -> Vec<WorkspaceRoot> {
    [
        (RootName::Workspace, "workspace", &paths.workspace),
        (RootName::Uploads, "uploads", &paths.uploads),
        (RootName::Outputs, "outputs", &paths.outputs),
    ]
    .into_iter()
    .map(|(name, folder, host)| WorkspaceRoot {
        name,
        host: host.clone(),
        virtual_prefix: format!("{VIRTUAL_USER_DATA}/{folder}"),
    })
    .collect()
}

/// Why a changed file has no diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffUnavailable {
    /// The file is (or was) a symlink.
    Symlink,
    /// The path looks like a secret.
    Sensitive,
    /// Not UTF-8 text.
    Binary,
    /// Larger than [`WorkspaceLimits::max_file_bytes_for_diff`].
    Large,
    /// The run's diff budget (or the snapshot's text budget) was spent.
    Truncated,
}

/// One file as a snapshot saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSnapshot {
    /// The folder it lives in.
    pub root: RootName,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Modification time, for files compared without a hash.
    pub mtime_ns: u128,
    /// SHA-256 hex of the content; `None` for symlinks, sensitive and large files.
    pub sha256: Option<String>,
    /// Not UTF-8 text.
    pub binary: bool,
    /// The path looks like a secret.
    pub sensitive: bool,
    /// The text, for text files within the limits.
    pub text: Option<String>,
    /// Why there is no text, when there is none by rule.
    pub unavailable: Option<DiffUnavailable>,
    /// The link target, for a symlink (never followed).
    pub symlink_target: Option<String>,
    /// Whether the entry is a symlink.
    pub symlink: bool,
}

/// The files of the scanned folders, by virtual path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceSnapshot {
    /// Virtual path → file.
    pub files: std::collections::BTreeMap<String, FileSnapshot>,
    /// The scan stopped at [`WorkspaceLimits::max_scanned_files`].
    pub truncated: bool,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    /// New.
    Created,
    /// Content changed.
    Modified,
    /// Gone.
    Deleted,
    /// A symlink now occupies a path that was not one.
    SymlinkCreated,
}

/// One changed file, as `workspace-changes` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The virtual path.
    pub path: String,
    /// The folder.
    pub root: RootName,
    /// How it changed.
    pub status: ChangeStatus,
    /// Not UTF-8 text.
    pub binary: bool,
    /// The path looks like a secret.
    pub sensitive: bool,
    /// Size before the run, when it existed.
    pub size_before: Option<u64>,
    /// Size after the run, when it exists.
    pub size_after: Option<u64>,
    /// Hash before the run.
    pub sha256_before: Option<String>,
    /// Hash after the run.
    pub sha256_after: Option<String>,
    /// The unified diff (`--- a<path>` / `+++ b<path>` headers, no trailing newline), or `""`.
    pub diff: String,
    /// The diff was dropped because the run's diff budget was spent.
    pub diff_truncated: bool,
    /// Why there is no diff.
    pub diff_unavailable_reason: Option<DiffUnavailable>,
    /// Added lines.
    pub additions: usize,
    /// Removed lines.
    pub deletions: usize,
    /// The entry is (or was) a symlink.
    pub symlink: bool,
    /// The link target before the run.
    pub symlink_target_before: Option<String>,
    /// The link target after the run.
    pub symlink_target_after: Option<String>,
}

/// The totals of a comparison.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChangeSummary {
    /// Files created.
    pub created: usize,
    /// Files modified.
    pub modified: usize,
    /// Files deleted.
    pub deleted: usize,
    /// Symlinks created.
    pub symlink_created: usize,
    /// Added lines over every diff.
    pub additions: usize,
    /// Removed lines over every diff.
    pub deletions: usize,
    /// Something was left out: a snapshot was truncated, a file list or a diff was cut.
    pub truncated: bool,
}

/// What a run changed: the `workspace-changes` payload without `available`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceChanges {
    /// The payload version, 1.
    pub version: u32,
    /// The totals.
    pub summary: ChangeSummary,
    /// The changed files, at most [`WorkspaceLimits::max_files`], sorted by path.
    pub files: Vec<FileChange>,
    /// The limits the recording used.
    pub limits: WorkspaceLimits,
}

impl WorkspaceChanges {
    /// Whether anything changed (DeerFlow records nothing for a run that changed nothing).
    pub fn has_changes(&self) -> bool {
        let s = &self.summary;
        s.created + s.modified + s.deleted + s.symlink_created + s.additions + s.deletions > 0
    }

    /// The one-line journal content: `1 file changed +1 -0`.
    pub fn headline(&self) -> String {
        let s = &self.summary;
        let count = s.created + s.modified + s.deleted + s.symlink_created;
        let plural = if count == 1 { "" } else { "s" };
        format!(
            "{count} file{plural} changed +{} -{}",
            s.additions, s.deletions
        )
    }
}

impl WorkspaceSnapshot {
    /// Scans `roots` within `limits`. Blocking: call it from a blocking task.
    pub fn scan(roots: &[WorkspaceRoot], limits: &WorkspaceLimits) -> WorkspaceSnapshot {
        scan::scan(roots, limits)
    }
}

#[cfg(test)]
mod tests;

/// The journal metadata key holding the [`WorkspaceChanges`] payload.
pub const METADATA_KEY: &str = "workspace_changes";

/// Scans the thread's folders on a blocking thread. A failed scan task gives an empty,
/// truncated snapshot, so nothing is reported as created or deleted because of it.
pub async fn snapshot(paths: &SandboxPaths, limits: WorkspaceLimits) -> WorkspaceSnapshot {
    let roots = thread_roots(paths);
    tokio::task::spawn_blocking(move || WorkspaceSnapshot::scan(&roots, &limits))
        .await
        .unwrap_or_else(|err| {
            tracing::warn!("workspace snapshot failed: {err}");
            WorkspaceSnapshot {
                files: Default::default(),
                truncated: true,
            }
        })
}

/// What changed since `before`, or `None` when nothing did (or the scan task failed). The scan
/// and the comparison are one blocking task: each hop to the blocking pool and back costs a
/// wake of two threads, about 0.1 ms on a small virtual machine (issue 46).
pub async fn changes_since(
    before: WorkspaceSnapshot,
    paths: &SandboxPaths,
    limits: WorkspaceLimits,
) -> Option<WorkspaceChanges> {
    let roots = thread_roots(paths);
    let changes = tokio::task::spawn_blocking(move || {
        let after = WorkspaceSnapshot::scan(&roots, &limits);
        compare(&before, &after, &limits)
    })
    .await
    .inspect_err(|err| tracing::warn!("workspace snapshot failed: {err}"))
    .ok()?;
    changes.has_changes().then_some(changes)
}
