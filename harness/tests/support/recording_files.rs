//! Recording files for the managed recordings store's tests: valid and invalid contents, the
//! keys that describe a recording, files written with a given mode, their mode read back, and
//! files aged by hand. Both the store's unit
//! tests (`harness/src/recording_store/tests.rs`) and its CLI's tests
//! (`xtask/tests/recordings.rs`) include this file by path: the first is a module of the library
//! and the second a test of another package, so neither can import what the other defines.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A valid header-only recording (valid for any strict reader of format version 2).
pub const HEADER: &str = "{\"format_version\": 2, \"type\": \"header\"}\n";

/// A file the strict reader rejects (`docs/recording-format.md` §5 "has no format header on its
/// first line").
pub const NO_HEADER: &str = "{\"call_index\": 0, \"type\": \"request\"}\n";

/// The keys of a recording's info object (`list --json`, `show`), in order
/// (`docs/recording-format.md` §12).
pub const RECORDING_INFO_KEYS: [&str; 9] = [
    "recording_id",
    "path",
    "created_at",
    "modified_at",
    "size",
    "call_count",
    "valid",
    "active",
    "error",
];

/// One day in seconds, the unit of `prune --older-than-days`.
pub const DAY: u64 = 86_400;

/// Writes `text` to `path` (creating its folders) with permission bits `mode`.
pub fn write_file(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The permission bits of `path` itself (a symlink's own, not its target's).
pub fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Sets the modification time of `path` to `seconds_ago` seconds before now.
pub fn age(path: &Path, seconds_ago: u64) {
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}
