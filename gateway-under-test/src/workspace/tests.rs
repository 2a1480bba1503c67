//! Snapshots and comparisons over real folders: each case prepares the sandbox, changes it, and
//! checks what the comparison reports.

use std::path::Path;

use super::*;

/// A change to the sandbox: `(relative path under user-data, content)`; `None` removes it.
type Edit = (&'static str, Option<&'static [u8]>);

struct Case {
    name: &'static str,
    before: Vec<Edit>,
    after: Vec<Edit>,
    limits: WorkspaceLimits,
    check: fn(&WorkspaceChanges),
}

fn apply(root: &Path, edits: &[Edit]) {
    for (relative, content) in edits {
        let path = root.join(relative);
        match content {
            Some(bytes) => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, bytes).unwrap();
            }
            None => std::fs::remove_file(&path).unwrap(),
        }
    }
}

fn run(case: &Case) -> WorkspaceChanges {
    let home = tempfile::tempdir().unwrap();
    let paths = SandboxPaths::for_thread(home.path(), Some("u"), "t");
    paths.create_dirs().unwrap();
    apply(&paths.user_data, &case.before);
    let roots = thread_roots(&paths);
    let before = WorkspaceSnapshot::scan(&roots, &case.limits);
    apply(&paths.user_data, &case.after);
    let after = WorkspaceSnapshot::scan(&roots, &case.limits);
    compare(&before, &after, &case.limits)
}

fn only(changes: &WorkspaceChanges) -> &FileChange {
    assert_eq!(changes.files.len(), 1, "{changes:#?}");
    &changes.files[0]
}

