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
//!
//! A golden folder arrives in pull requests, so insta never opens a file in it: [`load_snapshot`]
//! reads the file as a regular file, never through a link, bounded ([`crate::regular_file`]),
//! checks its header is a text snapshot's (insta's binary snapshots read a sidecar file named by
//! the header's `extension`, which can be a link to `/dev/zero` or hold a `/` that panics insta),
//! and hands insta a private copy of what it checked.

use std::path::{Path, PathBuf};

use insta::internals::{SnapshotContents, TextSnapshotContents};
use insta::{Snapshot, TextSnapshotKind};
use replay_core::GoldenStatus;

use crate::regular_file::{self, FileError, MAX_GOLDEN_BYTES};

/// The header keys insta writes for a text snapshot; any other top-level key (`extension`, a
/// quoted or flow-style key) is refused, so insta's binary path is never taken.
const TEXT_HEADER_KEYS: [&str; 7] = [
    "source",
    "assertion_line",
    "description",
    "expression",
    "info",
    "input_file",
    "snapshot_kind",
];

/// Why a golden (or pending golden) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    /// The file is a link, a special file, too large or not UTF-8.
    #[error(transparent)]
    File(#[from] FileError),
    /// The file is not a text snapshot.
    #[error(
        "{}: header line {line} ({text}) is not one a text golden has: goldens are text (insta's \
         binary snapshots, `snapshot_kind: binary` and `extension`, are refused)",
        .path.display()
    )]
    NotText {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the header.
        line: usize,
        /// That line, escaped.
        text: String,
    },
    /// insta could not parse it.
    #[error("{}: {message}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// insta's message.
        message: String,
    },
    /// No golden is committed there.
    #[error("{}: no such golden", .0.display())]
    Missing(PathBuf),
}

/// The suffix of a web golden's stem: `<fixture stem>.web.snap` holds the run of DeerFlow's chat
/// page ([`crate::driver::deerflow::WebClient`]).
pub const WEB_GOLDEN_SUFFIX: &str = ".web";

/// The suffix of the MCP servers' contract golden: `<fixture stem>.mcp.snap` holds the shape of
/// what the fixture's recorded `tools/list` (and prompts, resources) returned
/// (`crate::mcp::contract_shape`).
pub const MCP_GOLDEN_SUFFIX: &str = ".mcp";

/// The snapshot name of a fixture: its file name without `.json`
/// (`write_read_file.ultra.json` → `write_read_file.ultra`), each byte of it that is not UTF-8
/// written `%XX` ([`escaped_name`]), so two such names keep two stems.
pub fn stem_of(fixture: &Path) -> String {
    let name = fixture.file_name().map(escaped_name).unwrap_or_default();
    (name.strip_suffix(crate::faults::FAULTS_SUFFIX))
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(&name)
        .to_string()
}

/// A file name as text: its UTF-8 as it is, each byte that is not UTF-8 as `%` and two
/// uppercase hex digits (`caf\xE9` → `caf%E9`). A lossy copy would make every such byte
/// U+FFFD, and `\xFF.flash.json` and `\xFE.flash.json` one name; a UTF-8 name that already
/// reads `%FF` is told apart by [`crate::suite::fixture_files`], which refuses the pair.
pub fn escaped_name(name: &std::ffi::OsStr) -> String {
    let mut text = String::new();
    for chunk in name.as_encoded_bytes().utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("%{byte:02X}"));
        }
    }
    text
}

/// The golden file of a stem in `golden_dir`.
pub fn golden_path(golden_dir: &Path, stem: &str) -> PathBuf {
    golden_dir.join(format!("{stem}.snap"))
}

/// Compares `document` with the committed golden of `stem` in `golden_dir`; a golden that
/// cannot be read is [`GoldenStatus::Refused`] ([`golden_check`] says why).
pub fn golden_status(golden_dir: &Path, stem: &str, document: &str) -> GoldenStatus {
    golden_check(golden_dir, stem, document).unwrap_or(GoldenStatus::Refused)
}

/// Compares `document` with the committed golden of `stem` in `golden_dir`, or says why the
/// golden cannot be read (a link, a special file, a binary snapshot, a file insta cannot parse).
pub fn golden_check(
    golden_dir: &Path,
    stem: &str,
    document: &str,
) -> Result<GoldenStatus, GoldenError> {
    snapshot_status(&golden_path(golden_dir, stem), document)
}

