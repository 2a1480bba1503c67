//! Goldens: insta snapshots in a golden folder (this workspace's top-level `golden/`, or the one
//! a `keyless.toml` configures), one per fixture with the same stem, whose body is DeerFlow's
//! `{"scenario", "mode", "events"}` document. The folder is always passed in: a fixture from
//! another repository is never compared with a golden of this one.
//!
//! A golden is compared through insta's own snapshot API ([`insta::Snapshot::from_file`] and its
//! contents' equality, the comparison `assert_snapshot!` makes), so a status computed here always
//! agrees with the golden test and `cargo insta review`. The contents types live in
//! `insta::internals`, which insta exposes but exempts from its semver promise; the workspace
//! pins insta's minor version, and `tests::golden_status_follows_insta` catches a change.

use std::path::{Path, PathBuf};

use insta::internals::{SnapshotContents, TextSnapshotContents};
use insta::{Snapshot, TextSnapshotKind};
use replay_core::GoldenStatus;

/// The snapshot name of a fixture: its file name without `.json`
/// (`write_read_file.ultra.json` → `write_read_file.ultra`).
pub fn stem_of(fixture: &Path) -> String {
    let name = fixture
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".json").unwrap_or(&name).to_string()
}

/// The golden file of a stem in `golden_dir`.
pub fn golden_path(golden_dir: &Path, stem: &str) -> PathBuf {
    golden_dir.join(format!("{stem}.snap"))
}

/// Compares `document` with the committed golden of `stem` in `golden_dir`.
pub fn golden_status(golden_dir: &Path, stem: &str, document: &str) -> GoldenStatus {
    snapshot_status(&golden_path(golden_dir, stem), document)
}

/// The committed golden document of `stem` in `golden_dir` (the snapshot's body, as insta reads
/// it), or an error naming the file.
pub fn read_golden(golden_dir: &Path, stem: &str) -> Result<String, String> {
    let path = golden_path(golden_dir, stem);
    let snapshot =
        Snapshot::from_file(&path).map_err(|err| format!("{}: {err}", path.display()))?;
    snapshot
        .contents()
        .as_text()
        .map(ToString::to_string)
        .ok_or_else(|| format!("{}: not a text snapshot", path.display()))
}

/// Compares `document` with the snapshot file at `path` as insta does. A file insta cannot read
/// counts as changed: it must be reviewed either way.
fn snapshot_status(path: &Path, document: &str) -> GoldenStatus {
    if !path.is_file() {
        return GoldenStatus::Missing;
    }
    let Ok(stored) = Snapshot::from_file(path) else {
        return GoldenStatus::Changed;
    };
    let new = SnapshotContents::from(TextSnapshotContents::new(
        document.to_owned(),
        TextSnapshotKind::File,
    ));
    if *stored.contents() == new {
        GoldenStatus::Ok
    } else {
        GoldenStatus::Changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_status_follows_insta() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("s.flash.snap");
        let body = "{\n  \"scenario\": \"s\",\n  \"mode\": \"flash\",\n  \"events\": []\n}";
        std::fs::write(
            &snap,
            format!("---\nsource: harness/tests/golden.rs\ndescription: \"fixture: fixtures/s.flash.json\"\n---\n{body}\n"),
        )
        .unwrap();
        let cases = [
            ("the same document", body.to_owned(), GoldenStatus::Ok),
            // insta ignores trailing whitespace, and so does the golden test.
            ("a trailing newline", format!("{body}\n"), GoldenStatus::Ok),
            (
                "another mode",
                body.replace("flash", "ultra"),
                GoldenStatus::Changed,
            ),
        ];
        for (name, document, expected) in cases {
            assert_eq!(snapshot_status(&snap, &document), expected, "{name}");
        }
        assert_eq!(
            snapshot_status(&dir.path().join("none.snap"), body),
            GoldenStatus::Missing
        );
    }

    #[test]
    fn stems_drop_only_the_json_extension() {
        assert_eq!(
            stem_of(Path::new("fixtures/write_read_file.ultra.json")),
            "write_read_file.ultra"
        );
    }
}
