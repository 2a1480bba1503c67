//! This workspace's folders: the repository root, its `golden/` and its `fixtures/`. The runner
//! (`keyless_runner`) is always given its folders; only this package, whose manifest sits at the
//! repository root, knows where the shipped ones are.

use std::path::PathBuf;

/// The repository root (the `harness` package's folder). At run time cargo and nextest set
/// `CARGO_MANIFEST_DIR` (nextest remaps it when tests run from an archive on another machine);
/// otherwise the folder this crate was built in.
pub fn workspace_root() -> PathBuf {
    root_from_env()
}

/// The one place this package reads where it is: the variable at run time, else the macro.
fn root_from_env() -> PathBuf {
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

/// The committed golden document of `stem` in this workspace's `golden/`, or an error naming
/// the file.
pub fn read_golden(stem: &str) -> Result<String, keyless_runner::goldens::GoldenError> {
    keyless_runner::goldens::read_golden(&golden_dir(), stem)
}

/// Compares `document` with the committed golden of `stem` in this workspace's `golden/`.
pub fn golden_status(stem: &str, document: &str) -> replay_core::GoldenStatus {
    keyless_runner::goldens::golden_status(&golden_dir(), stem, document)
}