#[test]
fn comparisons_report_what_changed() {
    let defaults = WorkspaceLimits::default();
    let cases = vec![
        Case {
            name: "the write/read scenario: one file created in outputs",
            before: vec![],
            after: vec![("outputs/note.txt", Some(b"hi from replay."))],
            limits: defaults,
            check: |changes| {
                let file = only(changes);
                assert_eq!(file.path, "/mnt/user-data/outputs/note.txt");
                assert_eq!(
                    (file.root, file.status),
                    (RootName::Outputs, ChangeStatus::Created)
                );
                assert_eq!((file.size_before, file.size_after), (None, Some(15)));
                assert_eq!(
                    file.sha256_after.as_deref(),
                    Some(
                        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"hi from replay."))
                            .as_str()
                    )
                );
                assert_eq!((file.additions, file.deletions), (1, 0));
                assert_eq!(
                    file.diff,
                    "--- a/mnt/user-data/outputs/note.txt\n+++ b/mnt/user-data/outputs/note.txt\n@@ -0,0 +1 @@\n+hi from replay."
                );
                assert_eq!(
                    changes.summary,
                    ChangeSummary {
                        created: 1,
                        additions: 1,
                        ..ChangeSummary::default()
                    }
                );
                assert_eq!(changes.headline(), "1 file changed +1 -0");
            },
        },
        Case {
            name: "a modified line",
            before: vec![("workspace/a.txt", Some(b"one\ntwo\nthree\n"))],
            after: vec![("workspace/a.txt", Some(b"one\nTWO\nthree\n"))],
            limits: defaults,
            check: |changes| {
                let file = only(changes);
                assert_eq!(file.status, ChangeStatus::Modified);
                assert_eq!((file.additions, file.deletions), (1, 1));
                assert!(
                    file.diff
                        .ends_with("@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three"),
                    "{}",
                    file.diff
                );
            },
        },
        Case {
            name: "a deleted file",
            before: vec![("uploads/in.csv", Some(b"a,b\n1,2\n"))],
            after: vec![("uploads/in.csv", None)],
            limits: defaults,
            check: |changes| {
                let file = only(changes);
                assert_eq!(
                    (file.root, file.status),
                    (RootName::Uploads, ChangeStatus::Deleted)
                );
                assert_eq!(
                    (file.additions, file.deletions, file.size_after),
                    (0, 2, None)
                );
            },
        },
        Case {
            name: "unchanged files and excluded folders are not reported",
            before: vec![("workspace/same.txt", Some(b"x"))],
            after: vec![
                ("workspace/node_modules/dep/index.js", Some(b"y")),
                ("workspace/.git/HEAD", Some(b"z")),
            ],
            limits: defaults,
            check: |changes| {
                assert!(changes.files.is_empty(), "{changes:#?}");
                assert!(!changes.has_changes());
            },
        },
        Case {
            name: "a secret-looking path is listed without hash or diff",
            before: vec![],
            after: vec![
                ("workspace/.env", Some(b"OPENAI_API_KEY=sk-123")),
                ("outputs/my_token.txt", Some(b"t")),
            ],
            limits: defaults,
            check: |changes| {
                assert_eq!(changes.files.len(), 2);
                for file in &changes.files {
                    assert!(file.sensitive, "{file:?}");
                    assert_eq!(
                        (file.sha256_after.as_deref(), file.diff.as_str()),
                        (None, "")
                    );
                    assert_eq!(
                        file.diff_unavailable_reason,
                        Some(DiffUnavailable::Sensitive)
                    );
                }
            },
        },
        Case {
            name: "binary content has no diff",
            before: vec![],
            after: vec![
                ("outputs/blob.bin", Some(b"\x00\x01\x02")),
                ("outputs/bad.txt", Some(b"\xff\xfe\xfa")),
            ],
            limits: defaults,
            check: |changes| {
                for file in &changes.files {
                    assert!(file.binary && file.sha256_after.is_some(), "{file:?}");
                    assert_eq!(file.diff_unavailable_reason, Some(DiffUnavailable::Binary));
                }
            },
        },
        Case {
            name: "a file over the diff size limit is large and marks the summary truncated",
            before: vec![],
            after: vec![("outputs/big.txt", Some(b"0123456789abcdef"))],
            limits: WorkspaceLimits {
                max_file_bytes_for_diff: 8,
                ..defaults
            },
            check: |changes| {
                let file = only(changes);
                assert_eq!(file.diff_unavailable_reason, Some(DiffUnavailable::Large));
                assert_eq!(file.sha256_after, None);
                assert!(changes.summary.truncated);
            },
        },
        Case {
            name: "the file list is capped but the summary counts every change",
            before: vec![],
            after: vec![
                ("outputs/1", Some(b"a")),
                ("outputs/2", Some(b"b")),
                ("outputs/3", Some(b"c")),
            ],
            limits: WorkspaceLimits {
                max_files: 2,
                ..defaults
            },
            check: |changes| {
                assert_eq!(changes.files.len(), 2);
                assert_eq!(
                    (changes.summary.created, changes.summary.truncated),
                    (3, true)
                );
            },
        },
        Case {
            name: "paths missing from a truncated scan are not reported as created",
            before: vec![("outputs/a", Some(b"a"))],
            after: vec![("outputs/b", Some(b"b")), ("outputs/c", Some(b"c"))],
            limits: WorkspaceLimits {
                max_scanned_files: 2,
                ..defaults
            },
            check: |changes| {
                let paths: Vec<&str> = changes.files.iter().map(|f| f.path.as_str()).collect();
                assert_eq!(
                    paths,
                    ["/mnt/user-data/outputs/b"],
                    "c was never scanned after"
                );
                assert!(changes.summary.truncated);
            },
        },
        Case {
            name: "diffs beyond the run's diff budget are dropped but still counted",
            before: vec![],
            after: vec![
                ("outputs/a.txt", Some(b"first\n")),
                ("outputs/b.txt", Some(b"second\n")),
            ],
            limits: WorkspaceLimits {
                max_total_diff_bytes: 100,
                ..defaults
            },
            check: |changes| {
                let (first, second) = (&changes.files[0], &changes.files[1]);
                assert!(!first.diff.is_empty() && !first.diff_truncated, "{first:?}");
                assert!(
                    second.diff.is_empty() && second.diff_truncated,
                    "{second:?}"
                );
                assert_eq!(
                    second.diff_unavailable_reason,
                    Some(DiffUnavailable::Truncated)
                );
                assert_eq!(changes.summary.additions, 2);
                assert!(changes.summary.truncated);
            },
        },
    ];
    for case in &cases {
        let changes = run(case);
        let outcome = std::panic::catch_unwind(|| (case.check)(&changes));
        assert!(outcome.is_ok(), "case failed: {}", case.name);
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_is_recorded_and_never_followed() {
    let home = tempfile::tempdir().unwrap();
    let secret = home.path().join("outside.txt");
    std::fs::write(&secret, "host file content").unwrap();
    let paths = SandboxPaths::for_thread(home.path(), Some("u"), "t");
    paths.create_dirs().unwrap();
    let roots = thread_roots(&paths);
    let limits = WorkspaceLimits::default();
    let before = WorkspaceSnapshot::scan(&roots, &limits);
    std::os::unix::fs::symlink(&secret, paths.outputs.join("link")).unwrap();
    let after = WorkspaceSnapshot::scan(&roots, &limits);
    let changes = compare(&before, &after, &limits);
    let file = only(&changes);
    assert_eq!(file.status, ChangeStatus::SymlinkCreated);
    assert!(file.symlink && file.sha256_after.is_none() && file.diff.is_empty());
    assert_eq!(
        file.symlink_target_after.as_deref(),
        Some(secret.to_string_lossy().as_ref())
    );
    assert_eq!(changes.summary.symlink_created, 1);
}

#[test]
fn sensitive_paths_match_by_segment_and_ignore_case() {
    let cases = [
        ("/mnt/user-data/workspace/.env", true),
        ("/mnt/user-data/workspace/.env.local", true),
        ("/mnt/user-data/workspace/SECRETS/notes.md", true),
        ("/mnt/user-data/outputs/server.PEM", true),
        ("/mnt/user-data/outputs/environment.md", false),
        ("/mnt/user-data/outputs/note.txt", false),
    ];
    for (path, expected) in cases {
        assert_eq!(is_sensitive_path(path), expected, "{path}");
    }
}

/// Finding 6 of issue 21: rewriting one 40,000-line file cost 118.7 s of gateway CPU in the diff.
/// A side over `MAX_DIFF_LINES` lines is reported rewritten (`large`, every line counted),
/// without a diff.
#[test]
fn workspace_diff_of_a_file_over_the_line_cap_is_reported_rewritten() {
    let lines = compare::MAX_DIFF_LINES + 1;
    let old: String = (0..lines).map(|i| format!("line {i}\n")).collect();
    let new = old.replacen("line 7\n", "line seven\n", 1);
    let home = tempfile::tempdir().unwrap();
    let paths = SandboxPaths::for_thread(home.path(), Some("u"), "t");
    paths.create_dirs().unwrap();
    let file = paths.user_data.join("outputs/big.txt");
    std::fs::write(&file, &old).unwrap();
    let limits = WorkspaceLimits::default();
    let roots = thread_roots(&paths);
    let before = WorkspaceSnapshot::scan(&roots, &limits);
    std::fs::write(&file, &new).unwrap();
    let after = WorkspaceSnapshot::scan(&roots, &limits);
    let changes = compare(&before, &after, &limits);
    let change = only(&changes);
    assert_eq!(
        (
            change.diff.as_str(),
            change.diff_unavailable_reason,
            change.additions,
            change.deletions
        ),
        ("", Some(DiffUnavailable::Large), lines, lines)
    );
}