/// The committed golden document of `stem` in `golden_dir` (the snapshot's body, as insta reads
/// it), or an error naming the file.
pub fn read_golden(golden_dir: &Path, stem: &str) -> Result<String, GoldenError> {
    let path = golden_path(golden_dir, stem);
    let snapshot = load_snapshot(&path)?.ok_or_else(|| GoldenError::Missing(path.clone()))?;
    // `load_snapshot` refuses every snapshot that is not text.
    snapshot
        .contents()
        .as_text()
        .map(ToString::to_string)
        .ok_or(GoldenError::NotText {
            path,
            line: 1,
            text: "a binary snapshot".into(),
        })
}

/// The snapshot at `path` (`None` when nothing is there), read as a regular file without
/// following a link, checked to be a text snapshot, then parsed by insta from a private copy.
pub fn load_snapshot(path: &Path) -> Result<Option<Snapshot>, GoldenError> {
    let Some(text) = regular_file::read_text(path, MAX_GOLDEN_BYTES)? else {
        return Ok(None);
    };
    check_text_header(path, &text)?;
    let unreadable = |message: String| GoldenError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let copy = tempfile::Builder::new()
        .prefix("keyless-golden-")
        .tempdir()
        .map_err(|err| unreadable(format!("cannot make a private copy: {err}")))?;
    let copied = copy.path().join("golden.snap");
    std::fs::write(&copied, &text)
        .map_err(|err| unreadable(format!("cannot make a private copy: {err}")))?;
    Snapshot::from_file(&copied)
        .map(Some)
        .map_err(|err| unreadable(err.to_string()))
}

/// Refuses a snapshot whose YAML header has a top-level key a text snapshot does not have, or a
/// `snapshot_kind` other than `text`. Indented lines continue the key above them; the legacy
/// header-less format has no binary kind.
fn check_text_header(path: &Path, text: &str) -> Result<(), GoldenError> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Ok(());
    }
    for (index, line) in lines.enumerate() {
        if line.trim_end() == "---" {
            return Ok(());
        }
        if line.trim().is_empty() || line.starts_with([' ', '\t', '#']) {
            continue;
        }
        let allowed = line.split_once(':').is_some_and(|(key, value)| {
            TEXT_HEADER_KEYS.contains(&key)
                && (key != "snapshot_kind"
                    || matches!(value.trim(), "text" | "\"text\"" | "'text'"))
        });
        if !allowed {
            return Err(GoldenError::NotText {
                path: path.to_path_buf(),
                line: index + 2,
                text: format!("{:?}", replay_core::shorten(line, 120)),
            });
        }
    }
    Ok(())
}

/// Compares `document` with the snapshot file at `path` as insta does.
fn snapshot_status(path: &Path, document: &str) -> Result<GoldenStatus, GoldenError> {
    let Some(stored) = load_snapshot(path)? else {
        return Ok(GoldenStatus::Missing);
    };
    let new = SnapshotContents::from(TextSnapshotContents::new(
        document.to_owned(),
        TextSnapshotKind::File,
    ));
    Ok(if *stored.contents() == new {
        GoldenStatus::Ok
    } else {
        GoldenStatus::Changed
    })
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
            assert_eq!(
                snapshot_status(&snap, &document).unwrap(),
                expected,
                "{name}"
            );
        }
        assert_eq!(
            snapshot_status(&dir.path().join("none.snap"), body).unwrap(),
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

    /// Issue 45, finding 12: the bytes of a file name that are not UTF-8 are written `%XX` in
    /// its stem, so two such names keep two stems (a lossy copy made both `\u{fffd}.flash`).
    #[cfg(unix)]
    #[test]
    fn a_stem_escapes_the_bytes_that_are_not_utf_8() {
        use std::os::unix::ffi::OsStrExt;
        let cases: [(&[u8], &str); 4] = [
            (b"\xff.flash.json", "%FF.flash"),
            (b"\xfe.flash.json", "%FE.flash"),
            (b"caf\xe9 \xc3\xa9\xc3.flash.json", "caf%E9 \u{e9}%C3.flash"),
            ("100% é.flash.json".as_bytes(), "100% é.flash"),
        ];
        for (name, stem) in cases {
            let path = Path::new("fixtures").join(std::ffi::OsStr::from_bytes(name));
            assert_eq!(stem_of(&path), stem, "{name:?}");
        }
    }
}
