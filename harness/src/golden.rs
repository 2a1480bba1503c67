//! Goldens: insta snapshots in the top-level `golden/` folder, one per fixture with the same
//! stem, whose body is DeerFlow's `{"scenario", "mode", "events"}` document.

use std::path::{Path, PathBuf};

/// The repository root (the `harness` package's folder). At run time cargo and nextest set
/// `CARGO_MANIFEST_DIR` (nextest remaps it when tests run from an archive on another machine);
/// otherwise the folder this crate was built in.
pub fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("golden").is_dir())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The `golden/` folder at the repository root.
pub fn golden_dir() -> PathBuf {
    workspace_root().join("golden")
}

/// The `fixtures/` folder at the repository root.
pub fn fixtures_dir() -> PathBuf {
    workspace_root().join("fixtures")
}

/// The snapshot name of a fixture: its file name without `.json`
/// (`write_read_file.ultra.json` → `write_read_file.ultra`).
pub fn stem_of(fixture: &Path) -> String {
    let name = fixture
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".json").unwrap_or(&name).to_string()
}

/// The golden file of a stem.
pub fn golden_path(stem: &str) -> PathBuf {
    golden_dir().join(format!("{stem}.snap"))
}

/// The body of an insta `.snap` file: everything after the `---` header block, without the
/// trailing newline insta adds.
pub fn snapshot_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(rest[end + 5..].trim_end_matches('\n'))
}

/// How a run's golden document compares with the committed golden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldenStatus {
    /// Identical.
    Ok,
    /// Different: the contract drifted, or the golden must be reviewed.
    Changed,
    /// No golden committed for this fixture.
    Missing,
}

impl GoldenStatus {
    /// `ok`, `changed` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            GoldenStatus::Ok => "ok",
            GoldenStatus::Changed => "changed",
            GoldenStatus::Missing => "missing",
        }
    }
}

/// Compares `document` with the committed golden of `stem`.
pub fn golden_status(stem: &str, document: &str) -> GoldenStatus {
    match std::fs::read_to_string(golden_path(stem)) {
        Err(_) => GoldenStatus::Missing,
        Ok(text) => match snapshot_body(&text) {
            Some(body) if body == document.trim_end_matches('\n') => GoldenStatus::Ok,
            _ => GoldenStatus::Changed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_body_of_an_insta_snapshot() {
        let text = "---\nsource: harness/tests/golden.rs\n---\n{\n  \"a\": 1\n}\n";
        assert_eq!(snapshot_body(text), Some("{\n  \"a\": 1\n}"));
        assert_eq!(snapshot_body("no header"), None);
    }

    #[test]
    fn stems_drop_only_the_json_extension() {
        assert_eq!(
            stem_of(Path::new("fixtures/write_read_file.ultra.json")),
            "write_read_file.ultra"
        );
    }
}
